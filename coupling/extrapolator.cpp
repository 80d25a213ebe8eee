#include "coupling/extrapolator.hpp"

#include "coupling/quadrature.hpp"

namespace rtcosim::coupling {

void Extrapolator::configure(std::size_t signal_count) {
  signal_count_ = signal_count;
  scratch_.assign(signal_count, 0.0);
  do_configure(signal_count);
  reset();
}

void Extrapolator::push(const DataBlock& block) noexcept {
  if (block.discontinuity) {
    reset();
  } else if (!(block.tag > newest_tag())) {
    stale_blocks_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  blocks_taken_.fetch_add(1, std::memory_order_relaxed);
  do_push(block);
}

bool Extrapolator::take_derivative_fallback_notice() noexcept {
  return used_derivative_fallback() && !fallback_noticed_.exchange(true, std::memory_order_relaxed);
}

void Extrapolator::evaluate_mean(double t0, double t1, std::span<double> out) const noexcept {
  const double length = t1 - t0;
  if (!(length > 0.0)) {
    evaluate(t0, out);
    return;
  }
  for (double& v : out) v = 0.0;
  const double mid = 0.5 * (t0 + t1);
  for (std::size_t q = 0; q < kGaussNodes.size(); ++q) {
    evaluate(mid + 0.5 * length * kGaussNodes[q], scratch_);
    for (std::size_t s = 0; s < out.size(); ++s) out[s] += 0.5 * kGaussWeights[q] * scratch_[s];
  }
}

}  // namespace rtcosim::coupling
