// Bundled links (docs/frame-program.md): the wires between two tasks with
// one coupling share a ring, a data block and an extrapolator. Against the
// same graph with a link per wire (Graph::build's bundle_links = false),
// every method gives the consumer the same bits, and every wire still has
// its name, its counters and its health.
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/alloc_counter.hpp"
#include "tests/support/graphs.hpp"

namespace rtcosim::runtime {
namespace {

const char* const kMethods[] = {"zoh",      "zoh_average", "polynomial", "hermite",  "interpolated",
                                "smoothed", "ecd",         "ecc",        "predictor"};

// A producer (1 ms, ab2) of three sines per method, a consumer (3 ms, rk4)
// of a lag per sine, each wire with its method; a lag reading two methods'
// signals through a sum; and an acceleration-free step, whose wire can jump
// and so travels alone. Interleaved, the wires alternate between methods,
// so that no bundle's wires are consecutive inputs of the consumer.
std::string graph_text(bool interleaved) {
  std::string blocks = "blocks:\n", wires = "wires:\n";
  const std::size_t methods = std::size(kMethods);
  for (std::size_t i = 0; i < 3 * methods; ++i) {
    {
      const std::size_t k = interleaved ? (i % methods) * 3 + i / methods : i;
      const char* m = kMethods[k / 3];
      const std::string n = std::to_string(k);
      blocks += "  - {name: s" + n + ", type: sine, task: producer, params: {frequency: " + std::to_string(1 + k % 5) +
                ", phase: " + std::to_string(0.1 * static_cast<double>(k)) + "}}\n";
      blocks += "  - {name: l" + n + ", type: first_order_lag, task: consumer, params: {time_constant: 0.02}}\n";
      wires += "  - {from: s" + n + ".y, to: l" + n + ".u, coupling: {method: " + m + "}}\n";
    }
  }
  blocks +=
      "  - {name: both, type: sum, task: consumer}\n"
      "  - {name: lboth, type: first_order_lag, task: consumer, params: {time_constant: 0.05}}\n"
      "  - {name: jump, type: step, task: producer, params: {time: 0.05}}\n"
      "  - {name: ljump, type: first_order_lag, task: consumer, params: {time_constant: 0.05}}\n";
  wires +=
      "  - {from: s0.y, to: both.u1, coupling: {method: zoh}}\n"
      "  - {from: s26.y, to: both.u2, coupling: {method: predictor}}\n"
      "  - {from: both.y, to: lboth.u}\n"
      "  - {from: jump.y, to: ljump.u, coupling: {method: predictor}}\n";
  return "tasks:\n  - {name: producer, period: 1ms, integrator: ab2}\n"
         "  - {name: consumer, period: 3ms, integrator: rk4}\n" +
         blocks + wires;
}

struct TwoTasks {
  std::unique_ptr<Graph> graph;
  explicit TwoTasks(bool bundled, bool interleaved = false) {
    graph =
        testing::build_graph(testing::checked(config::load_graph_text(graph_text(interleaved), "bundles")), bundled);
    graph->reset();
  }
  TaskRuntime& task(const char* name) { return *graph->find_task(name); }
  // Producer every 1 ms, consumer every 3 ms after the producer's frames up to its step's end.
  void frames(int producer_frames, int& done) {
    for (int n = 0; n < producer_frames; ++n, ++done) {
      for (TaskRuntime* t : {&task("producer")}) {
        t->drain();
        t->step(1e-3);
        t->publish();
      }
      if (done % 3 == 0) {
        TaskRuntime& c = task("consumer");
        c.drain();
        c.step(3e-3);
        c.publish();
      }
    }
  }
};

class BundledLinks : public ::testing::TestWithParam<bool> {};

TEST_P(BundledLinks, EveryMethodGivesTheBitsOfALinkPerWire) {
  TwoTasks bundled(true, GetParam()), alone(false, GetParam());
  // Per method one bundle; the sum's two wires join their methods' bundles;
  // the step's wire travels alone.
  EXPECT_EQ(bundled.graph->bundles().size(), std::size(kMethods) + 1);
  EXPECT_EQ(alone.graph->bundles().size(), alone.graph->links().size());
  ASSERT_EQ(bundled.graph->links().size(), alone.graph->links().size());
  int done_b = 0, done_a = 0;
  for (int chunk = 0; chunk < 30; ++chunk) {
    bundled.frames(10, done_b);
    alone.frames(10, done_a);
    const auto xb = bundled.task("consumer").partition().state();
    const auto xa = alone.task("consumer").partition().state();
    ASSERT_EQ(xb.size(), xa.size());
    ASSERT_EQ(std::memcmp(xb.data(), xa.data(), xb.size_bytes()), 0) << "after " << done_b << " producer frames";
  }
  // The consumer moved, and every method's lags did.
  for (double x : bundled.task("consumer").partition().state()) EXPECT_NE(x, 0.0);
  // Per wire, names and the bundle's counters as a link of its own had them.
  for (std::size_t i = 0; i < bundled.graph->links().size(); ++i) {
    const GraphLink& b = *bundled.graph->links()[i];
    const GraphLink& a = *alone.graph->links()[i];
    EXPECT_EQ(b.source, a.source);
    EXPECT_EQ(b.method, a.method);
    EXPECT_EQ(b.link->published(), a.link->published()) << b.source;
    EXPECT_EQ(b.link->dropped(), a.link->dropped()) << b.source;
    EXPECT_EQ(b.stats->data_age.count(), a.stats->data_age.count()) << b.source;
    EXPECT_EQ(b.stats->extrapolation_interval.max(), a.stats->extrapolation_interval.max()) << b.source;
    EXPECT_EQ(b.health().beyond_horizon_frames, a.health().beyond_horizon_frames) << b.source;
    EXPECT_EQ(b.health().stale, a.health().stale) << b.source;
  }
  EXPECT_EQ(bundled.graph->links().back()->bundle->members.size(), 1u);  // the step's wire
}

INSTANTIATE_TEST_SUITE_P(Wires, BundledLinks, ::testing::Values(false, true),
                         [](const auto& p) { return std::string(p.param ? "interleaved" : "grouped"); });

TEST(BundledLinksRealTime, FramesAllocateNothing) {
  TwoTasks bundled(true);
  int done = 0;
  bundled.frames(12, done);
  ::rtcosim::testing::AllocationScope scope;
  bundled.frames(300, done);
  EXPECT_EQ(scope.count(), 0u);
}

}  // namespace
}  // namespace rtcosim::runtime
