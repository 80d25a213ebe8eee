// predictor (coupling/methods/predictor.hpp): the variable-step second-order
// predictor from values and derivatives (reference eq. 8.14, 10.5, 10.6).
#include <algorithm>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "tests/coupling/method_test_util.hpp"

namespace rtcosim::coupling::testing {
namespace {

double quadratic(double t) { return 0.7 - 3.0 * t + 25.0 * t * t; }
double quadratic_derivative(double t) { return -3.0 + 50.0 * t; }

void expect_exact_on_quadratic(const std::vector<double>& tags) {
  auto ex = make_form("predictor");
  for (std::size_t k = 0; k < tags.size(); ++k) {
    push_sample(*ex, tags[k], quadratic, quadratic_derivative);
    if (k == 0) continue;  // one block: first order only
    const double step = tags[k] - tags[k - 1];
    for (double t : probe_times(tags[k], step)) {
      EXPECT_NEAR(eval1(*ex, t), quadratic(t), 1e-12 * std::max(1.0, std::abs(quadratic(t))))
          << "after " << k + 1 << " blocks at " << t;
    }
  }
}

TEST(Predictor, ExactOnQuadraticsAtConstantStep) { expect_exact_on_quadratic(uniform_tags(0.1, 0.01, 10)); }

TEST(Predictor, ExactOnQuadraticsAtNonConstantStep) {
  expect_exact_on_quadratic(jittered_tags(0.1, 0.01, 10, 0.45));
  // A step that halves and then triples.
  expect_exact_on_quadratic({0.1, 0.12, 0.13, 0.16, 0.161, 0.2});
}

TEST(Predictor, IsTheAb2PredictorOnAnySignal) {
  auto ex = make_form("predictor");
  const auto tags = jittered_tags(0.05, 0.02, 8);
  push_sample(*ex, tags[0], sine, sine_derivative);
  for (std::size_t k = 1; k < tags.size(); ++k) {
    push_sample(*ex, tags[k], sine, sine_derivative);
    const double previous_step = tags[k] - tags[k - 1];
    for (double t : probe_times(tags[k], 0.02)) {
      const double d = t - tags[k];
      const double expected =
          sine(tags[k]) + d * (sine_derivative(tags[k]) +
                               d / (2.0 * previous_step) * (sine_derivative(tags[k]) - sine_derivative(tags[k - 1])));
      EXPECT_NEAR(eval1(*ex, t), expected, 1e-12) << t;
    }
  }
}

TEST(Predictor, OneBlockIsFirstOrder) {
  auto ex = make_form("predictor");
  push_block(*ex, 0.5, {2.0}, {-4.0});
  for (double t : {0.4, 0.5, 0.52, 0.6}) EXPECT_NEAR(eval1(*ex, t), 2.0 - 4.0 * (t - 0.5), 1e-14) << t;
  // A quadratic is no longer exact with one block: no curvature is known yet.
  auto q = make_form("predictor");
  push_sample(*q, 0.2, quadratic, quadratic_derivative);
  EXPECT_GT(std::abs(eval1(*q, 0.25) - quadratic(0.25)), 1e-3);
}

TEST(Predictor, WithoutDerivativesItIsTheParabolaThroughTheNewestThreeValues) {
  auto ex = make_form("predictor");
  const auto tags = jittered_tags(0.05, 0.02, 9);
  for (std::size_t k = 0; k < tags.size(); ++k) {
    push_sample(*ex, tags[k], sine);
    for (double t : probe_times(tags[k], 0.02)) {
      const double expected = newest_lagrange(tags, k + 1, 2, sine, t);
      EXPECT_NEAR(eval1(*ex, t), expected, 1e-12) << "after " << k + 1 << " blocks at " << t;
    }
  }
  EXPECT_TRUE(ex->used_derivative_fallback());
  EXPECT_TRUE(ex->take_derivative_fallback_notice());
  EXPECT_FALSE(ex->take_derivative_fallback_notice());
}

// The previous block without a derivative, the newest with one: the
// parabola with the newest value and slope through the previous value, exact
// on a quadratic (the old first-order drop was off by c D^2), and flagged
// while that block is the newest.
TEST(Predictor, PreviousBlockWithoutDerivativeKeepsSecondOrderAndRaisesTheFlag) {
  auto q = [](double t) { return 0.3 - 1.7 * t + 4.1 * t * t; };
  auto dq = [](double t) { return -1.7 + 8.2 * t; };
  auto ex = make_form("predictor");
  push_sample(*ex, 0.100, q);
  EXPECT_TRUE(ex->in_derivative_fallback());  // the newest has no derivative
  push_sample(*ex, 0.113, q, dq);
  EXPECT_TRUE(ex->used_derivative_fallback());
  EXPECT_TRUE(ex->in_derivative_fallback());
  for (double t : {0.09, 0.113, 0.12, 0.15, 0.2}) EXPECT_NEAR(eval1(*ex, t), q(t), 1e-13) << t;
  push_sample(*ex, 0.125, q, dq);
  EXPECT_FALSE(ex->in_derivative_fallback());  // both newest blocks carry derivatives again
}

TEST(Predictor, NoFallbackWhenEveryDerivativeIsThere) {
  auto ex = make_method("predictor");
  for (double t : jittered_tags(0.0, 0.02, 6)) push_sample(*ex, t, sine, sine_derivative);
  EXPECT_FALSE(ex->used_derivative_fallback());
  EXPECT_FALSE(ex->take_derivative_fallback_notice());
}

TEST(Predictor, RealTimePathAllocatesNothing) { expect_real_time_path_allocates_nothing("predictor"); }
TEST(Predictor, ZerosBeforeAnyBlock) { expect_zeros_before_any_block("predictor"); }
TEST(Predictor, StaleBlocksAreIgnoredAndCounted) { expect_stale_blocks_ignored("predictor"); }
TEST(Predictor, DiscontinuityRestarts) { expect_discontinuity_restarts("predictor"); }
TEST(Predictor, SignalsAreIndependent) { expect_signals_independent("predictor"); }
TEST(Predictor, SensibleFromTheFirstBlock) { expect_sensible_start("predictor"); }

}  // namespace
}  // namespace rtcosim::coupling::testing
