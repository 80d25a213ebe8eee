// The discontinuity flag (runtime/graph.cpp stage_outputs, tasks/partition
// mark_jumps): a block whose output jumps (an ideal step at its time, a
// switch changing position) flags every block the partition publishes
// downstream of it, and the consumer's method restarts there instead of
// extrapolating across the jump.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "rt_config/loader.hpp"
#include "runtime/graph.hpp"
#include "runtime/virtual_executor.hpp"
#include "tests/coupling/method_test_util.hpp"
#include "tests/support/graphs.hpp"

namespace rtcosim::runtime {
namespace {

// A unit step at 105 ms sampled every 10 ms (value and derivative 0 at every
// tag), the consumer evaluating every 1 ms up to 300 ms: the range of what
// it sees, with and without the flag on the first block after the step.
struct Range {
  double lo = 0.0, hi = 0.0;
};
Range stepped_range(const std::string& method, const coupling::ParamSettings& params, bool flag) {
  auto ex = coupling::testing::make_method(method, params);
  Range r{1e300, -1e300};
  for (int k = -5; k <= 30; ++k) {
    const double tag = 0.01 * k;
    ex->push(coupling::testing::make_block(tag, {tag >= 0.105 ? 1.0 : 0.0}, {0.0}, flag && k == 11));
    for (int j = 0; j < 10 && k >= 0; ++j) {
      const double u = coupling::testing::eval1(*ex, tag + 0.001 * j);
      r.lo = std::min(r.lo, u);
      r.hi = std::max(r.hi, u);
    }
  }
  return r;
}

TEST(Discontinuity, HermiteAndEccDoNotOvershootAStepWhenFlagged) {
  for (const auto& [method, params] : {std::pair<std::string, coupling::ParamSettings>{"hermite", {{"order", "3"}}},
                                       {"ecc", {{"order", "3"}, {"interp_order", "3"}}},
                                       {"polynomial", {{"order", "3"}}}}) {
    const Range without = stepped_range(method, params, false);
    EXPECT_GT(std::max(without.hi - 1.0, -without.lo), 0.1) << method << ": the unflagged step overshoots";
    const Range with = stepped_range(method, params, true);
    EXPECT_GE(with.lo, -1e-12) << method;
    EXPECT_LE(with.hi, 1.0 + 1e-12) << method;
  }
}

// The runtime sets the flag: a step source in the producer, through a gain
// (the flag follows every wire downstream), into hermite and ecc links; the
// consumer's outputs stay within [0, 1] and end at exactly 1.
TEST(Discontinuity, TheRuntimeFlagsTheBlockAfterAStepAndTheConsumerDoesNotOvershoot) {
  const auto spec = rtcosim::testing::checked(config::load_graph_text(R"(
tasks:
  - {name: p, period: 10ms, cpu: 0, priority: 70, integrator: rk4, step: fixed}
  - {name: c, period: 1ms, cpu: 1, priority: 80, integrator: rk4, step: fixed}
blocks:
  - {name: s, type: step, task: p, params: {time: 0.105}}
  - {name: g, type: gain, task: p, params: {gain: 1}}
  - {name: h, type: gain, task: c, params: {gain: 1}}
  - {name: e, type: gain, task: c, params: {gain: 1}}
wires:
  - {from: s.y, to: g.u}
  - {from: g.y, to: h.u, coupling: {method: hermite, order: 3}}
  - {from: s.y, to: e.u, coupling: {method: ecc, order: 3, interp_order: 3}}
)",
                                                                      "step.yaml"));
  auto graph = rtcosim::testing::build_graph(spec);
  VirtualExecutor executor(*graph);
  int flagged = 0;
  Range h{1e300, -1e300}, e{1e300, -1e300};
  TaskRuntime* producer = graph->find_task("p");
  executor.run(0.3, [&](TaskRuntime& task, const FrameRecord&) {
    if (&task == producer) {
      for (const auto& o : task.outputs()) flagged += o.discontinuity ? 1 : 0;
      return;
    }
    const auto& part = task.partition();
    const double uh = part.output(part.find_output({"h", "y"}))[0];
    const double ue = part.output(part.find_output({"e", "y"}))[0];
    h = {std::min(h.lo, uh), std::max(h.hi, uh)};
    e = {std::min(e.lo, ue), std::max(e.hi, ue)};
  });
  EXPECT_EQ(flagged, 2);  // the block at 110 ms, on both links
  for (const Range& r : {h, e}) {
    EXPECT_GE(r.lo, -1e-12);
    EXPECT_LE(r.hi, 1.0 + 1e-12);
  }
  const auto& part = graph->find_task("c")->partition();
  EXPECT_EQ(part.output(part.find_output({"h", "y"}))[0], 1.0);
  EXPECT_EQ(part.output(part.find_output({"e", "y"}))[0], 1.0);
}

// A switch changing position flags its outputs and everything downstream,
// through an integrator too (a kink), only in the step where it changed.
TEST(Discontinuity, ASwitchFlagsEverythingDownstreamOnlyInTheStepItChanges) {
  const auto r = tasks::BlockRegistry::with_builtins();
  auto p = tasks::build_partition(r, "p",
                                  {{"clock", "ramp", {}, ""},
                                   {"one", "constant", {{"value", 1.0}}, ""},
                                   {"zero", "constant", {{"value", 0.0}}, ""},
                                   {"sw", "switch", {{"threshold", 0.0305}}, ""},
                                   {"i", "integrator", {}, ""},
                                   {"other", "sine", {}, ""}},
                                  {{{"zero", "y"}, {"sw", "u1"}},
                                   {{"clock", "y"}, {"sw", "control"}},
                                   {{"one", "y"}, {"sw", "u3"}},
                                   {{"sw", "y"}, {"i", "u"}}},
                                  {}, tasks::IntegratorKind::kRk4);
  struct None final : tasks::InputSource {
    void sample(std::size_t, double, std::span<double>) noexcept override {}
  } none;
  const auto sw = p->find_output({"sw", "y"}), in = p->find_output({"i", "y"}), other = p->find_output({"other", "y"});
  for (int k = 0; k < 6; ++k) {
    p->step(0.01 * k, 0.01, none);
    const bool changed = k == 3;  // the switch passes 30.5 ms in [30, 40] ms
    EXPECT_EQ(p->output_jumped(sw), changed) << k;
    EXPECT_EQ(p->output_jumped(in), changed) << k;
    EXPECT_FALSE(p->output_jumped(other)) << k;
  }
}

}  // namespace
}  // namespace rtcosim::runtime
