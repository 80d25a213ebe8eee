#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coupling/data_block.hpp"

namespace rtcosim::coupling {

/*
 * Extrapolator: the receiving side of a link. It keeps the recent history of
 * the data blocks a producer sent and reconstructs the signals at any time the
 * consumer's integrator asks for: ahead of the newest tag (extrapolation) or
 * behind it (interpolation). Tags may be non-uniform and asynchronous; no
 * method assumes an integer or constant frame ratio. Behind the blocks its
 * reconstruction is built from and the lookback (below), every built-in
 * method answers from its stored blocks (SampleHistory::interpolate), back
 * to `oldest_tag`, and holds the oldest one before that.
 *
 * Call order: `configure(signal_count)` and `set_tag_limits` once in the
 * set-up phase (configure allocates, may throw); then, on the real-time
 * path, any sequence of `reset`, `set_clock`, `push`, `evaluate`,
 * `evaluate_mean` and `step_mean`.
 *
 * RT-safe: `reset`, `set_clock`, `push`, `evaluate`, `evaluate_mean` and
 * `step_mean` are noexcept and allocate nothing; all memory is sized in
 * `configure`. One consumer thread owns the object; only the status
 * counters (stale, rejected, taken, the sticky fallback flag) may be read
 * from another thread.
 */
class Extrapolator {
 public:
  explicit Extrapolator(std::string method_id) : method_id_(std::move(method_id)) {}
  virtual ~Extrapolator() = default;
  Extrapolator(const Extrapolator&) = delete;
  Extrapolator& operator=(const Extrapolator&) = delete;

  // Set-up phase: sizes every buffer for `signal_count` signals and resets.
  void configure(std::size_t signal_count);
  // Set-up phase, before `configure`: how many past blocks a method keeps to
  // answer reads behind its reconstruction (at least kDefaultHistoryBlocks;
  // the runtime sizes it from the time a consumer may read back: its
  // longest frame over the producer's period).
  static constexpr std::size_t kDefaultHistoryBlocks = 64;
  void set_history_blocks(std::size_t blocks) noexcept {
    history_blocks_ = blocks > kDefaultHistoryBlocks ? blocks : kDefaultHistoryBlocks;
  }
  [[nodiscard]] std::size_t history_blocks() const noexcept { return history_blocks_; }

  // Drops all history: the next push starts afresh.
  virtual void reset() noexcept = 0;

  // Takes a new block. A block whose tag is not after the newest one is
  // ignored and counted (see stale_blocks), unless it carries the
  // discontinuity flag, which resets the history first. A hostile block is
  // rejected and counted before anything else, never stored: a non-finite
  // tag, a tag beyond the limits (see TagLimits), a non-finite value or
  // known derivative.
  void push(const DataBlock& block) noexcept;

  // How far a tag may be ahead, beyond which no producer could have got.
  struct TagLimits {
    // Seconds a tag may pass the newest taken one per producer frame (the
    // producer's longest step; frames counted by sequence number).
    double max_advance = std::numeric_limits<double>::infinity();
    // Seconds a tag may be ahead of the consumer's clock (set_clock).
    double max_lead = std::numeric_limits<double>::infinity();
  };
  // Set-up phase.
  void set_tag_limits(const TagLimits& limits) noexcept { limits_ = limits; }
  [[nodiscard]] const TagLimits& tag_limits() const noexcept { return limits_; }
  // The consumer's simulation time, before it drains: what max_lead is
  // measured from. +inf until set.
  void set_clock(double t) noexcept { clock_ = t; }

  // Set-up phase: reads down to this many seconds behind the newest tag
  // keep the method's reconstruction even where it lies behind the blocks
  // it was built from. A consumer whose step starts when a faster producer
  // has already made the whole step's blocks (a rate group: the fast
  // members run first) reads that far back in normal operation; those reads
  // stay as the method defines them. 0 (the default): every read behind the
  // reconstruction's blocks comes from the stored blocks.
  void set_lookback(double seconds) noexcept { lookback_ = seconds; }
  [[nodiscard]] double lookback() const noexcept { return lookback_; }

  // Reconstructed signals at simulation time t. Before any block: zeros.
  virtual void evaluate(double t, std::span<double> out) const noexcept = 0;

  // Mean of the reconstructed signals over [t0, t1] (the consumer's step).
  // The default integrates `evaluate` with 5-point Gauss-Legendre, exact for
  // the polynomial methods up to degree 9; held signals override it with
  // the exact segment sum.
  virtual void evaluate_mean(double t0, double t1, std::span<double> out) const noexcept;

  // The consumer's next step is [t0, t1]: its mean, as evaluate_mean, and
  // the method keeps what it needs for a mean that starts at t1, however
  // many blocks arrive before the next call. The runtime calls it once per
  // step, after draining, for methods that average over the step. A held
  // signal keeps a running integral here (O(1) memory at any frame ratio).
  virtual void step_mean(double t0, double t1, std::span<double> out) noexcept { evaluate_mean(t0, t1, out); }

  // True for methods whose consumer should take the step mean as its input
  // for the whole step (input averaging, reference eq. 10.7).
  [[nodiscard]] virtual bool averages_over_step() const noexcept { return false; }

  [[nodiscard]] std::size_t signal_count() const noexcept { return signal_count_; }
  // Newest tag taken since the last reset, or -inf.
  [[nodiscard]] virtual double newest_tag() const noexcept = 0;
  // Oldest tag the method still keeps, or -inf when it keeps none or says
  // nothing (a plugin). A read before it holds the oldest kept sample: how
  // far behind a link may be read is bounded by this, as the horizon bounds
  // how far ahead (the runtime counts the frames that read before it).
  [[nodiscard]] virtual double oldest_tag() const noexcept { return -std::numeric_limits<double>::infinity(); }
  [[nodiscard]] const std::string& method_id() const noexcept { return method_id_; }

  // Status, readable from any thread.
  [[nodiscard]] std::uint64_t stale_blocks() const noexcept { return stale_blocks_.load(std::memory_order_relaxed); }
  // Blocks rejected for a non-finite tag or one beyond the TagLimits.
  [[nodiscard]] std::uint64_t rejected_tags() const noexcept { return rejected_tags_.load(std::memory_order_relaxed); }
  // Blocks rejected for a non-finite value or known derivative.
  [[nodiscard]] std::uint64_t rejected_values() const noexcept {
    return rejected_values_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint64_t blocks_taken() const noexcept { return blocks_taken_.load(std::memory_order_relaxed); }
  // Set when a block lacked a derivative this method wanted; the method then
  // used its derivative-free variant for that signal.
  [[nodiscard]] bool used_derivative_fallback() const noexcept {
    return derivative_fallback_.load(std::memory_order_relaxed);
  }
  // True while the reconstruction built at the newest block uses a
  // derivative fallback for some signal. Consumer thread only.
  [[nodiscard]] bool in_derivative_fallback() const noexcept { return fallback_now_; }
  // Returns true exactly once after the first fallback, so a non-RT thread
  // can say so once.
  [[nodiscard]] bool take_derivative_fallback_notice() noexcept;
  // A fresh run: the status counters back to zero (between runs only, with
  // neither end of the link running).
  void reset_counters() noexcept {
    for (auto* c : {&stale_blocks_, &rejected_tags_, &rejected_values_, &blocks_taken_}) {
      c->store(0, std::memory_order_relaxed);
    }
    derivative_fallback_.store(false, std::memory_order_relaxed);
    fallback_noticed_.store(false, std::memory_order_relaxed);
    fallback_now_ = false;
  }

 protected:
  virtual void do_configure(std::size_t signal_count) = 0;
  virtual void do_push(const DataBlock& block) noexcept = 0;
  // True when the stored blocks answer a read at t: it lies behind both
  // `built_from`, the oldest tag the current reconstruction was built from,
  // and the lookback from `newest`. The consumer's clock and the producer's
  // tags are sums of different steps, so a read meant at that edge may land
  // an ulp or so before it: that one still counts as at the edge.
  [[nodiscard]] bool behind_reconstruction(double t, double built_from, double newest) const noexcept {
    const double edge = std::min(built_from, newest - lookback_);
    return t < edge - 1e-12 * std::max(1.0, std::fabs(edge));
  }
  // Every derivative of the block being pushed is known: valid during
  // do_push, found by push's finiteness check (SampleHistory::push takes
  // it rather than look at every flag again).
  [[nodiscard]] bool derivatives_known() const noexcept { return block_known_; }
  void note_derivative_fallback() noexcept {
    fallback_now_ = true;
    derivative_fallback_.store(true, std::memory_order_relaxed);
  }

 private:
  [[nodiscard]] bool tag_within_limits(const DataBlock& block) const noexcept;

  std::string method_id_;
  std::size_t signal_count_ = 0;
  std::size_t history_blocks_ = kDefaultHistoryBlocks;
  mutable std::vector<double> scratch_;
  TagLimits limits_;
  double clock_ = std::numeric_limits<double>::infinity();
  double lookback_ = 0.0;
  std::uint64_t newest_sequence_ = 0;
  bool fallback_now_ = false;
  // Beside fallback_now_, in what was padding: a plugin built against the
  // layout without it still finds every other member where it was.
  bool block_known_ = false;
  std::atomic<std::uint64_t> stale_blocks_{0};
  std::atomic<std::uint64_t> rejected_tags_{0};
  std::atomic<std::uint64_t> rejected_values_{0};
  std::atomic<std::uint64_t> blocks_taken_{0};
  std::atomic<bool> derivative_fallback_{false};
  std::atomic<bool> fallback_noticed_{false};
};

}  // namespace rtcosim::coupling
