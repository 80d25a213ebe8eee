#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <span>

namespace rtcosim::base {

// Inf and NaN are the doubles whose exponent bits are all ones: an integer
// test per word, without std::isfinite's branch (over a span,
// nonfinite_sign below is the form that vectorises). RT: noexcept, no
// allocation.
constexpr bool nonfinite_bits(double v) noexcept {
  constexpr std::uint64_t kExponent = 0x7ff0000000000000ULL;
  return (std::bit_cast<std::uint64_t>(v) & kExponent) == kExponent;
}

// The same tests with the answer in bit 63 of a word (its other bits are
// noise), made of shifts, masks, adds and ors of 64-bit lanes: SSE2,
// x86-64's baseline, has no 64-bit compare, so a loop of nonfinite_bits
// (or of `!= 0.0` into an integer) over a span stays scalar there, while
// one that ors (ands) these and tests bit 63 once vectorises.
// Bit 63 set when v is NaN or infinite: the exponent field plus one
// carries into bit 63 only when the field is all ones.
constexpr std::uint64_t nonfinite_sign(double v) noexcept {
  return (std::bit_cast<std::uint64_t>(v) & 0x7ff0000000000000ULL) + 0x0010000000000000ULL;
}
// Bit 63 set when v != 0.0 (a NaN included): the word without its sign
// bit is nonzero, and then it or its negation has bit 63 set.
constexpr std::uint64_t nonzero_sign(double v) noexcept {
  const std::uint64_t magnitude = std::bit_cast<std::uint64_t>(v) << 1;
  return magnitude | (0 - magnitude);
}

// The index of the first NaN or infinite entry, or v.size() when all are
// finite. The search runs only when the branch-free sweep found one.
inline std::size_t first_nonfinite(std::span<const double> v) noexcept {
  std::uint64_t bad = 0;
  for (const double d : v) bad |= nonfinite_sign(d);
  if ((bad >> 63) == 0) return v.size();
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) return i;
  }
  return v.size();
}

}  // namespace rtcosim::base
