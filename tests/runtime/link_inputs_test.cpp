// LinkInputs (runtime/graph.hpp): a partition's inputs answered from its
// links. An averaging link (zoh_average, reference eq. 10.7) gives the step
// mean to the integration formulas only; feed-through outputs and discrete
// samplers see the held value.
#include <memory>

#include <gtest/gtest.h>

#include "coupling/registry.hpp"
#include "runtime/graph.hpp"
#include "tasks/diagram.hpp"

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

}  // namespace
}  // namespace rtcosim::runtime
