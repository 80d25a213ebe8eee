#include "tasks/params.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "base/text.hpp"

namespace rtcosim::tasks {

namespace {

std::string where(const std::string& block, const std::string& name) {
  return "block '" + block + "': parameter '" + name + "'";
}

}  // namespace

std::string describe(const ParamValue& value) {
  std::ostringstream out;
  if (const auto* d = std::get_if<double>(&value)) {
    out << *d;
  } else if (const auto* v = std::get_if<Vector>(&value)) {
    out << "a list of " << v->size() << " numbers";
  } else if (const auto* m = std::get_if<Matrix>(&value)) {
    out << "a matrix of " << m->size() << " rows";
  } else if (const auto* s = std::get_if<std::string>(&value)) {
    out << "'" << *s << "'";
  } else {
    out << (std::get<bool>(value) ? "true" : "false");
  }
  return out.str();
}

const ParamValue* BlockParams::find(const std::string& name) const {
  const auto it = values_.find(name);
  if (it == values_.end()) return nullptr;
  used_.insert(name);
  return &it->second;
}

double BlockParams::number(const std::string& block, const std::string& name) const {
  const ParamValue* v = find(name);
  if (!v) throw BlockError(where(block, name) + " is missing — expected a number", block, name);
  const auto* d = std::get_if<double>(v);
  if (!d) throw BlockError(where(block, name) + " is " + describe(*v) + " — expected a number", block, name);
  if (!std::isfinite(*d)) throw BlockError(where(block, name) + " is not finite — expected a number", block, name);
  return *d;
}

double BlockParams::number(const std::string& block, const std::string& name, double fallback) const {
  return has(name) ? number(block, name) : (used_.insert(name), fallback);
}

double BlockParams::positive(const std::string& block, const std::string& name) const {
  const double v = number(block, name);
  if (!(v > 0.0))
    throw BlockError(where(block, name) + " = " + describe(v) + " — expected a positive number", block, name);
  return v;
}

double BlockParams::positive(const std::string& block, const std::string& name, double fallback) const {
  return has(name) ? positive(block, name) : (used_.insert(name), fallback);
}

double BlockParams::non_negative(const std::string& block, const std::string& name, double fallback) const {
  const double v = number(block, name, fallback);
  if (v < 0.0) throw BlockError(where(block, name) + " = " + describe(v) + " — expected a number >= 0", block, name);
  return v;
}

std::size_t BlockParams::count(const std::string& block, const std::string& name, std::size_t fallback, std::size_t min,
                               std::size_t max) const {
  if (!has(name)) {
    used_.insert(name);
    return fallback;
  }
  const double v = number(block, name);
  if (v != std::floor(v) || v < static_cast<double>(min) || v > static_cast<double>(max)) {
    throw BlockError(where(block, name) + " = " + describe(v) + " — expected an integer from " + std::to_string(min) +
                         " to " + std::to_string(max),
                     block, name);
  }
  return static_cast<std::size_t>(v);
}

std::optional<Vector> BlockParams::vector_if(const std::string& block, const std::string& name) const {
  const ParamValue* v = find(name);
  if (!v) return std::nullopt;
  if (const auto* d = std::get_if<double>(v)) return Vector{*d};
  const auto* vec = std::get_if<Vector>(v);
  if (!vec) throw BlockError(where(block, name) + " is " + describe(*v) + " — expected a list of numbers", block, name);
  if (vec->empty()) throw BlockError(where(block, name) + " is empty — expected a list of numbers", block, name);
  for (double x : *vec) {
    if (!std::isfinite(x)) throw BlockError(where(block, name) + " holds a non-finite number", block, name);
  }
  return *vec;
}

Vector BlockParams::vector(const std::string& block, const std::string& name) const {
  auto v = vector_if(block, name);
  if (!v) throw BlockError(where(block, name) + " is missing — expected a list of numbers", block, name);
  return *v;
}

std::optional<Matrix> BlockParams::matrix_if(const std::string& block, const std::string& name) const {
  const ParamValue* v = find(name);
  if (!v) return std::nullopt;
  if (const auto* d = std::get_if<double>(v)) return Matrix{{*d}};
  if (const auto* vec = std::get_if<Vector>(v)) {
    if (vec->empty())
      throw BlockError(where(block, name) + " is empty — expected a matrix (a list of rows)", block, name);
    return Matrix{*vec};  // one row
  }
  const auto* m = std::get_if<Matrix>(v);
  if (!m)
    throw BlockError(where(block, name) + " is " + describe(*v) + " — expected a matrix (a list of rows)", block, name);
  if (m->empty() || m->front().empty()) {
    throw BlockError(where(block, name) + " is empty — expected a matrix (a list of rows)", block, name);
  }
  for (std::size_t r = 0; r < m->size(); ++r) {
    if ((*m)[r].size() != m->front().size()) {
      throw BlockError(where(block, name) + ": row " + std::to_string(r + 1) + " has " +
                           std::to_string((*m)[r].size()) + " columns, row 1 has " + std::to_string(m->front().size()) +
                           " — expected a rectangular matrix",
                       block, name);
    }
    for (double x : (*m)[r]) {
      if (!std::isfinite(x)) throw BlockError(where(block, name) + " holds a non-finite number", block, name);
    }
  }
  return *m;
}

Matrix BlockParams::matrix(const std::string& block, const std::string& name) const {
  auto m = matrix_if(block, name);
  if (!m) throw BlockError(where(block, name) + " is missing — expected a matrix (a list of rows)", block, name);
  return *m;
}

std::string BlockParams::text(const std::string& block, const std::string& name, const std::string& fallback) const {
  const ParamValue* v = find(name);
  if (!v) {
    used_.insert(name);
    return fallback;
  }
  const auto* s = std::get_if<std::string>(v);
  if (!s) throw BlockError(where(block, name) + " is " + describe(*v) + " — expected a text", block, name);
  return *s;
}

bool BlockParams::flag(const std::string& block, const std::string& name, bool fallback) const {
  const ParamValue* v = find(name);
  if (!v) {
    used_.insert(name);
    return fallback;
  }
  const auto* b = std::get_if<bool>(v);
  if (!b) throw BlockError(where(block, name) + " is " + describe(*v) + " — expected true or false", block, name);
  return *b;
}

void BlockParams::check_all_used(const std::string& block, const std::string& type) const {
  std::vector<std::string> known(used_.begin(), used_.end());
  for (const auto& [name, value] : values_) {
    if (used_.count(name)) continue;
    std::string message = "block '" + block + "' of type '" + type + "' has no parameter '" + name + "'";
    if (known.empty()) {
      message += " — it takes no parameters";
    } else {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      message += " — expected one of: " + list;
      if (const auto guess = base::closest_match(name, known); !guess.empty()) {
        message += " (did you mean '" + guess + "'?)";
      }
    }
    throw BlockError(message, block, name);
  }
}

std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    std::string name = text.substr(start, comma - start);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (!name.empty()) out.push_back(name);
    start = comma + 1;
  }
  return out;
}

}  // namespace rtcosim::tasks
