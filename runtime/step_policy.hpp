#pragma once

#include <algorithm>
#include <cmath>
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
 *             the integration formulas). The first step is one nominal
 *             period, or the wall time since the epoch if the first
 *             integration point came later than that (a first frame that
 *             stalled owes its delay like any other). The simulation then
 *             keeps a constant distance to the wall clock. A step is never
 *             shorter than half a period unless that would put the
 *             simulation more than half a period ahead of the wall clock
 *             (back-to-back frames): no micro-step after a long frame.
 *
 * Time is owed, never dropped (docs/stalls.md): an interval longer than
 * max_step is a stall; the step integrates at most max_step of it and owes
 * the rest. Every frame integrates its own interval plus what is owed, up to
 * max_substeps x max_step, as that many equal sub-steps of at most max_step
 * (`substeps`), so that after a stall the task returns to its place on the
 * wall clock within a few frames and its links read where their data is.
 * Under sustained overload (frames that each take longer than max_substeps
 * x max_step) the debt would grow for ever: what exceeds max_owed is given
 * up, booked as lost real time, and the task runs that much behind for good.
 *
 * RT-safe: every function noexcept, no allocation, no system call. One
 * thread (the task's) calls `next`; `reset` only between runs.
 */
class StepPolicy {
 public:
  using Kind = config::StepPolicy;
  static constexpr int kDefaultMaxSubsteps = 4;
  static constexpr double kDefaultMaxOwed = 1.0;

  StepPolicy(Kind kind, double period, double max_step, int max_substeps = 0, double max_owed = 0.0) noexcept
      : kind_(kind),
        period_(period),
        max_step_(max_step > 0.0 ? max_step : 4.0 * period),
        max_substeps_(max_substeps > 0 ? max_substeps : kDefaultMaxSubsteps),
        max_owed_(max_owed > 0.0 ? max_owed : kDefaultMaxOwed) {}

  // The step of the frame whose integration point is at `wall` (seconds
  // since the epoch): its whole span, to be integrated in `substeps(h)`
  // equal sub-steps.
  [[nodiscard]] double next(double wall) noexcept {
    if (kind_ == Kind::kFixed) return period_;
    double interval = started_ ? wall - previous_wall_ : (wall > period_ ? wall : period_);
    started_ = true;
    previous_wall_ = wall;
    // Only a clock that steps backwards gives a negative interval: the task
    // then takes no step rather than integrate backwards. Two integration
    // points at one instant (a frame with no execution right after a long
    // one) are a micro-step like any other (below).
    if (!(interval >= 0.0)) return 0.0;
    // Within a relative 1e-9 of max_step is max_step: a virtual clock's
    // nanoseconds, turned into seconds and subtracted, round either way.
    const double cut = max_step_ * (1.0 + 1e-9);
    if (interval > cut) {
      ++stalls_;
      ++pending_stalls_;
    }
    const double due = interval + owed_;
    const double room = max_step_ * static_cast<double>(max_substeps_);
    const double half = 0.5 * period_;
    // No micro-step: a frame that integrates right after a long one (its
    // successor released at once, as rephase and catch_up do) takes half a
    // period and runs ahead of the wall clock by the difference, never by
    // more than half a period; the next steps give it back.
    const double h = due > room ? room : (due >= half ? due : (due >= 0.0 ? half : due + half));
    const bool was_owing = owed_ > 0.0;
    owed_ = due - h;
    // Rounding leaves a debt of a few ulps after a repayment: not a debt
    // that keeps the stall open.
    if (owed_ > 0.0 && owed_ < 1e-9 * period_) owed_ = 0.0;
    if (owed_ > max_owed_) {
      lost_ += owed_ - max_owed_;
      owed_ = max_owed_;
      episode_lost_ = true;
    }
    if (owed_ > owed_max_) owed_max_ = owed_;
    // A catch-up frame integrates more than a step may: what it owed, or a
    // stall of its own it repays at once in sub-steps.
    if (was_owing || h > cut) {
      ++catch_up_frames_;
      ++run_;
      if (run_ > longest_run_) longest_run_ = run_;
    } else {
      run_ = 0;
    }
    if (owed_ <= 0.0 && pending_stalls_ > 0) {
      if (!episode_lost_) absorbed_ += pending_stalls_;
      pending_stalls_ = 0;
      episode_lost_ = false;
    }
    return h;
  }

  // The frame integrates only h - d of the step `next` returned: a lagging
  // producer's data ends there (ThreadUnit). d is owed like a stall's
  // rest and repaid by the next frames.
  void hold(double d) noexcept {
    if (!(d > 0.0)) return;
    owed_ += d;
    if (owed_ > max_owed_) {
      lost_ += owed_ - max_owed_;
      owed_ = max_owed_;
      episode_lost_ = true;
    }
    if (owed_ > owed_max_) owed_max_ = owed_;
  }

  // Equal sub-steps of at most max_step that integrate a step h of `next`
  // (1 for a fixed step, at most max_substeps). The relative margin keeps a
  // span of k max_step, rounded, from becoming k + 1 sub-steps.
  [[nodiscard]] int substeps(double h) const noexcept {
    if (kind_ == Kind::kFixed || !(h > max_step_)) return 1;
    const double n = std::ceil(h / max_step_ * (1.0 - 1e-9));
    return n < 1.0 ? 1 : (n > max_substeps_ ? max_substeps_ : static_cast<int>(n));
  }

  // A fresh run: the next step is again the nominal first step.
  void reset() noexcept {
    started_ = false;
    previous_wall_ = 0.0;
    lost_ = owed_ = owed_max_ = 0.0;
    stalls_ = absorbed_ = pending_stalls_ = catch_up_frames_ = run_ = longest_run_ = 0;
    episode_lost_ = false;
  }

  [[nodiscard]] Kind kind() const noexcept { return kind_; }
  [[nodiscard]] double period() const noexcept { return period_; }
  [[nodiscard]] double max_step() const noexcept { return max_step_; }
  // The longest span one frame may integrate (its tag advance).
  [[nodiscard]] double max_frame_span() const noexcept {
    return kind_ == Kind::kFixed ? max_step_ : max_step_ * static_cast<double>(max_substeps_);
  }
  // Real time given up for good: debt beyond max_owed (measured only).
  [[nodiscard]] double lost() const noexcept { return lost_; }
  // Real time not integrated yet, after the last frame (0 while the
  // simulation runs ahead), and its largest value.
  [[nodiscard]] double owed() const noexcept { return owed_ > 0.0 ? owed_ : 0.0; }
  [[nodiscard]] double owed_max() const noexcept { return owed_max_; }
  // Frames whose interval exceeded max_step.
  [[nodiscard]] std::uint64_t stalls() const noexcept { return stalls_; }
  // Stalls whose debt was repaid in full, none of it given up.
  [[nodiscard]] std::uint64_t stalls_absorbed() const noexcept { return absorbed_; }
  // Frames that integrated owed time, and the longest run of them in a row.
  [[nodiscard]] std::uint64_t catch_up_frames() const noexcept { return catch_up_frames_; }
  [[nodiscard]] std::uint64_t longest_catch_up() const noexcept { return longest_run_; }

 private:
  Kind kind_;
  double period_;
  double max_step_;
  int max_substeps_;
  double max_owed_;
  bool started_ = false;
  double previous_wall_ = 0.0;
  double lost_ = 0.0;
  double owed_ = 0.0;  // negative: integrated ahead of the wall clock (at most half a period)
  double owed_max_ = 0.0;
  std::uint64_t stalls_ = 0;
  std::uint64_t absorbed_ = 0;
  std::uint64_t pending_stalls_ = 0;  // stalls of the debt not yet repaid
  bool episode_lost_ = false;         // some of that debt was given up
  std::uint64_t catch_up_frames_ = 0;
  std::uint64_t run_ = 0;
  std::uint64_t longest_run_ = 0;
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
