// The math of a producer of S sines and a consumer of S first-order lags
// (AB-2) linked by a predictor, on plain arrays, for FRAMES frames: the
// whole-process baseline of bench/virtual_vs_plain.sh (the same math as
// signal_bench's hand-written loop). Prints a checksum so that nothing is
// optimised away.
//   plain_sine_lag S FRAMES
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numbers>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: plain_sine_lag S FRAMES\n");
    return 2;
  }
  const auto n = static_cast<std::size_t>(std::atol(argv[1]));
  const long frames = std::atol(argv[2]);
  std::vector<double> freq(n), value(n), slope(n), tag(n), x(n, 0.0), f_prev(n, 0.0);
  for (std::size_t k = 0; k < n; ++k) freq[k] = 2.0 * std::numbers::pi * static_cast<double>(1 + k % 7);
  constexpr double h = 1e-3, tau = 0.05;
  double t = 0.0;
  for (long f = 0; f < frames; ++f) {
    for (std::size_t k = 0; k < n; ++k) {
      value[k] = std::sin(freq[k] * (t + h));
      slope[k] = freq[k] * std::cos(freq[k] * (t + h));
      tag[k] = t + h;
    }
    for (std::size_t k = 0; k < n; ++k) {
      const double u = value[k] + slope[k] * (t + 0.5 * h - tag[k]);
      const double fx = (u - x[k]) / tau;
      x[k] += h * (1.5 * fx - 0.5 * f_prev[k]);
      f_prev[k] = fx;
    }
    t += h;
  }
  double sum = 0.0;
  for (double v : x) sum += v;
  std::printf("%zu signals, %ld frames, sum of states %.6g\n", n, frames, sum);
  return 0;
}
