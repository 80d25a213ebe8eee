// ns per frame of the integration that real models need (docs/config.md,
// "Integrators" and "Events"), each beside its baseline on the same model
// in the same binary:
//   BM_Ball/located       a 4 s run of the bouncing-ball FMU (bball2, rk4,
//                         1 ms frames, 19 bounces) with its state events
//                         located inside the frame
//   BM_Ball/frame_end     the same run with the events handled at the end
//                         of the frame that holds them (the baseline)
//   BM_LagChain/<method>/<n>  one step of a chain of n first-order lags
//                         (n states) with rk4 (the baseline), ros1 and ros2:
//                         what the Jacobian (n evaluations) and the LU add
#include <benchmark/benchmark.h>

#include "tasks/block_registry.hpp"
#include "tasks/diagram.hpp"

namespace {

using namespace rtcosim::tasks;

struct NoInputs final : InputSource {
  void sample(std::size_t, double, std::span<double> out) noexcept override {
    for (double& v : out) v = 1.0;
  }
};

constexpr int kBallFrames = 4000;

void BM_Ball(benchmark::State& state) {
  const bool locate = state.range(0) != 0;
  NoInputs in;
  for (auto _ : state) {
    state.PauseTiming();
    auto p = build_partition(BlockRegistry::with_builtins(), "ball",
                             {{"ball", "fmu", {{"file", std::string(RTCOSIM_FMU_DIR) + "/bball2.fmu"}}, ""}}, {}, {},
                             IntegratorKind::kRk4);
    p->set_locate_events(locate);
    state.ResumeTiming();
    for (int i = 0; i < kBallFrames; ++i) p->step(i * 1e-3, 1e-3, in);
    benchmark::DoNotOptimize(p->state().data());
    state.counters["events"] = static_cast<double>(p->events());
    state.counters["trials_per_event"] =
        p->event_counts().located > 0
            ? static_cast<double>(p->event_counts().trials) / static_cast<double>(p->event_counts().located)
            : 0.0;
  }
  state.SetItemsProcessed(state.iterations() * kBallFrames);
  state.SetLabel(locate ? "located" : "frame_end");
}
BENCHMARK(BM_Ball)->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond);

// n lags in series, the first driven by the external input, time constants
// spread over three decades (stiff for n > 1 at small periods).
std::unique_ptr<Partition> lag_chain(IntegratorKind kind, int n) {
  std::vector<BlockSpec> blocks;
  std::vector<WireSpec> wires;
  for (int i = 0; i < n; ++i) {
    const double tau = std::pow(10.0, -3.0 * i / std::max(1, n - 1));
    blocks.push_back({"lag" + std::to_string(i), "first_order_lag", {{"time_constant", tau}}, ""});
    if (i > 0) wires.push_back({{"lag" + std::to_string(i - 1), "y"}, {"lag" + std::to_string(i), "u"}});
  }
  return build_partition(BlockRegistry::with_builtins(), "chain", blocks, wires, {{"u", 1, {{"lag0", "u"}}}}, kind);
}

void BM_LagChain(benchmark::State& state) {
  const auto kind = static_cast<IntegratorKind>(state.range(0));
  const int n = static_cast<int>(state.range(1));
  auto p = lag_chain(kind, n);
  NoInputs in;
  // 1e-4 s keeps rk4 stable for the fastest lag (h / tau = 0.1).
  const double h = 1e-4;
  double t = 0.0;
  for (auto _ : state) {
    p->step(t, h, in);
    t += h;
  }
  benchmark::DoNotOptimize(p->state().data());
  state.SetLabel(std::string(integrator_name(kind)) + " n=" + std::to_string(n));
}
BENCHMARK(BM_LagChain)
    ->ArgsProduct({{static_cast<int>(IntegratorKind::kRk4), static_cast<int>(IntegratorKind::kRos1),
                    static_cast<int>(IntegratorKind::kRos2)},
                   {2, 16, 64}});

}  // namespace

BENCHMARK_MAIN();
