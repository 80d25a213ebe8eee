#include "coupling/methods/smoothed.hpp"

#include <algorithm>

#include "coupling/methods/polynomial.hpp"

namespace rtcosim::coupling::methods {

void Smoothed::do_configure(std::size_t signal_count) {
  history_.configure(history_blocks(), signal_count);
  for (State& s : ring_) s.poly.configure(signal_count);
  for (auto& s : scratch_) s.assign(signal_count, 0.0);
}

void Smoothed::do_push(const DataBlock& block) noexcept {
  history_.push(block, derivatives_known());
  head_ = (head_ + 1) % kDepth;
  State& now = ring_[head_];
  fit_newest(now.poly, history_, order_);
  const double h = macro_step_ > 0.0 ? macro_step_ : history_.newest_spacing();
  now.start = block.tag;
  now.blend_end = block.tag + 0.5 * h;
  states_ = std::min(states_ + 1, kDepth);
}

void Smoothed::evaluate_state(std::size_t depth, double t, std::span<double> out) const noexcept {
  if (depth >= states_) {
    std::fill(out.begin(), out.end(), 0.0);
    return;
  }
  const State& s = state(depth);
  s.poly.evaluate(t, out);
  const bool has_previous = depth + 1 < states_;
  if (!has_previous || !(t < s.blend_end) || !(s.blend_end > s.start)) return;
  // Before its own tag a state is entirely the previous output (x clamps to 0).
  const double x = std::clamp((t - s.start) / (s.blend_end - s.start), 0.0, 1.0);
  const double g = smoothing_blend(x);
  std::span<double> previous(scratch_[depth].data(), out.size());
  evaluate_state(depth + 1, t, previous);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = g * previous[i] + (1.0 - g) * out[i];
}

}  // namespace rtcosim::coupling::methods
