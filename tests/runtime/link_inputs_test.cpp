// LinkInputs (runtime/graph.hpp): a partition's inputs answered from its
// links. An averaging link (zoh_average, reference eq. 10.7) gives the step
// mean to the integration formulas only; feed-through outputs and discrete
// samplers see the held value.
#include <algorithm>
#include <cstdio>
#include <memory>

#include <gtest/gtest.h>

#include "coupling/registry.hpp"
#include "rt_config/loader.hpp"
#include "runtime/graph.hpp"
#include "runtime/virtual_executor.hpp"
#include "tasks/diagram.hpp"
#include "tests/support/graphs.hpp"

namespace rtcosim::runtime {
namespace {

// A consumer partition fed by one zoh_average link: a gain (feed-through),
// a zero-order-hold sampler at the consumer's step and an integrator, all
// reading the link. The producer is a ramp u = t sampled every 1 ms; the
// consumer steps 10 ms, with every block up to the step's end pushed first.
struct AveragingRig {
  LinkBundle bundle;
  GraphLink link;
  LinkInputs inputs;
  std::unique_ptr<tasks::Partition> partition;
  int next_block = 0;

  explicit AveragingRig(tasks::IntegratorKind integrator) {
    bundle.hold(link, std::make_unique<coupling::Link>(
                          1, 64, coupling::MethodRegistry::with_builtins().create("zoh_average", {}, 1)));
    inputs.bind(&link);
    inputs.finish();
    partition = tasks::build_partition(tasks::BlockRegistry::with_builtins(), "consumer",
                                       {{"g", "gain", {{"gain", 1.0}}, ""},
                                        {"sampler", "zero_order_hold", {{"sample_time", 0.01}}, ""},
                                        {"i", "integrator", {}, ""}},
                                       {}, {{"plant.y", 1, {{"g", "u"}, {"sampler", "u"}, {"i", "u"}}}}, integrator);
  }
  void push_until(double t) {
    for (; next_block * 0.001 <= t + 1e-12; ++next_block) {
      coupling::DataBlock b(1);
      b.tag = next_block * 0.001;
      b.set(0, b.tag, 1.0);
      link.link->extrapolator().push(b);
    }
  }
  double out(const std::string& block) const { return partition->output(partition->find_output({block, "y"}))[0]; }
};

TEST(LinkInputs, AveragingLinkGivesTheMeanToTheIntegratorAndTheHeldValueToOutputsAndSamplers) {
  for (auto kind : {tasks::IntegratorKind::kEuler, tasks::IntegratorKind::kAb2, tasks::IntegratorKind::kRk4}) {
    AveragingRig rig(kind);
    double integral = 0.0;  // of the held ramp: 1 ms segments of k ms
    for (int j = 0; j < 5; ++j) {
      const double t0 = 0.01 * j;
      const double t1 = 0.01 * (j + 1);
      rig.push_until(t1);
      rig.partition->step(t0, 0.01, rig.inputs);
      for (int k = 10 * j; k < 10 * (j + 1); ++k) integral += 0.001 * (0.001 * k);
      // The gain passes the held value at the step's end (0.01 at t = 0.01,
      // where the step mean would be 0.0045).
      EXPECT_NEAR(rig.out("g"), t1, 1e-15) << "step " << j;
      // The sampler took the held value at the step's start.
      EXPECT_NEAR(rig.out("sampler"), t0, 1e-15) << "step " << j;
      // The integrator integrated the step mean: the held ramp's integral,
      // exactly, with any integrator (the input is constant over a step).
      EXPECT_NEAR(rig.out("i"), integral, 1e-15) << "step " << j;
    }
    EXPECT_NEAR(rig.out("i"), 0.001 * 0.001 * 49 * 50 / 2, 1e-15);
  }
}

// A slower consumer (docs/config.md, "Input averaging"): a unit ramp
// published every 1 ms (each block tagged with the end of the step that
// computed it, so at a consumer frame at t the newest tag is t + 1 ms), read
// over zoh_average by an integrator stepping N ms. After the last step
// [t, t + h] the integrator holds the held ramp's integral up to t plus the
// step's known part: 1 ms of u(t), then u(t + 1 ms) over the rest. Before,
// the blocks inside each step were lost (N = 1000: 6.004 instead of 7.4995)
// and every frame counted beyond the horizon. A step that would pass the
// run's 4 s ends on it.
TEST(LinkInputs, ASlowerConsumersAveragingKeepsTheIntegralOfEveryBlock) {
  for (int n : {1, 7, 10, 1000}) {
    char text[1024];
    std::snprintf(text, sizeof text, R"(
name: averaging
tasks:
  - {name: a, period: 1ms, cpu: 0, priority: 80, integrator: euler, step: fixed}
  - {name: c, period: %dms, cpu: 1, priority: 70, integrator: euler, step: fixed}
blocks:
  - {name: r, type: ramp, task: a}
  - {name: i, type: integrator, task: c}
wires:
  - {from: r.y, to: i.u, coupling: {method: zoh_average}}
)",
                  n);
    auto graph =
        rtcosim::testing::build_graph(rtcosim::testing::checked(config::load_graph_text(text, "averaging.yaml")));
    graph->reset();
    VirtualExecutor executor(*graph);
    executor.run(4.0);
    const TaskRuntime* c = graph->find_task("c");
    const std::uint64_t frames = c->stats().frames.load();
    const double period = 0.001;
    const double h = n * period;
    const double last = static_cast<double>(frames - 1) * n;  // the last step's start, in producer periods
    // The last step ends on the run's end (N = 7: 3 ms from 3.997 s, not 7).
    const double h_last = std::min(h, 4.0 - last * period);
    EXPECT_NEAR(c->partition().time(), 4.0, 1e-12) << "N = " << n;
    double expected = 0.0;
    for (int k = 0; k < static_cast<int>(last); ++k) expected += period * (k * period);
    expected += period * (last * period) + (h_last - period) * ((last + 1) * period) * (n > 1 ? 1.0 : 0.0);
    const double y = c->partition().output(c->partition().find_output({"i", "y"}))[0];
    EXPECT_NEAR(y, expected, 1e-12 * expected) << "N = " << n;
    EXPECT_EQ(graph->links()[0]->health().beyond_horizon_frames, 0u) << "N = " << n;
  }
}

}  // namespace
}  // namespace rtcosim::runtime
