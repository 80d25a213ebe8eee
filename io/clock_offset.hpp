#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace rtcosim::io {

/*
 * ClockOffsetFilter: the offset of another host's clock from this host's,
 * from NTP-style ping-pong exchanges (docs/dds.md, "Clocks"). One exchange:
 * this host sends at t1 (its clock), the other receives at t2 and replies at
 * t3 (its clock), this host receives at t4. Then
 *
 *   offset     = ((t2 - t1) + (t3 - t4)) / 2   (other clock - this clock)
 *   round trip = (t4 - t1) - (t3 - t2)
 *
 * exact when both directions take equally long; otherwise off by at most
 * half the round trip. The estimate is the offset of the exchange with the
 * smallest round trip among the last kWindow (the one least delayed by
 * queueing: the min-RTT filter). Exchanges with a negative round trip or one
 * above kMaxRoundTripNs are foreign or stale input and are not kept.
 * Plain arithmetic, no allocation; one thread (the bridge's).
 */
class ClockOffsetFilter {
 public:
  static constexpr std::size_t kWindow = 8;
  static constexpr std::int64_t kMaxRoundTripNs = 1'000'000'000;

  // False (and nothing kept) for an exchange that cannot be right.
  bool add(std::int64_t t1, std::int64_t t2, std::int64_t t3, std::int64_t t4) noexcept {
    const std::int64_t round_trip = (t4 - t1) - (t3 - t2);
    if (round_trip < 0 || round_trip > kMaxRoundTripNs || t3 < t2) return false;
    // Halved separately: no overflow for clocks far apart.
    samples_[count_ % kWindow] = {(t2 - t1) / 2 + (t3 - t4) / 2, round_trip};
    ++count_;
    return true;
  }

  // Exchanges kept so far (all of them, not only the window's).
  [[nodiscard]] std::uint64_t exchanges() const noexcept { return count_; }
  // The min-RTT sample of the window; 0, 0 before the first exchange.
  [[nodiscard]] std::int64_t offset_ns() const noexcept { return best().offset; }
  [[nodiscard]] std::int64_t round_trip_ns() const noexcept { return best().round_trip; }

 private:
  struct Sample {
    std::int64_t offset = 0;
    std::int64_t round_trip = 0;
  };
  [[nodiscard]] Sample best() const noexcept {
    Sample out;
    std::int64_t least = std::numeric_limits<std::int64_t>::max();
    const std::size_t n = count_ < kWindow ? static_cast<std::size_t>(count_) : kWindow;
    for (std::size_t i = 0; i < n; ++i) {
      if (samples_[i].round_trip < least) {
        least = samples_[i].round_trip;
        out = samples_[i];
      }
    }
    return out;
  }
  std::array<Sample, kWindow> samples_{};
  std::uint64_t count_ = 0;
};

}  // namespace rtcosim::io
