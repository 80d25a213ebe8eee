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

// Period 10 ms, max_step 20 ms, 4 sub-steps: a frame may integrate 80 ms.
TEST(StepPolicy, AStallIsOwedAndRepaidInSubStepsOfAtMostMaxStep) {
  StepPolicy p(StepPolicy::Kind::kMeasured, 0.01, 0.02, 4, 1.0);
  double sim = p.next(0.0);
  EXPECT_EQ(sim, 0.01);
  const double h1 = p.next(0.15);  // 150 ms since the last point: 80 ms now, 70 ms owed
  EXPECT_DOUBLE_EQ(h1, 0.08);
  EXPECT_EQ(p.substeps(h1), 4);
  EXPECT_DOUBLE_EQ(p.owed(), 0.07);
  EXPECT_EQ(p.stalls(), 1u);
  EXPECT_EQ(p.stalls_absorbed(), 0u);
  const double h2 = p.next(0.16);  // 10 ms more: 80 ms of the 80 due, nothing owed
  EXPECT_DOUBLE_EQ(h2, 0.08);
  EXPECT_EQ(p.substeps(h2), 4);
  EXPECT_NEAR(p.owed(), 0.0, 1e-15);
  EXPECT_EQ(p.stalls_absorbed(), 1u);
  const double h3 = p.next(0.17);
  EXPECT_NEAR(h3, 0.01, 1e-15);
  EXPECT_EQ(p.substeps(h3), 1);
  sim += h1 + h2 + h3;
  // Back on its place: one period ahead of the wall, as before the stall.
  EXPECT_NEAR(sim - 0.17, 0.01, 1e-15);
  EXPECT_EQ(p.catch_up_frames(), 2u);
  EXPECT_EQ(p.longest_catch_up(), 2u);
  EXPECT_DOUBLE_EQ(p.owed_max(), 0.07);
  EXPECT_EQ(p.lost(), 0.0);
}

TEST(StepPolicy, AStallWithinTheFramesRoomIsRepaidInTheSameFrame) {
  StepPolicy p(StepPolicy::Kind::kMeasured, 0.02, 0.06);
  (void)p.next(0.001);
  const double h = p.next(0.121);  // 120 ms: two sub-steps of 60 ms
  EXPECT_DOUBLE_EQ(h, 0.12);
  EXPECT_EQ(p.substeps(h), 2);
  EXPECT_EQ(p.owed(), 0.0);
  EXPECT_EQ(p.stalls(), 1u);
  EXPECT_EQ(p.stalls_absorbed(), 1u);
  EXPECT_EQ(p.catch_up_frames(), 1u);
}

// With one sub-step a frame repays at most max_step minus its interval.
TEST(StepPolicy, OneSubStepRepaysWhatTheFollowingFramesLeaveRoomFor) {
  StepPolicy p(StepPolicy::Kind::kMeasured, 0.01, 0.02, 1, 1.0);
  (void)p.next(0.0);
  EXPECT_DOUBLE_EQ(p.next(0.05), 0.02);  // 50 ms: 20 now, 30 owed
  EXPECT_DOUBLE_EQ(p.owed(), 0.03);
  EXPECT_DOUBLE_EQ(p.next(0.06), 0.02);  // 10 of its own + 10 repaid
  EXPECT_DOUBLE_EQ(p.next(0.07), 0.02);
  EXPECT_DOUBLE_EQ(p.next(0.08), 0.02);
  EXPECT_EQ(p.owed(), 0.0);
  EXPECT_NEAR(p.next(0.09), 0.01, 1e-15);
  // The stalled frame itself integrated no more than max_step: three repaid.
  EXPECT_EQ(p.catch_up_frames(), 3u);
  EXPECT_EQ(p.stalls_absorbed(), 1u);
  EXPECT_EQ(p.lost(), 0.0);
}

// Sustained overload: 100 ms per frame, 20 ms integrable: the debt stops
// at max_owed and the rest is given up.
TEST(StepPolicy, DebtBeyondMaxOwedIsGivenUpAsLostRealTime) {
  StepPolicy p(StepPolicy::Kind::kMeasured, 0.01, 0.02, 1, 0.05);
  (void)p.next(0.0);
  EXPECT_DOUBLE_EQ(p.next(0.1), 0.02);
  EXPECT_DOUBLE_EQ(p.owed(), 0.05);
  EXPECT_DOUBLE_EQ(p.lost(), 0.03);
  EXPECT_DOUBLE_EQ(p.next(0.2), 0.02);
  EXPECT_DOUBLE_EQ(p.owed(), 0.05);
  EXPECT_DOUBLE_EQ(p.lost(), 0.11);
  EXPECT_EQ(p.stalls(), 2u);
  EXPECT_EQ(p.stalls_absorbed(), 0u);
}

// A first frame whose integration point comes 50 ms after the epoch owes
// them: the run does not start 40 ms behind the other tasks.
TEST(StepPolicy, TheFirstFramesLatenessIsOwedToo) {
  StepPolicy p(StepPolicy::Kind::kMeasured, 0.01, 0.02);
  const double h = p.next(0.05);
  EXPECT_DOUBLE_EQ(h, 0.05);
  EXPECT_EQ(p.substeps(h), 3);
  EXPECT_EQ(p.stalls(), 1u);
  double sim = h;
  for (double wall : {0.06, 0.07, 0.081}) sim += p.next(wall);
  EXPECT_NEAR(sim, 0.081, 1e-15);  // simulation time is wall time
}

// A frame that follows a long one at once (rephase, catch_up) does not take
// the few microseconds between the two integration points.
TEST(StepPolicy, NoMicroStepAfterALongFrame) {
  StepPolicy p(StepPolicy::Kind::kMeasured, 0.02, 0.06);
  double sim = p.next(0.001);
  sim += p.next(0.021);
  sim += p.next(0.140);
  const double after = p.next(0.141);  // 1 ms after the long frame's point
  EXPECT_DOUBLE_EQ(after, 0.01);       // half a period: 9 ms ahead of the wall
  sim += after;
  EXPECT_NEAR(sim - 0.141, 0.019 + 0.009, 1e-15);
  sim += p.next(0.161);  // 20 ms, 9 of them already integrated
  EXPECT_NEAR(sim - 0.161, 0.019, 1e-15);
}

// Back to back for ever: steps shrink to the interval rather than let the
// simulation run more than half a period ahead.
TEST(StepPolicy, BackToBackFramesNeverRunMoreThanHalfAPeriodAhead) {
  StepPolicy p(StepPolicy::Kind::kMeasured, 0.02, 0.06);
  double sim = p.next(0.0);
  double wall = 0.0;
  for (int k = 0; k < 50; ++k) {
    wall += 0.001;
    sim += p.next(wall);
    EXPECT_LE(sim - wall, 0.02 + 0.01 + 1e-12) << k;
  }
  EXPECT_GE(sim - wall, 0.02 - 1e-12);
}

TEST(StepPolicy, SubStepsOfWholeMultiplesOfMaxStepAreExact) {
  StepPolicy p(StepPolicy::Kind::kMeasured, 0.001, 0.003, 8, 1.0);
  for (int k = 1; k <= 8; ++k) EXPECT_EQ(p.substeps(k * 0.003), k) << k;
  EXPECT_EQ(p.substeps(0.003 * 1.5), 2);
  EXPECT_EQ(p.substeps(0.0005), 1);
  EXPECT_DOUBLE_EQ(p.max_frame_span(), 0.024);
  StepPolicy fixed(StepPolicy::Kind::kFixed, 0.001, 0.0);
  EXPECT_EQ(fixed.substeps(0.5), 1);
}

TEST(StepPolicy, ResetStartsAFreshRun) {
  StepPolicy p(StepPolicy::Kind::kMeasured, 0.01, 0.02);
  (void)p.next(0.0);
  (void)p.next(0.05);
  p.reset();
  EXPECT_EQ(p.lost(), 0.0);
  EXPECT_EQ(p.owed(), 0.0);
  EXPECT_EQ(p.stalls(), 0u);
  EXPECT_EQ(p.catch_up_frames(), 0u);
  EXPECT_EQ(p.next(0.002), 0.01);  // nominal again
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

TEST(Deadlines, RephaseAfterALateStartKeepsAWholePeriodFromTheStart) {
  // Released at 0, woke 11.3 ms late (period 5 ms), done 13 us later: the
  // next release is 16.3 ms, a period after the start, not 11.313 ms; the
  // grid moved 11.3 ms, two whole periods.
  Deadlines d(0, 5'000'000, Deadlines::Overrun::kRephase);
  EXPECT_TRUE(d.advance(11'313'000, 11'300'000));
  EXPECT_EQ(d.release(), 16'300'000);
  EXPECT_EQ(d.missed_periods(), 2u);
  EXPECT_EQ(d.overruns(), 1u);
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
