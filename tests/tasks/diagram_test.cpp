#include "tasks/diagram.hpp"

#include <atomic>
#include <cmath>

#include <gtest/gtest.h>

#include "tasks/flight_control.hpp"

namespace rtcosim::tasks {
namespace {

DiagramSpec lag_diagram() {
  // y' = (2 u - y) / 0.5 with u a unit step at t = 0: y = 2 (1 - exp(-2 t)).
  DiagramSpec d;
  d.blocks = {{"u", "constant", {{"value", 1.0}}, "a"},
              {"lag", "first_order_lag", {{"gain", 2.0}, {"time_constant", 0.5}}, "b"}};
  d.wires = {{{"u", "y"}, {"lag", "u"}}};
  return d;
}

TEST(ReferenceSolver, InterpolatesTheRk4SolutionToItsOwnOrder) {
  const auto registry = BlockRegistry::with_builtins();
  ReferenceSolver solver(registry, lag_diagram(), 1e-3);
  solver.run(2.0, {{"lag", "y"}});
  ASSERT_EQ(solver.times().size(), 2001u);
  EXPECT_DOUBLE_EQ(solver.times().back(), 2.0);
  EXPECT_EQ(solver.samples(0).front(), 0.0);
  for (double t : {0.0, 0.0004, 0.1234567, 1.0, 1.9999}) {
    EXPECT_NEAR(solver.value(0, t), 2.0 * (1.0 - std::exp(-2.0 * t)), 1e-11) << t;
  }
  // Outside the run it holds the end values.
  EXPECT_DOUBLE_EQ(solver.value(0, 5.0), solver.samples(0).back());
}

TEST(ReferenceSolver, RejectsANonPositiveStep) {
  const auto registry = BlockRegistry::with_builtins();
  EXPECT_THROW(ReferenceSolver(registry, lag_diagram(), 0.0), BlockError);
}

// The reference integration stops on its flag (`rtcosim run` and `rtcosim
// replay` raise it on SIGINT or SIGTERM, docs/replay.md), keeping what it
// integrated so far: the integration is what a replay log's claimed
// duration costs, and it must not be one a user cannot stop.

// Raised before the integration (as a signal that came while the replay
// ran): it stops before its first step, with t = 0 kept; 10^6 s at 1 ms
// would be 10^9 steps and 24 GB.
TEST(ReferenceStop, ARaisedFlagStopsTheIntegrationKeepingWhatItHas) {
  const auto registry = BlockRegistry::with_builtins();
  std::atomic<bool> stop{true};
  ReferenceSolver solver(registry, lag_diagram(), 1e-3);
  solver.run(1e6, {{"lag", "y"}}, &stop);
  EXPECT_TRUE(solver.stopped());
  ASSERT_EQ(solver.times().size(), 1u);
  EXPECT_EQ(solver.samples(0).size(), 1u);
  EXPECT_EQ(solver.value(0, 0.5), solver.samples(0).front());
}

// Down, the integration runs to its end, as without a flag.
TEST(ReferenceStop, ALoweredFlagLetsItRunToTheEnd) {
  const auto registry = BlockRegistry::with_builtins();
  std::atomic<bool> stop{false};
  ReferenceSolver solver(registry, lag_diagram(), 1e-3);
  solver.run(2.0, {{"lag", "y"}}, &stop);
  EXPECT_FALSE(solver.stopped());
  EXPECT_EQ(solver.times().size(), 2001u);
  ReferenceSolver unflagged(registry, lag_diagram(), 1e-3);
  unflagged.run(2.0, {{"lag", "y"}});
  EXPECT_EQ(unflagged.samples(0), solver.samples(0));
}

TEST(SplitByTask, CrossTaskWiresBecomeExternalInputsAndExports) {
  const auto registry = BlockRegistry::with_builtins();
  const auto tasks = split_by_task(registry, lag_diagram());
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[0].task, "a");
  EXPECT_EQ(tasks[1].task, "b");
  ASSERT_EQ(tasks[0].exported.size(), 1u);
  EXPECT_EQ(tasks[0].exported[0].str(), "u.y");
  ASSERT_EQ(tasks[1].externals.size(), 1u);
  EXPECT_EQ(tasks[1].externals[0].name, "u.y");
  EXPECT_EQ(tasks[1].externals[0].width, 1u);
  ASSERT_EQ(tasks[1].externals[0].targets.size(), 1u);
  EXPECT_EQ(tasks[1].externals[0].targets[0].str(), "lag.u");
  EXPECT_TRUE(tasks[1].wires.empty());
}

TEST(SplitByTask, ABlockWithoutATaskIsAnError) {
  const auto registry = BlockRegistry::with_builtins();
  auto d = lag_diagram();
  d.blocks[1].task.clear();
  try {
    (void)split_by_task(registry, d);
    FAIL() << "no error";
  } catch (const BlockError& e) {
    EXPECT_STREQ(e.what(), "block 'lag' is not assigned to a task");
  }
}

TEST(SplitByTask, TheSplitDiagramStepsLikeTheMergedOneWhenFedExactly) {
  // Feeding task b's external input with task a's exact output must give
  // the merged diagram's result: the split loses nothing.
  const auto registry = BlockRegistry::with_builtins();
  const auto tasks = split_by_task(registry, lag_diagram());
  auto b = build_partition(registry, "b", tasks[1].blocks, tasks[1].wires, tasks[1].externals, IntegratorKind::kRk4);
  struct One final : InputSource {
    void sample(std::size_t, double, std::span<double> out) noexcept override { out[0] = 1.0; }
  } one;
  ReferenceSolver merged(registry, lag_diagram(), 0.01);
  merged.run(1.0, {{"lag", "y"}});
  double t = 0.0;
  for (int k = 0; k < 100; ++k, t += 0.01) b->step(t, 0.01, one);
  EXPECT_EQ(b->output(b->find_output({"lag", "y"}))[0], merged.samples(0).back());
}

}  // namespace
}  // namespace rtcosim::tasks
