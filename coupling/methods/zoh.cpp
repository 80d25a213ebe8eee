#include "coupling/methods/zoh.hpp"

#include <algorithm>
#include <cmath>

namespace rtcosim::coupling::methods {

void Zoh::do_configure(std::size_t signal_count) {
  history_.configure(history_blocks(), signal_count);
  since_mark_.assign(signal_count, 0.0);
  mark_value_.assign(signal_count, 0.0);
  owed_.assign(signal_count, 0.0);
  scratch_.assign(signal_count, 0.0);
}

void Zoh::reset() noexcept {
  history_.clear();
  marked_ = false;
  mark_is_origin_ = false;
  std::fill(owed_.begin(), owed_.end(), 0.0);
}

void Zoh::do_push(const DataBlock& block) noexcept {
  const auto y = block.values();
  if (history_.empty() && !marked_) {
    // The first block since a reset is the mark until a step sets one:
    // before it the signal is its value.
    marked_ = true;
    mark_is_origin_ = true;
    mark_ = block.tag;
  }
  if (history_.empty() || block.tag <= mark_) {
    // The new block holds from its tag through the mark (a first block also
    // back to it). Over [tag, mark] the consumer's steps integrated the
    // value held before it (nothing before the first block, which may also
    // come after the mark).
    const double* before = history_.empty() ? nullptr : history_.values_of(0);
    const double missed = std::max(0.0, mark_ - block.tag);
    for (std::size_t s = 0; s < y.size(); ++s) {
      owed_[s] += missed * (y[s] - (before ? before[s] : 0.0));
      since_mark_[s] = (block.tag - mark_) * y[s];
      mark_value_[s] = y[s];
    }
  } else {
    // The held signal changes from the new tag on only, which is after the
    // mark: the integral up to the new tag gains the previous value's
    // segment.
    const double segment = block.tag - history_.tag(0);
    const double* previous = history_.values_of(0);
    for (std::size_t s = 0; s < y.size(); ++s) since_mark_[s] += segment * previous[s];
  }
  history_.push(block, derivatives_known());
}

std::size_t Zoh::held_at(double t) const noexcept {
  std::size_t i = 0;
  while (i + 1 < history_.size() && history_.tag(i) > t) ++i;
  return i;
}

void Zoh::evaluate(double t, std::span<double> out) const noexcept {
  if (history_.empty()) {
    std::fill(out.begin(), out.end(), 0.0);
    return;
  }
  const double* v = history_.values_of(held_at(t));
  std::copy(v, v + out.size(), out.begin());
}

void Zoh::integral_from_newest(double t, std::span<double> out) const noexcept {
  // Block i holds on [tag(i), tag(i-1)), the newest one for ever after its
  // tag, the oldest kept one also before its tag.
  double end = history_.tag(0);
  std::size_t i = 0;
  while (i + 1 < history_.size() && history_.tag(i) > t) {
    ++i;
    const double start = std::max(t, history_.tag(i));
    const double* v = history_.values_of(i);
    for (std::size_t s = 0; s < out.size(); ++s) out[s] -= (end - start) * v[s];
    end = start;
  }
  // The rest, [t, end) or [end, t), is held by block i.
  const double* v = history_.values_of(i);
  for (std::size_t s = 0; s < out.size(); ++s) out[s] += (t - end) * v[s];
}

bool Zoh::from_mark(double t) const noexcept {
  if (!marked_) return false;
  if (mark_is_origin_ && t <= mark_) return true;
  return std::fabs(t - mark_) <= 1e-12 * std::max(1.0, std::fabs(mark_));
}

void Zoh::evaluate_mean(double t0, double t1, std::span<double> out) const noexcept {
  if (history_.empty() || !(t1 > t0)) {
    evaluate(t0, out);
    return;
  }
  // mean = (I(t1) - I(t0)) / (t1 - t0), I measured from the newest tag.
  std::fill(out.begin(), out.end(), 0.0);
  integral_from_newest(t1, out);
  if (from_mark(t0)) {
    // I(t0) = I(mark) + (t0 - mark) v(mark), I(mark) = -since_mark.
    for (std::size_t s = 0; s < out.size(); ++s) out[s] += since_mark_[s] - (t0 - mark_) * mark_value_[s];
  } else {
    std::fill(scratch_.begin(), scratch_.end(), 0.0);
    integral_from_newest(t0, scratch_);
    for (std::size_t s = 0; s < out.size(); ++s) out[s] -= scratch_[s];
  }
  const double inv = 1.0 / (t1 - t0);
  for (double& v : out) v *= inv;
}

void Zoh::step_mean(double t0, double t1, std::span<double> out) noexcept {
  evaluate_mean(t0, t1, out);
  // What the earlier steps missed is owed only to the step that continues
  // them.
  if (from_mark(t0) && t1 > t0) {
    const double inv = 1.0 / (t1 - t0);
    for (std::size_t s = 0; s < out.size(); ++s) out[s] += owed_[s] * inv;
  }
  std::fill(owed_.begin(), owed_.end(), 0.0);
  // The mark moves to t1: since_mark = -I(t1).
  marked_ = true;
  mark_is_origin_ = false;
  mark_ = t1;
  if (history_.empty()) return;
  std::fill(since_mark_.begin(), since_mark_.end(), 0.0);
  integral_from_newest(t1, since_mark_);
  for (double& v : since_mark_) v = -v;
  const double* held = history_.values_of(held_at(t1));
  std::copy(held, held + mark_value_.size(), mark_value_.begin());
}

}  // namespace rtcosim::coupling::methods
