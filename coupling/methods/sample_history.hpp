#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "base/finite.hpp"
#include "coupling/data_block.hpp"
#include "coupling/extrapolator.hpp"

namespace rtcosim::coupling::methods {

// Blocks every built-in method keeps, whatever its order, to answer reads
// behind the data its reconstruction is built from: a consumer that fell
// behind in a stall reads up to this many producer blocks back from the
// stored samples, and holds the oldest one before that.
inline constexpr std::size_t kLookBackBlocks = Extrapolator::kDefaultHistoryBlocks;

/*
 * SampleHistory: the newest `capacity` blocks of a link, as a ring of
 * structure-of-arrays slots. Index 0 is the newest sample, 1 the one before.
 * Sized in `configure`; `push`, `clear` and every accessor are noexcept and
 * allocation-free.
 */
class SampleHistory {
 public:
  void configure(std::size_t capacity, std::size_t signal_count) {
    capacity_ = capacity;
    signals_ = signal_count;
    tags_.assign(capacity, 0.0);
    values_.assign(capacity * signal_count, 0.0);
    derivatives_.assign(capacity * signal_count, 0.0);
    valid_.assign(capacity * signal_count, 0);
    all_valid_.assign(capacity, 0);
    ones_.assign(signal_count, 1);
    clear();
  }

  void clear() noexcept {
    size_ = 0;
    head_ = 0;
  }

  void push(const DataBlock& block) noexcept {
    std::uint64_t all = ~std::uint64_t{0};
    const double* flags = block.derivative_flags().data();
    for (std::size_t s = 0; s < signals_; ++s) all &= base::nonzero_sign(flags[s]);
    push(block, (all >> 63) != 0);
  }
  // The same, told whether every derivative of the block is known (what
  // Extrapolator::derivatives_known says in do_push).
  void push(const DataBlock& block, bool all_known) noexcept {
    head_ = (head_ + 1 == capacity_) ? 0 : head_ + 1;
    tags_[head_] = block.tag;
    const std::size_t base = head_ * signals_;
    const std::size_t n = signals_;
    std::copy_n(block.values().data(), n, values_.data() + base);
    std::copy_n(block.derivatives().data(), n, derivatives_.data() + base);
    // A slot whose derivatives are all known keeps no flags of its own:
    // its readers see ones_ (derivative_flags_of), which saves a byte per
    // signal per block in the common case.
    all_valid_[head_] = all_known ? 1 : 0;
    if (!all_known) {
      // Raw pointer: a store through a byte pointer may alias anything, so
      // indexing the vector would reload its data pointer after every flag.
      std::uint8_t* valid = valid_.data() + base;
      const double* flags = block.derivative_flags().data();
      for (std::size_t s = 0; s < n; ++s) valid[s] = static_cast<std::uint8_t>(base::nonzero_sign(flags[s]) >> 63);
    }
    if (size_ < capacity_) ++size_;
  }

  // Appends a sample of values only (derivatives marked invalid), for
  // histories of computed points rather than received blocks.
  void push_values(double tag, const double* values) noexcept {
    head_ = (head_ + 1 == capacity_) ? 0 : head_ + 1;
    if (size_ < capacity_) ++size_;
    overwrite_newest(tag, values);
  }
  // Replaces the newest sample's tag and values; precondition !empty().
  void overwrite_newest(double tag, const double* values) noexcept {
    tags_[head_] = tag;
    all_valid_[head_] = signals_ == 0 ? 1 : 0;
    const std::size_t base = head_ * signals_;
    for (std::size_t s = 0; s < signals_; ++s) {
      values_[base + s] = values[s];
      valid_[base + s] = 0;
    }
  }

  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }

  [[nodiscard]] double newest_tag() const noexcept {
    return size_ == 0 ? -std::numeric_limits<double>::infinity() : tags_[head_];
  }
  // i = 0 is the newest sample; precondition i < size().
  [[nodiscard]] double tag(std::size_t i) const noexcept { return tags_[slot(i)]; }
  [[nodiscard]] double value(std::size_t i, std::size_t s) const noexcept { return values_[slot(i) * signals_ + s]; }
  [[nodiscard]] double derivative(std::size_t i, std::size_t s) const noexcept {
    return derivatives_[slot(i) * signals_ + s];
  }
  [[nodiscard]] bool derivative_valid(std::size_t i, std::size_t s) const noexcept {
    const std::size_t at = slot(i);
    return all_valid_[at] != 0 || valid_[at * signals_ + s] != 0;
  }
  // Pointers to the values, derivatives and derivative flags of sample i,
  // one per signal, contiguous: hot loops index these rather than calling
  // the accessors above per signal.
  [[nodiscard]] const double* values_of(std::size_t i) const noexcept { return &values_[slot(i) * signals_]; }
  [[nodiscard]] const double* derivatives_of(std::size_t i) const noexcept { return &derivatives_[slot(i) * signals_]; }
  [[nodiscard]] const std::uint8_t* derivative_flags_of(std::size_t i) const noexcept {
    const std::size_t at = slot(i);
    return all_valid_[at] != 0 ? ones_.data() : valid_.data() + at * signals_;
  }
  // Every derivative of sample i is known (the common case, which a
  // method can then handle in one branch-free loop).
  [[nodiscard]] bool all_derivatives_valid(std::size_t i) const noexcept { return all_valid_[slot(i)] != 0; }

  // Spacing of the two newest tags, or 0 with fewer than two samples.
  [[nodiscard]] double newest_spacing() const noexcept { return size_ < 2 ? 0.0 : tag(0) - tag(1); }

  // Oldest tag kept, or -inf when empty.
  [[nodiscard]] double oldest_tag() const noexcept {
    return size_ == 0 ? -std::numeric_limits<double>::infinity() : tag(size_ - 1);
  }
  // Tag of the oldest of the newest `count` samples (of all, if fewer are
  // kept): where a reconstruction built on them starts. -inf when empty.
  [[nodiscard]] double tag_of_newest(std::size_t count) const noexcept {
    if (size_ == 0) return -std::numeric_limits<double>::infinity();
    return tag(std::min(count, size_) - 1);
  }

  // The stored signal at t, from the samples alone: between the two kept
  // samples around t a cubic Hermite where both have a known derivative,
  // else the line through their values; the oldest value before the oldest
  // tag and the newest after the newest. This is what a read behind a
  // method's reconstruction returns: the data themselves, not a polynomial
  // carried backwards past its nodes. Zeros when empty.
  void interpolate(double t, std::span<double> out) const noexcept {
    if (size_ == 0) {
      std::fill(out.begin(), out.end(), 0.0);
      return;
    }
    const std::size_t late = bracket(t);
    if (late + 1 == size_ || !(t < tag(late))) {
      const double* v = values_of(late);
      std::copy(v, v + out.size(), out.begin());
      return;
    }
    for (std::size_t s = 0; s < out.size(); ++s) out[s] = between(late, t, s);
  }
  // One signal of `interpolate`.
  [[nodiscard]] double interpolate_one(double t, std::size_t s) const noexcept {
    if (size_ == 0) return 0.0;
    const std::size_t late = bracket(t);
    if (late + 1 == size_ || !(t < tag(late))) return value(late, s);
    return between(late, t, s);
  }

 private:
  [[nodiscard]] std::size_t slot(std::size_t i) const noexcept {
    return head_ >= i ? head_ - i : head_ + capacity_ - i;
  }
  // The i with t in [tag(i + 1), tag(i)); else 0 (t at or after the
  // newest tag) or size() - 1 (t before the oldest). Precondition !empty().
  [[nodiscard]] std::size_t bracket(double t) const noexcept {
    std::size_t i = 0;
    while (i + 1 < size_ && tag(i + 1) > t) ++i;
    return i;
  }
  // Signal s at t in [tag(late + 1), tag(late)).
  [[nodiscard]] double between(std::size_t late, double t, std::size_t s) const noexcept {
    const std::size_t early = late + 1;
    const double t0 = tag(early);
    const double h = tag(late) - t0;
    const double y0 = value(early, s);
    const double y1 = value(late, s);
    const double x = (t - t0) / h;
    if (!derivative_valid(early, s) || !derivative_valid(late, s)) return y0 + x * (y1 - y0);
    // Cubic Hermite basis on [0, 1], the derivatives scaled by the spacing.
    const double d0 = h * derivative(early, s);
    const double d1 = h * derivative(late, s);
    const double xm = x - 1.0;
    return y0 * (1.0 + 2.0 * x) * xm * xm + d0 * x * xm * xm + y1 * x * x * (3.0 - 2.0 * x) + d1 * x * x * xm;
  }

  std::size_t capacity_ = 0;
  std::size_t signals_ = 0;
  std::size_t size_ = 0;
  std::size_t head_ = 0;
  std::vector<double> tags_;
  std::vector<double> values_;
  std::vector<double> derivatives_;
  std::vector<std::uint8_t> valid_;
  std::vector<std::uint8_t> all_valid_;  // per slot; where set, the slot's valid_ is stale
  std::vector<std::uint8_t> ones_;       // signals_ flags, all set: a slot whose derivatives are all known
};

}  // namespace rtcosim::coupling::methods
