#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <span>

namespace rtcosim::base {

// Inf and NaN are the doubles whose exponent bits are all ones: an integer
// test per word, which the compiler vectorises over a span (std::isfinite
// in a loop is a branch per element). RT: noexcept, no allocation.
constexpr bool nonfinite_bits(double v) noexcept {
  constexpr std::uint64_t kExponent = 0x7ff0000000000000ULL;
  return (std::bit_cast<std::uint64_t>(v) & kExponent) == kExponent;
}

// The index of the first NaN or infinite entry, or v.size() when all are
// finite. The search runs only when the branch-free sweep found one.
inline std::size_t first_nonfinite(std::span<const double> v) noexcept {
  std::uint64_t bad = 0;
  for (const double d : v) bad |= static_cast<std::uint64_t>(nonfinite_bits(d));
  if (bad == 0) return v.size();
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) return i;
  }
  return v.size();
}

}  // namespace rtcosim::base
