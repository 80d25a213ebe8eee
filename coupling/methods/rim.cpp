#include "coupling/methods/rim.hpp"

#include <algorithm>

#include "interface/rim_payload.hpp"

namespace rtcosim::coupling::methods {

void Rim::evaluate(double t, std::span<double> out) const noexcept {
  if (history_.empty()) {
    std::fill(out.begin(), out.end(), 0.0);
    return;
  }
  // a: the newest model with tag <= t (the oldest kept if none); b: the one
  // after it, or, beyond the newest, the newest with a the one before.
  std::size_t a = 0;
  while (a + 1 < history_.size() && history_.tag(a) > t) ++a;
  const double* va = history_.values_of(a);
  std::copy(va, va + out.size(), out.begin());
  if (order_ == 0 || history_.size() < 2 || t <= history_.tag(a)) return;
  const bool beyond = a == 0;
  const std::size_t early = beyond ? 1 : a;
  const std::size_t late = beyond ? 0 : a - 1;
  const double* ve = history_.values_of(early);
  const double* vl = history_.values_of(late);
  constexpr std::size_t kHeader = interface::RimPayload::kHeader;
  // The layout: [tag, ni, status, condition, M_eff (ni^2), lambda~, z, w, x].
  if (out.size() < kHeader || ve[1] != vl[1] || ve[2] != vl[2]) return;
  const auto ni = static_cast<std::size_t>(vl[1]);
  if (ni == 0 || interface::RimPayload::flat_size(ni) != out.size()) return;
  const double span = history_.tag(late) - history_.tag(early);
  if (!(span > 0.0)) return;
  const double s = (t - history_.tag(early)) / span;
  const std::size_t first = beyond ? kHeader + ni * ni : kHeader;
  for (std::size_t i = first; i < out.size(); ++i) out[i] = ve[i] + (vl[i] - ve[i]) * s;
  out[3] = std::max(ve[3], vl[3]);
}

}  // namespace rtcosim::coupling::methods
