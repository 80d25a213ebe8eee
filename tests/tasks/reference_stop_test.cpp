// The reference integration stops on its flag (`rtcosim run` and `rtcosim
// replay` raise it on SIGINT or SIGTERM, docs/replay.md), keeping what it
// integrated so far: the integration is what a replay log's claimed
// duration costs, and it must not be one a user cannot stop.
#include <atomic>

#include <gtest/gtest.h>

#include "tasks/diagram.hpp"

namespace rtcosim::tasks {
namespace {

DiagramSpec lag_diagram() {
  // y' = (2 u - y) / 0.5 with u a unit step at t = 0.
  DiagramSpec d;
  d.blocks = {{"u", "constant", {{"value", 1.0}}, "a"},
              {"lag", "first_order_lag", {{"gain", 2.0}, {"time_constant", 0.5}}, "b"}};
  d.wires = {{{"u", "y"}, {"lag", "u"}}};
  return d;
}

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

}  // namespace
}  // namespace rtcosim::tasks
