#pragma once

#include <cstdint>

namespace rtcosim::runtime {

/*
 * StepPolicy: turns the measured real time of a frame into its integration
 * step (reference section 10.2), in plain arithmetic so that every timing
 * scenario is testable with a fake clock.
 *
 *   fixed     h = period. Simulation time drifts from wall time when frames
 *             run late; the drift is reported as lag.
 *   measured  h = wall time at this integration point minus the simulation
 *             time, so that after the step simulation time equals wall time
 *             since the epoch. A step longer than max_step is cut to
 *             max_step and the rest is reported as lost real time: the
 *             simulation then runs that much behind the wall clock for good.
 *
 * RT-safe: every function noexcept, no allocation, no system call.
 */
class StepPolicy {
 public:
  enum class Kind { kFixed, kMeasured };

  StepPolicy(Kind kind, double period, double max_step) noexcept
      : kind_(kind), period_(period), max_step_(max_step > 0.0 ? max_step : 4.0 * period) {}

  // The step for the integration point at `wall` (seconds since the epoch)
  // when the partition's state is at simulation time `sim`.
  [[nodiscard]] double next(double sim, double wall) noexcept {
    if (kind_ == Kind::kFixed) return period_;
    double h = wall - lost_ - sim;
    if (h > max_step_) {
      lost_ += h - max_step_;
      h = max_step_;
    }
    // A frame that starts before its simulation time (possible only after a
    // clock step) takes no negative step: the task waits for the wall clock.
    return h > 0.0 ? h : 0.0;
  }

  [[nodiscard]] Kind kind() const noexcept { return kind_; }
  [[nodiscard]] double period() const noexcept { return period_; }
  [[nodiscard]] double max_step() const noexcept { return max_step_; }
  // Real time given up by steps cut at max_step (measured only).
  [[nodiscard]] double lost() const noexcept { return lost_; }

 private:
  Kind kind_;
  double period_;
  double max_step_;
  double lost_ = 0.0;
};

/*
 * Deadlines: the periodic schedule of one task against the common epoch,
 * with overrun accounting. After a frame that ended at `now`:
 *   catch_up  the next deadline is one period after the last one, even if
 *             it has passed (the next frame starts at once; a measured step
 *             absorbs the delay);
 *   skip      deadlines that have passed are skipped, the task re-phases to
 *             the next one in the future.
 * Missed periods (deadlines that passed while the frame still ran) are
 * counted under both policies. Times in nanoseconds.
 */
class Deadlines {
 public:
  enum class Overrun { kCatchUp, kSkip };

  Deadlines(std::int64_t first_ns, std::int64_t period_ns, Overrun policy) noexcept
      : next_ns_(first_ns), period_ns_(period_ns), policy_(policy) {}

  [[nodiscard]] std::int64_t next() const noexcept { return next_ns_; }

  // Call once per frame with the time the frame ended; returns the deadline
  // of the next frame.
  std::int64_t advance(std::int64_t frame_end_ns) noexcept {
    next_ns_ += period_ns_;
    if (frame_end_ns > next_ns_) {
      const std::int64_t passed = (frame_end_ns - next_ns_) / period_ns_ + 1;
      ++overruns_;
      missed_ += static_cast<std::uint64_t>(passed);
      if (policy_ == Overrun::kSkip) next_ns_ += passed * period_ns_;
    }
    return next_ns_;
  }

  [[nodiscard]] std::uint64_t overruns() const noexcept { return overruns_; }
  [[nodiscard]] std::uint64_t missed_periods() const noexcept { return missed_; }

 private:
  std::int64_t next_ns_;
  std::int64_t period_ns_;
  Overrun policy_;
  std::uint64_t overruns_ = 0;
  std::uint64_t missed_ = 0;
};

}  // namespace rtcosim::runtime
