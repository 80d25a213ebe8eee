// Link health (runtime/graph.hpp LinkHealth, LinkInputs): the horizon beyond
// which every method holds its value, the frames counted beyond it and on a
// derivative fallback, and the warning a graph gives at its start for a link
// that wants derivatives its producer does not publish.
#include <cmath>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "rt_config/loader.hpp"
#include "runtime/graph.hpp"
#include "runtime/virtual_executor.hpp"
#include "tests/coupling/method_test_util.hpp"
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

// The horizon from the YAML, and its default from the producer's timing.
TEST(LinkHealth, TheHorizonComesFromTheCouplingOrTheProducersPeriod) {
  const auto spec = rtcosim::testing::checked(config::load_graph_text(R"(
tasks:
  - {name: a, period: 10ms, cpu: 0, priority: 70, integrator: rk4, step: fixed}
  - {name: b, period: 10ms, cpu: 0, priority: 71, integrator: rk4, step: measured, max_step: 80ms}
  - {name: c, period: 5ms, cpu: 1, priority: 80, integrator: rk4, step: fixed}
blocks:
  - {name: s, type: sine, task: a}
  - {name: r, type: ramp, task: b}
  - {name: h, type: gain, task: c, params: {gain: 1}}
  - {name: k, type: gain, task: c, params: {gain: 1}}
wires:
  - {from: s.y, to: h.u, coupling: {method: polynomial, max_extrapolation: 30ms}}
  - {from: r.y, to: k.u, coupling: {method: polynomial}}
)",
                                                                      "horizon.yaml"));
  auto graph = rtcosim::testing::build_graph(spec);
  for (const auto& l : graph->links()) {
    // s.y: as written; r.y: max(4 periods, max_step + 1 period) = 90 ms.
    EXPECT_NEAR(l->max_extrapolation, l->source == "s.y" ? 0.030 : 0.090, 1e-15) << l->source;
  }
}

}  // namespace
}  // namespace rtcosim::runtime
