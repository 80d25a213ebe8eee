#include "tools/common/cli_args.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <unistd.h>

#include "base/duration.hpp"
#include "base/text.hpp"

namespace rtcosim::tools {

CliArgs::CliArgs(std::string verb, std::set<std::string> valued, std::set<std::string> flags,
                 std::set<std::string> repeatable)
    : verb_(std::move(verb)),
      valued_(std::move(valued)),
      flags_(std::move(flags)),
      repeatable_(std::move(repeatable)) {}

std::optional<std::string> CliArgs::parse_for_file(const std::vector<std::string>& args, const char* help) {
  parse(args);
  if (flag("help")) {
    std::cout << help;
    return std::nullopt;
  }
  if (positionals().size() != 1) throw UsageError("expected one task-graph file");
  return positionals().front();
}

void CliArgs::parse(const std::vector<std::string>& args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = (args[i] == "-h" && flags_.count("help")) ? std::string("--help") : args[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      positionals_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::optional<std::string> inline_value;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (flags_.count(name)) {
      if (inline_value) throw UsageError("option --" + name + " takes no value");
      flags_seen_.insert(name);
    } else if (valued_.count(name)) {
      std::string v;
      if (inline_value) {
        v = *inline_value;
      } else if (i + 1 < args.size()) {
        v = args[++i];
      } else {
        throw UsageError("option --" + name + " needs a value");
      }
      if (values_.count(name) && !repeatable_.count(name)) {
        throw UsageError("option --" + name + " given twice ('" + values_[name].front() + "' and '" + v + "')");
      }
      values_[name].push_back(v);
    } else {
      std::vector<std::string> known(valued_.begin(), valued_.end());
      known.insert(known.end(), flags_.begin(), flags_.end());
      // The daemon parses its own arguments here too ("rtcosimd").
      const std::string program = verb_ == "rtcosimd" ? verb_ : "rtcosim " + verb_;
      std::string message = "unknown option '--" + name + "' for '" + program + "'";
      if (const auto guess = base::closest_match(name, known); !guess.empty()) {
        message += " (did you mean '--" + guess + "'?)";
      }
      throw UsageError(message);
    }
  }
}

double CliArgs::positive_duration(const std::string& name, double fallback) const {
  const auto text = value(name);
  if (!text) return fallback;
  std::string why;
  const auto seconds = base::parse_duration(*text, &why);
  if (!seconds) throw UsageError("--" + name + ": " + why);
  if (!(*seconds > 0.0)) throw UsageError("--" + name + " must be positive, got '" + *text + "'");
  return *seconds;
}

std::size_t CliArgs::max_file_bytes(std::size_t fallback) const {
  const auto text = value("max-file-size");
  if (!text) return fallback;
  std::size_t mib = 0;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), mib);
  if (ec != std::errc() || end != text->data() + text->size() || mib < 1 || mib > 1024) {
    throw UsageError("--max-file-size: expected a whole number of MiB from 1 to 1024, got '" + *text + "'");
  }
  return mib << 20;
}

std::optional<std::string> CliArgs::output_path(const std::string& name) const {
  auto path = value(name);
  if (!path) return path;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path->empty()) throw UsageError("--" + name + ": expected a file name");
  if (fs::is_directory(*path, ec)) {
    throw UsageError("--" + name + ": '" + *path + "' is a directory — expected a file name");
  }
  const fs::path parent = fs::path(*path).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  if (!fs::is_directory(dir, ec)) {
    throw UsageError("--" + name + ": cannot write '" + *path + "': directory '" + dir + "' does not exist");
  }
  if (access(dir.c_str(), W_OK) != 0) {
    throw UsageError("--" + name + ": cannot write '" + *path + "': directory '" + dir + "' is not writable (" +
                     std::strerror(errno) + ")");
  }
  return path;
}

std::optional<std::string> CliArgs::value(const std::string& name) const {
  const auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second.back();
}

std::vector<std::string> CliArgs::values(const std::string& name) const {
  const auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

}  // namespace rtcosim::tools
