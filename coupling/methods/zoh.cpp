#include "coupling/methods/zoh.hpp"

#include <algorithm>

namespace rtcosim::coupling::methods {

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

void Zoh::evaluate_mean(double t0, double t1, std::span<double> out) const noexcept {
  if (history_.empty() || !(t1 > t0)) {
    evaluate(t0, out);
    return;
  }
  std::fill(out.begin(), out.end(), 0.0);
  // Walk the held segments from t1 back to t0: block i holds on
  // [tag(i), tag(i-1)), the newest one until t1; the oldest kept block also
  // covers anything before its tag.
  double segment_end = t1;
  for (std::size_t i = held_at(t1);; ++i) {
    const bool oldest = (i + 1 == history_.size());
    const double segment_start = oldest ? t0 : std::max(t0, history_.tag(i));
    const double length = segment_end - segment_start;
    if (length > 0.0) {
      const double* v = history_.values_of(i);
      for (std::size_t s = 0; s < out.size(); ++s) out[s] += length * v[s];
    }
    if (oldest || segment_start <= t0) break;
    segment_end = segment_start;
  }
  const double inv = 1.0 / (t1 - t0);
  for (double& v : out) v *= inv;
}

}  // namespace rtcosim::coupling::methods
