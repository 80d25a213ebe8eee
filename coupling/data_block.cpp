#include "coupling/data_block.hpp"

#include <algorithm>

namespace rtcosim::coupling {

DataBlock::DataBlock(std::size_t signal_count) : signals_(signal_count), payload_(3 * signal_count, 0.0) {}

void DataBlock::set_all_derivatives_valid(bool valid) noexcept {
  std::fill(payload_.begin() + static_cast<std::ptrdiff_t>(2 * signals_), payload_.end(), valid ? 1.0 : 0.0);
}

bool DataBlock::any_derivative_invalid() const noexcept {
  return std::any_of(payload_.begin() + static_cast<std::ptrdiff_t>(2 * signals_), payload_.end(),
                     [](double v) { return v == 0.0; });
}

void DataBlock::assign_from(const DataBlock& other) noexcept {
  tag = other.tag;
  sequence = other.sequence;
  producer_step = other.producer_step;
  discontinuity = other.discontinuity;
  std::copy(other.payload_.begin(), other.payload_.end(), payload_.begin());
}

}  // namespace rtcosim::coupling
