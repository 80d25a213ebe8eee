// Link health (runtime/graph.hpp LinkHealth, LinkInputs): the horizon beyond
// which every method holds its value, the frames counted beyond it and on a
// derivative fallback, and the warning a graph gives at its start for a link
// that wants derivatives its producer does not publish.
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "rt_config/loader.hpp"
#include "runtime/graph.hpp"
#include "runtime/virtual_executor.hpp"
#include "tests/coupling/method_test_util.hpp"
#include "tests/support/alloc_counter.hpp"
#include "tests/support/graphs.hpp"

namespace rtcosim::runtime {
namespace {

using coupling::testing::newest_lagrange;
using coupling::testing::sine;

struct OneLink {
  LinkBundle bundle;
  GraphLink link;
  LinkInputs inputs;
  OneLink(const char* method, const coupling::ParamSettings& params, double max_extrapolation) {
    link.max_extrapolation = max_extrapolation;
    bundle.hold(link, std::make_unique<coupling::Link>(
                          1, 8, coupling::MethodRegistry::with_builtins().create(method, params, 1)));
    inputs.bind(&link);
    inputs.finish();
  }
  double output_pass(double t) {
    double u = 0.0;
    inputs.begin_pass(tasks::InputPass::kOutput);
    inputs.sample(0, t, std::span<double>(&u, 1));
    return u;
  }
};

// A unit sine sent every 10 ms up to t = 1 s, a cubic polynomial link with a
// 50 ms horizon: up to the horizon the cubic through the newest four blocks,
// beyond it that cubic's value at the horizon (1 s after the last block the
// unclamped cubic gives -21.9, 10 s after -3.3e4).
TEST(LinkHealth, BeyondTheHorizonTheValueIsHeldThereAndTheFramesAreCounted) {
  OneLink l("polynomial", {{"order", "3"}}, 0.05);
  std::vector<double> tags;
  for (int k = 0; k <= 100; ++k) {
    tags.push_back(0.01 * k);
    coupling::DataBlock b(1);
    b.tag = tags.back();
    b.set(0, sine(b.tag), 0.0, false);
    l.link.link->extrapolator().push(b);
  }
  const double held = newest_lagrange(tags, tags.size(), 3, sine, 1.05);
  EXPECT_NEAR(l.output_pass(1.03), newest_lagrange(tags, tags.size(), 3, sine, 1.03), 1e-12);
  EXPECT_NEAR(l.output_pass(1.045), newest_lagrange(tags, tags.size(), 3, sine, 1.045), 1e-12);
  EXPECT_EQ(l.link.health().beyond_horizon_frames, 0u);
  EXPECT_NEAR(l.output_pass(2.0), held, 1e-12);
  EXPECT_NEAR(l.output_pass(11.0), held, 1e-12);
  EXPECT_LT(std::abs(held), 1.0);
  const LinkHealth h = l.link.health();
  EXPECT_EQ(h.beyond_horizon_frames, 2u);
  EXPECT_NEAR(h.longest_gap, 10.0, 1e-12);
  EXPECT_TRUE(h.degraded());
  // Samples of the integration pass are held too, but not counted: a frame
  // is counted once, at its output pass.
  double u = 0.0;
  l.inputs.begin_pass(tasks::InputPass::kIntegration);
  l.inputs.sample(0, 5.0, std::span<double>(&u, 1));
  EXPECT_NEAR(u, held, 1e-12);
  EXPECT_EQ(l.link.health().beyond_horizon_frames, 2u);
}

// hermite on blocks without derivatives: every frame evaluated from such a
// reconstruction is counted; once the blocks it uses carry derivatives
// again (order 3: the newest two), the count stops.
TEST(LinkHealth, FramesOnADerivativeFallbackAreCounted) {
  OneLink l("hermite", {{"order", "3"}}, 1.0);
  auto push = [&](double tag, bool with_derivative) {
    coupling::DataBlock b(1);
    b.tag = tag;
    b.set(0, sine(tag), coupling::testing::sine_derivative(tag), with_derivative);
    l.link.link->extrapolator().push(b);
  };
  for (int k = 0; k < 5; ++k) {
    push(0.01 * k, false);
    l.output_pass(0.01 * k + 0.005);
  }
  EXPECT_EQ(l.link.health().fallback_frames, 5u);
  push(0.05, true);
  l.output_pass(0.055);  // the block before still lacks its derivative
  EXPECT_EQ(l.link.health().fallback_frames, 6u);
  for (int k = 6; k < 10; ++k) {
    push(0.01 * k, true);
    l.output_pass(0.01 * k + 0.005);
  }
  EXPECT_EQ(l.link.health().fallback_frames, 6u);
}

// Three tasks: a sine in `a`, passed through a gain in `b` (whose output
// derivative is unknown: its input comes over a zoh link), read by `c` over
// a hermite link. The graph warns about that link, naming producer and port,
// and every frame of `c` is a fallback frame.
TEST(LinkHealth, AGraphWarnsAtItsStartAboutALinkWithoutTheDerivativesItsMethodWants) {
  const auto spec = rtcosim::testing::checked(config::load_graph_text(R"(
name: fallback
duration: 1s
tasks:
  - {name: a, period: 10ms, cpu: 0, priority: 70, integrator: rk4, step: fixed}
  - {name: b, period: 10ms, cpu: 0, priority: 71, integrator: rk4, step: fixed}
  - {name: c, period: 5ms, cpu: 1, priority: 80, integrator: rk4, step: fixed}
blocks:
  - {name: s, type: sine, task: a}
  - {name: g, type: gain, task: b, params: {gain: 2}}
  - {name: h, type: gain, task: c, params: {gain: 1}}
wires:
  - {from: s.y, to: g.u, coupling: {method: zoh}}
  - {from: g.y, to: h.u, coupling: {method: hermite, order: 3}}
)",
                                                                      "fallback.yaml"));
  auto graph = rtcosim::testing::build_graph(spec);
  graph->reset();
  const auto warnings = graph->link_warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("producer 'b' publishes no derivative for 'g.y'"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("(hermite)"), std::string::npos) << warnings[0];

  VirtualExecutor executor(*graph);
  executor.run(0.2);
  const TaskRuntime* c = graph->find_task("c");
  for (const auto& l : graph->links()) {
    const LinkHealth h = l->health();
    EXPECT_EQ(h.stale + h.rejected_tags + h.rejected_values + h.beyond_horizon_frames, 0u) << l->source;
    EXPECT_EQ(h.fallback_frames, l->method == "hermite" ? c->stats().frames.load() : 0u) << l->source;
  }
  EXPECT_EQ(c->stats().frames.load(), 40u);
}

// Behind the history: a predictor link given blocks every 10 ms up to 0.99 s
// keeps the newest 64 (from 0.36 s on). A frame any of whose samples lies
// before 0.36 s is counted once, at its output pass, and reads the 0.36 s
// block's value; frames that stay within the blocks are not.
TEST(LinkHealth, FramesThatReadBehindTheHistoryAreCountedOnceAndHoldItsOldestBlock) {
  OneLink l("predictor", {}, 0.05);
  for (int k = 0; k < 100; ++k) {
    coupling::DataBlock b(1);
    b.tag = 0.01 * k;
    b.set(0, sine(b.tag), coupling::testing::sine_derivative(b.tag), true);
    l.link.link->extrapolator().push(b);
  }
  const double oldest = 0.01 * 36;
  ASSERT_EQ(l.link.link->extrapolator().oldest_tag(), oldest);
  auto integration = [&](double t) {
    double u = 0.0;
    l.inputs.begin_pass(tasks::InputPass::kIntegration);
    l.inputs.sample(0, t, std::span<double>(&u, 1));
    return u;
  };
  const auto behind = [&] { return l.link.health().behind_history_frames; };
  EXPECT_EQ(l.output_pass(0.99), sine(0.99));
  EXPECT_EQ(l.output_pass(oldest), sine(oldest));  // at the oldest block: within it
  EXPECT_EQ(behind(), 0u);
  EXPECT_FALSE(l.link.health().degraded());
  // A frame whose step starts behind the history and ends within it.
  EXPECT_EQ(integration(0.3), sine(oldest));
  EXPECT_EQ(behind(), 0u);  // counted at the output pass
  EXPECT_NEAR(l.output_pass(0.5), sine(0.5), 1e-7);
  EXPECT_EQ(behind(), 1u);
  // Two samples behind in one frame: one frame.
  integration(0.1);
  integration(0.2);
  EXPECT_EQ(l.output_pass(0.25), sine(oldest));
  EXPECT_EQ(behind(), 2u);
  // The next frame within the blocks is not counted.
  integration(0.4);
  l.output_pass(0.41);
  EXPECT_EQ(behind(), 2u);
  EXPECT_EQ(l.output_pass(-3.0), sine(oldest));
  const LinkHealth h = l.link.health();
  EXPECT_EQ(h.behind_history_frames, 3u);
  EXPECT_EQ(h.beyond_horizon_frames, 0u);
  EXPECT_TRUE(h.degraded());
}

// Reads down to one consumer period and one producer period behind the
// newest block keep the method's own reconstruction (a rate group's slow
// member reads its step's start that far back): the graph sets it on each
// link's extrapolator.
TEST(LinkHealth, TheLookbackIsTheConsumersPeriodPlusTheProducers) {
  const auto spec = rtcosim::testing::checked(config::load_graph_text(R"(
tasks:
  - {name: a, period: 10ms, cpu: 0, priority: 70, integrator: rk4, step: fixed}
  - {name: c, period: 5ms, cpu: 1, priority: 80, integrator: rk4, step: fixed}
  - {name: d, period: 100ms, cpu: 1, priority: 60, integrator: rk4, step: fixed}
blocks:
  - {name: s, type: sine, task: a}
  - {name: h, type: gain, task: c, params: {gain: 1}}
  - {name: m, type: gain, task: d, params: {gain: 1}}
wires:
  - {from: s.y, to: h.u, coupling: {method: predictor}}
  - {from: s.y, to: m.u, coupling: {method: hermite}}
)",
                                                                      "lookback.yaml"));
  auto graph = rtcosim::testing::build_graph(spec);
  ASSERT_EQ(graph->links().size(), 2u);
  for (const auto& l : graph->links()) {
    const double expected = l->consumer == "d" ? 0.110 : 0.015;
    EXPECT_NEAR(l->lookback, expected, 1e-15) << l->consumer;
    EXPECT_EQ(l->link->extrapolator().lookback(), l->lookback) << l->consumer;
  }
}

// The horizon from the YAML, and its default from the producer's timing.
TEST(LinkHealth, TheHorizonComesFromTheCouplingOrTheProducersPeriod) {
  const auto spec = rtcosim::testing::checked(config::load_graph_text(R"(
tasks:
  - {name: a, period: 10ms, cpu: 0, priority: 70, integrator: rk4, step: fixed}
  - {name: b, period: 10ms, cpu: 0, priority: 71, integrator: rk4, step: measured, max_step: 80ms}
  - {name: c, period: 5ms, cpu: 1, priority: 80, integrator: rk4, step: fixed}
  - {name: d, period: 100ms, cpu: 1, priority: 60, integrator: rk4, step: fixed}
blocks:
  - {name: s, type: sine, task: a}
  - {name: r, type: ramp, task: b}
  - {name: h, type: gain, task: c, params: {gain: 1}}
  - {name: k, type: gain, task: c, params: {gain: 1}}
  - {name: m, type: gain, task: d, params: {gain: 1}}
wires:
  - {from: s.y, to: h.u, coupling: {method: polynomial, max_extrapolation: 30ms}}
  - {from: r.y, to: k.u, coupling: {method: polynomial}}
  - {from: s.y, to: m.u, coupling: {method: polynomial}}
)",
                                                                      "horizon.yaml"));
  auto graph = rtcosim::testing::build_graph(spec);
  ASSERT_EQ(graph->links().size(), 3u);
  for (const auto& l : graph->links()) {
    // s.y -> c: as written; r.y: max(4 periods, max_step + 1 period) = 90 ms;
    // s.y -> d, a slower consumer: its period + 2 producer periods = 120 ms.
    const double expected = l->source == "r.y" ? 0.090 : l->consumer == "d" ? 0.120 : 0.030;
    EXPECT_NEAR(l->max_extrapolation, expected, 1e-15) << l->source << " -> " << l->consumer;
  }
}

}  // namespace
}  // namespace rtcosim::runtime

// Bundled links (docs/frame-program.md): the wires between two tasks with
// one coupling share a ring, a data block and an extrapolator. Against the
// same graph with a link per wire (Graph::build's bundle_links = false),
// every method gives the consumer the same bits, and every wire still has
// its name, its counters and its health.
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

// A plugin's method (here zoh registered again under another origin) is
// given its producer's derivatives whatever it declares, and its wires
// travel alone; the built-in zoh's wires share a bundle and get none.
TEST(BundledLinks, APluginMethodGetsDerivativesAndTravelsAlone) {
  auto methods = coupling::MethodRegistry::with_builtins();
  coupling::MethodInfo plugin = *methods.find("zoh");
  plugin.id = "zoh_plugin";
  plugin.origin = "/opt/plugins/zoh_plugin.so";
  methods.add(plugin);
  const auto blocks = tasks::BlockRegistry::with_builtins();
  for (const bool as_plugin : {false, true}) {
    auto spec = testing::checked(config::load_graph_text(R"(
tasks:
  - {name: producer, period: 1ms, integrator: ab2}
  - {name: consumer, period: 2ms, integrator: ab2}
blocks:
  - {name: a, type: sine, task: producer}
  - {name: b, type: sine, task: producer, params: {frequency: 3}}
  - {name: la, type: first_order_lag, task: consumer, params: {time_constant: 0.1}}
  - {name: lb, type: first_order_lag, task: consumer, params: {time_constant: 0.1}}
wires:
  - {from: a.y, to: la.u, coupling: {method: zoh}}
  - {from: b.y, to: lb.u, coupling: {method: zoh}}
)",
                                                         "plugin"));
    if (as_plugin) {
      for (auto& w : spec.wires) w.coupling->method = "zoh_plugin";
    }
    auto g = Graph::build(spec, blocks, methods);
    g->reset();
    auto& producer = g->find_task("producer")->partition();
    const auto flag = producer.output_derivative_flags(producer.find_output({"a", "y"}))[0];
    EXPECT_EQ(flag, as_plugin ? 1 : 0);
    EXPECT_EQ(g->bundles().size(), as_plugin ? 2u : 1u);
  }
}

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
