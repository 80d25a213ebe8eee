#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

namespace rtcosim::io {

/*
 * The datagram a plant (a PLC, a test bench, a script, `udp_out`) sends to a
 * `plant` block with `source: udp` (docs/plant.md has the table). All
 * fields little-endian:
 *   0  u32  magic   0x50435452 ("RTCP" in memory order)
 *   4  u16  version 1
 *   6  u16  count   n, the number of values (1..64)
 *   8  u64  sequence, +1 per datagram of a sender
 *  16  f64  time tag (s, the plant's time)
 *  24  f64  n values
 * Exactly 24 + 8 n bytes; at most kMaxDatagram.
 */
inline constexpr std::uint32_t kDatagramMagic = 0x50435452u;
inline constexpr std::uint16_t kDatagramVersion = 1;
inline constexpr std::size_t kDatagramHeader = 24;
inline constexpr std::size_t kMaxDatagramValues = 64;
inline constexpr std::size_t kMaxDatagram = kDatagramHeader + 8 * kMaxDatagramValues;

struct Datagram {
  std::uint64_t sequence = 0;
  double time = 0.0;
  std::size_t count = 0;
  double values[kMaxDatagramValues] = {};
};

namespace detail {
template <typename T>
void put(unsigned char* p, T v) noexcept {
  unsigned char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  for (std::size_t i = 0; i < sizeof(T); ++i)
    p[i] = b[__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? i : sizeof(T) - 1 - i];
}
template <typename T>
T get(const unsigned char* p) noexcept {
  unsigned char b[sizeof(T)];
  for (std::size_t i = 0; i < sizeof(T); ++i)
    b[__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? i : sizeof(T) - 1 - i] = p[i];
  T v;
  std::memcpy(&v, b, sizeof(T));
  return v;
}
}  // namespace detail

// Writes a datagram of `values` into `out` (kMaxDatagram bytes); returns its size, 0 for too many values.
inline std::size_t encode_datagram(std::uint64_t sequence, double time, std::span<const double> values,
                                   unsigned char* out) noexcept {
  if (values.size() > kMaxDatagramValues) return 0;
  detail::put<std::uint32_t>(out, kDatagramMagic);
  detail::put<std::uint16_t>(out + 4, kDatagramVersion);
  detail::put<std::uint16_t>(out + 6, static_cast<std::uint16_t>(values.size()));
  detail::put<std::uint64_t>(out + 8, sequence);
  detail::put<double>(out + 16, time);
  for (std::size_t i = 0; i < values.size(); ++i) detail::put<double>(out + kDatagramHeader + 8 * i, values[i]);
  return kDatagramHeader + 8 * values.size();
}

// A datagram whose sequence number is further than this after the one
// expected counts one reset (a sender that restarted, or a hostile number),
// not that many lost datagrams.
inline constexpr std::uint64_t kMaxSequenceGap = 1u << 20;

// Validates a received datagram against the `expected` number of values;
// empty when good, else what was wrong and what would be right.
std::string decode_datagram(std::span<const unsigned char> bytes, std::size_t expected, Datagram& out);

}  // namespace rtcosim::io
