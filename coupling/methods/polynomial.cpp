#include "coupling/methods/polynomial.hpp"

namespace rtcosim::coupling::methods {

void fit_newest(NewtonSet& set, const SampleHistory& history, int order) noexcept {
  const std::size_t count = std::min<std::size_t>(history.size(), static_cast<std::size_t>(order) + 1);
  std::array<double, kMaxOrder + 1> nodes{};
  for (std::size_t k = 0; k < count; ++k) nodes[k] = history.tag(k);
  set.fit(std::span<const double>(nodes.data(), count),
          [&](int k, std::size_t s) { return history.value(static_cast<std::size_t>(k), s); });
}

}  // namespace rtcosim::coupling::methods
