#include "rt_config/loader.hpp"

#include <unistd.h>
#include <yaml-cpp/yaml.h>
#if __has_include(<yaml-cpp/depthguard.h>)
#include <yaml-cpp/depthguard.h>
#define RTCOSIM_YAML_HAS_DEPTH_GUARD 1
#endif

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "base/duration.hpp"
#include "base/record_formats.hpp"
#include "base/text.hpp"
#include "coupling/plugin_loader.hpp"
#include "rt_config/hosts.hpp"
#include "rt_config/schedulability.hpp"
#include "tasks/partition.hpp"

namespace rtcosim::config {

namespace {

using Severity = Diagnostic::Severity;

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

// `path` with links and `..` resolved, when that lies inside one of
// `roots` (each resolved too); nullopt otherwise. A file that does not exist
// (yet) is judged by its resolved directory, so the loader that opens it
// afterwards reports the missing file itself.
std::optional<std::string> confine_to_roots(const std::string& path, const std::vector<std::string>& roots) {
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::weakly_canonical(path, ec);
  if (ec) return std::nullopt;
  const std::string text = real.string();
  for (const auto& r : roots) {
    const std::filesystem::path root = std::filesystem::weakly_canonical(r, ec);
    if (ec) continue;
    std::string prefix = root.string();
    if (prefix.empty()) continue;
    if (prefix.back() != '/') prefix += '/';
    if (text.size() > prefix.size() && text.compare(0, prefix.size(), prefix) == 0) return text;
  }
  return std::nullopt;
}

Location location_of(const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  if (m.is_null()) return {};
  return {m.line + 1, m.column + 1};
}

// Walks one parsed document, collecting every problem it finds.
class Reader {
 public:
  Reader(std::string file, std::vector<Diagnostic>& diagnostics) : file_(std::move(file)), diagnostics_(diagnostics) {}

  void report(Severity severity, Location where, std::string message) {
    diagnostics_.push_back({severity, file_, where.line, where.column, std::move(message)});
  }
  void error(Location where, std::string message) { report(Severity::kError, where, std::move(message)); }
  void error(const YAML::Node& at, std::string message) { error(location_of(at), std::move(message)); }
  void warning(Location where, std::string message) { report(Severity::kWarning, where, std::move(message)); }
  void note(Location where, std::string message) { report(Severity::kNote, where, std::move(message)); }

  // A mapping whose keys must all be in `allowed`; unknown keys are
  // reported with a did-you-mean. Returns false when `node` is no mapping.
  bool mapping(const YAML::Node& node, const std::string& what, const std::vector<std::string>& allowed) {
    if (!node.IsMap()) {
      error(node, what + " is " + kind(node) + " — expected a mapping of " + join(allowed));
      return false;
    }
    unique_keys(node, what);
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string("?");
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      std::string message = "unknown key '" + key + "' in " + what;
      if (const auto guess = base::closest_match(key, allowed); !guess.empty()) {
        message += " (did you mean '" + guess + "'?)";
      }
      error(it->first, message + " — expected one of: " + join(allowed));
    }
    return true;
  }

  // YAML parsers keep the first of two equal keys and drop the second
  // silently; a key written twice is almost always a mistake.
  void unique_keys(const YAML::Node& node, const std::string& what) {
    std::map<std::string, Location> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (!it->first.IsScalar()) continue;
      const auto [first, fresh] = seen.emplace(it->first.Scalar(), location_of(it->first));
      if (fresh) continue;
      error(it->first, "key '" + it->first.Scalar() + "' appears twice in " + what + " (first at line " +
                           std::to_string(first->second.line) + ", column " + std::to_string(first->second.column) +
                           ") — expected each key once");
    }
  }

  static std::string kind(const YAML::Node& node) {
    switch (node.Type()) {
      case YAML::NodeType::Null:
        return "empty";
      case YAML::NodeType::Scalar: {
        const std::string& v = node.Scalar();
        return "'" + (v.size() > 40 ? v.substr(0, 37) + "..." : v) + "'";
      }
      case YAML::NodeType::Sequence:
        return node.size() == 0 ? "an empty list" : "a list";
      case YAML::NodeType::Map:
        return node.size() == 0 ? "an empty mapping" : "a mapping";
      default:
        return "undefined";
    }
  }

  std::optional<std::string> text(const YAML::Node& parent, const std::string& key, const std::string& what,
                                  bool required) {
    const YAML::Node node = parent[key];
    if (!node) {
      if (required) error(parent, what + " has no '" + key + "' — it is required");
      return std::nullopt;
    }
    if (!node.IsScalar() || node.Scalar().empty()) {
      error(node, what + ": '" + key + "' is " + kind(node) + " — expected a text");
      return std::nullopt;
    }
    return node.Scalar();
  }

  std::optional<double> duration(const YAML::Node& parent, const std::string& key, const std::string& what,
                                 bool required) {
    const YAML::Node node = parent[key];
    if (!node) {
      if (required) error(parent, what + " has no '" + key + "' — it is required (a duration like \"5ms\")");
      return std::nullopt;
    }
    if (!node.IsScalar()) {
      error(node, what + ": '" + key + "' is " + kind(node) + " — expected a duration with a unit, e.g. \"5ms\"");
      return std::nullopt;
    }
    const std::string& s = node.Scalar();
    double bare = 0.0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), bare);
    if (ec == std::errc() && end == s.data() + s.size() && bare != 0.0) {
      error(node, what + ": '" + key + "' = " + s + " has no unit — expected a duration with a unit, e.g. \"" + s +
                      "ms\" or \"" + s + "s\"");
      return std::nullopt;
    }
    std::string why;
    const auto seconds = base::parse_duration(s, &why);
    if (!seconds) {
      error(node, what + ": '" + key + "': " + why);
      return std::nullopt;
    }
    return seconds;
  }

  std::optional<long long> integer(const YAML::Node& parent, const std::string& key, const std::string& what,
                                   long long min, long long max) {
    const YAML::Node node = parent[key];
    if (!node) return std::nullopt;
    long long value = 0;
    bool good = node.IsScalar();
    if (good) {
      const std::string& s = node.Scalar();
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
      good = ec == std::errc() && end == s.data() + s.size();
    }
    if (!good || value < min || value > max) {
      error(node, what + ": '" + key + "' is " + kind(node) + " — expected an integer from " + std::to_string(min) +
                      " to " + std::to_string(max));
      return std::nullopt;
    }
    return value;
  }

  std::optional<bool> boolean(const YAML::Node& parent, const std::string& key, const std::string& what) {
    const YAML::Node node = parent[key];
    if (!node) return std::nullopt;
    if (node.IsScalar() && (node.Scalar() == "true" || node.Scalar() == "false")) return node.Scalar() == "true";
    error(node, what + ": '" + key + "' is " + kind(node) + " — expected true or false");
    return std::nullopt;
  }

  // One of `choices`, reported with a did-you-mean.
  std::optional<std::string> choice(const YAML::Node& parent, const std::string& key, const std::string& what,
                                    const std::vector<std::string>& choices) {
    const auto value = text(parent, key, what, false);
    if (!value) return std::nullopt;
    if (std::find(choices.begin(), choices.end(), *value) != choices.end()) return value;
    std::string message = what + ": '" + key + "' = '" + *value + "' is not allowed";
    if (const auto guess = base::closest_match(*value, choices); !guess.empty())
      message += " (did you mean '" + guess + "'?)";
    error(parent[key], message + " — expected one of: " + join(choices));
    return std::nullopt;
  }

  // A block parameter value: number, boolean, text, list of numbers, or a
  // matrix as a list of lists of numbers.
  std::optional<tasks::ParamValue> param_value(const YAML::Node& node, const std::string& what) {
    if (node.IsScalar()) {
      const std::string& s = node.Scalar();
      double v = 0.0;
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec == std::errc() && end == s.data() + s.size()) {
        if (std::isfinite(v)) return tasks::ParamValue{v};
        error(node, what + " is " + kind(node) + " — expected a finite number");
        return std::nullopt;
      }
      if (s == "true" || s == "false") return tasks::ParamValue{s == "true"};
      return tasks::ParamValue{s};
    }
    if (node.IsSequence()) {
      if (node.size() > 0 && node[0].IsSequence()) {
        tasks::Matrix m;
        for (const auto& row : node) {
          if (!row.IsSequence()) {
            error(row, what + ": a matrix row is " + kind(row) + " — expected a list of numbers");
            return std::nullopt;
          }
          auto r = numbers(row, what);
          if (!r) return std::nullopt;
          m.push_back(std::move(*r));
        }
        return tasks::ParamValue{m};
      }
      auto v = numbers(node, what);
      if (!v) return std::nullopt;
      return tasks::ParamValue{*v};
    }
    error(node,
          what + " is " + kind(node) + " — expected a number, a text, a list of numbers or a matrix (list of rows)");
    return std::nullopt;
  }

  std::optional<tasks::Vector> numbers(const YAML::Node& node, const std::string& what) {
    tasks::Vector out;
    for (const auto& item : node) {
      double v = 0.0;
      bool good = item.IsScalar();
      if (good) {
        const std::string& s = item.Scalar();
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        good = ec == std::errc() && end == s.data() + s.size() && std::isfinite(v);
      }
      if (!good) {
        error(item, what + ": " + kind(item) + " is not a number — expected a list of numbers");
        return std::nullopt;
      }
      out.push_back(v);
    }
    return out;
  }

  // "block.port", split at the last dot.
  std::optional<tasks::Endpoint> endpoint(const YAML::Node& node, const std::string& what) {
    if (!node.IsScalar()) {
      error(node, what + " is " + kind(node) + " — expected \"block.port\"");
      return std::nullopt;
    }
    const std::string& s = node.Scalar();
    const auto dot = s.rfind('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == s.size()) {
      error(node, what + " is '" + s + "' — expected \"block.port\", e.g. \"airframe.y\"");
      return std::nullopt;
    }
    return tasks::Endpoint{s.substr(0, dot), s.substr(dot + 1)};
  }

 private:
  std::string file_;
  std::vector<Diagnostic>& diagnostics_;
};

const std::vector<std::string> kTopKeys = {"name",   "duration", "realtime", "tasks", "blocks", "wires", "coupling",
                                           "record", "trace",    "plugins",  "hosts", "dds",    "sync"};
const std::vector<std::string> kTaskKeys = {"name",    "period",   "cpu",        "priority",  "integrator", "step",
                                            "overrun", "max_step", "rate_group", "execution", "host"};
const std::vector<std::string> kBlockKeys = {"name", "type", "task", "params"};
const std::vector<std::string> kWireKeys = {"from", "to", "coupling"};

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

struct BlockInfo {
  std::unique_ptr<tasks::Block> block;  // null when the block itself was invalid
  Location where;
  std::map<std::string, Location> param_locations;
};

class GraphLoader {
  std::map<std::size_t, Location> host_locations_;  // task index -> its 'host' key

 public:
  GraphLoader(LoadResult& result, const LoadOptions& options, const tasks::BlockRegistry& blocks,
              const coupling::MethodRegistry& methods)
      : result_(result),
        graph_(result.graph),
        in_(graph_.file, result.diagnostics),
        options_(options),
        blocks_(blocks),
        methods_(&methods) {}

  void load(const YAML::Node& root) {
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
    check_hosts();
  }

 private:
  void read_tasks(const YAML::Node& list, const YAML::Node& root) {
    if (!list) {
      in_.error(root, "the task graph has no 'tasks' — expected a list of tasks (name, period, ...)");
      return;
    }
    if (!list.IsSequence() || list.size() == 0) {
      in_.error(list, "'tasks' is " + Reader::kind(list) + " — expected a non-empty list of tasks");
      return;
    }
    std::set<std::string> names;
    for (const auto& node : list) {
      TaskSpec t;
      t.where = location_of(node);
      if (!in_.mapping(node, "a task", kTaskKeys)) continue;
      auto name = in_.text(node, "name", "a task", true);
      const std::string what = "task '" + name.value_or("?") + "'";
      if (name) {
        t.name = *name;
        if (!names.insert(*name).second)
          in_.error(node["name"], "a second task is named '" + *name + "' — task names must be unique");
      }
      if (auto p = in_.duration(node, "period", what, true)) {
        if (!(*p > 0.0)) {
          in_.error(node["period"], what + ": 'period' = " + node["period"].Scalar() +
                                        " is not positive — expected a duration > 0, e.g. \"5ms\"");
        } else if (*p < kMinPeriod * (1.0 - 1e-9)) {  // "1us" parses a hair below 1e-6
          in_.error(node["period"], what + ": 'period' = " + node["period"].Scalar() + " is below the floor of " +
                                        base::format_duration(kMinPeriod) + " — expected at least \"1us\"");
        } else if (*p < kPracticalMinPeriod * (1.0 - 1e-9)) {
          in_.warning(location_of(node["period"]),
                      what + ": 'period' = " + node["period"].Scalar() + " is below " +
                          base::format_duration(kPracticalMinPeriod) +
                          ", the practical floor: wake-up latency alone can take a whole period");
        }
        t.period = *p;
      }
      if (auto cpu = in_.integer(node, "cpu", what, 0, 4095)) t.cpu = static_cast<int>(*cpu);
      if (auto prio = in_.integer(node, "priority", what, 1, 99)) t.priority = static_cast<int>(*prio);
      if (auto name_of = in_.choice(node, "integrator", what, {"euler", "ab2", "rk2", "rk4"})) {
        t.integrator = *tasks::parse_integrator(*name_of);
      }
      if (auto s = in_.choice(node, "step", what, {"fixed", "measured"})) {
        t.step = *s == "measured" ? StepPolicy::kMeasured : StepPolicy::kFixed;
      }
      // A measured step has absorbed the delay already: repaying the grid
      // with back-to-back frames would only burn CPU, so such a task
      // re-phases unless told otherwise.
      t.overrun = t.step == StepPolicy::kMeasured ? OverrunPolicy::kRephase : OverrunPolicy::kCatchUp;
      if (auto o = in_.choice(node, "overrun", what, {"catch_up", "skip", "rephase"})) {
        t.overrun = *o == "skip"      ? OverrunPolicy::kSkip
                    : *o == "rephase" ? OverrunPolicy::kRephase
                                      : OverrunPolicy::kCatchUp;
      }
      if (auto m = in_.duration(node, "max_step", what, false)) {
        t.max_step = *m;
        if (t.period > 0.0 && *m < t.period) {
          in_.error(node["max_step"], what + ": 'max_step' (" + base::format_duration(*m) + ") is below the period (" +
                                          base::format_duration(t.period) + ") — expected at least one period");
        }
      }
      if (auto g = in_.text(node, "rate_group", what, false)) t.rate_group = *g;
      if (auto h = in_.text(node, "host", what, false)) {
        t.host = *h;
        host_locations_[graph_.tasks.size()] = location_of(node["host"]);
      }
      if (const auto ex = node["execution"]) read_execution(ex, what, t.execution);
      graph_.tasks.push_back(std::move(t));
    }
  }

  void read_hosts(const YAML::Node& node) {
    if (!node) return;
    if (!node.IsSequence() || node.size() == 0) {
      in_.error(node, "'hosts' is " + Reader::kind(node) + " — expected a non-empty list of {name, domain}");
      return;
    }
    for (const auto& h : node) {
      if (!in_.mapping(h, "a host", {"name", "domain", "certificate", "private_key", "permissions"})) continue;
      HostSpec host;
      host.where = location_of(h);
      auto name = in_.text(h, "name", "a host", true);
      if (name) {
        host.name = *name;
        if (graph_.find_host(*name))
          in_.error(h["name"], "a second host is named '" + *name + "' — host names must be unique");
      }
      // DDS domain ids above 232 make port numbers overflow (DDSI-RTPS 9.6.1.1).
      if (auto d = in_.integer(h, "domain", "host '" + host.name + "'", 0, 232)) host.domain = static_cast<int>(*d);
      for (auto [key, field] :
           {std::pair{"certificate", &host.certificate}, std::pair{"private_key", &host.private_key},
            std::pair{"permissions", &host.permissions}}) {
        if (auto f = in_.text(h, key, "host '" + host.name + "'", false)) {
          *field = graph_file(*f, location_of(h[key]), "host '" + host.name + "': '" + key + "'").value_or("");
        }
      }
      graph_.hosts.push_back(std::move(host));
    }
    for (const auto& h : graph_.hosts) {
      if (h.domain == graph_.hosts.front().domain) continue;
      in_.error(h.where, "host '" + h.name + "' is in DDS domain " + std::to_string(h.domain) + " and host '" +
                             graph_.hosts.front().name + "' in domain " + std::to_string(graph_.hosts.front().domain) +
                             " — participants see each other's topics only within one domain; give every host the same "
                             "domain");
    }
  }

  void read_dds(const YAML::Node& node) {
    if (!node) return;
    const std::string what = "'dds'";
    if (!in_.mapping(node, what,
                     {"discovery_timeout", "start_delay", "bridge_priority", "bridge_cpu", "max_sequence_gap",
                      "max_clock_offset", "security"})) {
      return;
    }
    graph_.dds.where = location_of(node);
    if (const auto sec = node["security"]) {
      const std::string w = "'dds': 'security'";
      if (in_.mapping(sec, w, {"identity_ca", "permissions_ca", "governance"})) {
        auto& s = graph_.dds.security;
        s.where = location_of(sec);
        for (auto [key, field] : {std::pair{"identity_ca", &s.identity_ca}, std::pair{"governance", &s.governance},
                                  std::pair{"permissions_ca", &s.permissions_ca}}) {
          if (auto f = in_.text(sec, key, w, std::string(key) != "permissions_ca")) {
            *field = graph_file(*f, location_of(sec[key]), w + ": '" + key + "'").value_or("");
          }
        }
        if (s.permissions_ca.empty()) s.permissions_ca = s.identity_ca;
      }
    }
    if (auto t = in_.duration(node, "discovery_timeout", what, false)) {
      if (!(*t > 0.0) || *t > 3600.0) {
        in_.error(node["discovery_timeout"], "'dds': 'discovery_timeout' = " + node["discovery_timeout"].Scalar() +
                                                 " — expected a duration above 0 and at most 1h");
      }
      graph_.dds.discovery_timeout = *t;
    }
    if (auto t = in_.duration(node, "start_delay", what, false)) {
      if (!(*t >= 0.01) || *t > 60.0) {
        in_.error(node["start_delay"], "'dds': 'start_delay' = " + node["start_delay"].Scalar() +
                                           " — expected a duration from 10ms to 60s (every host must hear the start "
                                           "time before it)");
      }
      graph_.dds.start_delay = *t;
    }
    if (auto p = in_.integer(node, "bridge_priority", what, 1, 99)) graph_.dds.bridge_priority = static_cast<int>(*p);
    if (auto c = in_.integer(node, "bridge_cpu", what, 0, 4095)) graph_.dds.bridge_cpu = static_cast<int>(*c);
    if (auto g = in_.integer(node, "max_sequence_gap", what, 1, 1'000'000'000)) {
      graph_.dds.max_sequence_gap = static_cast<std::uint64_t>(*g);
    }
    if (auto t = in_.duration(node, "max_clock_offset", what, false)) {
      if (!(*t > 0.0) || *t > 60.0) {
        in_.error(node["max_clock_offset"], "'dds': 'max_clock_offset' = " + node["max_clock_offset"].Scalar() +
                                                " — expected a duration above 0 and at most 60s");
      }
      graph_.dds.max_clock_offset = *t;
    }
  }

  // A file the graph names (a block's 'path' parameter, a DDS Security
  // document): relative to the task-graph file's directory, wherever
  // rtcosim is started from; where the options confine files, its
  // canonical form inside a root (what is checked is what is opened), or an
  // error at `at` naming `label` (nullopt).
  std::optional<std::string> graph_file(const std::string& text, Location at, const std::string& label) {
    const auto slash = graph_.file.rfind('/');
    std::string path =
        text.empty() || text[0] == '/' || slash == std::string::npos ? text : graph_.file.substr(0, slash + 1) + text;
    if (!text.empty() && text[0] != '/') path = searched(text, path);
    if (!options_.file_roots || text.empty()) return path;
    const auto confined = confine_to_roots(path, *options_.file_roots);
    if (!confined) {
      const std::string roots = join(*options_.file_roots);
      in_.error(at, label + " names " + text + ", which is outside the directories files may be read from here (" +
                        (roots.empty() ? std::string("none") : roots) + ")" +
                        (options_.file_roots_hint.empty() ? "" : " — " + options_.file_roots_hint));
    }
    return confined;
  }

  // A relative name that is not beside the graph file (`beside`) is looked
  // for, in order, under each directory of $RTCOSIM_PATH (colon-separated),
  // the directory above the running binary (a build tree: build/bin/.. holds
  // fmus/) and the package's data directory (/usr/share/rtcosim): so that an
  // example naming fmus/airframe2.fmu runs from any build folder and from
  // the installed package. The first that exists wins; none: `beside`, and
  // the block that opens it reports the missing file. Where the options
  // confine files, graph_file checks what is found like any other path.
  static std::string searched(const std::string& text, const std::string& beside) {
    std::error_code ec;
    if (std::filesystem::exists(beside, ec)) return beside;
    std::vector<std::string> bases;
    if (const char* env = std::getenv("RTCOSIM_PATH")) {
      std::string list = env;
      for (std::size_t start = 0; start <= list.size();) {
        const std::size_t end = std::min(list.find(':', start), list.size());
        if (end > start) bases.push_back(list.substr(start, end - start));
        start = end + 1;
      }
    }
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) bases.push_back(exe.parent_path().parent_path().string());
#ifdef RTCOSIM_DATADIR
    bases.emplace_back(RTCOSIM_DATADIR);
#endif
    for (const auto& base : bases) {
      const std::string candidate = base + "/" + text;
      if (std::filesystem::is_regular_file(candidate, ec)) return candidate;
    }
    return beside;
  }

  // With 'dds: security' every host names its certificate, key and
  // permissions; without it none does (they would be ignored).
  void check_security() {
    const bool on = graph_.dds.security.enabled();
    for (const auto& h : graph_.hosts) {
      const bool any = !h.certificate.empty() || !h.private_key.empty() || !h.permissions.empty();
      if (on && (h.certificate.empty() || h.private_key.empty() || h.permissions.empty())) {
        in_.error(h.where, "host '" + h.name +
                               "' needs 'certificate', 'private_key' and 'permissions' with 'dds: security' — its "
                               "identity and what it may publish (docs/dds.md, Security)");
      } else if (on && h.domain > 230) {
        in_.error(h.where, "host '" + h.name + "' is in DDS domain " + std::to_string(h.domain) +
                               " — with 'dds: security' expected 0..230 (Cyclone DDS reads no governance beyond 230)");
      } else if (!on && any) {
        in_.error(h.where, "host '" + h.name +
                               "' names security files, but 'dds' has no 'security' — expected 'dds: {security: "
                               "{identity_ca: ..., governance: ...}}' or no certificate");
      }
    }
  }

  // Every task on a declared host when there are hosts; rate groups within
  // one host; the bridge below every task's priority on its CPU.
  void check_hosts() {
    check_security();
    std::vector<std::string> host_names;
    for (const auto& h : graph_.hosts) host_names.push_back(h.name);
    if (graph_.hosts.empty()) {
      for (std::size_t i = 0; i < graph_.tasks.size(); ++i) {
        const TaskSpec& t = graph_.tasks[i];
        if (t.host.empty()) continue;
        in_.error(host_locations_[i], "task '" + t.name + "' runs on host '" + t.host +
                                          "', but the file has no 'hosts:' — expected a list "
                                          "'hosts: [{name: " +
                                          t.host + ", domain: 0}, ...]' or no 'host'");
      }
      if (graph_.dds.where.line > 0) {
        in_.warning(graph_.dds.where,
                    "'dds' is set, but the file has no 'hosts:' — it applies only to graphs across hosts");
      }
      return;
    }
    std::map<std::string, std::size_t> tasks_on;
    for (std::size_t i = 0; i < graph_.tasks.size(); ++i) {
      const TaskSpec& t = graph_.tasks[i];
      if (t.host.empty()) {
        in_.error(t.where, "task '" + t.name +
                               "' has no 'host' — with 'hosts:' every task names the host it runs on "
                               "(one of: " +
                               join(host_names) + ")");
        continue;
      }
      if (!graph_.find_host(t.host)) {
        std::string message = "task '" + t.name + "' runs on host '" + t.host + "', which is not in 'hosts:'";
        if (const auto guess = base::closest_match(t.host, host_names); !guess.empty()) {
          message += " (did you mean '" + guess + "'?)";
        }
        in_.error(host_locations_[i], message + " — expected one of: " + join(host_names));
        continue;
      }
      ++tasks_on[t.host];
    }
    for (const auto& h : graph_.hosts) {
      if (!tasks_on.count(h.name)) {
        in_.warning(h.where, "host '" + h.name + "' runs no task — every host still takes part in the start");
      }
    }
    std::map<std::string, const TaskSpec*> group_host;
    for (const auto& t : graph_.tasks) {
      if (t.rate_group.empty()) continue;
      const auto [it, fresh] = group_host.emplace(t.rate_group, &t);
      if (!fresh && it->second->host != t.host) {
        in_.error(t.where, "task '" + t.name + "' on host '" + t.host + "' is in rate group '" + t.rate_group +
                               "' with task '" + it->second->name + "' on host '" + it->second->host +
                               "' — a rate group runs in one thread, on one host");
      }
    }
    if (graph_.dds.bridge_priority > 0) {
      for (const auto& t : graph_.tasks) {
        if (t.priority <= 0 || t.priority > graph_.dds.bridge_priority) continue;
        in_.warning(graph_.dds.where, "'dds': 'bridge_priority' " + std::to_string(graph_.dds.bridge_priority) +
                                          " is not below task '" + t.name + "' (" + std::to_string(t.priority) +
                                          ") — the bridge may delay that task's frames; expected a priority below "
                                          "every task's");
        break;
      }
    }
    // Which links leave their host.
    std::map<std::string_view, std::string_view> host_of_block;
    for (const auto& b : graph_.diagram.blocks) {
      const TaskSpec* t = graph_.find_task(b.task);
      if (t) host_of_block.emplace(b.name, t->host);
    }
    for (auto& w : graph_.wires) {
      if (!w.crosses_tasks) continue;
      const auto from = host_of_block.find(w.wire.from.block);
      const auto to = host_of_block.find(w.wire.to.block);
      w.crosses_hosts = from != host_of_block.end() && to != host_of_block.end() && from->second != to->second;
    }
  }

  void read_execution(const YAML::Node& node, const std::string& what, ExecutionTimes& out) {
    if (!in_.mapping(node, what + ": 'execution'", {"nominal", "spikes"})) return;
    out.declared = true;
    if (auto n = in_.duration(node, "nominal", what + ": 'execution'", true)) {
      if (*n < 0.0) {
        in_.error(node["nominal"], what + ": 'execution': 'nominal' = " + node["nominal"].Scalar() +
                                       " is negative — expected a duration >= 0");
      }
      out.nominal = *n;
    }
    const auto spikes = node["spikes"];
    if (!spikes) return;
    if (!spikes.IsSequence()) {
      in_.error(spikes, what + ": 'spikes' is " + Reader::kind(spikes) + " — expected a list of {frame, time}");
      return;
    }
    for (const auto& s : spikes) {
      if (!in_.mapping(s, what + ": a spike", {"frame", "time"})) continue;
      ExecutionSpike spike;
      if (auto f = in_.integer(s, "frame", what + ": a spike", 0, 1LL << 53))
        spike.frame = static_cast<std::uint64_t>(*f);
      else if (!s["frame"])
        in_.error(s, what + ": a spike has no 'frame' — it is required");
      if (auto tm = in_.duration(s, "time", what + ": a spike", true)) {
        if (*tm < 0.0) {
          in_.error(s["time"],
                    what + ": a spike: 'time' = " + s["time"].Scalar() + " is negative — expected a duration >= 0");
        }
        spike.time = *tm;
      }
      out.spikes.push_back(spike);
    }
  }

  void read_blocks(const YAML::Node& list, const YAML::Node& root) {
    if (!list) {
      in_.error(root, "the task graph has no 'blocks' — expected a list of blocks (name, type, task, params)");
      return;
    }
    if (!list.IsSequence()) {
      in_.error(list, "'blocks' is " + Reader::kind(list) + " — expected a list of blocks");
      return;
    }
    for (const auto& node : list) {
      tasks::BlockSpec spec;
      BlockInfo info;
      info.where = location_of(node);
      if (!in_.mapping(node, "a block", kBlockKeys)) continue;
      const auto name = in_.text(node, "name", "a block", true);
      const std::string what = "block '" + name.value_or("?") + "'";
      const auto type = in_.text(node, "type", what, true);
      const auto task = in_.text(node, "task", what, true);
      if (name) spec.name = *name;
      if (type) spec.type = *type;
      if (task) spec.task = *task;
      bool params_ok = true;
      if (const auto params = node["params"]) {
        if (params.IsMap()) {
          in_.unique_keys(params, what + ": 'params'");
          for (auto it = params.begin(); it != params.end(); ++it) {
            const std::string key = it->first.Scalar();
            if (it->second.IsMap() && type && takes_mapping(*type, key)) {
              // A mapping parameter (an FMU's start values) becomes one
              // parameter per entry, "key.entry", each with its location.
              in_.unique_keys(it->second, what + ": parameter '" + key + "'");
              for (auto sub = it->second.begin(); sub != it->second.end(); ++sub) {
                const std::string flat = key + "." + sub->first.Scalar();
                info.param_locations[flat] = location_of(sub->first);
                if (auto v = in_.param_value(sub->second, what + ": parameter '" + flat + "'")) {
                  spec.params.set(flat, std::move(*v));
                } else {
                  params_ok = false;
                }
              }
              continue;
            }
            info.param_locations[key] = location_of(it->first);
            if (auto v = in_.param_value(it->second, what + ": parameter '" + key + "'")) {
              spec.params.set(key, std::move(*v));
            } else {
              params_ok = false;
            }
          }
          if (type && !resolve_paths(*type, spec.params, info.param_locations, what)) params_ok = false;
        } else if (!params.IsNull()) {
          in_.error(params, what + ": 'params' is " + Reader::kind(params) +
                                " — expected a mapping of parameter names to values");
          params_ok = false;
        }
      }
      if (name && block_index_.count(*name)) {
        in_.error(node["name"], "a second block is named '" + *name + "' — block names must be unique");
        continue;
      }
      if (name && type && params_ok) {
        try {
          info.block = blocks_.create(*type, *name, spec.params);
        } catch (const tasks::BlockError& e) {
          Location where = location_of(node["type"]);
          if (const auto it = info.param_locations.find(e.parameter()); it != info.param_locations.end()) {
            where = it->second;
          } else if (!e.parameter().empty() && node["params"]) {
            where = location_of(node["params"]);
          }
          in_.error(where, e.what());
        }
      }
      if (name) block_index_[*name] = graph_.diagram.blocks.size();
      graph_.diagram.blocks.push_back(std::move(spec));
      graph_.block_locations.push_back(info.where);
      infos_.push_back(std::move(info));
    }
  }

  // True when the block type documents `param` as a mapping (an FMU's
  // start values); any other parameter given as a mapping is an error.
  bool takes_mapping(const std::string& type, const std::string& param) const {
    const tasks::BlockTypeInfo* info = blocks_.find(type);
    if (!info) return false;
    return std::any_of(info->params.begin(), info->params.end(),
                       [&](const tasks::BlockParamDoc& d) { return d.name == param && d.type == "mapping"; });
  }

  // A parameter documented as a "path" names a file relative to the
  // task-graph file's directory, wherever rtcosim is started from. Where
  // the options confine files, the path is replaced by its canonical form
  // inside a root (what is checked is what is opened), or refused.
  bool resolve_paths(const std::string& type, tasks::BlockParams& params,
                     const std::map<std::string, Location>& locations, const std::string& what) {
    const tasks::BlockTypeInfo* info = blocks_.find(type);
    if (!info) return true;
    bool ok = true;
    for (const auto& doc : info->params) {
      if (doc.type != "path" || !params.has(doc.name)) continue;
      const auto* text = std::get_if<std::string>(&params.all().at(doc.name));
      if (!text || text->empty()) continue;
      const auto at = locations.find(doc.name);
      const auto path =
          graph_file(*text, at != locations.end() ? at->second : Location{}, what + ": '" + doc.name + "'");
      if (!path) {
        ok = false;
        continue;
      }
      params.set(doc.name, *path);
    }
    return ok;
  }

  // A block that can only take equal steps (a co-simulated FMU without
  // variable communication steps) in a task with `step: measured`.
  void check_fixed_steps() {
    for (std::size_t i = 0; i < infos_.size() && i < graph_.diagram.blocks.size(); ++i) {
      if (!infos_[i].block) continue;
      const std::string why = infos_[i].block->fixed_step_reason();
      if (why.empty()) continue;
      const auto& b = graph_.diagram.blocks[i];
      for (const auto& t : graph_.tasks) {
        if (t.name == b.task && t.step == StepPolicy::kMeasured) {
          in_.error(infos_[i].where, "block '" + b.name + "' (" + infos_[i].block->type() + ") runs in task '" +
                                         t.name + "' with step: measured, but " + why +
                                         " — give the task step: fixed, or use an FMU that can vary its step");
        }
      }
    }
  }

  std::optional<CouplingSpec> coupling_spec(const YAML::Node& node, const std::string& what) {
    if (!node.IsMap()) {
      in_.error(node, what + " is " + Reader::kind(node) + " — expected a mapping with 'method' and its parameters");
      return std::nullopt;
    }
    CouplingSpec c;
    c.where = location_of(node);
    in_.unique_keys(node, what);
    const auto method = in_.text(node, "method", what, true);
    if (!method) return std::nullopt;
    c.method = *method;
    std::map<std::string, Location> where;
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string key = it->first.Scalar();
      if (key == "method") continue;
      if (key == "max_extrapolation" || key == "max_tag_lead") {
        const auto seconds = in_.duration(node, key, what, false);
        if (!seconds) return std::nullopt;
        if (!(*seconds > 0.0)) {
          in_.error(it->second, what + ": '" + key + "' must be positive — expected a duration like \"50ms\"");
          return std::nullopt;
        }
        (key == "max_extrapolation" ? c.max_extrapolation : c.max_tag_lead) = seconds;
        continue;
      }
      where[key] = location_of(it->first);
      if (!it->second.IsScalar()) {
        in_.error(it->second,
                  what + ": parameter '" + key + "' is " + Reader::kind(it->second) + " — expected a single value");
        return std::nullopt;
      }
      c.params.push_back({key, it->second.Scalar()});
    }
    if (plugins_not_loaded_ && !methods_->find(c.method)) {
      // May come from a plugin; it is checked when the plugins are loaded.
      in_.note(location_of(node["method"]), what + ": method '" + c.method +
                                                "' is not built in; the plugins were not loaded to check it "
                                                "(rtcosim check --load-plugins --plugin-dir DIR does)");
      return c;
    }
    try {
      (void)methods_->resolve(c.method, c.params);
    } catch (const coupling::CouplingError& e) {
      const auto it = where.find(e.parameter());
      in_.error(it != where.end() ? it->second : location_of(node["method"]), e.what());
      return std::nullopt;
    }
    return c;
  }

  void read_wires(const YAML::Node& list) {
    // No 'wires' (or 'wires:' with nothing) is a graph without wires: one
    // block with no inputs runs alone. Without a readable wire list, every
    // input would be "not connected": one mistake, one message.
    if (!list || list.IsNull()) return;
    if (!list.IsSequence()) {
      in_.error(list, "'wires' is " + Reader::kind(list) + " — expected a list of wires");
      wires_unread_ = true;
      return;
    }
    for (const auto& node : list) {
      if (!in_.mapping(node, "a wire", kWireKeys)) continue;
      WireEntry w;
      w.where = location_of(node);
      const auto from = node["from"] ? in_.endpoint(node["from"], "'from'") : std::nullopt;
      const auto to = node["to"] ? in_.endpoint(node["to"], "'to'") : std::nullopt;
      if (!node["from"]) in_.error(node, "a wire has no 'from' — it is required (\"block.port\")");
      if (!node["to"]) in_.error(node, "a wire has no 'to' — it is required (\"block.port\")");
      if (!from || !to) {
        if (to) wired_inputs_.insert(to->str());  // reported already; not "not connected" as well
        continue;
      }
      w.wire = {*from, *to};
      if (node["coupling"]) {
        // An invalid coupling is reported; the wire itself stays, so its
        // input is not reported as unconnected too.
        w.coupling = coupling_spec(node["coupling"], "the coupling of wire '" + from->str() + " -> " + to->str() + "'");
      }
      wire_nodes_.push_back(node);
      graph_.diagram.wires.push_back(w.wire);
      graph_.wires.push_back(std::move(w));
    }
  }

  void read_record(const YAML::Node& node) {
    if (!node) return;
    if (!in_.mapping(node, "'record'", {"signals", "file", "format", "units"})) return;
    const auto signals = node["signals"];
    if (signals) {
      if (!signals.IsSequence()) {
        in_.error(signals, "'record.signals' is " + Reader::kind(signals) + " — expected a list of \"block.port\"");
      } else {
        for (const auto& s : signals) {
          if (auto e = in_.endpoint(s, "a recorded signal")) {
            graph_.record.signals.push_back(*e);
            record_nodes_.push_back(s);
          }
        }
      }
    }
    if (auto f = in_.text(node, "file", "'record'", !graph_.record.signals.empty())) graph_.record.file = *f;
    std::vector<std::string> formats;
    for (const auto& row : base::kRecordFormats) formats.emplace_back(row.name);
    if (auto f = in_.choice(node, "format", "'record'", formats)) graph_.record.format = *f;
    const auto units = node["units"];
    if (!units) return;
    if (!units.IsMap()) {
      in_.error(units, "'record.units' is " + Reader::kind(units) + " — expected a mapping of \"block.port\": unit");
      return;
    }
    for (const auto& u : units) {
      const std::string key = u.first.IsScalar() ? u.first.Scalar() : std::string();
      const bool recorded = std::any_of(graph_.record.signals.begin(), graph_.record.signals.end(),
                                        [&](const tasks::Endpoint& e) { return e.str() == key; });
      if (!recorded) {
        in_.error(u.first, "'record.units' names '" + key +
                               "', which 'record.signals' does not list — expected one "
                               "of the recorded signals");
      } else if (auto unit = in_.text(units, key, "'record.units'", true)) {
        graph_.record.units[key] = *unit;
      }
    }
  }

  void read_trace(const YAML::Node& node) {
    if (!node) return;
    if (!in_.mapping(node, "'trace'", {"enabled", "directory"})) return;
    if (auto e = in_.boolean(node, "enabled", "'trace'")) graph_.trace.enabled = *e;
    if (auto d = in_.text(node, "directory", "'trace'", false)) graph_.trace.directory = *d;
  }

  // docs/sync.md. Elements name a dead time and a cycle time (or the task
  // whose period is its cycle); hops are "A -> B sync|async".
  void read_sync(const YAML::Node& node) {
    if (!node) return;
    if (!in_.mapping(node, "'sync'", {"delay", "compare", "optimise"})) return;
    SyncSpec& sync = graph_.sync;
    sync.enabled = true;
    const YAML::Node delay = node["delay"];
    if (delay && delay.IsScalar() && delay.Scalar() == "measured") {
      sync.measured = true;
    } else if (delay && delay.IsScalar() && delay.Scalar() != "auto") {
      if (auto d = in_.duration(node, "delay", "'sync'", true)) sync.delay = *d;
    } else if (delay && delay.IsMap()) {
      read_sync_delay(delay);
    } else if (delay) {
      in_.error(delay, "'sync.delay' is " + Reader::kind(delay) +
                           " — expected a duration (\"8ms\"), 'measured' (from the plant data's time tags) or a "
                           "mapping with 'auto: true', 'elements', 'measurement' and 'simulation'");
    }
    const YAML::Node compare = node["compare"];
    if (!compare || !compare.IsSequence() || compare.size() == 0) {
      in_.error(compare ? compare : node,
                "'sync' needs 'compare': a list of {simulated: block.port, measured: "
                "block.port}, both among 'record.signals'");
      return;
    }
    for (const auto& pair : compare) {
      if (!in_.mapping(pair, "a 'sync.compare' entry", {"simulated", "measured", "weight"})) continue;
      auto sim = in_.endpoint(pair["simulated"], "'simulated'");
      auto meas = in_.endpoint(pair["measured"], "'measured'");
      if (!sim || !meas) continue;
      SyncComparison c{*sim, *meas, 1.0};
      if (pair["weight"]) {
        if (!pair["weight"].IsScalar() || !(pair["weight"].as<double>(-1.0) > 0.0)) {
          in_.error(pair["weight"], "'weight' is " + Reader::kind(pair["weight"]) + " — expected a number > 0");
        } else {
          c.weight = pair["weight"].as<double>();
        }
      }
      for (const auto* e : {&c.simulated, &c.measured}) {
        const bool recorded = std::any_of(graph_.record.signals.begin(), graph_.record.signals.end(),
                                          [&](const tasks::Endpoint& r) { return r.str() == e->str(); });
        if (!recorded) in_.error(pair, "'sync.compare' names '" + e->str() + "', which 'record.signals' does not list");
      }
      sync.compare.push_back(c);
    }
    read_sync_optimise(node["optimise"]);
  }

  // docs/sync.md, "The state synchronisation from a task graph".
  void read_sync_optimise(const YAML::Node& node) {
    if (!node) return;
    const std::string what = "'sync.optimise'";
    if (!in_.mapping(
            node, what,
            {"variables", "tasks", "step", "horizon", "scheme", "solver", "max_evaluations", "max_time", "reduce"}))
      return;
    SyncOptimiseSpec& o = graph_.sync.optimise;
    o.enabled = true;
    o.where = location_of(node);
    if (const YAML::Node tasks = node["tasks"]) {
      if (!tasks.IsSequence() || tasks.size() == 0) {
        in_.error(tasks, what + ": 'tasks' is " + Reader::kind(tasks) + " — expected a list of task names");
      } else {
        for (const auto& t : tasks) {
          if (!t.IsScalar() || !graph_.find_task(t.Scalar())) {
            in_.error(t, what + ": 'tasks' names " + Reader::kind(t) + ", which is not a task of this graph");
          } else {
            o.tasks.push_back(t.Scalar());
          }
        }
      }
    }
    if (auto h = in_.duration(node, "step", what, false)) {
      if (!(*h > 0.0)) in_.error(node["step"], what + ": 'step' must be > 0 — the common macro step h");
      o.step = *h;
    }
    if (auto n = in_.integer(node, "horizon", what, 1, 1000)) o.horizon = static_cast<int>(*n);
    if (auto scheme = in_.choice(node, "scheme", what, {"static", "dynamic"})) o.dynamic = *scheme == "dynamic";
    if (auto solver = in_.choice(node, "solver", what, {"bobyqa", "nelder_mead", "sbplx"})) o.solver = *solver;
    if (auto n = in_.integer(node, "max_evaluations", what, 1, 1000000)) o.max_evaluations = static_cast<int>(*n);
    if (auto t = in_.duration(node, "max_time", what, false)) o.max_time = *t;
    if (auto r = in_.boolean(node, "reduce", what)) o.reduce = *r;
    const YAML::Node vars = node["variables"];
    if (!vars || !vars.IsSequence() || vars.size() == 0) {
      in_.error(vars ? vars : node, what +
                                        " needs 'variables': a list of {parameter: block.name, lower, upper, "
                                        "start}, each a tunable parameter of a block");
      return;
    }
    for (const auto& v : vars) {
      if (!in_.mapping(v, "a 'sync.optimise.variables' entry", {"parameter", "lower", "upper", "start"})) continue;
      const auto param = in_.endpoint(v["parameter"], "'parameter'");
      if (!param) continue;
      SyncVariable var{param->block, param->port, 0.0, 0.0, 0.0, location_of(v)};
      bool good = true;
      for (auto [key, out] : {std::pair{"lower", &var.lower}, {"upper", &var.upper}, {"start", &var.start}}) {
        const YAML::Node n = v[key];
        double x = 0.0;
        if (!n || !n.IsScalar() || !YAML::convert<double>::decode(n, x) || !std::isfinite(x)) {
          in_.error(n ? n : v, std::string("a decision variable's '") + key + "' is " +
                                   (n ? Reader::kind(n) : std::string("missing")) + " — expected a finite number");
          good = false;
        }
        *out = x;
      }
      if (good && !(var.lower < var.upper && var.lower <= var.start && var.start <= var.upper)) {
        auto num = [](double x) {
          std::ostringstream text;
          text << x;
          return text.str();
        };
        in_.error(v, "decision variable '" + param->str() + "': lower " + num(var.lower) + ", start " + num(var.start) +
                         ", upper " + num(var.upper) + " — expected lower < upper and the start between them");
        good = false;
      }
      const auto it = block_index_.find(param->block);
      if (it == block_index_.end()) {
        in_.error(v["parameter"], "decision variable '" + param->str() + "': no block named '" + param->block + "'");
        continue;
      }
      const auto& block = infos_[it->second].block;
      if (block) {
        std::vector<std::string> names;
        std::string listed;
        for (const char* n : block->tunable_parameters()) {
          listed += (names.empty() ? "" : ", ") + std::string(n);
          names.emplace_back(n);
        }
        if (std::find(names.begin(), names.end(), param->port) == names.end()) {
          in_.error(v["parameter"], "block '" + param->block + "' (" + block->type() + ") has no tunable parameter '" +
                                        param->port + "' — " +
                                        (names.empty() ? std::string("it has none (a scalar gain's 'gain' and a "
                                                                     "scalar constant's 'value' are)")
                                                       : "expected one of: " + listed));
          good = false;
        }
      }
      if (good) o.variables.push_back(var);
    }
  }

  void read_sync_delay(const YAML::Node& delay) {
    SyncSpec& sync = graph_.sync;
    if (!in_.mapping(delay, "'sync.delay'", {"auto", "grid", "acquisition", "elements", "measurement", "simulation"}))
      return;
    sync.automatic = in_.boolean(delay, "auto", "'sync.delay'").value_or(false);
    if (!sync.automatic) {
      in_.error(delay, "'sync.delay' as a mapping needs 'auto: true' — or give the delay itself, e.g. \"8ms\"");
      return;
    }
    if (auto g = in_.duration(delay, "grid", "'sync.delay'", false)) sync.grid = *g;
    if (auto a = in_.text(delay, "acquisition", "'sync.delay'", false)) acquisition_ = *a;
    std::map<std::string, coupling::sync::DelayElement> elements;
    const YAML::Node list = delay["elements"];
    if (!list || !list.IsMap()) {
      in_.error(list ? list : delay,
                "'sync.delay.elements' must be a mapping of element name to {dead_time, cycle "
                "or task}, e.g. {P: {dead_time: 10ms, cycle: 0.1ms}}");
      return;
    }
    for (const auto& e : list) {
      const std::string name = e.first.Scalar();
      const std::string what = "sync element '" + name + "'";
      if (!in_.mapping(e.second, what, {"dead_time", "cycle", "task"})) continue;
      coupling::sync::DelayElement element{name, in_.duration(e.second, "dead_time", what, true).value_or(0.0), 0.0};
      if (auto task = in_.text(e.second, "task", what, false)) {
        const auto it =
            std::find_if(graph_.tasks.begin(), graph_.tasks.end(), [&](const TaskSpec& t) { return t.name == *task; });
        if (it == graph_.tasks.end()) {
          in_.error(e.second["task"], what + " takes its cycle from task '" + *task + "', which 'tasks' does not list");
        } else {
          element.cycle = it->period;
        }
      } else {
        element.cycle = in_.duration(e.second, "cycle", what + " (or 'task')", true).value_or(0.0);
      }
      elements[name] = element;
    }
    if (!acquisition_.empty()) {
      if (!elements.count(acquisition_)) {
        in_.error(delay["acquisition"], "'sync.delay.acquisition' is '" + acquisition_ + "', not an element");
      } else {
        sync.acquisition_cycle = elements[acquisition_].cycle;
      }
    }
    for (const char* path : {"measurement", "simulation"}) {
      auto& hops = std::string(path) == "measurement" ? sync.measurement_path : sync.simulation_path;
      const YAML::Node seq = delay[path];
      if (!seq || !seq.IsSequence()) {
        in_.error(seq ? seq : delay,
                  std::string("'sync.delay.") + path + "' must be a list of hops like \"C -> P sync\"");
        continue;
      }
      for (const auto& h : seq) {
        std::istringstream words(h.IsScalar() ? h.Scalar() : std::string());
        std::string from, arrow, to, kind, power, rest;
        words >> from >> arrow >> to >> kind >> power >> rest;
        // "^n": the hop n times over (eq. 4.15's alpha^n_CM, n = T_D).
        int repeat = 1;
        bool power_ok = power.empty();
        if (!power.empty() && power[0] == '^') {
          const std::string digits = power.substr(1);
          power_ok = !digits.empty() && digits.size() <= 4 &&
                     std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); });
          if (power_ok) repeat = std::stoi(digits);
          power_ok = power_ok && repeat >= 1 && repeat <= 1000;
        }
        if (arrow != "->" || (kind != "sync" && kind != "async") || !elements.count(from) || !elements.count(to) ||
            !power_ok || !rest.empty()) {
          in_.error(h, "hop " + Reader::kind(h) +
                           " — expected \"A -> B sync\" or \"A -> B async\", optionally followed by ^n "
                           "(the hop n times over, 1..1000), with A and B among 'sync.delay.elements'");
          continue;
        }
        hops.push_back({elements[from], elements[to],
                        kind == "sync" ? coupling::sync::HopKind::synchronous : coupling::sync::HopKind::asynchronous,
                        repeat});
      }
    }
    try {
      sync.delay = coupling::sync::output_delay(sync.measurement_path, sync.simulation_path, sync.grid).delta_o;
    } catch (const coupling::sync::DelayModelError& e) {
      in_.error(delay, e.what());
    }
  }

  void read_plugins(const YAML::Node& node) {
    if (!node) return;
    if (!node.IsSequence()) {
      in_.error(node, "'plugins' is " + Reader::kind(node) + " — expected a list of plugin ids, e.g. [sample_linear]");
      return;
    }
    // A file names plugins by id only; where they are loaded from is for
    // whoever runs the program to say (PluginPolicy), never for the file: a
    // file naming a directory would make us run any code it points at.
    std::vector<YAML::Node> nodes;
    for (const auto& d : node) {
      if (d.IsScalar() && is_plugin_id(d.Scalar())) {
        graph_.plugins.push_back(d.Scalar());
        nodes.push_back(d);
      } else if (d.IsScalar() && d.Scalar().find('/') != std::string::npos) {
        in_.error(d,
                  "'plugins' names plugins by id, not by path — write the .so file's name without '.so' and "
                  "allow its directory with --plugin-dir");
      } else {
        in_.error(d, "a plugin is " + Reader::kind(d) + " — expected a plugin id (letters, digits, '_', '-', '.')");
      }
    }
    if (graph_.plugins.empty()) return;
    if (!options_.plugins.load) {
      plugins_not_loaded_ = true;
      return;
    }
    // The methods the rest of the file may name: the given ones plus the
    // plugins'. A plugin that fails is a warning: the file may still work.
    with_plugins_ = std::make_unique<coupling::MethodRegistry>(*methods_);
    for (std::size_t i = 0; i < graph_.plugins.size(); ++i) {
      std::string why;
      const std::string file = find_plugin(graph_.plugins[i], options_.plugins.directories, &why);
      if (file.empty()) {
        in_.error(nodes[i], why);
        continue;
      }
      const auto d = coupling::load_plugin_file(*with_plugins_, file);
      if (!d.ok) in_.warning(location_of(nodes[i]), d.path + ": " + d.message);
    }
    methods_ = with_plugins_.get();
  }

 public:
  [[nodiscard]] const coupling::MethodRegistry& methods() const noexcept { return *methods_; }

 private:
  // Ports, widths, sources, unconnected inputs, task assignment, couplings
  // and, when all of that holds, algebraic loops over the whole diagram.
  void check_diagram() {
    std::vector<std::string> block_names;
    for (const auto& b : graph_.diagram.blocks) block_names.push_back(b.name);
    std::vector<std::string> task_names;
    std::set<std::string_view> task_set;  // a scan per block made 10^4 tasks a quadratic load
    for (const auto& t : graph_.tasks) {
      if (task_set.insert(t.name).second) task_names.push_back(t.name);
    }
    for (std::size_t i = 0; i < graph_.diagram.blocks.size(); ++i) {
      const auto& b = graph_.diagram.blocks[i];
      if (b.task.empty() || task_set.count(b.task) || graph_.tasks.empty()) continue;
      std::string message = "block '" + b.name + "' runs in task '" + b.task + "', which is not defined";
      if (const auto guess = base::closest_match(b.task, task_names); !guess.empty())
        message += " (did you mean '" + guess + "'?)";
      in_.error(graph_.block_locations[i], message + " — expected one of: " + join(task_names));
    }

    std::map<std::string, std::string> driver;  // "block.input" -> "block.output"
    std::map<std::string, int> drive_count;
    bool wiring_ok = true;
    for (std::size_t w = 0; w < graph_.wires.size(); ++w) {
      auto& entry = graph_.wires[w];
      const YAML::Node& node = wire_nodes_[w];
      const auto out_port = find_port(entry.wire.from, node["from"], true);
      const auto in_port = find_port(entry.wire.to, node["to"], false);
      if (in_port) driver.emplace(entry.wire.to.str(), entry.wire.from.str());  // no cascade of "not connected"
      if (!out_port || !in_port) {
        wiring_ok = false;
        continue;
      }
      if (out_port->width != in_port->width) {
        in_.error(node, "wire '" + entry.wire.from.str() + " -> " + entry.wire.to.str() + "': widths differ (" +
                            entry.wire.from.str() + " has " + std::to_string(out_port->width) + " signal(s), " +
                            entry.wire.to.str() + " expects " + std::to_string(in_port->width) +
                            ") — expected ports of equal width");
        wiring_ok = false;
      }
      const auto it = driver.find(entry.wire.to.str());
      if (it->second != entry.wire.from.str() || ++drive_count[entry.wire.to.str()] > 1) {
        in_.error(node["to"], "input '" + entry.wire.to.str() + "' is driven twice: by '" + it->second + "' and by '" +
                                  entry.wire.from.str() + "' — an input takes one source");
        wiring_ok = false;
      }
      const auto& from_task = graph_.diagram.blocks[block_index_[entry.wire.from.block]].task;
      const auto& to_task = graph_.diagram.blocks[block_index_[entry.wire.to.block]].task;
      entry.crosses_tasks = from_task != to_task;
      if (!entry.crosses_tasks && entry.coupling) {
        in_.error(node["coupling"], "wire '" + entry.wire.from.str() + " -> " + entry.wire.to.str() +
                                        "' stays within task '" + from_task +
                                        "' and takes no coupling — only wires between tasks become links");
      }
      if (entry.crosses_tasks) check_rim_link(entry, node, *out_port, *in_port);
    }
    for (std::size_t i = 0; i < infos_.size(); ++i) {
      const auto& info = infos_[i];
      if (!info.block) {
        wiring_ok = false;
        continue;
      }
      for (const auto& port : info.block->inputs()) {
        const std::string key = info.block->name() + "." + port.name;
        if (wires_unread_ || wired_inputs_.count(key)) {
          wiring_ok = false;
        } else if (!driver.count(key)) {
          in_.error(info.where, "input '" + key + "' of block '" + info.block->name() + "' (" + info.block->type() +
                                    ") is not connected — wire a block output to it");
          wiring_ok = false;
        }
      }
    }
    for (std::size_t r = 0; r < graph_.record.signals.size(); ++r) {
      (void)find_port(graph_.record.signals[r], record_nodes_[r], true);
    }
    if (!wiring_ok || has_errors(result_.diagnostics)) return;

    // Algebraic loops across the whole diagram: the merged partition finds them.
    try {
      std::vector<std::unique_ptr<tasks::Block>> merged;
      for (const auto& b : graph_.diagram.blocks) merged.push_back(blocks_.create(b.type, b.name, b.params));
      tasks::Partition check("whole diagram", std::move(merged), graph_.diagram.wires, {},
                             tasks::IntegratorKind::kEuler);
    } catch (const tasks::BlockError& e) {
      const auto it = block_index_.find(e.block());
      in_.error(it != block_index_.end() ? graph_.block_locations[it->second] : Location{1, 1}, e.what());
    }
  }

  // A reduced interface model (a mechanical block's `rim` port, docs/rim.md)
  // is a packed matrix payload, not a signal: only the `rim` method carries
  // it between tasks, and the `rim` method carries nothing else.
  void check_rim_link(const WireEntry& entry, const YAML::Node& node, const tasks::PortInfo& out,
                      const tasks::PortInfo& in) {
    const std::string& method = graph_.coupling_of(entry).method;
    const bool payload = out.name == "rim" && in.name == "rim";
    const std::string wire = "wire '" + entry.wire.from.str() + " -> " + entry.wire.to.str() + "'";
    const Location at = entry.coupling ? location_of(node["coupling"]) : location_of(node);
    if (payload && method != "rim") {
      in_.error(at, wire + " carries a reduced interface model, which method '" + method +
                        "' would extrapolate like a signal — expected coupling: {method: rim}");
    } else if (!payload && method == "rim") {
      in_.error(at, wire +
                        " uses method 'rim', which carries a reduced interface model from a mechanical "
                        "block's 'rim' output to another's 'rim' input — expected a signal method (e.g. zoh, "
                        "predictor) here, or a wire from X.rim to Y.rim");
    }
  }

  std::optional<tasks::PortInfo> find_port(const tasks::Endpoint& e, const YAML::Node& at, bool output) {
    const auto it = block_index_.find(e.block);
    if (it == block_index_.end()) {
      std::vector<std::string> names;
      for (const auto& [n, i] : block_index_) names.push_back(n);
      std::string message = "no block named '" + e.block + "'";
      if (const auto guess = base::closest_match(e.block, names); !guess.empty())
        message += " (did you mean '" + guess + "'?)";
      in_.error(at, message + " in '" + e.str() + "'");
      return std::nullopt;
    }
    const auto& block = infos_[it->second].block;
    if (!block) return std::nullopt;  // already reported
    const auto& ports = output ? block->outputs() : block->inputs();
    std::vector<std::string> names;
    for (const auto& p : ports) {
      if (p.name == e.port) return p;
      names.push_back(p.name);
    }
    std::string message = "block '" + e.block + "' (" + block->type() + ") has no " + (output ? "output" : "input") +
                          " port '" + e.port + "'";
    const auto& other = output ? block->inputs() : block->outputs();
    if (std::any_of(other.begin(), other.end(), [&](const tasks::PortInfo& p) { return p.name == e.port; })) {
      message += " ('" + e.port + "' is one of its " + (output ? "inputs" : "outputs") + ")";
    } else if (const auto why = block->why_not_a_port(e.port); !why.empty()) {
      message += " (" + why + ")";
    } else if (const auto guess = base::closest_match(e.port, names); !guess.empty()) {
      message += " (did you mean '" + guess + "'?)";
    }
    in_.error(at,
              message + " — its " + (output ? "outputs" : "inputs") + ": " + (names.empty() ? "none" : join(names)));
    return std::nullopt;
  }

  void check_tasks() {
    const int cpus = options_.cpu_count > 0 ? options_.cpu_count : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
    // Per host: tasks on two machines may share a CPU number and priority.
    std::map<std::tuple<std::string, int, int>, std::string> cpu_priority;
    std::map<std::string, const TaskSpec*> group_leader;
    std::map<std::string, std::vector<const TaskSpec*>> groups;
    std::map<CpuId, Location> first_on_cpu;
    std::set<std::string_view> tasks_with_blocks;
    for (const auto& b : graph_.diagram.blocks) tasks_with_blocks.insert(b.task);
    for (const auto& t : graph_.tasks) {
      const std::string what = "task '" + t.name + "'";
      if (t.cpu >= cpus) {
        in_.warning(t.where, what + " is pinned to CPU " + std::to_string(t.cpu) + ", but this machine has " +
                                 std::to_string(cpus) + " CPU(s) (0-" + std::to_string(cpus - 1) +
                                 ") — fine if the file is meant for another machine");
      }
      // One thread per task, or per rate group (its first task stands for it).
      const bool own_thread = t.rate_group.empty() || !group_leader.count(t.rate_group);
      if (t.cpu >= 0 && t.priority > 0 && own_thread) {
        const auto [it, fresh] = cpu_priority.emplace(std::make_tuple(t.host, t.cpu, t.priority), t.name);
        if (!fresh) {
          in_.error(t.where,
                    what + " and task '" + it->second + "' share CPU " + std::to_string(t.cpu) + " and priority " +
                        std::to_string(t.priority) +
                        " — SCHED_FIFO would run them in arrival order; give them different priorities or CPUs");
        }
      }
      if (!t.rate_group.empty()) {
        const auto [it, fresh] = group_leader.emplace(t.rate_group, &t);
        if (!fresh) {
          const TaskSpec& lead = *it->second;
          if (lead.cpu != t.cpu || lead.priority != t.priority) {
            in_.error(t.where, what + " is in rate group '" + t.rate_group + "' with task '" + lead.name +
                                   "' but has another cpu or priority — a rate group runs in one thread");
          }
        }
        groups[t.rate_group].push_back(&t);
      }
      if (t.cpu >= 0) first_on_cpu.emplace(CpuId{t.host, t.cpu}, t.where);
      if (!tasks_with_blocks.count(t.name) && !t.name.empty()) in_.warning(t.where, what + " runs no block");
    }
    // A rate group runs period_slowest / period_member frames of each member
    // per cycle: every member's period must divide the slowest one.
    for (const auto& [group, members] : groups) {
      const TaskSpec* slowest = members.front();
      for (const TaskSpec* m : members) {
        if (m->period > slowest->period) slowest = m;
      }
      for (const TaskSpec* m : members) {
        if (m == slowest || !(m->period > 0.0)) continue;
        const double ratio = slowest->period / m->period;
        if (std::fabs(ratio - std::round(ratio)) > 1e-9 * ratio) {
          char shown[32];
          std::snprintf(shown, sizeof shown, "%g", ratio);
          in_.error(m->where, "task '" + m->name + "' in rate group '" + group + "' has period " +
                                  base::format_duration(m->period) + ", and the group's slowest task '" +
                                  slowest->name + "' " + base::format_duration(slowest->period) + ": the ratio is " +
                                  shown +
                                  " — a rate group runs a whole number of each member's frames per cycle; make the"
                                  " ratio an integer, or give the task its own thread (no rate_group), where links"
                                  " couple any ratio asynchronously");
        }
      }
    }
    const Schedulability sched = analyse_schedulability(graph_);
    for (const auto& [cpu, u] : sched.cpu_load) {
      if (u > 1.0) {
        in_.warning(first_on_cpu[cpu], cpu.str() + " is loaded to " + std::to_string(std::lround(u * 100)) +
                                           " % by the declared execution times — its tasks will overrun");
      }
    }
    for (const auto& th : sched.threads) {
      const auto load = sched.cpu_load.find(CpuId{th.host, th.cpu});
      if (th.meets_deadline() || (load != sched.cpu_load.end() && load->second > 1.0)) continue;
      const TaskSpec* first = graph_.find_task(th.tasks.front());
      const std::string what = th.tasks.size() > 1 ? "rate group '" + th.name + "'" : "task '" + th.name + "'";
      const std::string response =
          std::isfinite(th.response) ? base::format_duration(th.response) : std::string("unbounded");
      const std::string where = th.cpu >= 0 ? " on " + CpuId{th.host, th.cpu}.str() : std::string();
      std::string why = "longest scripted execution " + base::format_duration(th.execution);
      if (!std::isfinite(th.response)) {
        why += "; the higher priorities on the CPU leave it too little time";
      } else if (th.response > th.execution) {
        why += ", preempted by higher priorities for " + base::format_duration(th.response - th.execution);
      }
      in_.warning(first->where, what + where + ": worst-case response time " + response + " exceeds its period " +
                                    base::format_duration(th.period) + " — its frames will overrun (" + why + ")");
    }
  }

  LoadResult& result_;
  GraphSpec& graph_;
  Reader in_;
  const LoadOptions& options_;
  const tasks::BlockRegistry& blocks_;
  const coupling::MethodRegistry* methods_;
  std::unique_ptr<coupling::MethodRegistry> with_plugins_;  // when the file's plugins are loaded
  bool plugins_not_loaded_ = false;
  std::map<std::string, std::size_t> block_index_;
  std::vector<BlockInfo> infos_;
  std::vector<YAML::Node> wire_nodes_;
  std::vector<YAML::Node> record_nodes_;
  std::string acquisition_;             // sync.delay.acquisition
  bool wires_unread_ = false;           // 'wires' missing or not a list
  std::set<std::string> wired_inputs_;  // inputs of wires dropped for another error
};

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
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
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
    loader.load(root);
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
