#include "coupling/extrapolator.hpp"

#include <cmath>
#include <cstdint>

#include "base/counter.hpp"
#include "base/finite.hpp"
#include "base/signal_loop.hpp"
#include "coupling/quadrature.hpp"

namespace rtcosim::coupling {

void Extrapolator::configure(std::size_t signal_count) {
  signal_count_ = signal_count;
  scratch_.assign(signal_count, 0.0);
  do_configure(signal_count);
  reset();
}

namespace {

// False when a value or a known derivative is NaN or infinite, without a
// branch per signal (base::nonfinite_sign, which vectorises); `all_known`
// says whether every derivative is known, from the same pass.
RTCOSIM_SIGNAL_LOOP bool finite_payload(const DataBlock& block, bool& all_known) noexcept {
  const std::size_t n = block.signal_count();
  const double* v = block.values().data();
  const double* d = block.derivatives().data();
  const double* flags = block.derivative_flags().data();
  std::uint64_t bad = 0, all = ~std::uint64_t{0};
  for (std::size_t s = 0; s < n; ++s) {
    const std::uint64_t known = base::nonzero_sign(flags[s]);
    bad |= base::nonfinite_sign(v[s]) | (known & base::nonfinite_sign(d[s]));
    all &= known;
  }
  all_known = (all >> 63) != 0;
  return (bad >> 63) == 0;
}

}  // namespace

bool Extrapolator::tag_within_limits(const DataBlock& block) const noexcept {
  if (!std::isfinite(block.tag) || block.tag > clock_ + limits_.max_lead) return false;
  const double newest = newest_tag();
  if (!std::isfinite(newest)) return true;
  // Blocks the producer made since the newest taken one (its sequence
  // numbers are gapless; a ring that dropped blocks leaves a gap here too).
  const double frames =
      block.sequence > newest_sequence_ ? static_cast<double>(block.sequence - newest_sequence_) : 1.0;
  return block.tag <= newest + frames * limits_.max_advance;
}

void Extrapolator::push(const DataBlock& block) noexcept {
  if (!tag_within_limits(block)) {
    base::add_single_writer(rejected_tags_);
    return;
  }
  if (!finite_payload(block, block_known_)) {
    base::add_single_writer(rejected_values_);
    return;
  }
  if (block.discontinuity) {
    reset();
  } else if (!(block.tag > newest_tag())) {
    base::add_single_writer(stale_blocks_);
    return;
  }
  base::add_single_writer(blocks_taken_);
  newest_sequence_ = block.sequence;
  fallback_now_ = false;
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
