// Per-frame runtime overhead: everything a frame does but the model's math,
// for a producer and a consumer task exchanging 4 links x 16 signals. The
// baseline in the same binary is the two partitions stepping alone (the
// model's math); the difference is what the runtime adds: draining the
// rings into the extrapolators, evaluating them, staging and publishing
// the blocks, statistics.
#include <benchmark/benchmark.h>

#include "bench/frames.hpp"

namespace {

using namespace rtcosim;

std::unique_ptr<runtime::Graph> make_graph() { return bench::make_graph(bench::kLinks4x16); }

class Frozen final : public tasks::InputSource {
 public:
  void sample(std::size_t, double, std::span<double> out) noexcept override {
    for (double& v : out) v = 1.0;
  }
};

// One producer frame and one consumer frame, as the runtime runs them.
void BM_Frame_4Links16Signals(benchmark::State& state) {
  auto g = make_graph();
  auto& producer = *g->find_task("producer");
  auto& consumer = *g->find_task("consumer");
  for (auto _ : state) bench::frame_pair(producer, consumer, 1e-3);
}
BENCHMARK(BM_Frame_4Links16Signals);

// Baseline: the same two partitions stepping with inputs from a plain source.
void BM_Baseline_ModelMathOnly(benchmark::State& state) {
  auto g = make_graph();
  auto& producer = g->find_task("producer")->partition();
  auto& consumer = g->find_task("consumer")->partition();
  Frozen inputs;
  double t = 0.0;
  for (auto _ : state) {
    producer.step(t, 1e-3, inputs);
    consumer.step(t, 1e-3, inputs);
    t += 1e-3;
  }
}
BENCHMARK(BM_Baseline_ModelMathOnly);

}  // namespace

BENCHMARK_MAIN();
