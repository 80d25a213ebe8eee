#pragma once

#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>

namespace rtcosim::runtime {

/*
 * LogHistogram: counts of durations (ns) in logarithmic buckets, four per
 * power of two (about 19 % wide), from 0 to about 2^40 ns. One thread (the
 * task) adds; any thread may read. Buckets are relaxed atomics: a reader
 * sees each count whole, and a percentile taken while the task runs is off
 * by at most the frames of that instant.
 *
 * RT-safe: `add` is noexcept, wait-free, allocation-free.
 */
class LogHistogram {
 public:
  static constexpr int kSubBuckets = 4;
  static constexpr int kBuckets = 42 * kSubBuckets;

  void add(std::int64_t value_ns) noexcept {
    const std::int64_t v = value_ns < 0 ? 0 : value_ns;
    buckets_[static_cast<std::size_t>(bucket_of(v))].fetch_add(1, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
    sum_.store(sum_.load(std::memory_order_relaxed) + static_cast<double>(v), std::memory_order_relaxed);
    if (v > max_.load(std::memory_order_relaxed)) max_.store(v, std::memory_order_relaxed);
    if (v < min_.load(std::memory_order_relaxed)) min_.store(v, std::memory_order_relaxed);
  }

  [[nodiscard]] std::uint64_t count() const noexcept { return count_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::int64_t max() const noexcept { return count() ? max_.load(std::memory_order_relaxed) : 0; }
  [[nodiscard]] std::int64_t min() const noexcept { return count() ? min_.load(std::memory_order_relaxed) : 0; }
  [[nodiscard]] double mean() const noexcept {
    const auto n = count();
    return n ? sum_.load(std::memory_order_relaxed) / static_cast<double>(n) : 0.0;
  }
  [[nodiscard]] std::uint64_t bucket(int i) const noexcept {
    return buckets_[static_cast<std::size_t>(i)].load(std::memory_order_relaxed);
  }
  // Upper edge (ns) of bucket i: the value a percentile in it reports.
  [[nodiscard]] static std::int64_t bucket_upper(int i) noexcept {
    if (i < kSubBuckets) return i + 1;
    const int octave = i / kSubBuckets;
    const int sub = i % kSubBuckets;
    return static_cast<std::int64_t>(std::ldexp(1.0 + static_cast<double>(sub + 1) / kSubBuckets, octave));
  }
  // The value below which a fraction p of the samples lie (bucket upper
  // edge, capped at the maximum seen).
  [[nodiscard]] std::int64_t percentile(double p) const noexcept {
    const auto n = count();
    if (n == 0) return 0;
    const auto target = static_cast<std::uint64_t>(std::ceil(p * static_cast<double>(n)));
    std::uint64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += bucket(i);
      if (seen >= target) return std::min(bucket_upper(i), max());
    }
    return max();
  }

  static int bucket_of(std::int64_t v) noexcept {
    if (v < kSubBuckets) return static_cast<int>(v);
    const int octave = 63 - __builtin_clzll(static_cast<unsigned long long>(v));
    const int sub = static_cast<int>((v >> (octave - 2)) & 3);  // the two bits after the leading one
    const int i = octave * kSubBuckets + sub;
    return i < kBuckets ? i : kBuckets - 1;
  }

 private:
  std::array<std::atomic<std::uint64_t>, kBuckets> buckets_{};
  std::atomic<std::uint64_t> count_{0};
  std::atomic<double> sum_{0.0};
  std::atomic<std::int64_t> max_{0};
  std::atomic<std::int64_t> min_{std::numeric_limits<std::int64_t>::max()};
};

// min / mean / max of a value one thread writes and others read.
class RunningRange {
 public:
  void add(double v) noexcept {
    const auto n = count_.load(std::memory_order_relaxed);
    if (n == 0 || v < min_.load(std::memory_order_relaxed)) min_.store(v, std::memory_order_relaxed);
    if (n == 0 || v > max_.load(std::memory_order_relaxed)) max_.store(v, std::memory_order_relaxed);
    sum_.store(sum_.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
    last_.store(v, std::memory_order_relaxed);
    count_.store(n + 1, std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint64_t count() const noexcept { return count_.load(std::memory_order_relaxed); }
  [[nodiscard]] double min() const noexcept { return min_.load(std::memory_order_relaxed); }
  [[nodiscard]] double max() const noexcept { return max_.load(std::memory_order_relaxed); }
  [[nodiscard]] double last() const noexcept { return last_.load(std::memory_order_relaxed); }
  [[nodiscard]] double mean() const noexcept {
    const auto n = count();
    return n ? sum_.load(std::memory_order_relaxed) / static_cast<double>(n) : 0.0;
  }

 private:
  std::atomic<std::uint64_t> count_{0};
  std::atomic<double> min_{0.0}, max_{0.0}, sum_{0.0}, last_{0.0};
};

// What one task reports, always on.
struct TaskStats {
  std::atomic<std::uint64_t> frames{0};
  std::atomic<std::uint64_t> overruns{0};
  std::atomic<std::uint64_t> missed_periods{0};
  LogHistogram wakeup_latency_ns;
  LogHistogram execution_ns;
  RunningRange step;             // seconds, of the task's (slowest) partition
  RunningRange lag;              // wall time since the epoch minus simulation time, seconds
  std::atomic<double> lost_real_time{0.0};
  RunningRange truncation_error; // ab2's on-line estimate
};

// What one link reports, beside the link's own published/dropped counters
// and its extrapolator's stale/rejected counters. Written by the consumer's
// thread only (relaxed atomics), readable from any thread.
struct LinkStats {
  RunningRange data_age;               // consumer's simulation time minus the newest tag, at each drain
  RunningRange extrapolation_interval;  // evaluation time minus the newest tag, at each sample (before the horizon)
  // Consumer frames whose outputs were evaluated from a reconstruction that
  // used a derivative fallback (a block lacked a derivative the method wants).
  std::atomic<std::uint64_t> fallback_frames{0};
  // Consumer frames whose end lay beyond the newest tag plus the link's
  // max_extrapolation: the input was held at the horizon.
  std::atomic<std::uint64_t> beyond_horizon_frames{0};
};

}  // namespace rtcosim::runtime
