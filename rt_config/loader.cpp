#include "rt_config/loader.hpp"

#include <yaml-cpp/yaml.h>
#if __has_include(<yaml-cpp/depthguard.h>)
#include <yaml-cpp/depthguard.h>
#define RTCOSIM_YAML_HAS_DEPTH_GUARD 1
#endif

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rt_config/hosts.hpp"
#include "rt_config/load_context.hpp"

// Here: the entry points and the order of the sections. Each section's reader is in a load_*.cpp of its
// own; load_context.hpp names the file at each declaration.
namespace rtcosim::config {

namespace detail {

namespace {

const std::vector<std::string> kTopKeys = {"name",   "duration", "realtime", "tasks", "blocks", "wires", "coupling",
                                           "record", "trace",    "plugins",  "hosts", "dds",    "sync"};

}  // namespace

void GraphLoader::load(const yaml::Node& root) {
  if (!root || root.IsNull()) {
    in_.error(Location{1, 1}, "the file holds no task graph — expected a mapping with 'tasks', 'blocks' and 'wires'");
    return;
  }
  if (!in_.mapping(root, "the task graph", kTopKeys)) return;
  if (auto name = in_.text(root, "name", "the task graph", false)) graph_.name = *name;
  if (auto d = in_.duration(root, "duration", "the task graph", false)) {
    if (*d < 0.0)
      in_.error(root["duration"], "'duration' is negative — expected a duration >= 0 (0 runs until stopped)");
    graph_.duration = *d;
  }
  if (auto mode = in_.choice(root, "realtime", "the task graph", {"required", "preferred", "off"})) {
    graph_.realtime = *mode == "required" ? RealtimeMode::kRequired
                      : *mode == "off"    ? RealtimeMode::kOff
                                          : RealtimeMode::kPreferred;
  }
  read_plugins(root["plugins"]);
  if (root["coupling"]) {
    if (auto c = coupling_spec(root["coupling"], "the default coupling")) graph_.default_coupling = *c;
  }
  read_hosts(root["hosts"]);
  read_dds(root["dds"]);
  read_tasks(root["tasks"], root);
  read_blocks(root["blocks"], root);
  read_wires(root["wires"]);
  read_record(root["record"]);
  read_trace(root["trace"]);
  read_sync(root["sync"]);
  check_diagram();
  check_tasks();
  check_fixed_steps();
  check_stiffness();
  check_hosts();
}

}  // namespace detail

namespace {

using Severity = Diagnostic::Severity;
using detail::GraphLoader;

// A NUL byte or invalid UTF-8 makes a file binary junk for our purposes.
std::optional<std::pair<Location, std::string>> find_non_text(std::string_view text) {
  int line = 1, column = 1;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t length = 1;
    if (c == 0) return std::make_pair(Location{line, column}, std::string("a NUL byte"));
    if (c >= 0x80) {
      length = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
      bool valid = length != 0 && i + length <= text.size();
      for (std::size_t k = 1; valid && k < length; ++k) valid = (static_cast<unsigned char>(text[i + k]) >> 6) == 0x2;
      if (!valid) return std::make_pair(Location{line, column}, std::string("a byte that is not UTF-8"));
    }
    if (c == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    i += length;
  }
  return std::nullopt;
}

}  // namespace

LoadResult load_graph_text(std::string_view text, const std::string& file_label, const LoadOptions& options) {
  LoadResult result;
  result.graph.file = file_label;
  result.graph.text_hash = graph_text_hash(text);
  auto fail = [&](Location where, std::string message) {
    result.diagnostics.push_back({Severity::kError, file_label, where.line, where.column, std::move(message)});
    return result;
  };
  if (text.size() > options.max_file_bytes) {
    return fail({}, "the file is " + std::to_string(text.size()) + " bytes — expected a task graph under " +
                        std::to_string(options.max_file_bytes >> 20) + " MiB");
  }
  if (const auto bad = find_non_text(text)) {
    return fail(bad->first, "the file holds " + bad->second + " — expected a YAML text file");
  }
  static const tasks::BlockRegistry builtin_blocks = tasks::BlockRegistry::with_builtins();
  static const coupling::MethodRegistry builtin_methods = coupling::MethodRegistry::with_builtins();
  // The document, not yaml-cpp's node tree: a tenth of the memory and no allocation per lookup (yaml_tree.hpp).
  std::optional<yaml::Document> document;
  try {
    document.emplace(text);
#ifdef RTCOSIM_YAML_HAS_DEPTH_GUARD
  } catch (const YAML::DeepRecursion& e) {
    return fail({e.mark.line + 1, e.mark.column + 1},
                "not valid YAML: nested " + std::to_string(e.depth()) +
                    " levels deep — expected a task graph nested a few levels deep");
#endif
  } catch (const YAML::Exception& e) {
    return fail({e.mark.line + 1, e.mark.column + 1}, "not valid YAML: " + e.msg);
  }
  try {
    GraphLoader loader(result, options, options.blocks ? *options.blocks : builtin_blocks,
                       options.methods ? *options.methods : builtin_methods);
    loader.load(document->root());
    // In file order, as an editor shows them; file-wide ones (line 0) first.
    std::stable_sort(result.diagnostics.begin(), result.diagnostics.end(),
                     [](const Diagnostic& a, const Diagnostic& b) {
                       return a.line != b.line ? a.line < b.line : a.column < b.column;
                     });
  } catch (const YAML::Exception& e) {
    fail({e.mark.line + 1, e.mark.column + 1}, std::string("unexpected structure: ") + e.msg);
  } catch (const std::exception& e) {
    fail({}, std::string("internal error while reading the file: ") + e.what());
  }
  return result;
}

LoadResult load_graph_file(const std::string& path, const LoadOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    LoadResult result;
    result.graph.file = path;
    result.diagnostics.push_back(
        {Severity::kError, path, 0, 0, std::string("cannot read the file: ") + std::strerror(errno)});
    return result;
  }
  // Read at most one byte past the limit: a huge file is refused without
  // being loaded whole.
  // In chunks: a buffer of the whole limit, zero-filled, cost every load
  // the limit's size in memory (64 MiB with --max-file-size 64).
  std::string text;
  char chunk[1 << 16];
  while (in && text.size() <= options.max_file_bytes) {
    const auto room = static_cast<std::streamsize>(options.max_file_bytes + 1 - text.size());
    in.read(chunk, std::min<std::streamsize>(sizeof chunk, room));
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) {
    LoadResult result;
    result.graph.file = path;
    result.diagnostics.push_back(
        {Severity::kError, path, 0, 0, std::string("reading failed: ") + std::strerror(errno)});
    return result;
  }
  if (text.size() > options.max_file_bytes) {
    LoadResult result;
    result.graph.file = path;
    result.diagnostics.push_back({Severity::kError, path, 0, 0,
                                  "the file is larger than " + std::to_string(options.max_file_bytes >> 20) +
                                      " MiB — expected a task graph of a few kilobytes"});
    return result;
  }
  return load_graph_text(text, path, options);
}

}  // namespace rtcosim::config
