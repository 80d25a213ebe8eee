#pragma once

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace rtcosim::tasks {

// A set-up error about one block: what was wrong and what is expected.
// `block` and `parameter` name the culprit so a configuration loader can
// point at the right line.
class BlockError : public std::runtime_error {
 public:
  BlockError(std::string message, std::string block = {}, std::string parameter = {})
      : std::runtime_error(std::move(message)), block_(std::move(block)), parameter_(std::move(parameter)) {}
  [[nodiscard]] const std::string& block() const noexcept { return block_; }
  [[nodiscard]] const std::string& parameter() const noexcept { return parameter_; }

 private:
  std::string block_;
  std::string parameter_;
};

using Vector = std::vector<double>;
using Matrix = std::vector<std::vector<double>>;  // rows
using ParamValue = std::variant<double, Vector, Matrix, std::string, bool>;

// A text parameter that lists names ("a, b, c"): the names, trimmed, empty
// ones dropped.
std::vector<std::string> split_names(const std::string& text);

/*
 * BlockParams: the parameters of one block as the configuration gave them
 * (numbers, vectors, matrices as lists of rows, strings, booleans). A block
 * reads them with typed getters that throw BlockError naming the block, the
 * parameter and what was expected; `check_all_used` then rejects any
 * parameter the block did not ask for. Set-up phase only.
 */
class BlockParams {
 public:
  BlockParams() = default;
  BlockParams(std::initializer_list<std::pair<const std::string, ParamValue>> values) : values_(values) {}

  void set(const std::string& name, ParamValue value) { values_[name] = std::move(value); }
  [[nodiscard]] bool has(const std::string& name) const { return values_.count(name) != 0; }
  [[nodiscard]] const std::map<std::string, ParamValue>& all() const noexcept { return values_; }

  // Typed reads for block `block`. The optional forms return the fallback
  // when absent; a present value of the wrong type or range always throws.
  double number(const std::string& block, const std::string& name) const;
  double number(const std::string& block, const std::string& name, double fallback) const;
  double positive(const std::string& block, const std::string& name) const;
  double positive(const std::string& block, const std::string& name, double fallback) const;
  double non_negative(const std::string& block, const std::string& name, double fallback) const;
  std::size_t count(const std::string& block, const std::string& name, std::size_t fallback, std::size_t min,
                    std::size_t max) const;
  Vector vector(const std::string& block, const std::string& name) const;  // a number is a 1-vector
  std::optional<Vector> vector_if(const std::string& block, const std::string& name) const;
  Matrix matrix(const std::string& block, const std::string& name) const;  // rectangular; a number is 1x1
  std::optional<Matrix> matrix_if(const std::string& block, const std::string& name) const;
  std::string text(const std::string& block, const std::string& name, const std::string& fallback) const;
  bool flag(const std::string& block, const std::string& name, bool fallback) const;

  // Throws for the first parameter no getter asked for, with did-you-mean
  // against the ones that were asked for.
  void check_all_used(const std::string& block, const std::string& type) const;

 private:
  const ParamValue* find(const std::string& name) const;
  std::map<std::string, ParamValue> values_;
  mutable std::set<std::string> used_;
};

std::string describe(const ParamValue& value);

}  // namespace rtcosim::tasks
