#include "coupling/methods/predictor.hpp"

#include <algorithm>

namespace rtcosim::coupling::methods {

void Predictor::do_configure(std::size_t signal_count) {
  history_.configure(3, signal_count);
  a_.assign(signal_count, 0.0);
  b_.assign(signal_count, 0.0);
  c_.assign(signal_count, 0.0);
}

void Predictor::do_push(const DataBlock& block) noexcept {
  history_.push(block);
  const std::size_t n = history_.size();
  const double t0 = history_.tag(0);
  for (std::size_t s = 0; s < a_.size(); ++s) {
    const double y0 = history_.value(0, s);
    a_[s] = y0;
    b_[s] = 0.0;
    c_[s] = 0.0;
    if (history_.derivative_valid(0, s)) {
      b_[s] = history_.derivative(0, s);
      if (n >= 2 && history_.derivative_valid(1, s)) {
        c_[s] = (history_.derivative(0, s) - history_.derivative(1, s)) / (2.0 * (t0 - history_.tag(1)));
      }
      continue;
    }
    note_derivative_fallback();
    // Newton parabola through the newest values, rewritten about t0:
    // c0 + D (c1 + (D + t0 - t1) c2) = c0 + D ((c1 + (t0 - t1) c2) + D c2).
    if (n >= 2) {
      const double t1 = history_.tag(1);
      const double c1 = (y0 - history_.value(1, s)) / (t0 - t1);
      double c2 = 0.0;
      if (n >= 3) {
        const double t2 = history_.tag(2);
        const double c1_old = (history_.value(1, s) - history_.value(2, s)) / (t1 - t2);
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
  const double d = t - history_.tag(0);
  for (std::size_t s = 0; s < out.size(); ++s) out[s] = a_[s] + d * (b_[s] + d * c_[s]);
}

}  // namespace rtcosim::coupling::methods
