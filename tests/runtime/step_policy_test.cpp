#include "runtime/step_policy.hpp"

#include <gtest/gtest.h>

namespace rtcosim::runtime {
namespace {

TEST(StepPolicy, FixedStepIsThePeriodWhateverTheClockSays) {
  StepPolicy p(StepPolicy::Kind::kFixed, 0.01, 0.0);
  EXPECT_EQ(p.next(0.0, 0.0), 0.01);
  EXPECT_EQ(p.next(0.01, 0.5), 0.01);
  EXPECT_EQ(p.lost(), 0.0);
  EXPECT_EQ(p.max_step(), 0.04);  // default: four periods
}

TEST(StepPolicy, MeasuredStepBringsSimulationTimeToWallTime) {
  StepPolicy p(StepPolicy::Kind::kMeasured, 0.01, 0.05);
  double sim = 0.0;
  for (double wall : {0.01, 0.02, 0.037, 0.041, 0.09}) {
    sim += p.next(sim, wall);
    EXPECT_DOUBLE_EQ(sim, wall);
  }
  EXPECT_EQ(p.lost(), 0.0);
}

TEST(StepPolicy, AStepBeyondMaxStepIsCutAndTheRestIsLostForGood) {
  StepPolicy p(StepPolicy::Kind::kMeasured, 0.01, 0.02);
  double sim = 0.0;
  sim += p.next(sim, 0.05);  // 50 ms of wall time, 20 ms allowed
  EXPECT_DOUBLE_EQ(sim, 0.02);
  EXPECT_DOUBLE_EQ(p.lost(), 0.03);
  // Afterwards the simulation runs 30 ms behind, and the next step is again
  // the real time since the previous integration point.
  const double h = p.next(sim, 0.06);
  EXPECT_DOUBLE_EQ(h, 0.01);
  EXPECT_DOUBLE_EQ(p.lost(), 0.03);
}

TEST(StepPolicy, NoNegativeStepWhenTheClockIsBehindTheSimulation) {
  StepPolicy p(StepPolicy::Kind::kMeasured, 0.01, 0.02);
  EXPECT_EQ(p.next(0.5, 0.4), 0.0);
}

TEST(Deadlines, CatchUpKeepsThePeriodicScheduleAndCountsMissedPeriods) {
  Deadlines d(0, 10, Deadlines::Overrun::kCatchUp);
  EXPECT_EQ(d.advance(3), 10);   // on time
  EXPECT_EQ(d.advance(35), 20);  // ran to 35: deadlines 20 and 30 passed
  EXPECT_EQ(d.overruns(), 1u);
  EXPECT_EQ(d.missed_periods(), 2u);
  EXPECT_EQ(d.advance(36), 30);  // still behind: next frame starts at once
  EXPECT_EQ(d.overruns(), 2u);
  EXPECT_EQ(d.missed_periods(), 3u);
}

TEST(Deadlines, SkipRephasesToTheNextFutureDeadline) {
  Deadlines d(0, 10, Deadlines::Overrun::kSkip);
  EXPECT_EQ(d.advance(35), 40);
  EXPECT_EQ(d.overruns(), 1u);
  EXPECT_EQ(d.missed_periods(), 3u);  // 10, 20, 30
  EXPECT_EQ(d.advance(41), 50);
  EXPECT_EQ(d.overruns(), 1u);
}

TEST(Deadlines, EndingExactlyAtTheNextDeadlineIsNoOverrun) {
  Deadlines d(0, 10, Deadlines::Overrun::kCatchUp);
  EXPECT_EQ(d.advance(10), 10);
  EXPECT_EQ(d.overruns(), 0u);
}

}  // namespace
}  // namespace rtcosim::runtime
