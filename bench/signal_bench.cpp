// End-to-end cost of a signal per frame (issue 13, goal 2): a producer task
// of S sines and a consumer task of S first-order lags (AB-2), each sine
// linked to its lag with `predictor`, as bench/scale_graph.py writes them.
// One iteration is one frame of each task as the runtime runs it: drain,
// extrapolate at each integrator stage, block math, stage, publish. The
// baseline in the same binary is a hand-written loop doing the same math on
// plain arrays: the sine and its derivative, the predictor's linear
// extrapolation, one AB-2 step of the lag. Counters: ns per signal.
#include <chrono>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "bench/frames.hpp"

namespace {

using namespace rtcosim;

using Clock = std::chrono::steady_clock;

void per_signal(benchmark::State& state, Clock::time_point start, double signals) {
  const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  state.counters["ns_per_signal"] = ns / (static_cast<double>(state.iterations()) * signals);
}

void frames(benchmark::State& state, bool compiled) {
  std::unique_ptr<runtime::Graph> g;
  try {
    g = bench::make_graph(bench::sine_lag_graph(static_cast<int>(state.range(0))), compiled);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  auto& producer = *g->find_task("producer");
  auto& consumer = *g->find_task("consumer");
  const auto start = Clock::now();
  for (auto _ : state) bench::frame_pair(producer, consumer, 1e-3);
  per_signal(state, start, static_cast<double>(state.range(0)));
}
void BM_Runtime(benchmark::State& state) { frames(state, true); }
BENCHMARK(BM_Runtime)->Arg(1)->Arg(16)->Arg(640)->Arg(10000);
// The same graph block by block with a link per wire (as before the frame
// program), for the before/after ratio in one binary.
void BM_RuntimeBlockByBlock(benchmark::State& state) { frames(state, false); }
BENCHMARK(BM_RuntimeBlockByBlock)->Arg(16)->Arg(640)->Arg(10000);

// The same math on plain arrays.
void BM_HandWritten(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<double> freq(n), value(n), slope(n), tag(n), x(n, 0.0), f_prev(n, 0.0);
  for (std::size_t k = 0; k < n; ++k) freq[k] = 2.0 * std::numbers::pi * static_cast<double>(1 + k % 7);
  constexpr double h = 1e-3, tau = 0.05;
  double t = 0.0;
  const auto start = Clock::now();
  for (auto _ : state) {
    for (std::size_t k = 0; k < n; ++k) {  // producer: the sine and its derivative at the end of its step
      value[k] = std::sin(freq[k] * (t + h));
      slope[k] = freq[k] * std::cos(freq[k] * (t + h));
      tag[k] = t + h;
    }
    for (std::size_t k = 0; k < n; ++k) {  // consumer: predictor at t, AB-2 step of the lag
      const double u = value[k] + slope[k] * (t - tag[k]);
      const double f = (u - x[k]) / tau;
      x[k] += h * (1.5 * f - 0.5 * f_prev[k]);
      f_prev[k] = f;
    }
    t += h;
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  per_signal(state, start, static_cast<double>(n));
}
BENCHMARK(BM_HandWritten)->Arg(16)->Arg(640)->Arg(10000);

}  // namespace

BENCHMARK_MAIN();
