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
      ring_(capacity_blocks_ * (kHeaderWords + 3 * signal_count)),
      staging_(signal_count),
      extrapolator_(std::move(extrapolator)) {
  if (!extrapolator_) throw CouplingError("a link needs an extrapolator");
  if (extrapolator_->signal_count() != signal_count) {
    throw CouplingError("link of " + std::to_string(signal_count) + " signals given an extrapolator configured for " +
                        std::to_string(extrapolator_->signal_count()));
  }
}

bool Link::publish(const DataBlock& block) noexcept {
  const auto payload = block.payload();
  if (ring_.write_available() < kHeaderWords + payload.size()) {
    base::add_single_writer(dropped_);
    return false;
  }
  // The sequence travels as a double: exact below 2^53 frames (centuries at
  // 100 kHz), and it keeps the ring a single element type.
  const std::array<double, kHeaderWords> header = {block.tag, block.producer_step,
                                                   static_cast<double>(block.sequence),
                                                   block.discontinuity ? 1.0 : 0.0};
  (void)ring_.push(header.data(), kHeaderWords);
  (void)ring_.push(payload.data(), payload.size());
  base::add_single_writer(published_);
  if (wake_ != nullptr) wake_->notify();
  return true;
}

void Link::decode_header(const std::array<double, kHeaderWords>& header, DataBlock& block) noexcept {
  block.tag = header[0];
  block.producer_step = header[1];
  block.sequence = static_cast<std::uint64_t>(header[2]);
  block.discontinuity = header[3] != 0.0;
}

}  // namespace rtcosim::coupling
