#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>

namespace rtcosim::testing {

// The dice of the differential tests over generated graphs: a seeded
// std::mt19937, so that a case is reproduced from its seed alone.
class Dice {
 public:
  explicit Dice(std::uint32_t seed) : g_(seed) {}
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(g_() % n); }
  bool chance(double p) { return unit() < p; }
  // A number in [lo, hi] rounded to 1/1000, so that a graph's YAML shows it exactly.
  double real(double lo, double hi) { return std::round((lo + (hi - lo) * unit()) * 1000.0) / 1000.0; }
  // The same, as the YAML writes it.
  std::string real_text(double lo, double hi) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", real(lo, hi));
    return buf;
  }
  template <typename T, std::size_t N>
  const T& pick(const T (&a)[N]) {
    return a[below(N)];
  }

 private:
  double unit() { return static_cast<double>(g_()) / 4294967296.0; }
  std::mt19937 g_;
};

// A link coupling with random parameter values, as YAML: any built-in
// per-signal method (polynomial twice as likely), orders 1-3 or the
// default, interp_order, macro_step, max_extrapolation.
inline std::string random_coupling(Dice& d) {
  static const char* const kMethods[] = {"zoh",      "zoh_average", "polynomial", "polynomial",   "hermite",
                                         "smoothed", "ecd",         "ecc",        "interpolated", "predictor"};
  const std::string m = d.pick(kMethods);
  std::string c = "{method: " + m;
  if (m == "polynomial" || m == "hermite" || m == "smoothed" || m == "ecd" || m == "ecc" || m == "interpolated") {
    // Order 1 vs 2 vs 3 vs the default (3, but another key as written).
    if (!d.chance(0.2)) c += ", order: " + std::to_string(1 + d.below(3));
  }
  if ((m == "ecc" || m == "interpolated") && d.chance(0.5)) c += ", interp_order: " + std::to_string(1 + d.below(2));
  if ((m == "smoothed" || m == "ecd" || m == "ecc" || m == "interpolated") && d.chance(0.3)) c += ", macro_step: 1ms";
  if (d.chance(0.15)) c += ", max_extrapolation: " + std::string(d.chance(0.5) ? "2ms" : "8ms");
  return c + "}";
}

}  // namespace rtcosim::testing
