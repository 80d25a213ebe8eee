// smoothed (coupling/methods/smoothed.hpp): Kossel's C2 blend of successive
// polynomials (reference eq. 3-7).
#include "coupling/methods/smoothed.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/coupling/method_test_util.hpp"

namespace rtcosim::coupling::testing {
namespace {

using methods::smoothing_blend;

ParamSettings order(int n) { return {{"order", std::to_string(n)}}; }

double blend_slope(double x) {
  constexpr double kH = 1e-4;
  return (smoothing_blend(x + kH) - smoothing_blend(x - kH)) / (2.0 * kH);
}
double blend_curvature(double x) {
  constexpr double kH = 1e-3;
  return (smoothing_blend(x + kH) - 2.0 * smoothing_blend(x) + smoothing_blend(x - kH)) / (kH * kH);
}

TEST(SmoothingBlend, MeetsItsEndConditions) {
  EXPECT_EQ(smoothing_blend(0.0), 1.0);
  EXPECT_EQ(smoothing_blend(1.0), 0.0);
  // Central differences: their error here is below 1e-4, while a blend that
  // were only C1 (like 1 - 3x^2 + 2x^3) would show a curvature of 6.
  EXPECT_NEAR(blend_slope(0.0), 0.0, 1e-6);
  EXPECT_NEAR(blend_slope(1.0), 0.0, 1e-6);
  EXPECT_NEAR(blend_curvature(0.0), 0.0, 1e-4);
  EXPECT_NEAR(blend_curvature(1.0), 0.0, 1e-4);
  // The differences do see a slope where there is one: g'(1/2) = -15/8.
  EXPECT_NEAR(blend_slope(0.5), -1.875, 1e-6);
}

TEST(SmoothingBlend, IsTheQuinticOfEquationSeven) {
  for (double x = 0.0; x <= 1.0; x += 0.0625) {
    EXPECT_NEAR(smoothing_blend(x), -6.0 * std::pow(x, 5) + 15.0 * std::pow(x, 4) - 10.0 * std::pow(x, 3) + 1.0, 1e-15)
        << x;
    EXPECT_NEAR(smoothing_blend(x) + smoothing_blend(1.0 - x), 1.0, 1e-15) << x;  // symmetric about x = 1/2
    EXPECT_LE(smoothing_blend(x + 0.0625), smoothing_blend(x)) << x;              // falls monotonically
  }
}

// Evaluates just before pushing block k at t_k and just after.
void expect_no_jump(const ParamSettings& params, const std::vector<double>& tags) {
  auto ex = make_method("smoothed", params);
  for (std::size_t k = 0; k < tags.size(); ++k) {
    const double jump = jump_at_push(*ex, make_block(tags[k], {sine(tags[k])}));
    if (k > 0) {
      EXPECT_LT(jump, 1e-12) << "block " << k << " at " << tags[k];
    }
  }
}

TEST(Smoothed, NoJumpAtCouplingTimes) {
  for (int n : {1, 3, 5}) {
    expect_no_jump(order(n), jittered_tags(0.0, 0.04, 40));
    expect_no_jump(order(n), uniform_tags(0.0, 0.04, 40));
    auto fixed = order(n);
    fixed.push_back({"macro_step", "40ms"});
    expect_no_jump(fixed, jittered_tags(0.0, 0.04, 40));
  }
}

// C1 as well: the slope across a coupling time does not change, where that of
// `polynomial` does by several units.
TEST(Smoothed, SlopeIsContinuousAtCouplingTimes) {
  auto ex = make_method("smoothed", order(3));
  auto plain = make_method("polynomial", order(3));
  const auto tags = jittered_tags(0.0, 0.04, 30);
  constexpr double kH = 1e-5;
  auto slope = [&](const Extrapolator& e, double t) { return (eval1(e, t + kH) - eval1(e, t - kH)) / (2.0 * kH); };
  double plain_worst = 0.0;
  for (std::size_t k = 0; k < tags.size(); ++k) {
    const double before = slope(*ex, tags[k]);
    const double plain_before = slope(*plain, tags[k]);
    push_sample(*ex, tags[k], sine);
    push_sample(*plain, tags[k], sine);
    if (k < 5) continue;
    EXPECT_NEAR(slope(*ex, tags[k]), before, 1e-6) << "block " << k;
    plain_worst = std::max(plain_worst, std::abs(slope(*plain, tags[k]) - plain_before));
  }
  EXPECT_GT(plain_worst, 1e-2);
}

// Past t_s = t_k + h_s/2 the new polynomial alone; h_s estimated from the
// tag spacing or given.
TEST(Smoothed, AfterHalfAMacroStepItIsThePlainPolynomial) {
  for (int n : {1, 3, 6}) {
    for (bool given_step : {false, true}) {
      auto params = order(n);
      if (given_step) params.push_back({"macro_step", "30ms"});
      auto ex = make_method("smoothed", params);
      auto plain = make_method("polynomial", order(n));
      const auto tags = jittered_tags(0.1, 0.04, 20);
      for (std::size_t k = 0; k < tags.size(); ++k) {
        push_sample(*ex, tags[k], sine);
        push_sample(*plain, tags[k], sine);
        if (k == 0) continue;
        const double h_s = given_step ? 0.030 : tags[k] - tags[k - 1];
        const double t_s = tags[k] + 0.5 * h_s;
        for (double t : {t_s, t_s + 0.001, t_s + 0.25 * h_s, t_s + 0.5 * h_s, tags[k] + 2.0 * h_s}) {
          EXPECT_NEAR(eval1(*ex, t), eval1(*plain, t), 1e-14) << "order " << n << " block " << k << " at " << t;
        }
      }
    }
  }
}

// Inside [t_k, t_s): g(x) f_p + (1 - g(x)) f_n, with f_p the polynomial of the
// blocks up to k-1 (its own blend is over by t_k at these tags) and f_n that
// of the blocks up to k.
TEST(Smoothed, InsideTheWindowItBlendsThePreviousAndTheNewPolynomial) {
  auto ex = make_method("smoothed", order(3));
  auto newer = make_method("polynomial", order(3));
  auto older = make_method("polynomial", order(3));
  const auto tags = jittered_tags(0.1, 0.04, 20);
  for (std::size_t k = 0; k < tags.size(); ++k) {
    if (k > 0) push_sample(*older, tags[k - 1], sine);
    push_sample(*ex, tags[k], sine);
    push_sample(*newer, tags[k], sine);
    if (k == 0) continue;
    const double t_s = tags[k] + 0.5 * (tags[k] - tags[k - 1]);
    for (double x : {0.0, 0.1, 0.37, 0.5, 0.81, 0.99}) {
      const double t = tags[k] + x * (t_s - tags[k]);
      const double g = smoothing_blend(x);
      const double expected = g * eval1(*older, t) + (1.0 - g) * eval1(*newer, t);
      EXPECT_NEAR(eval1(*ex, t), expected, 1e-12) << "block " << k << " x " << x;
    }
  }
}

TEST(Smoothed, StartsAsAConstantThenBlends) {
  auto ex = make_method("smoothed", order(3));
  push_block(*ex, 0.2, {1.0});
  for (double t : {0.1, 0.2, 0.25, 0.4}) EXPECT_EQ(eval1(*ex, t), 1.0) << t;
  push_block(*ex, 0.24, {1.4});
  EXPECT_EQ(eval1(*ex, 0.24), 1.0);  // still the constant at the new tag
  // Past t_s = 0.26, the line through both blocks.
  EXPECT_NEAR(eval1(*ex, 0.3), 1.0 + 10.0 * 0.1, 1e-12);
}

TEST(Smoothed, RealTimePathAllocatesNothing) { expect_real_time_path_allocates_nothing("smoothed", order(8)); }
TEST(Smoothed, ZerosBeforeAnyBlock) { expect_zeros_before_any_block("smoothed", order(3)); }
TEST(Smoothed, StaleBlocksAreIgnoredAndCounted) { expect_stale_blocks_ignored("smoothed", order(3)); }
TEST(Smoothed, DiscontinuityRestarts) {
  expect_discontinuity_restarts("smoothed", order(3));
  expect_discontinuity_restarts("smoothed", {{"order", "2"}, {"macro_step", "25ms"}});
}
TEST(Smoothed, SignalsAreIndependent) {
  expect_signals_independent("smoothed", order(3));
  expect_signals_independent("smoothed", {{"order", "4"}, {"macro_step", "15ms"}});
}
TEST(Smoothed, SensibleFromTheFirstBlock) { expect_sensible_start("smoothed", order(3)); }

}  // namespace
}  // namespace rtcosim::coupling::testing
