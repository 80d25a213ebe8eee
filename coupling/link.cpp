#include "coupling/link.hpp"

#include <algorithm>
#include <cmath>

#include "base/counter.hpp"
#include "coupling/registry.hpp"

namespace rtcosim::coupling {

std::size_t ring_capacity_blocks(const LinkTiming& timing) {
  if (!(timing.producer_period > 0.0) || !(timing.consumer_period > 0.0)) {
    throw CouplingError("link periods must be positive (producer " + std::to_string(timing.producer_period) +
                        " s, consumer " + std::to_string(timing.consumer_period) + " s)");
  }
  const double longest = timing.consumer_max_frame > 0.0 ? std::max(timing.consumer_max_frame, timing.consumer_period)
                                                         : 4.0 * timing.consumer_period;
  const double blocks = std::ceil(longest / timing.producer_period);
  if (blocks > 1e7) throw CouplingError("link ring would need more than 10^7 blocks: check the periods");
  return std::max<std::size_t>(2, static_cast<std::size_t>(blocks) + timing.margin_blocks);
}

Link::Link(std::size_t signal_count, std::size_t capacity_blocks, std::unique_ptr<Extrapolator> extrapolator)
    : capacity_blocks_(std::max<std::size_t>(1, capacity_blocks)),
      signals_(signal_count),
      slots_(capacity_blocks_ + 1),
      extrapolator_(std::move(extrapolator)) {
  if (!extrapolator_) throw CouplingError("a link needs an extrapolator");
  if (extrapolator_->signal_count() != signal_count) {
    throw CouplingError("link of " + std::to_string(signal_count) + " signals given an extrapolator configured for " +
                        std::to_string(extrapolator_->signal_count()));
  }
  for (Slot& s : slots_) s.block = DataBlock(signal_count);
}

}  // namespace rtcosim::coupling
