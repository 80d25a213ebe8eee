// The coupling layer's hot paths. (1) `evaluate` of every built-in method
// for 1, 16 and 256 signals, with its history filled at jittered tags,
// reported per signal (counter ns_per_signal). (2) Link publish + drain of
// one block against raw boost::lockfree::spsc_queue push + pop of a
// same-size payload struct in the same binary (the baseline).
#include <benchmark/benchmark.h>

#include <array>
#include <boost/lockfree/spsc_queue.hpp>
#include <cmath>

#include "coupling/link.hpp"
#include "coupling/registry.hpp"

namespace {

using namespace rtcosim::coupling;

const MethodRegistry& registry() {
  static const MethodRegistry r = MethodRegistry::with_builtins();
  return r;
}

void BM_Evaluate(benchmark::State& state, const char* method) {
  const auto n = static_cast<std::size_t>(state.range(0));
  auto e = registry().create(method, {}, n);
  DataBlock b(n);
  double t = 0.0;
  for (int k = 0; k < 12; ++k) {
    t += 0.04 * (1.0 + 0.1 * std::sin(k));
    b.tag = t;
    for (std::size_t s = 0; s < n; ++s) b.set(s, std::sin(t + 0.1 * static_cast<double>(s)), std::cos(t), true);
    e->push(b);
  }
  std::vector<double> out(n);
  double when = t + 0.013;
  for (auto _ : state) {
    e->evaluate(when, out);
    benchmark::DoNotOptimize(out.data());
    when += 1e-9;  // a new time each call, as a consumer's steps are
  }
  state.counters["ns_per_signal"] = benchmark::Counter(static_cast<double>(n) * static_cast<double>(state.iterations()),
                                                       benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

#define RTCOSIM_EVAL_BENCH(id)                                                     \
  void BM_Evaluate_##id(benchmark::State& s) { BM_Evaluate(s, #id); }             \
  BENCHMARK(BM_Evaluate_##id)->Arg(1)->Arg(16)->Arg(256)

RTCOSIM_EVAL_BENCH(zoh);
RTCOSIM_EVAL_BENCH(zoh_average);
RTCOSIM_EVAL_BENCH(polynomial);
RTCOSIM_EVAL_BENCH(hermite);
RTCOSIM_EVAL_BENCH(interpolated);
RTCOSIM_EVAL_BENCH(smoothed);
RTCOSIM_EVAL_BENCH(ecd);
RTCOSIM_EVAL_BENCH(ecc);
RTCOSIM_EVAL_BENCH(predictor);

// The same bytes a Link moves for a 16-signal block: a 4-word header and
// values, derivatives, validity (3 x 16 doubles).
struct Payload {
  std::array<double, 4 + 3 * 16> words;
};

void BM_Baseline_RawSpscQueue16(benchmark::State& state) {
  boost::lockfree::spsc_queue<Payload> queue(64);
  Payload in{}, out{};
  for (std::size_t i = 0; i < in.words.size(); ++i) in.words[i] = static_cast<double>(i);
  for (auto _ : state) {
    in.words[0] += 1.0;
    (void)queue.push(in);
    (void)queue.pop(out);
    benchmark::DoNotOptimize(out.words.data());
  }
}
BENCHMARK(BM_Baseline_RawSpscQueue16);

void BM_LinkPublishDrain(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  Link link(n, 64, registry().create("zoh", {}, n));
  DataBlock b(n);
  for (std::size_t s = 0; s < n; ++s) b.set(s, static_cast<double>(s), 0.0, true);
  double sink = 0.0;
  for (auto _ : state) {
    b.tag += 1e-3;
    ++b.sequence;
    (void)link.publish(b);
    link.drain_to([&](const DataBlock& d) noexcept { sink += d.tag; });
    benchmark::DoNotOptimize(sink);
  }
}
BENCHMARK(BM_LinkPublishDrain)->Arg(1)->Arg(16)->Arg(256);

}  // namespace

BENCHMARK_MAIN();
