#pragma once

#include <atomic>
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
 * method assumes an integer or constant frame ratio.
 *
 * Call order: `configure(signal_count)` once in the set-up phase (allocates,
 * may throw); then, on the real-time path, any sequence of `reset`, `push`,
 * `evaluate` and `evaluate_mean`.
 *
 * RT-safe: `reset`, `push`, `evaluate`, `evaluate_mean` are noexcept and
 * allocate nothing; all memory is sized in `configure`. One consumer thread
 * owns the object; only the status counters may be read from another thread.
 */
class Extrapolator {
 public:
  explicit Extrapolator(std::string method_id) : method_id_(std::move(method_id)) {}
  virtual ~Extrapolator() = default;
  Extrapolator(const Extrapolator&) = delete;
  Extrapolator& operator=(const Extrapolator&) = delete;

  // Set-up phase: sizes every buffer for `signal_count` signals and resets.
  void configure(std::size_t signal_count);

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
  [[nodiscard]] const std::string& method_id() const noexcept { return method_id_; }

  // Status, readable from any thread.
  [[nodiscard]] std::uint64_t stale_blocks() const noexcept {
    return stale_blocks_.load(std::memory_order_relaxed);
  }
  // Blocks rejected for a non-finite tag or one beyond the TagLimits.
  [[nodiscard]] std::uint64_t rejected_tags() const noexcept { return rejected_tags_.load(std::memory_order_relaxed); }
  // Blocks rejected for a non-finite value or known derivative.
  [[nodiscard]] std::uint64_t rejected_values() const noexcept {
    return rejected_values_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint64_t blocks_taken() const noexcept {
    return blocks_taken_.load(std::memory_order_relaxed);
  }
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
  void note_derivative_fallback() noexcept {
    fallback_now_ = true;
    derivative_fallback_.store(true, std::memory_order_relaxed);
  }

 private:
  [[nodiscard]] bool tag_within_limits(const DataBlock& block) const noexcept;

  std::string method_id_;
  std::size_t signal_count_ = 0;
  mutable std::vector<double> scratch_;
  TagLimits limits_;
  double clock_ = std::numeric_limits<double>::infinity();
  std::uint64_t newest_sequence_ = 0;
  bool fallback_now_ = false;
  std::atomic<std::uint64_t> stale_blocks_{0};
  std::atomic<std::uint64_t> rejected_tags_{0};
  std::atomic<std::uint64_t> rejected_values_{0};
  std::atomic<std::uint64_t> blocks_taken_{0};
  std::atomic<bool> derivative_fallback_{false};
  std::atomic<bool> fallback_noticed_{false};
};

}  // namespace rtcosim::coupling
