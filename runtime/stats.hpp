#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "base/counter.hpp"
#include "runtime/histogram_memory.hpp"

namespace rtcosim::runtime {

/*
 * LogHistogram: counts of durations (ns) in buckets of bounded relative
 * width, HDR-histogram style: one bucket per nanosecond below 128 ns, then
 * 64 buckets per power of two (each 1/64 of its octave's start wide, 1.6 %),
 * up to 2^37 ns (137 s; longer values count in the last bucket, the
 * maximum stays exact). A percentile reports the middle of its bucket,
 * clamped to the smallest and largest values seen, so it is within 0.8 % of
 * the exact sample (exact below 128 ns). 16 KiB of buckets per histogram,
 * from HistogramMemory: only the pages of the buckets a run writes become
 * resident (a task's four histograms were 64 kB of resident, zeroed memory
 * each; a virtual run of 10^4 tasks spent a third of its time zeroing them).
 *
 * One thread (the task) adds; any thread may read. Buckets are relaxed
 * atomics: a reader sees each count whole, and a percentile taken while the
 * task runs is off by at most the frames of that instant.
 *
 * RT-safe: `add` is noexcept, wait-free, allocation-free. `reset` is not
 * for the real-time path (it runs between runs, when no task adds).
 */
class LogHistogram {
 public:
  static constexpr int kSubBits = 6;
  static constexpr int kSubBuckets = 1 << kSubBits;  // per octave
  static constexpr int kTopOctave = 36;              // [2^36, 2^37) is the last
  static constexpr int kBuckets = (kTopOctave - kSubBits + 2) * kSubBuckets;
  static_assert(kBuckets * sizeof(std::uint64_t) <= HistogramMemory::kSlotBytes);

  LogHistogram() : buckets_(HistogramMemory::take()) {}
  ~LogHistogram() { HistogramMemory::give_back(buckets_); }
  LogHistogram(const LogHistogram&) = delete;
  LogHistogram& operator=(const LogHistogram&) = delete;

  void add(std::int64_t value_ns) noexcept {
    const std::int64_t v = value_ns < 0 ? 0 : value_ns;
    const std::atomic_ref<std::uint64_t> b(buckets_[static_cast<std::size_t>(bucket_of(v))]);
    b.store(b.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    base::add_single_writer(count_, std::uint64_t{1});
    sum_.store(sum_.load(std::memory_order_relaxed) + static_cast<double>(v), std::memory_order_relaxed);
    if (v > max_.load(std::memory_order_relaxed)) max_.store(v, std::memory_order_relaxed);
    if (v < min_.load(std::memory_order_relaxed)) min_.store(v, std::memory_order_relaxed);
  }

  void reset() noexcept {
    // The pages go back to the kernel rather than being written with zeros.
    HistogramMemory::clear(buckets_);
    count_.store(0, std::memory_order_relaxed);
    sum_.store(0.0, std::memory_order_relaxed);
    max_.store(0, std::memory_order_relaxed);
    min_.store(std::numeric_limits<std::int64_t>::max(), std::memory_order_relaxed);
  }

  [[nodiscard]] std::uint64_t count() const noexcept { return count_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::int64_t max() const noexcept { return count() ? max_.load(std::memory_order_relaxed) : 0; }
  [[nodiscard]] std::int64_t min() const noexcept { return count() ? min_.load(std::memory_order_relaxed) : 0; }
  [[nodiscard]] double mean() const noexcept {
    const auto n = count();
    return n ? sum_.load(std::memory_order_relaxed) / static_cast<double>(n) : 0.0;
  }
  [[nodiscard]] std::uint64_t bucket(int i) const noexcept {
    return std::atomic_ref<std::uint64_t>(buckets_[static_cast<std::size_t>(i)]).load(std::memory_order_relaxed);
  }
  // The resident pages of its buckets (HistogramMemory::resident_pages).
  [[nodiscard]] std::size_t resident_pages() const noexcept { return HistogramMemory::resident_pages(buckets_); }
  // Bucket i holds the values in [bucket_lower(i), bucket_upper(i)).
  [[nodiscard]] static std::int64_t bucket_lower(int i) noexcept {
    if (i < 2 * kSubBuckets) return i;
    const int octave = i / kSubBuckets - 1 + kSubBits;
    const int sub = i % kSubBuckets;
    return (std::int64_t{kSubBuckets} + sub) << (octave - kSubBits);
  }
  [[nodiscard]] static std::int64_t bucket_upper(int i) noexcept {
    if (i < 2 * kSubBuckets) return i + 1;
    const int octave = i / kSubBuckets - 1 + kSubBits;
    return bucket_lower(i) + (std::int64_t{1} << (octave - kSubBits));
  }
  // The value below which a fraction p of the samples lie: the middle of
  // the bucket that holds it, within [min, max].
  [[nodiscard]] std::int64_t percentile(double p) const noexcept {
    const auto n = count();
    if (n == 0) return 0;
    auto target = static_cast<std::uint64_t>(std::ceil(p * static_cast<double>(n)));
    if (target < 1) target = 1;
    std::uint64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += bucket(i);
      if (seen >= target) {
        const std::int64_t mid = bucket_lower(i) + (bucket_upper(i) - 1 - bucket_lower(i)) / 2;
        return std::clamp(mid, min(), max());
      }
    }
    return max();
  }

  static int bucket_of(std::int64_t v) noexcept {
    if (v < 2 * kSubBuckets) return static_cast<int>(v < 0 ? 0 : v);
    const int octave = 63 - __builtin_clzll(static_cast<unsigned long long>(v));
    if (octave > kTopOctave) return kBuckets - 1;
    const int sub = static_cast<int>((v >> (octave - kSubBits)) & (kSubBuckets - 1));
    return (octave - kSubBits + 1) * kSubBuckets + sub;
  }

 private:
  // kBuckets counts in a HistogramMemory slot; std::atomic_ref makes each
  // access atomic, as std::atomic elements did.
  std::uint64_t* buckets_;
  std::atomic<std::uint64_t> count_{0};
  std::atomic<double> sum_{0.0};
  std::atomic<std::int64_t> max_{0};
  std::atomic<std::int64_t> min_{std::numeric_limits<std::int64_t>::max()};
};

/*
 * DisplayBuckets: the coarse logarithmic buckets (four per power of two)
 * that text histograms print, so that a histogram of a run fits a screen.
 */
struct DisplayBuckets {
  static constexpr int kSubBuckets = 4;
  static constexpr int kBuckets = 42 * kSubBuckets;
  static std::int64_t bucket_upper(int i) noexcept {
    if (i < kSubBuckets) return i + 1;
    const int octave = i / kSubBuckets;
    const int sub = i % kSubBuckets;
    return static_cast<std::int64_t>(std::ldexp(1.0 + static_cast<double>(sub + 1) / kSubBuckets, octave));
  }
  static int bucket_of(std::int64_t v) noexcept {
    if (v < kSubBuckets) return static_cast<int>(v < 0 ? 0 : v);
    const int octave = 63 - __builtin_clzll(static_cast<unsigned long long>(v));
    const int sub = static_cast<int>((v >> (octave - 2)) & 3);
    const int i = octave * kSubBuckets + sub;
    return i < kBuckets ? i : kBuckets - 1;
  }
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
  void reset() noexcept {
    count_.store(0, std::memory_order_relaxed);
    for (auto* a : {&min_, &max_, &sum_, &last_}) a->store(0.0, std::memory_order_relaxed);
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

/*
 * TaskStats: what one task reports, always on; docs/figures.md defines each
 * figure (what is counted, on which clock, at which point of the frame).
 * The task's thread writes; any thread reads (relaxed atomics). A rate
 * group's cycle figures (overruns, missed periods, wake-up latency, start
 * lateness, cycle time) are kept by its slowest member, which owns the
 * cycle; every member keeps its own frames, execution time, steps and lag.
 */
struct TaskStats {
  std::atomic<std::uint64_t> frames{0};
  std::atomic<std::uint64_t> cycles{0};  // cycles this task owns (itself, or its rate group)
  std::atomic<std::uint64_t> overruns{0};
  std::atomic<std::uint64_t> missed_periods{0};
  LogHistogram wakeup_latency_ns;  // cycles whose thread slept: wake-up - release
  LogHistogram start_lateness_ns;  // every cycle: its first frame's start - release
  LogHistogram execution_ns;       // every frame of this task: its start to its end
  LogHistogram cycle_ns;           // every cycle: its start to its end (all members' frames)
  RunningRange step;               // seconds
  RunningRange lag;                // seconds, signed: wall at the integration point - (sim after the step - period)
  std::atomic<double> lost_real_time{0.0};  // measured: debt beyond max_owed, given up
  // Measured steps through a stall (docs/stalls.md): frames whose interval
  // exceeded max_step, those whose debt was repaid in full, frames that
  // repaid owed time and the longest run of them, sub-steps beyond one per
  // frame, and the real time owed after the last frame and at most.
  std::atomic<std::uint64_t> stalls{0};
  std::atomic<std::uint64_t> stalls_absorbed{0};
  std::atomic<std::uint64_t> catch_up_frames{0};
  std::atomic<std::uint64_t> longest_catch_up{0};
  std::atomic<std::uint64_t> extra_substeps{0};
  // Looks before a cycle that slept for a lagging producer's data or for
  // room in a consumer's ring (ThreadUnit::data_wait), on the cycle's
  // owner, and measured frames held at a lagging producer's data
  // (ThreadUnit::hold). docs/figures.md, "data waits".
  std::atomic<std::uint64_t> data_waits{0};
  // The release of the next cycle of the task's thread, on the run's clock
  // (ns): how far behind it runs, for its consumers' catch-up
  // (ThreadUnit::data_wait); not a figure.
  std::atomic<std::int64_t> next_release_ns{0};
  // The thread is sleeping for a lagging producer's data (data_wait); not a
  // figure either.
  std::atomic<bool> waiting_for_data{false};
  std::atomic<double> owed{0.0};
  std::atomic<double> owed_max{0.0};
  RunningRange truncation_error;  // ab2's on-line estimate
  RunningRange local_error;       // per frame: the largest relative local error of its (sub-)steps
  // The partition's events since the run began (Partition::events and
  // event_counts), copied after each frame so that any thread can read them.
  std::atomic<std::uint64_t> events{0};
  std::atomic<std::uint64_t> events_located{0};
  std::atomic<std::uint64_t> location_trials{0};
  std::atomic<std::uint64_t> location_trial_limits{0};
  std::atomic<std::uint64_t> landing_limits{0};

  // Between runs only (no task running).
  void reset() noexcept {
    for (auto* c : {&frames, &cycles, &overruns, &missed_periods, &stalls, &stalls_absorbed, &catch_up_frames,
                    &longest_catch_up, &extra_substeps, &data_waits, &events, &events_located, &location_trials,
                    &location_trial_limits, &landing_limits})
      c->store(0, std::memory_order_relaxed);
    for (auto* h : {&wakeup_latency_ns, &start_lateness_ns, &execution_ns, &cycle_ns}) h->reset();
    for (auto* r : {&step, &lag, &truncation_error, &local_error}) r->reset();
    for (auto* d : {&lost_real_time, &owed, &owed_max}) d->store(0.0, std::memory_order_relaxed);
    next_release_ns.store(0, std::memory_order_relaxed);
    waiting_for_data.store(false, std::memory_order_relaxed);
  }
};

// What one link reports, beside the link's own published/dropped counters
// and its extrapolator's stale/rejected counters. Written by the consumer's
// thread only (relaxed atomics), readable from any thread.
struct LinkStats {
  RunningRange data_age;                // consumer's simulation time minus the newest tag, at each drain
  RunningRange extrapolation_interval;  // evaluation time minus the newest tag, at each sample (before the horizon)
  // Consumer frames whose outputs were evaluated from a reconstruction that
  // used a derivative fallback (a block lacked a derivative the method wants).
  std::atomic<std::uint64_t> fallback_frames{0};
  // Consumer frames whose end lay beyond the newest tag plus the link's
  // max_extrapolation: the input was held at the horizon.
  std::atomic<std::uint64_t> beyond_horizon_frames{0};
  // Consumer frames with a sample before the oldest block the method still
  // kept (Extrapolator::oldest_tag): the input was held at that block.
  std::atomic<std::uint64_t> behind_history_frames{0};

  // Between runs only.
  void reset() noexcept {
    data_age.reset();
    extrapolation_interval.reset();
    fallback_frames.store(0, std::memory_order_relaxed);
    beyond_horizon_frames.store(0, std::memory_order_relaxed);
    behind_history_frames.store(0, std::memory_order_relaxed);
  }
};

}  // namespace rtcosim::runtime
