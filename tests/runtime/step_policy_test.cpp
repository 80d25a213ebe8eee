#include "runtime/step_policy.hpp"

#include <gtest/gtest.h>

namespace rtcosim::runtime {
namespace {

TEST(StepPolicy, FixedStepIsThePeriodWhateverTheClockSays) {
  StepPolicy p(StepPolicy::Kind::kFixed, 0.01, 0.0);
  EXPECT_EQ(p.next(0.0), 0.01);
  EXPECT_EQ(p.next(0.5), 0.01);
  EXPECT_EQ(p.lost(), 0.0);
  EXPECT_EQ(p.max_step(), 0.04);  // default: four periods
}

TEST(StepPolicy, MeasuredStepIsTheTimeBetweenIntegrationPointsStartingNominal) {
  StepPolicy p(StepPolicy::Kind::kMeasured, 0.01, 0.05);
  // Frame 0's integration point 25 us after the epoch: a nominal first step,
  // not the 25 us of wake-up latency.
  EXPECT_EQ(p.next(25e-6), 0.01);
  EXPECT_DOUBLE_EQ(p.next(0.010025), 0.01);
  EXPECT_DOUBLE_EQ(p.next(0.028025), 0.018);  // a late frame: the step absorbs it
  EXPECT_DOUBLE_EQ(p.next(0.038025), 0.01);
  EXPECT_EQ(p.lost(), 0.0);
}

TEST(StepPolicy, SimulationKeepsAConstantDistanceToTheWallClock) {
  StepPolicy p(StepPolicy::Kind::kMeasured, 0.01, 0.05);
  const double walls[] = {0.003, 0.0131, 0.0302, 0.041, 0.09};
  double sim = 0.0;
  for (double wall : walls) {
    sim += p.next(wall);
    EXPECT_NEAR(sim - wall, 0.01 - 0.003, 1e-15);  // one period minus frame 0's offset
  }
}

TEST(StepPolicy, AStepBeyondMaxStepIsCutAndTheRestIsLostForGood) {
  StepPolicy p(StepPolicy::Kind::kMeasured, 0.01, 0.02);
  EXPECT_EQ(p.next(0.0), 0.01);
  EXPECT_DOUBLE_EQ(p.next(0.05), 0.02);  // 50 ms of wall time, 20 ms allowed
  EXPECT_DOUBLE_EQ(p.lost(), 0.03);
  EXPECT_DOUBLE_EQ(p.next(0.06), 0.01);  // again the real time since the previous point
  EXPECT_DOUBLE_EQ(p.next(0.10), 0.02);  // a second cut adds to the first
  EXPECT_DOUBLE_EQ(p.lost(), 0.05);
}

TEST(StepPolicy, ResetStartsAFreshRun) {
  StepPolicy p(StepPolicy::Kind::kMeasured, 0.01, 0.02);
  (void)p.next(0.0);
  (void)p.next(0.05);
  p.reset();
  EXPECT_EQ(p.lost(), 0.0);
  EXPECT_EQ(p.next(7.0), 0.01);  // nominal again, whatever the clock reads
}

TEST(StepPolicy, NoNegativeStepWhenTheClockStepsBack) {
  StepPolicy p(StepPolicy::Kind::kMeasured, 0.01, 0.02);
  (void)p.next(0.5);
  EXPECT_EQ(p.next(0.4), 0.0);
}

// Period 10, release grid 0, 10, 20, ...

TEST(Deadlines, EndingExactlyAtTheDeadlineIsNoOverrun) {
  for (auto policy : {Deadlines::Overrun::kCatchUp, Deadlines::Overrun::kSkip, Deadlines::Overrun::kRephase}) {
    Deadlines d(0, 10, policy);
    EXPECT_FALSE(d.advance(10));
    EXPECT_EQ(d.release(), 10);
    EXPECT_EQ(d.overruns(), 0u);
    EXPECT_EQ(d.missed_periods(), 0u);
  }
}

TEST(Deadlines, CatchUpKeepsTheGridAndMissesOnlyWhatTheRunEndsWith) {
  Deadlines d(0, 10, Deadlines::Overrun::kCatchUp);
  EXPECT_TRUE(d.advance(35));  // released 0, deadline 10
  EXPECT_EQ(d.release(), 10);  // passed: the next cycle starts at once
  EXPECT_EQ(d.start_at(35), 35);
  EXPECT_TRUE(d.advance(36));  // released 10, deadline 20
  EXPECT_EQ(d.release(), 20);
  EXPECT_EQ(d.overruns(), 2u);
  EXPECT_EQ(d.missed_periods(), 0u);  // every instant so far will get its cycle
  d.finish(50);                       // 20, 30, 40 never got one
  EXPECT_EQ(d.missed_periods(), 3u);
}

TEST(Deadlines, CatchUpAtFifteenPerTenCountsEachDeadlineOnce) {
  // Every cycle 15 long, period 10, 1000 long run: cycles start back to back
  // at 0, 15, ..., 990 (67 of them), every one ends after its deadline, and
  // 100 - 67 release instants never get a cycle.
  Deadlines d(0, 10, Deadlines::Overrun::kCatchUp);
  std::int64_t now = 0;
  int cycles = 0;
  while (d.start_at(now) < 1000) {
    now = d.start_at(now) + 15;
    d.advance(now);
    ++cycles;
  }
  d.finish(1000);
  EXPECT_EQ(cycles, 67);
  EXPECT_EQ(d.overruns(), 67u);
  EXPECT_EQ(d.missed_periods(), 33u);
}

TEST(Deadlines, SkipMissesEveryInstantThatPassedWhileTheCycleRan) {
  Deadlines d(0, 10, Deadlines::Overrun::kSkip);
  d.advance(35);  // instants 10, 20, 30 passed; next 40
  EXPECT_EQ(d.release(), 40);
  EXPECT_EQ(d.missed_periods(), 3u);
  EXPECT_FALSE(d.advance(41));
  EXPECT_EQ(d.overruns(), 1u);
}

TEST(Deadlines, SkipEndingExactlyOnAnInstantStartsThere) {
  // Cycles of exactly two periods: each starts on the instant its
  // predecessor ended on, one instant missed per cycle (50 cycles at 20 per
  // 1000, not 34 at 30).
  Deadlines d(0, 10, Deadlines::Overrun::kSkip);
  int cycles = 0;
  while (d.release() < 1000) {
    d.advance(d.release() + 20);
    ++cycles;
  }
  EXPECT_EQ(cycles, 50);
  EXPECT_EQ(d.overruns(), 50u);
  EXPECT_EQ(d.missed_periods(), 50u);
}

TEST(Deadlines, SkipMissesNothingBeyondTheEndOfTheRun) {
  Deadlines d(0, 10, Deadlines::Overrun::kSkip);
  d.set_horizon(30);
  d.advance(45);  // instants 10 and 20 passed inside the run, 30 and 40 after it
  EXPECT_EQ(d.missed_periods(), 2u);
  EXPECT_EQ(d.release(), 50);
}

TEST(Deadlines, RephaseStartsAtTheEndAndMovesTheGrid) {
  Deadlines d(0, 18, Deadlines::Overrun::kRephase);
  EXPECT_TRUE(d.advance(28));  // one long cycle: 10 past its deadline
  EXPECT_EQ(d.release(), 28);  // its successor at once
  EXPECT_EQ(d.missed_periods(), 0u);
  EXPECT_FALSE(d.advance(46));  // and the grid is 28 + 18 k from now on
  EXPECT_EQ(d.release(), 46);
  EXPECT_FALSE(d.advance(64));
  EXPECT_EQ(d.overruns(), 1u);
  EXPECT_EQ(d.missed_periods(), 0u);
}

TEST(Deadlines, RephaseMissesEachWholePeriodTheGridHasMoved) {
  Deadlines d(0, 10, Deadlines::Overrun::kRephase);
  d.advance(35);  // deadline 10, 25 late: the grid moves by 2.5 periods
  EXPECT_EQ(d.release(), 35);
  EXPECT_EQ(d.missed_periods(), 2u);
  d.advance(50);  // deadline 45, 5 late: 3 periods in total
  EXPECT_EQ(d.release(), 50);
  EXPECT_EQ(d.missed_periods(), 3u);
  Deadlines e(0, 10, Deadlines::Overrun::kRephase);
  e.advance(20);  // exactly two periods: as skip, instant 10 is gone
  EXPECT_EQ(e.release(), 20);
  EXPECT_EQ(e.missed_periods(), 1u);
}

}  // namespace
}  // namespace rtcosim::runtime
