#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <vector>

#include "coupling/quadrature.hpp"

namespace rtcosim::coupling::methods {

inline constexpr int kMaxOrder = 8;

/*
 * NewtonSet: one interpolating polynomial per signal, all through the same
 * nodes, in Newton form (reference eq. 1-2): the coefficients are divided
 * differences, evaluation is a Horner scheme. Nodes are ordered newest first,
 * which keeps extrapolation ahead of the newest node well conditioned.
 *
 * Storage is coefficient-major (all signals' c_j together) so that evaluation
 * of many signals vectorises. Sized in `configure`; `fit`, `evaluate` and
 * `clear` are noexcept and allocation-free.
 */
class NewtonSet {
 public:
  void configure(std::size_t signal_count) {
    signals_ = signal_count;
    coeff_.assign(static_cast<std::size_t>(kMaxOrder + 1) * signal_count, 0.0);
    clear();
  }

  void clear() noexcept { degree_ = -1; }
  [[nodiscard]] bool empty() const noexcept { return degree_ < 0; }
  [[nodiscard]] int degree() const noexcept { return degree_; }
  [[nodiscard]] double node(int j) const noexcept { return nodes_[static_cast<std::size_t>(j)]; }

  // Fits the polynomials through nodes[0..m] (m <= kMaxOrder, distinct nodes)
  // with value_at(k, s) the value of signal s at node k.
  template <typename ValueAt>
  void fit(std::span<const double> nodes, ValueAt&& value_at) noexcept {
    const int m = static_cast<int>(std::min<std::size_t>(nodes.size(), kMaxOrder + 1)) - 1;
    degree_ = m;
    if (m < 0) return;
    for (int k = 0; k <= m; ++k) nodes_[static_cast<std::size_t>(k)] = nodes[static_cast<std::size_t>(k)];
    for (int k = 0; k <= m; ++k) {
      double* c = row(k);
      for (std::size_t s = 0; s < signals_; ++s) c[s] = value_at(k, s);
    }
    // In-place divided differences, column by column (reference table 1).
    for (int j = 1; j <= m; ++j) {
      for (int k = m; k >= j; --k) {
        const double inv = 1.0 / (nodes_[static_cast<std::size_t>(k)] - nodes_[static_cast<std::size_t>(k - j)]);
        double* c = row(k);
        const double* prev = row(k - 1);
        for (std::size_t s = 0; s < signals_; ++s) c[s] = (c[s] - prev[s]) * inv;
      }
    }
  }

  void evaluate(double t, std::span<double> out) const noexcept {
    if (degree_ < 0) {
      std::fill(out.begin(), out.end(), 0.0);
      return;
    }
    const double* top = row(degree_);
    std::copy(top, top + signals_, out.begin());
    for (int j = degree_ - 1; j >= 0; --j) {
      const double d = t - nodes_[static_cast<std::size_t>(j)];
      const double* c = row(j);
      for (std::size_t s = 0; s < signals_; ++s) out[s] = out[s] * d + c[s];
    }
  }

  [[nodiscard]] double evaluate_one(double t, std::size_t s) const noexcept {
    if (degree_ < 0) return 0.0;
    double p = row(degree_)[s];
    for (int j = degree_ - 1; j >= 0; --j) p = p * (t - nodes_[static_cast<std::size_t>(j)]) + row(j)[s];
    return p;
  }

  // Exact integral of signal s's polynomial over [a, b] (Gauss-Legendre with
  // 5 nodes integrates degree <= 9 exactly, above kMaxOrder).
  [[nodiscard]] double integral_one(double a, double b, std::size_t s) const noexcept;

 private:
  double* row(int j) noexcept { return &coeff_[static_cast<std::size_t>(j) * signals_]; }
  const double* row(int j) const noexcept { return &coeff_[static_cast<std::size_t>(j) * signals_]; }

  std::size_t signals_ = 0;
  int degree_ = -1;
  std::array<double, kMaxOrder + 1> nodes_{};
  std::vector<double> coeff_;
};

inline double NewtonSet::integral_one(double a, double b, std::size_t s) const noexcept {
  return gauss_legendre5(a, b, [&](double t) { return evaluate_one(t, s); });
}

}  // namespace rtcosim::coupling::methods
