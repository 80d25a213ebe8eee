#include "coupling/methods/predictor.hpp"

#include <algorithm>
#include <cstdint>

#include "base/signal_loop.hpp"

namespace rtcosim::coupling::methods {

void Predictor::do_configure(std::size_t signal_count) {
  history_.configure(history_blocks(), signal_count);
  a_.assign(signal_count, 0.0);
  b_.assign(signal_count, 0.0);
  c_.assign(signal_count, 0.0);
}

namespace {

// c = (fresh - older) * half_over_dt, per signal: the quadratic term from two
// blocks' derivatives.
RTCOSIM_SIGNAL_LOOP void derivative_slope(double* __restrict c, const double* __restrict fresh,
                                          const double* __restrict older, double half_over_dt, std::size_t n) noexcept {
  for (std::size_t s = 0; s < n; ++s) c[s] = (fresh[s] - older[s]) * half_over_dt;
}

// o = a + d (b + d c), per signal. Restrict: `o` never aliases the
// coefficients, so the loop vectorises.
RTCOSIM_SIGNAL_LOOP void quadratic(const double* __restrict a, const double* __restrict b, const double* __restrict c,
                                   double d, double* __restrict o, std::size_t n) noexcept {
  for (std::size_t s = 0; s < n; ++s) o[s] = a[s] + d * (b[s] + d * c[s]);
}

}  // namespace

void Predictor::do_push(const DataBlock& block) noexcept {
  history_.push(block, derivatives_known());
  const std::size_t n = history_.size();
  const double t0 = history_.tag(0);
  const double* y0 = history_.values_of(0);
  const double* d0 = history_.derivatives_of(0);
  const std::uint8_t* k0 = history_.derivative_flags_of(0);
  // Older samples exist only from the second push on; until then nothing
  // below reads them.
  const double* y1 = n >= 2 ? history_.values_of(1) : y0;
  const double* d1 = n >= 2 ? history_.derivatives_of(1) : d0;
  const std::uint8_t* k1 = n >= 2 ? history_.derivative_flags_of(1) : k0;
  const double* y2 = n >= 3 ? history_.values_of(2) : y1;
  const double t1 = n >= 2 ? history_.tag(1) : t0;
  const double t2 = n >= 3 ? history_.tag(2) : t1;
  const double half_over_dt01 = n >= 2 ? 0.5 / (t0 - t1) : 0.0;
  const std::size_t count = a_.size();
  direct_ = history_.all_derivatives_valid(0) && (n < 2 || history_.all_derivatives_valid(1));
  if (direct_) {
    // Every derivative known: the loop below without its branches, the same
    // arithmetic per signal, in a loop the compiler vectorises. a and b are
    // then the newest block's values and derivatives, which evaluate reads
    // where the history keeps them rather than from copies. The newest
    // derivatives are read from the block, not from the copy history_.push
    // has just stored with memcpy's wider stores: a load right behind such
    // a store may wait for it instead of being forwarded (the push's share
    // of runtime_bench's samples fell from 7.7 to 5.5 %).
    if (n < 2) {
      std::fill_n(c_.data(), count, 0.0);
    } else {
      derivative_slope(c_.data(), block.derivatives().data(), d1, half_over_dt01, count);
    }
    return;
  }
  for (std::size_t s = 0; s < count; ++s) {
    a_[s] = y0[s];
    b_[s] = 0.0;
    c_[s] = 0.0;
    if (k0[s] != 0) {
      b_[s] = d0[s];
      if (n < 2) continue;
      if (k1[s] != 0) {
        c_[s] = (d0[s] - d1[s]) * half_over_dt01;
        continue;
      }
      // The previous block has no derivative: the parabola with the newest
      // value and slope through the previous value keeps second order.
      note_derivative_fallback();
      const double dt = t0 - t1;
      c_[s] = (y1[s] - y0[s] + d0[s] * dt) / (dt * dt);
      continue;
    }
    note_derivative_fallback();
    // Newton parabola through the newest values, rewritten about t0:
    // c0 + D (c1 + (D + t0 - t1) c2) = c0 + D ((c1 + (t0 - t1) c2) + D c2).
    if (n >= 2) {
      const double c1 = (y0[s] - y1[s]) / (t0 - t1);
      double c2 = 0.0;
      if (n >= 3) {
        const double c1_old = (y1[s] - y2[s]) / (t1 - t2);
        c2 = (c1 - c1_old) / (t0 - t2);
      }
      b_[s] = c1 + (t0 - t1) * c2;
      c_[s] = c2;
    }
  }
}

void Predictor::evaluate(double t, std::span<double> out) const noexcept {
  if (history_.empty()) {
    std::fill(out.begin(), out.end(), 0.0);
    return;
  }
  // Behind the previous block (also for a fallback's parabola, whose third
  // value is older: the edge must not depend on the signal, or a bundle
  // would not give each wire what a link of its own gives).
  if (behind_reconstruction(t, history_.tag_of_newest(2), history_.tag(0))) {
    history_.interpolate(t, out);
    return;
  }
  const double d = t - history_.tag(0);
  quadratic(direct_ ? history_.values_of(0) : a_.data(), direct_ ? history_.derivatives_of(0) : b_.data(), c_.data(), d,
            out.data(), out.size());
}

}  // namespace rtcosim::coupling::methods
