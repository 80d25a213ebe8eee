#include "coupling/registry.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "base/duration.hpp"
#include "base/text.hpp"

namespace rtcosim::coupling {

void ParamValues::set(std::string name, double value) {
  for (auto& [n, v] : values_) {
    if (n == name) {
      v = value;
      return;
    }
  }
  values_.emplace_back(std::move(name), value);
}

double ParamValues::get(std::string_view name) const {
  for (const auto& [n, v] : values_) {
    if (n == name) return v;
  }
  throw CouplingError("internal: parameter '" + std::string(name) + "' was not declared by its method", {},
                      std::string(name));
}

namespace {

std::string format_number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

bool valid_id(std::string_view id) {
  return !id.empty() && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

}  // namespace

std::string describe_range(const ParamSpec& spec) {
  switch (spec.kind) {
    case ParamKind::kInteger:
      return "an integer from " + format_number(spec.min) + " to " + format_number(spec.max);
    case ParamKind::kDuration:
      return "a duration from " + base::format_duration(spec.min) + " to " + base::format_duration(spec.max);
    case ParamKind::kReal:
      break;
  }
  return "a number from " + format_number(spec.min) + " to " + format_number(spec.max);
}

void MethodRegistry::add(MethodInfo info) {
  if (!valid_id(info.id)) {
    throw CouplingError(
        "coupling method id '" + info.id + "' is not valid — expected lower-case letters, digits and '_'", info.id);
  }
  if (const MethodInfo* existing = find(info.id)) {
    throw CouplingError("coupling method '" + info.id + "' is already registered (by " + existing->origin + ")",
                        info.id);
  }
  if (!info.make) throw CouplingError("coupling method '" + info.id + "' has no factory", info.id);
  methods_.push_back(std::move(info));
}

const MethodInfo* MethodRegistry::find(std::string_view id) const noexcept {
  for (const auto& m : methods_) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

std::vector<std::string> MethodRegistry::ids() const {
  std::vector<std::string> out;
  out.reserve(methods_.size());
  for (const auto& m : methods_) out.push_back(m.id);
  return out;
}

const MethodInfo& MethodRegistry::get(std::string_view id) const {
  if (const MethodInfo* m = find(id)) return *m;
  const auto known = ids();
  std::string message = "unknown coupling method '" + std::string(id) + "' — expected one of: " + base::join(known);
  if (const auto guess = base::closest_match(id, known); !guess.empty()) message += " (did you mean '" + guess + "'?)";
  throw CouplingError(message, std::string(id));
}

ParamValues MethodRegistry::resolve(std::string_view id, const ParamSettings& settings) const {
  const MethodInfo& method = get(id);
  ParamValues values;
  for (const auto& spec : method.params) values.set(spec.name, spec.default_value);

  for (const auto& setting : settings) {
    const auto spec_it = std::find_if(method.params.begin(), method.params.end(),
                                      [&](const ParamSpec& p) { return p.name == setting.name; });
    const std::string where = "coupling method '" + method.id + "': ";
    if (spec_it == method.params.end()) {
      std::vector<std::string> names;
      for (const auto& p : method.params) names.push_back(p.name);
      std::string message = where + "unknown parameter '" + setting.name + "' — ";
      if (names.empty()) {
        message += "this method takes no parameters";
      } else {
        message += "expected one of: " + base::join(names);
        if (const auto guess = base::closest_match(setting.name, names); !guess.empty()) {
          message += " (did you mean '" + guess + "'?)";
        }
      }
      throw CouplingError(message, method.id, setting.name);
    }
    const ParamSpec& spec = *spec_it;
    const std::string shown = where + "parameter '" + spec.name + "' = '" + setting.value + "'";
    double value = 0.0;
    if (spec.kind == ParamKind::kDuration) {
      std::string why;
      const auto parsed = base::parse_duration(setting.value, &why);
      if (!parsed)
        throw CouplingError(shown + " is not a duration — expected " + describe_range(spec), method.id, spec.name);
      value = *parsed;
    } else {
      const std::string& text = setting.value;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      const bool whole = ec == std::errc() && end == text.data() + text.size();
      if (!whole || !std::isfinite(value)) {
        throw CouplingError(shown + " is not a number — expected " + describe_range(spec), method.id, spec.name);
      }
      if (spec.kind == ParamKind::kInteger && value != std::floor(value)) {
        throw CouplingError(shown + " is not an integer — expected " + describe_range(spec), method.id, spec.name);
      }
    }
    if (value < spec.min || value > spec.max) {
      throw CouplingError(shown + " is out of range — expected " + describe_range(spec), method.id, spec.name);
    }
    values.set(spec.name, value);
  }
  return values;
}

std::unique_ptr<Extrapolator> MethodRegistry::create(std::string_view id, const ParamSettings& settings,
                                                     std::size_t signal_count) const {
  const ParamValues values = resolve(id, settings);
  std::unique_ptr<Extrapolator> extrapolator = get(id).make(values);
  if (!extrapolator)
    throw CouplingError("coupling method '" + std::string(id) + "' made no extrapolator", std::string(id));
  extrapolator->configure(signal_count);
  return extrapolator;
}

bool MethodRegistry::per_signal(std::string_view id) const noexcept {
  return std::find(per_signal_.begin(), per_signal_.end(), id) != per_signal_.end();
}

void MethodRegistry::set_per_signal(std::string_view id) { per_signal_.emplace_back(id); }

}  // namespace rtcosim::coupling
