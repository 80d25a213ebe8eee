#include "base/duration.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

namespace rtcosim::base {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

constexpr const char* kAccepted = "expected a number with a unit: ns, us, ms, s, min or h (e.g. \"5ms\", \"250us\", \"0.02s\")";

}  // namespace

std::optional<double> parse_duration(std::string_view text, std::string* error) {
  auto fail = [&](std::string why) -> std::optional<double> {
    if (error) *error = std::move(why);
    return std::nullopt;
  };
  const std::string_view s = trim(text);
  if (s.empty()) return fail(std::string("empty duration — ") + kAccepted);
  double number = 0.0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), number);
  if (ec != std::errc() || end == s.data()) {
    return fail("'" + std::string(text) + "' is not a duration — " + kAccepted);
  }
  const std::string_view unit = trim(std::string_view(end, static_cast<std::size_t>(s.data() + s.size() - end)));
  double scale = 0.0;
  if (unit.empty() || unit == "s") {
    scale = 1.0;
  } else if (unit == "ms") {
    scale = 1e-3;
  } else if (unit == "us" || unit == "µs") {
    scale = 1e-6;
  } else if (unit == "ns") {
    scale = 1e-9;
  } else if (unit == "min") {
    scale = 60.0;
  } else if (unit == "h") {
    scale = 3600.0;
  } else {
    return fail("unknown unit '" + std::string(unit) + "' in '" + std::string(text) + "' — " + kAccepted);
  }
  const double seconds = number * scale;
  if (!std::isfinite(seconds)) return fail("'" + std::string(text) + "' is not a finite duration — " + kAccepted);
  return seconds;
}

std::string format_duration(double seconds) {
  char buf[64];
  const double a = std::fabs(seconds);
  if (a == 0.0) {
    std::snprintf(buf, sizeof buf, "0 s");
  } else if (a < 1e-6) {
    std::snprintf(buf, sizeof buf, "%g ns", seconds * 1e9);
  } else if (a < 1e-3) {
    std::snprintf(buf, sizeof buf, "%g us", seconds * 1e6);
  } else if (a < 1.0) {
    std::snprintf(buf, sizeof buf, "%g ms", seconds * 1e3);
  } else if (a >= 3600.0 && std::fmod(a, 3600.0) == 0.0) {
    std::snprintf(buf, sizeof buf, "%g h", seconds / 3600.0);
  } else if (a >= 60.0 && std::fmod(a, 60.0) == 0.0) {
    std::snprintf(buf, sizeof buf, "%g min", seconds / 60.0);
  } else {
    std::snprintf(buf, sizeof buf, "%g s", seconds);
  }
  return buf;
}

}  // namespace rtcosim::base
