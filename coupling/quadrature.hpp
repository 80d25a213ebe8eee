#pragma once

#include <array>
#include <cstddef>

namespace rtcosim::coupling {

// 5-point Gauss-Legendre on [-1, 1]: exact for polynomials of degree <= 9,
// which covers every polynomial method (order <= 8) plus one degree.
inline constexpr std::array<double, 5> kGaussNodes = {-0.9061798459386640, -0.5384693101056831, 0.0,
                                                      0.5384693101056831, 0.9061798459386640};
inline constexpr std::array<double, 5> kGaussWeights = {0.2369268850561891, 0.4786286704993665,
                                                        0.5688888888888889, 0.4786286704993665,
                                                        0.2369268850561891};

// Integral of f over [a, b]. RT-safe when f is.
template <typename F>
double gauss_legendre5(double a, double b, F&& f) noexcept {
  const double mid = 0.5 * (a + b);
  const double half = 0.5 * (b - a);
  double sum = 0.0;
  for (std::size_t q = 0; q < kGaussNodes.size(); ++q) sum += kGaussWeights[q] * f(mid + half * kGaussNodes[q]);
  return half * sum;
}

}  // namespace rtcosim::coupling
