#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace rtcosim::coupling {

/*
 * DataBlock: what a producer task emits once per frame on one link: the
 * simulation time tag of the values, a sequence number, the producer's step,
 * and per signal a value, its time derivative and whether that derivative is
 * known. `discontinuity` tells every extrapolator to drop its history before
 * taking this block (a step input, a reset, a mode switch).
 *
 * Ownership and real time: the signal count is fixed at construction, which
 * is the only allocation; every accessor and `assign_from` is noexcept and
 * allocation-free, so a block can be reused on the real-time path.
 */
class DataBlock {
 public:
  DataBlock() = default;
  explicit DataBlock(std::size_t signal_count);

  [[nodiscard]] std::size_t signal_count() const noexcept { return signals_; }

  double tag = 0.0;            // simulation seconds at which the values hold
  std::uint64_t sequence = 0;  // producer's frame counter, gapless from the producer's view
  double producer_step = 0.0;  // the producer's step that ended at `tag` (seconds)
  bool discontinuity = false;  // extrapolators reset their history before this block

  [[nodiscard]] std::span<double> values() noexcept { return {payload_.data(), signals_}; }
  [[nodiscard]] std::span<const double> values() const noexcept { return {payload_.data(), signals_}; }
  [[nodiscard]] std::span<double> derivatives() noexcept { return {payload_.data() + signals_, signals_}; }
  [[nodiscard]] std::span<const double> derivatives() const noexcept { return {payload_.data() + signals_, signals_}; }

  // Per signal 1.0 where its derivative is known, else 0.0 (any nonzero
  // reads as known).
  [[nodiscard]] std::span<double> derivative_flags() noexcept { return {payload_.data() + 2 * signals_, signals_}; }
  [[nodiscard]] std::span<const double> derivative_flags() const noexcept {
    return {payload_.data() + 2 * signals_, signals_};
  }
  [[nodiscard]] bool derivative_valid(std::size_t i) const noexcept { return payload_[2 * signals_ + i] != 0.0; }
  void set_derivative_valid(std::size_t i, bool valid) noexcept { payload_[2 * signals_ + i] = valid ? 1.0 : 0.0; }
  void set_all_derivatives_valid(bool valid) noexcept;
  [[nodiscard]] bool any_derivative_invalid() const noexcept;

  // Sets one signal completely; `derivative` NaN-free callers pass valid=true.
  void set(std::size_t i, double value, double derivative, bool derivative_valid = true) noexcept {
    payload_[i] = value;
    payload_[signals_ + i] = derivative;
    payload_[2 * signals_ + i] = derivative_valid ? 1.0 : 0.0;
  }

  // Copies header and signals of a block with the same signal count.
  // RT-safe: no allocation; precondition other.signal_count() == signal_count().
  void assign_from(const DataBlock& other) noexcept;

  // Values, derivatives and validity flags (1.0/0.0) as one contiguous
  // array of 3 * signal_count doubles: what a link's ring carries, copied
  // in one piece.
  [[nodiscard]] std::span<double> payload() noexcept { return payload_; }
  [[nodiscard]] std::span<const double> payload() const noexcept { return payload_; }

 private:
  std::size_t signals_ = 0;
  std::vector<double> payload_;
};

}  // namespace rtcosim::coupling
