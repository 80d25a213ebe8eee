// zoh and zoh_average (coupling/methods/zoh.hpp): the held value, and its
// exact mean over a consumer step (reference eq. 10.7).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "tests/coupling/method_test_util.hpp"

namespace rtcosim::coupling::testing {
namespace {

// Integral over [a, b] of the staircase that holds values[k] from tags[k] to
// tags[k+1], the oldest value also before its tag, the newest one for ever.
double held_integral(const std::vector<double>& tags, const std::vector<double>& values, double a, double b) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double sum = 0.0;
  for (std::size_t k = 0; k < tags.size(); ++k) {
    const double lo = k == 0 ? -kInf : tags[k];
    const double hi = k + 1 == tags.size() ? kInf : tags[k + 1];
    const double overlap = std::min(b, hi) - std::max(a, lo);
    if (overlap > 0.0) sum += overlap * values[k];
  }
  return sum;
}

double staircase_value(int k) { return std::sin(0.7 * k) + 0.1 * k; }

TEST(Zoh, HoldsTheNewestValueWhoseTagIsAtOrBeforeT) {
  auto ex = make_method("zoh");
  const std::vector<double> tags = {0.1, 0.113, 0.1301, 0.14, 0.1567};
  for (std::size_t k = 0; k < tags.size(); ++k) push_block(*ex, tags[k], {staircase_value(static_cast<int>(k))});

  EXPECT_EQ(eval1(*ex, 0.2), staircase_value(4));      // ahead of the newest tag
  EXPECT_EQ(eval1(*ex, 0.1567), staircase_value(4));   // at it
  EXPECT_EQ(eval1(*ex, 0.15669), staircase_value(3));  // just behind it
  EXPECT_EQ(eval1(*ex, 0.14), staircase_value(3));
  EXPECT_EQ(eval1(*ex, 0.135), staircase_value(2));
  EXPECT_EQ(eval1(*ex, 0.1300), staircase_value(1));
  EXPECT_EQ(eval1(*ex, 0.1), staircase_value(0));
  EXPECT_EQ(eval1(*ex, 0.05), staircase_value(0));  // before the oldest: the oldest kept
}

TEST(Zoh, OnlyZohAverageAsksForTheStepMean) {
  EXPECT_FALSE(make_method("zoh")->averages_over_step());
  EXPECT_TRUE(make_method("zoh_average")->averages_over_step());
  EXPECT_EQ(make_method("zoh_average")->method_id(), "zoh_average");
}

TEST(ZohAverage, MeanOfAHandComputedStep) {
  auto ex = make_method("zoh_average");
  push_block(*ex, 0.00, {1.0});
  push_block(*ex, 0.01, {2.0});
  push_block(*ex, 0.02, {4.0});
  // [7.4 ms, 11.1 ms]: 2.6 ms of 1, 1.1 ms of 2.
  EXPECT_NEAR(mean1(*ex, 0.0074, 0.0111), (0.0026 * 1.0 + 0.0011 * 2.0) / 0.0037, 1e-12);
  // [5 ms, 28.7 ms] spans two tags: 5 ms of 1, 10 ms of 2, 8.7 ms of 4.
  EXPECT_NEAR(mean1(*ex, 0.005, 0.0287), (0.005 * 1.0 + 0.010 * 2.0 + 0.0087 * 4.0) / 0.0237, 1e-12);
  // Ahead of the newest tag the newest value is held.
  EXPECT_NEAR(mean1(*ex, 0.025, 0.0287), 4.0, 1e-12);
}

// Producer every 10 ms, consumer every 3.7 ms: the consumer's step straddles
// a producer tag at changing positions, and its mean must follow exactly.
TEST(ZohAverage, MeanIsTheHeldSignalsIntegralAtANonIntegerFrameRatio) {
  for (const char* id : {"zoh_average", "zoh"}) {
    auto ex = make_method(id);
    const double producer_step = 0.010;
    const double consumer_step = 0.0037;
    std::vector<double> tags, values;
    int next_block = 0;
    int straddling = 0;
    for (int j = 0; j < 80; ++j) {
      const double t0 = j * consumer_step;
      const double t1 = t0 + consumer_step;
      // What has arrived by the start of the consumer's frame.
      while (next_block * producer_step <= t0) {
        tags.push_back(next_block * producer_step);
        values.push_back(staircase_value(next_block));
        push_block(*ex, tags.back(), {values.back()});
        ++next_block;
      }
      const double expected = held_integral(tags, values, t0, t1) / (t1 - t0);
      EXPECT_NEAR(mean1(*ex, t0, t1), expected, 1e-12) << id << " step " << j;
      if (std::floor(t0 / producer_step) != std::floor(t1 / producer_step)) ++straddling;
    }
    EXPECT_GT(straddling, 20);
  }
}

TEST(ZohAverage, MeanOverAStepSpanningSeveralProducerBlocks) {
  auto ex = make_method("zoh_average");
  const auto tags = jittered_tags(0.0, 0.010, 30);
  std::vector<double> values;
  for (std::size_t k = 0; k < tags.size(); ++k) {
    values.push_back(staircase_value(static_cast<int>(k)));
    push_block(*ex, tags[k], {values.back()});
  }
  // Steps of 3.7 ms (inside a block or across one), 23.7 ms (across two or
  // three) and 61 ms (across five or more), behind the newest tag and across it.
  for (double length : {0.0037, 0.0237, 0.061}) {
    for (double t0 = 0.0013; t0 + length < tags.back() + 0.02; t0 += 0.0071) {
      const double expected = held_integral(tags, values, t0, t0 + length) / length;
      EXPECT_NEAR(mean1(*ex, t0, t0 + length), expected, 1e-12) << "[" << t0 << ", " << t0 + length << "]";
    }
  }
}

// A ramp u = t sampled every h/N, averaged over consumer steps of h = 10 ms
// for 1 s, with every block of a step pushed before its mean is asked (the
// producer ahead of the consumer): each step's mean is the exact mean of the
// held ramp, h j + (h/N)(N-1)/2, whatever N, also past the 64 blocks the
// method keeps for `evaluate`.
TEST(ZohAverage, StepMeanIsExactAtAnyNumberOfBlocksPerStep) {
  constexpr double h = 0.010;
  for (long n : {1L, 8L, 63L, 64L, 100L, 1000L}) {
    auto ex = make_method("zoh_average");
    const double hp = h / static_cast<double>(n);
    long next = 0;
    double integral = 0.0;
    double worst = 0.0;
    for (long j = 0; j < 100; ++j) {
      const double t0 = static_cast<double>(j) * h;
      const double t1 = static_cast<double>(j + 1) * h;
      for (; next < (j + 1) * n; ++next) {
        const double tag = static_cast<double>(next) * hp;
        push_block(*ex, tag, {tag});
      }
      double mean = 0.0;
      ex->step_mean(t0, t1, std::span<double>(&mean, 1));
      const double exact = h * static_cast<double>(j) + hp * static_cast<double>(n - 1) / 2.0;
      worst = std::max(worst, std::abs(mean - exact));
      integral += mean * (t1 - t0);
    }
    EXPECT_LT(worst, 1e-12) << "N = " << n;
    // The held ramp integrates to hp^2 M (M - 1) / 2 over M = 100 N blocks
    // (0.49995 for N = 100).
    const double m = 100.0 * static_cast<double>(n);
    EXPECT_NEAR(integral, hp * hp * m * (m - 1.0) / 2.0, 1e-12) << "N = " << n;
  }
}

// A producer whose blocks of a step arrive partly after the consumer's step
// started, about 77 per step at a jittered, non-integer ratio. The mean is
// causal (docs/config.md, "Input averaging"): after every step the means
// integrate to the staircase known when that step was taken, from the first
// block to the step's end (an independent segment sum), so the blocks that
// arrive behind the mark are made up in the next step, not lost.
TEST(ZohAverage, StepMeanFollowsLateAndJitteredBlocks) {
  auto ex = make_method("zoh_average");
  const auto tags = jittered_tags(0.0, 0.01 / 77.3, 9000);
  std::vector<double> known_tags, known_values;
  std::size_t next = 0;
  double t0 = 0.0;
  double consumed = 0.0;
  double lost_before = 0.0;  // what a mean of the known staircase alone would have lost by the end
  for (int j = 0; j < 100; ++j) {
    const double t1 = t0 + 0.01 + 0.003 * std::sin(0.9 * j);
    while (next < tags.size() && tags[next] <= t0 + 0.4 * (t1 - t0)) {
      known_tags.push_back(tags[next]);
      known_values.push_back(staircase_value(static_cast<int>(next)));
      push_block(*ex, known_tags.back(), {known_values.back()});
      ++next;
    }
    double mean = 0.0;
    ex->step_mean(t0, t1, std::span<double>(&mean, 1));
    consumed += mean * (t1 - t0);
    lost_before += held_integral(known_tags, known_values, t0, t1);
    const double known = held_integral(known_tags, known_values, tags[0], t1);
    EXPECT_NEAR(consumed, known, 1e-12 * std::fabs(known)) << "step " << j;
    t0 = t1;
  }
  EXPECT_GT(std::fabs(held_integral(known_tags, known_values, tags[0], t0) - lost_before), 1.0);
}

TEST(ZohAverage, EvaluateIsTheHeldValue) {
  auto avg = make_method("zoh_average");
  auto zoh = make_method("zoh");
  const auto tags = jittered_tags(0.0, 0.01, 6);
  for (double t : tags) {
    push_sample(*avg, t, sine);
    push_sample(*zoh, t, sine);
  }
  for (double t = -0.01; t < 0.08; t += 0.0013) EXPECT_EQ(eval1(*avg, t), eval1(*zoh, t)) << t;
}

TEST(Zoh, SharedBehaviour) {
  for (const char* id : {"zoh", "zoh_average"}) {
    expect_zeros_before_any_block(id);
    expect_stale_blocks_ignored(id);
    expect_discontinuity_restarts(id);
    expect_signals_independent(id);
    expect_sensible_start(id);
  }
}

TEST(Zoh, RealTimePathAllocatesNothing) {
  expect_real_time_path_allocates_nothing("zoh");
  expect_real_time_path_allocates_nothing("zoh_average");
}

TEST(Zoh, StartsWithTheFirstValueEverywhere) {
  auto ex = make_method("zoh");
  push_block(*ex, 0.3, {1.25});
  for (double t : {0.0, 0.3, 0.31, 5.0}) EXPECT_EQ(eval1(*ex, t), 1.25) << t;
  EXPECT_EQ(mean1(*ex, 0.2, 0.5), 1.25);
}

}  // namespace
}  // namespace rtcosim::coupling::testing
