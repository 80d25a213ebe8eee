// No section of its own: the input helper every section reads with (Reader) and the helpers they share.
#include "rt_config/load_context.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <system_error>

#include "base/duration.hpp"
#include "base/text.hpp"

namespace rtcosim::config::detail {

Location location_of(const yaml::Node& node) {
  const YAML::Mark m = node.Mark();
  if (m.is_null()) return {};
  return {m.line + 1, m.column + 1};
}

bool Reader::mapping(const yaml::Node& node, const std::string& what, const std::vector<std::string>& allowed) {
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

void Reader::unique_keys(const yaml::Node& node, const std::string& what) {
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

std::string Reader::kind(const yaml::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "empty";
    case YAML::NodeType::Scalar: {
      // A long value is described, not quoted in part: a cut quote is the
      // file's content all the same, and rtcosimd answers a reload's errors
      // over its socket, where a file that is no task graph (a token, a
      // key) must not come back in pieces (issue 44: 37 of a token's 48
      // characters did). The location points at the value.
      const std::string& v = node.Scalar();
      return v.size() > 40 ? "a text of " + std::to_string(v.size()) + " characters" : "'" + v + "'";
    }
    case YAML::NodeType::Sequence:
      return node.size() == 0 ? "an empty list" : "a list";
    case YAML::NodeType::Map:
      return node.size() == 0 ? "an empty mapping" : "a mapping";
    default:
      return "undefined";
  }
}

std::optional<std::string> Reader::text(const yaml::Node& parent, const std::string& key, const std::string& what,
                                        bool required) {
  const yaml::Node node = parent[key];
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

std::optional<double> Reader::duration(const yaml::Node& parent, const std::string& key, const std::string& what,
                                       bool required) {
  const yaml::Node node = parent[key];
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

std::optional<long long> Reader::integer(const yaml::Node& parent, const std::string& key, const std::string& what,
                                         long long min, long long max) {
  const yaml::Node node = parent[key];
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

std::optional<bool> Reader::boolean(const yaml::Node& parent, const std::string& key, const std::string& what) {
  const yaml::Node node = parent[key];
  if (!node) return std::nullopt;
  if (node.IsScalar() && (node.Scalar() == "true" || node.Scalar() == "false")) return node.Scalar() == "true";
  error(node, what + ": '" + key + "' is " + kind(node) + " — expected true or false");
  return std::nullopt;
}

std::optional<std::string> Reader::choice(const yaml::Node& parent, const std::string& key, const std::string& what,
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

std::optional<tasks::ParamValue> Reader::param_value(const yaml::Node& node, const std::string& what) {
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

std::optional<tasks::Vector> Reader::numbers(const yaml::Node& node, const std::string& what) {
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

std::optional<tasks::Endpoint> Reader::endpoint(const yaml::Node& node, const std::string& what) {
  if (!node.IsScalar()) {
    error(node, what + " is " + kind(node) + " — expected \"block.port\"");
    return std::nullopt;
  }
  const std::string& s = node.Scalar();
  // At the first dot: a block's name has none, a port's may (an FMU's
  // structured variable names: 'a.b', 'x[1].y', 'der(x)').
  const auto dot = s.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == s.size()) {
    error(node, what + " is '" + s + "' — expected \"block.port\", e.g. \"airframe.y\"");
    return std::nullopt;
  }
  return tasks::Endpoint{s.substr(0, dot), s.substr(dot + 1)};
}

}  // namespace rtcosim::config::detail
