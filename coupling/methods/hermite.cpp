#include "coupling/methods/hermite.hpp"

#include <algorithm>
#include <array>

namespace rtcosim::coupling::methods {

void Hermite::do_configure(std::size_t signal_count) {
  history_.configure(history_blocks(), signal_count);
  nodes_.assign(signal_count * kStride, 0.0);
  coeff_.assign(signal_count * kStride, 0.0);
  degree_.assign(signal_count, -1);
}

void Hermite::reset() noexcept {
  history_.clear();
  std::fill(degree_.begin(), degree_.end(), -1);
}

void Hermite::do_push(const DataBlock& block) noexcept {
  history_.push(block, derivatives_known());
  const std::size_t wanted = static_cast<std::size_t>(order_) + 1;
  for (std::size_t s = 0; s < degree_.size(); ++s) {
    double* z = &nodes_[s * kStride];
    double* c = &coeff_[s * kStride];
    std::array<double, kStride> slope{};
    std::array<bool, kStride> is_slope{};
    std::size_t count = 0;
    for (std::size_t i = 0; i < history_.size() && count < wanted; ++i) {
      z[count] = history_.tag(i);
      c[count] = history_.value(i, s);
      is_slope[count] = false;
      ++count;
      if (count == wanted) break;
      if (history_.derivative_valid(i, s)) {
        z[count] = z[count - 1];
        c[count] = c[count - 1];
        slope[count] = history_.derivative(i, s);
        is_slope[count] = true;
        ++count;
      } else {
        note_derivative_fallback();
      }
    }
    const int m = static_cast<int>(count) - 1;
    degree_[s] = m;
    // Confluent divided differences: a repeated node can only be adjacent,
    // so only the first column meets one, and there f[z, z] = y'(z).
    for (int j = 1; j <= m; ++j) {
      for (int k = m; k >= j; --k) {
        const auto uk = static_cast<std::size_t>(k);
        if (j == 1 && is_slope[uk]) {
          c[uk] = slope[uk];
        } else {
          c[uk] = (c[uk] - c[uk - 1]) / (z[uk] - z[uk - static_cast<std::size_t>(j)]);
        }
      }
    }
  }
}

void Hermite::evaluate(double t, std::span<double> out) const noexcept {
  const double newest = history_.newest_tag();
  for (std::size_t s = 0; s < out.size(); ++s) {
    const int m = degree_[s];
    if (m < 0) {
      out[s] = 0.0;
      continue;
    }
    const double* z = &nodes_[s * kStride];
    if (behind_reconstruction(t, z[m], newest)) {
      out[s] = history_.interpolate_one(t, s);
      continue;
    }
    const double* c = &coeff_[s * kStride];
    double p = c[m];
    for (int j = m - 1; j >= 0; --j) p = p * (t - z[j]) + c[j];
    out[s] = p;
  }
}

}  // namespace rtcosim::coupling::methods
