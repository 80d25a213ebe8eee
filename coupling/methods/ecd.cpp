#include "coupling/methods/ecd.hpp"

#include <utility>

#include "coupling/methods/polynomial.hpp"

namespace rtcosim::coupling::methods {

void Ecd::do_configure(std::size_t signal_count) {
  history_.configure(history_blocks(), signal_count);
  current_.configure(signal_count);
  previous_.configure(signal_count);
  interpolated_.assign(signal_count, 0.0);
  estimated_.assign(signal_count, 0.0);
}

void Ecd::do_push(const DataBlock& block) noexcept {
  history_.push(block, derivatives_known());
  std::swap(current_, previous_);  // swaps buffers, allocates nothing
  fit_newest(current_, history_, order_);
  shift_ = macro_step_ > 0.0 ? macro_step_ : history_.newest_spacing();
}

void Ecd::evaluate(double t, std::span<double> out) const noexcept {
  // u is built from y^_k and y^_{k-1}: order + 2 blocks back.
  if (behind_reconstruction(t, history_.tag_of_newest(static_cast<std::size_t>(order_) + 2), history_.newest_tag())) {
    history_.interpolate(t, out);
    return;
  }
  current_.evaluate(t, out);
  if (previous_.empty() || !(shift_ > 0.0)) return;
  const double past = t - shift_;
  std::span<double> yi(interpolated_.data(), out.size());
  std::span<double> est(estimated_.data(), out.size());
  current_.evaluate(past, yi);
  previous_.evaluate(past, est);
  for (std::size_t s = 0; s < out.size(); ++s) out[s] += yi[s] - est[s];
}

}  // namespace rtcosim::coupling::methods
