#pragma once

#include <algorithm>
#include <cstdint>

#include "rt_config/policies.hpp"

namespace rtcosim::runtime {

/*
 * StepPolicy: turns the measured real time of a frame into its integration
 * step (reference section 10.2), in plain arithmetic so that every timing
 * scenario is testable with a fake clock.
 *
 *   fixed     h = period. Simulation time drifts from wall time when frames
 *             run late; the drift is reported as lag.
 *   measured  h = the wall time between this frame's integration point and
 *             the previous one's (the reference's T_n, measured just before
 *             the integration formulas); the first step is one nominal
 *             period, so that a run starts with the step it will keep
 *             (rather than with the wake-up latency of frame 0). The
 *             simulation then keeps a constant distance to the wall clock.
 *             A step longer than max_step is cut to max_step and the rest is
 *             reported as lost real time: the simulation then runs that much
 *             further behind the wall clock for good.
 *
 * RT-safe: every function noexcept, no allocation, no system call. One
 * thread (the task's) calls `next`; `reset` only between runs.
 */
class StepPolicy {
 public:
  using Kind = config::StepPolicy;

  StepPolicy(Kind kind, double period, double max_step) noexcept
      : kind_(kind), period_(period), max_step_(max_step > 0.0 ? max_step : 4.0 * period) {}

  // The step of the frame whose integration point is at `wall` (seconds
  // since the epoch).
  [[nodiscard]] double next(double wall) noexcept {
    if (kind_ == Kind::kFixed) return period_;
    double h = started_ ? wall - previous_wall_ : period_;
    started_ = true;
    previous_wall_ = wall;
    if (h > max_step_) {
      lost_ += h - max_step_;
      h = max_step_;
    }
    // Only a clock that steps backwards gives a negative interval: the task
    // then takes no step rather than integrate backwards.
    return h > 0.0 ? h : 0.0;
  }

  // A fresh run: the next step is again the nominal first step.
  void reset() noexcept {
    started_ = false;
    previous_wall_ = 0.0;
    lost_ = 0.0;
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
  bool started_ = false;
  double previous_wall_ = 0.0;
  double lost_ = 0.0;
};

/*
 * Deadlines: the release grid of one thread (a task or a rate group) against
 * the common epoch, and what a cycle that runs long does to it. A cycle is
 * released at `release()`; its deadline is one period later. When it ends
 * after its deadline it is an overrun (counted once per cycle), and the
 * policy chooses the next release:
 *
 *   catch_up  the next grid instant, even if it has passed: the next cycle
 *             starts at once and the grid never moves, so the thread runs
 *             back to back until it has repaid the delay (if it can);
 *   skip      the first grid instant at or after the end of the cycle: the
 *             instants that passed while it ran get no cycle;
 *   rephase   one period after the late cycle started, or its end if it ran
 *             longer than that, and the grid moves there for good: the
 *             following cycles are one period apart again. For measured
 *             steps, whose step has already absorbed the delay, this is
 *             the reference's behaviour (its frame grid shifts for good
 *             after a long frame); a cycle that was late only because it
 *             started late (a wake-up spike) keeps a whole period after its
 *             start, so the next measured step is nominal, not the few
 *             microseconds between two back-to-back integration points.
 *
 * A release instant is missed when no cycle ever starts for it: the
 * instants skip passes over; under rephase, each whole period by which the
 * grid has moved in total (a cycle 5 ms late on a 10 ms grid moves it half
 * a period: the second such cycle completes a missed period); under
 * catch_up the backlog the run ends with (`finish`). Times in nanoseconds;
 * plain arithmetic, noexcept.
 */
class Deadlines {
 public:
  using Overrun = config::OverrunPolicy;

  Deadlines(std::int64_t first_ns, std::int64_t period_ns, Overrun policy) noexcept
      : release_ns_(first_ns), period_ns_(period_ns > 0 ? period_ns : 1), policy_(policy) {}

  // The release instant of the next cycle (may lie in the past under
  // catch_up: the cycle then starts as soon as the thread is free).
  [[nodiscard]] std::int64_t release() const noexcept { return release_ns_; }
  // When the next cycle starts if the thread is free at `now_ns`.
  [[nodiscard]] std::int64_t start_at(std::int64_t now_ns) const noexcept {
    return release_ns_ > now_ns ? release_ns_ : now_ns;
  }
  // The end of the run (0: none): instants at or after it are not missed,
  // they are simply not part of the run.
  void set_horizon(std::int64_t end_ns) noexcept { horizon_ns_ = end_ns; }

  // The cycle released at release(), which started at `start_ns` (default:
  // its release), ended at `end_ns`: counts an overrun and missed releases,
  // moves to the next release. Returns whether the cycle overran.
  bool advance(std::int64_t end_ns, std::int64_t start_ns = -1) noexcept {
    const std::int64_t deadline = release_ns_ + period_ns_;
    if (end_ns <= deadline) {
      release_ns_ = deadline;
      return false;
    }
    ++overruns_;
    const std::int64_t late = end_ns - deadline;
    switch (policy_) {
      case Overrun::kCatchUp:
        release_ns_ = deadline;
        break;
      case Overrun::kSkip: {
        // Instants in [deadline, end) get no cycle; one ending exactly on an
        // instant starts its successor there.
        const std::int64_t passed = (late + period_ns_ - 1) / period_ns_;
        const std::int64_t in_run =
            horizon_ns_ == 0 ? passed
                             : std::max<std::int64_t>(0, (horizon_ns_ - deadline + period_ns_ - 1) / period_ns_);
        missed_ += static_cast<std::uint64_t>(std::min(passed, in_run));
        release_ns_ = deadline + passed * period_ns_;
        break;
      }
      case Overrun::kRephase: {
        const std::int64_t start = start_ns > release_ns_ ? start_ns : release_ns_;
        const std::int64_t next = std::max(start + period_ns_, end_ns);
        const std::int64_t whole_before = shifted_ns_ / period_ns_;
        shifted_ns_ += next - deadline;
        missed_ += static_cast<std::uint64_t>(shifted_ns_ / period_ns_ - whole_before);
        release_ns_ = next;
        break;
      }
    }
    return true;
  }

  // The run ends (at its duration or when stopped) at `until_ns`: release
  // instants before it that no cycle will serve are missed.
  void finish(std::int64_t until_ns) noexcept {
    if (release_ns_ >= until_ns) return;
    missed_ += static_cast<std::uint64_t>((until_ns - release_ns_ + period_ns_ - 1) / period_ns_);
    release_ns_ = until_ns;
  }

  [[nodiscard]] std::uint64_t overruns() const noexcept { return overruns_; }
  [[nodiscard]] std::uint64_t missed_periods() const noexcept { return missed_; }

 private:
  std::int64_t release_ns_;
  std::int64_t period_ns_;
  Overrun policy_;
  std::uint64_t overruns_ = 0;
  std::uint64_t missed_ = 0;
  std::int64_t shifted_ns_ = 0;  // rephase: how far the grid has moved in total
  std::int64_t horizon_ns_ = 0;
};

}  // namespace rtcosim::runtime
