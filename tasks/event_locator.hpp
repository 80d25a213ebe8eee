#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace rtcosim::tasks {

// FMI's sign convention for a state event: an indicator changed sides of
// z > 0 (z <= 0 is the other side).
[[nodiscard]] inline bool crossed(double before, double after) noexcept { return (before > 0.0) != (after > 0.0); }
// True when any of n indicators crossed between `before` and `after`.
[[nodiscard]] inline bool any_crossed(const double* before, const double* after, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    if (crossed(before[i], after[i])) return true;
  }
  return false;
}

/*
 * EventLocator: finds the earliest instant in a step at which any of a set
 * of event indicators changes sign, given their values at both ends of the
 * step and a way to evaluate them inside it (the partition re-integrates
 * from the step's start, docs/config.md "Events"). Illinois-weighted regula
 * falsi on the union of the indicators: each trial is the earliest of the
 * crossing indicators' weighted secant roots; a trial that shows a crossing
 * becomes the bracket's right end, one that does not its left end; an end
 * kept twice in a row has its values halved in the secants. The right end
 * always holds a crossing, so the instant returned is never before the
 * event: the block handling it sees its indicator on the new side.
 *
 * Bounded: at most `max_trials` evaluations per call; one that reaches it
 * returns its right end, `converged` false. RT-safe after `resize`:
 * noexcept, no allocation, no system call. One thread owns it.
 */
class EventLocator {
 public:
  struct Result {
    double at = 0.0;  // offset from the step's start of the right end (<= width)
    int trials = 0;
    bool converged = true;
    bool failed = false;  // a trial could not evaluate (an FMU failed)
  };

  // Set-up: room for n indicators.
  void resize(std::size_t n) {
    lo_.assign(n, 0.0);
    hi_.assign(n, 0.0);
    trial_.assign(n, 0.0);
  }

  // z0, z1: the indicators at offsets 0 and `width` (some pair crossed).
  // `evaluate(theta, z)` fills z with the indicators at offset theta and
  // returns false on failure; `keep_right(theta)` is called each time a
  // trial becomes the bracket's right end (the caller keeps its state).
  // Stops when the bracket is no wider than `tolerance`.
  template <class Evaluate, class KeepRight>
  Result locate(const double* z0, const double* z1, double width, double tolerance, int max_trials, Evaluate&& evaluate,
                KeepRight&& keep_right) noexcept {
    const std::size_t n = lo_.size();
    std::copy(z0, z0 + n, lo_.begin());
    std::copy(z1, z1 + n, hi_.begin());
    double a = 0.0, b = width, wa = 1.0, wb = 1.0;
    int last = 0;  // -1: the left end moved last, +1: the right end
    Result r;
    r.at = b;
    while (b - a > tolerance) {
      if (r.trials == max_trials) {
        r.converged = false;
        break;
      }
      double guess = b;
      for (std::size_t i = 0; i < n; ++i) {
        if (!crossed(lo_[i], hi_[i])) continue;
        const double fa = wa * lo_[i], fb = wb * hi_[i];
        const double g = a + (b - a) * (fa / (fa - fb));
        if (g < guess) guess = g;
      }
      // Never on an end, never closer to one than half the tolerance: each
      // trial shrinks the bracket.
      const double margin = 0.5 * tolerance;
      if (!(guess > a + margin)) guess = a + margin;
      if (!(guess < b - margin)) guess = b - margin;
      ++r.trials;
      if (!evaluate(guess, trial_.data())) {
        r.failed = true;
        return r;
      }
      if (any_crossed(lo_.data(), trial_.data(), n)) {
        b = guess;
        hi_.swap(trial_);
        wb = 1.0;
        if (last == 1) wa *= 0.5;
        last = 1;
        keep_right(b);
      } else {
        a = guess;
        lo_.swap(trial_);
        wa = 1.0;
        if (last == -1) wb *= 0.5;
        last = -1;
      }
      r.at = b;
    }
    return r;
  }

 private:
  std::vector<double> lo_, hi_, trial_;
};

}  // namespace rtcosim::tasks
