// hermite (coupling/methods/hermite.hpp): confluent divided differences over
// values and derivatives, newest first, and its fallback to `polynomial`.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/coupling/method_test_util.hpp"

namespace rtcosim::coupling::testing {
namespace {

ParamSettings order(int n) { return {{"order", std::to_string(n)}}; }

TEST(Hermite, TwoBlocksOfOrderThreeReproduceAnyCubic) {
  for (int variant = 0; variant < 4; ++variant) {
    auto ex = make_form("hermite", order(3));
    const double t0 = 0.2 + 0.05 * variant;
    const double t1 = t0 + 0.013 + 0.007 * variant;
    ScaledPolynomial p = test_polynomial(3, t0 + 0.003 * variant, 0.02);
    p.coefficients[static_cast<std::size_t>(variant)] *= -2.5;  // a different cubic each time
    push_block(*ex, t0, {p(t0)}, {p.derivative(t0)});
    push_block(*ex, t1, {p(t1)}, {p.derivative(t1)});
    for (double t : probe_times(t1, t1 - t0)) {
      EXPECT_NEAR(eval1(*ex, t), p(t), 1e-9 * std::max(1.0, std::abs(p(t)))) << "variant " << variant << " at " << t;
    }
  }
}

TEST(Hermite, ReproducesPolynomialsOfItsOrderFromValuesAndDerivatives) {
  constexpr double kStep = 0.01;
  for (int n = 1; n <= 8; ++n) {
    auto ex = make_form("hermite", order(n));
    const auto tags = jittered_tags(0.61, kStep, 8);
    const auto p = test_polynomial(n, 0.61 + 2 * kStep, kStep * (n + 1) / 2.0);
    for (std::size_t k = 0; k < tags.size(); ++k) {
      push_block(*ex, tags[k], {p(tags[k])}, {p.derivative(tags[k])});
      if (2 * (k + 1) < static_cast<std::size_t>(n) + 1) continue;  // fewer conditions than coefficients
      for (double t : probe_times(tags[k], kStep)) {
        EXPECT_NEAR(eval1(*ex, t), p(t), 1e-9 * std::max(1.0, std::abs(p(t))))
            << "order " << n << " after " << k + 1 << " blocks at " << t;
      }
    }
  }
}

// Conditions are taken newest first: order 1 is the tangent at the newest
// block, order 2 adds the previous block's value only.
TEST(Hermite, TakesConditionsNewestFirst) {
  const auto tags = jittered_tags(0.3, 0.02, 5);
  auto first = make_form("hermite", order(1));
  auto second = make_form("hermite", order(2));
  for (double t : tags) {
    push_sample(*first, t, sine, sine_derivative);
    push_sample(*second, t, sine, sine_derivative);
  }
  const double t0 = tags[4];
  const double t1 = tags[3];
  const double y0 = sine(t0);
  const double d0 = sine_derivative(t0);
  const double curvature = (sine(t1) - y0 - d0 * (t1 - t0)) / ((t1 - t0) * (t1 - t0));
  for (double t : probe_times(t0, 0.02)) {
    EXPECT_NEAR(eval1(*first, t), y0 + d0 * (t - t0), 1e-12) << t;
    EXPECT_NEAR(eval1(*second, t), y0 + d0 * (t - t0) + curvature * (t - t0) * (t - t0), 1e-12) << t;
  }
}

TEST(Hermite, StartsWithTheTangentAndGrowsToItsOrder) {
  auto ex = make_form("hermite", order(4));
  push_block(*ex, 0.1, {1.5}, {-2.0});
  for (double t : {0.05, 0.1, 0.13}) EXPECT_NEAR(eval1(*ex, t), 1.5 - 2.0 * (t - 0.1), 1e-14) << t;
  // Two blocks give four conditions: a cubic, although the order is 4.
  ScaledPolynomial cubic = test_polynomial(3, 0.1, 0.02);
  auto ex2 = make_form("hermite", order(4));
  for (double tag : {0.1, 0.117}) push_block(*ex2, tag, {cubic(tag)}, {cubic.derivative(tag)});
  for (double t : probe_times(0.117, 0.017))
    EXPECT_NEAR(eval1(*ex2, t), cubic(t), 1e-9 * std::max(1.0, std::abs(cubic(t))));
}

TEST(Hermite, WithoutDerivativesItIsThePolynomialOfTheSameOrder) {
  for (int n : {1, 3, 5}) {
    auto hermite = make_method("hermite", order(n));
    auto polynomial = make_method("polynomial", order(n));
    const auto tags = jittered_tags(0.02, 0.03, 12);
    for (std::size_t k = 0; k < tags.size(); ++k) {
      push_sample(*hermite, tags[k], sine);
      push_sample(*polynomial, tags[k], sine);
      for (double t : probe_times(tags[k], 0.03)) {
        const double expected = eval1(*polynomial, t);
        EXPECT_NEAR(eval1(*hermite, t), expected, 1e-11 * std::max(1.0, std::abs(expected)))
            << "order " << n << " after " << k + 1 << " blocks at " << t;
      }
    }
    EXPECT_TRUE(hermite->used_derivative_fallback());
    EXPECT_TRUE(hermite->take_derivative_fallback_notice());
    EXPECT_FALSE(hermite->take_derivative_fallback_notice());
    push_sample(*hermite, tags.back() + 0.03, sine);
    EXPECT_TRUE(hermite->used_derivative_fallback());
    EXPECT_FALSE(hermite->take_derivative_fallback_notice());
  }
}

TEST(Hermite, NoFallbackNoticeWhenEveryDerivativeIsThere) {
  auto ex = make_method("hermite", order(3));
  for (double t : jittered_tags(0.0, 0.02, 10)) push_sample(*ex, t, sine, sine_derivative);
  EXPECT_FALSE(ex->used_derivative_fallback());
  EXPECT_FALSE(ex->take_derivative_fallback_notice());
}

TEST(Hermite, AMissingDerivativeFallsBackForThatBlockOnly) {
  // Order 3 over blocks (t0: value+slope), (t1: value, no slope), (t2: value):
  // the cubic through y0, y0', y1, y2.
  auto ex = make_method("hermite", order(3));
  const std::vector<double> tags = {0.20, 0.23, 0.27};
  push_block(*ex, tags[0], {sine(tags[0])}, {sine_derivative(tags[0])});
  push_block(*ex, tags[1], {sine(tags[1])});
  push_block(*ex, tags[2], {sine(tags[2])}, {sine_derivative(tags[2])});
  EXPECT_TRUE(ex->used_derivative_fallback());
  // Newest first: y(t2), y'(t2), y(t1), y(t0). Reference: the parabola
  // through the three values plus w (t-t0)(t-t1)(t-t2), which keeps them,
  // with w chosen to give the slope at t2.
  const std::vector<double> values = {sine(tags[0]), sine(tags[1]), sine(tags[2])};
  auto parabola = [&](double t) { return lagrange(tags, values, t); };
  const double h = 1e-6;
  const double parabola_slope = (parabola(tags[2] + h) - parabola(tags[2] - h)) / (2.0 * h);
  const double node_slope = (tags[2] - tags[0]) * (tags[2] - tags[1]);  // d/dt of (t-t0)(t-t1)(t-t2) at t2
  const double w = (sine_derivative(tags[2]) - parabola_slope) / node_slope;
  for (double t : probe_times(tags[2], 0.03)) {
    const double expected = parabola(t) + w * (t - tags[0]) * (t - tags[1]) * (t - tags[2]);
    EXPECT_NEAR(eval1(*ex, t), expected, 1e-8) << t;
  }
}

TEST(Hermite, RealTimePathAllocatesNothing) { expect_real_time_path_allocates_nothing("hermite", order(8)); }
TEST(Hermite, ZerosBeforeAnyBlock) { expect_zeros_before_any_block("hermite", order(3)); }
TEST(Hermite, StaleBlocksAreIgnoredAndCounted) { expect_stale_blocks_ignored("hermite", order(3)); }
TEST(Hermite, DiscontinuityRestarts) {
  for (int n : {1, 3, 8}) expect_discontinuity_restarts("hermite", order(n));
}
TEST(Hermite, SignalsAreIndependent) {
  for (int n : {2, 3, 8}) expect_signals_independent("hermite", order(n));
}
TEST(Hermite, SensibleFromTheFirstBlock) {
  for (int n : {1, 3, 5}) expect_sensible_start("hermite", order(n));
}

}  // namespace
}  // namespace rtcosim::coupling::testing
