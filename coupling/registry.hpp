#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coupling/extrapolator.hpp"

namespace rtcosim::coupling {

// A set-up error about a coupling method: what was wrong and what is
// allowed. `method` and `parameter` name the culprit (empty when not known),
// so a configuration loader can point at the right line.
class CouplingError : public std::runtime_error {
 public:
  CouplingError(std::string message, std::string method = {}, std::string parameter = {})
      : std::runtime_error(std::move(message)), method_(std::move(method)), parameter_(std::move(parameter)) {}
  [[nodiscard]] const std::string& method() const noexcept { return method_; }
  [[nodiscard]] const std::string& parameter() const noexcept { return parameter_; }

 private:
  std::string method_;
  std::string parameter_;
};

enum class ParamKind { kInteger, kReal, kDuration };

// One typed parameter of a method, with its inclusive range and default.
struct ParamSpec {
  std::string name;
  ParamKind kind = ParamKind::kReal;
  double min = 0.0;
  double max = 0.0;
  double default_value = 0.0;
  std::string description;
};

// A parameter as the user wrote it (YAML scalar or command-line value).
struct ParamSetting {
  std::string name;
  std::string value;
};
using ParamSettings = std::vector<ParamSetting>;

// Validated parameter values of one method, every declared parameter present.
class ParamValues {
 public:
  void set(std::string name, double value);
  [[nodiscard]] double get(std::string_view name) const;  // throws CouplingError if undeclared
  [[nodiscard]] int get_int(std::string_view name) const { return static_cast<int>(get(name)); }
  [[nodiscard]] const std::vector<std::pair<std::string, double>>& all() const noexcept { return values_; }

 private:
  std::vector<std::pair<std::string, double>> values_;
};

using MethodFactory = std::function<std::unique_ptr<Extrapolator>(const ParamValues&)>;

// What the registry knows of a method: its id, a one-line summary, its
// parameters and how to make one. `origin` is "built-in" or a plugin's file.
struct MethodInfo {
  std::string id;
  std::string summary;
  bool uses_derivatives = false;
  std::vector<ParamSpec> params;
  MethodFactory make;
  std::string origin = "built-in";
};

/*
 * MethodRegistry: coupling methods by id, with typed, validated parameters.
 * Set-up phase only (allocates, throws CouplingError); what it creates is an
 * Extrapolator already configured for its signal count, ready for the
 * real-time path.
 */
class MethodRegistry {
 public:
  // The registry holding every built-in method (zoh, zoh_average, polynomial,
  // hermite, interpolated, smoothed, ecd, ecc, predictor, rim).
  static MethodRegistry with_builtins();

  // Adds a method; an id that exists already, or one that is not
  // [a-z0-9_]+, is a CouplingError.
  void add(MethodInfo info);

  [[nodiscard]] const MethodInfo* find(std::string_view id) const noexcept;
  [[nodiscard]] const MethodInfo& get(std::string_view id) const;  // throws, with did-you-mean
  [[nodiscard]] std::vector<std::string> ids() const;
  [[nodiscard]] const std::vector<MethodInfo>& methods() const noexcept { return methods_; }

  // Parses and range-checks `settings` against the method's parameters;
  // unset ones take their defaults.
  [[nodiscard]] ParamValues resolve(std::string_view id, const ParamSettings& settings) const;

  [[nodiscard]] std::unique_ptr<Extrapolator> create(std::string_view id, const ParamSettings& settings,
                                                     std::size_t signal_count) const;

  // True for a method that treats every signal on its own (the built-ins
  // but `rim`), so that the wires between two tasks can share one of its
  // extrapolators without changing a bit (docs/frame-program.md). A plugin
  // method is never taken to be.
  [[nodiscard]] bool per_signal(std::string_view id) const noexcept;
  void set_per_signal(std::string_view id);

 private:
  std::vector<MethodInfo> methods_;
  std::vector<std::string> per_signal_;
};

// "integer from 1 to 8", "duration from 0 s to 1 h": the allowed range in words.
std::string describe_range(const ParamSpec& spec);

}  // namespace rtcosim::coupling
