// ecd (coupling/methods/ecd.hpp): polynomial extrapolation plus the error it
// made one macro step earlier (reference eq. 8), which carries the integral
// of the signal over from one macro step to the next.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/coupling/method_test_util.hpp"

namespace rtcosim::coupling::testing {
namespace {

ParamSettings order(int n) { return {{"order", std::to_string(n)}}; }

// u(t) = y^_k(t) + y^_k(t - h) - y^_{k-1}(t - h), with y^_k the Lagrange
// polynomial through the newest n+1 of the first `count` samples.
double ecd_reference(const std::vector<double>& tags, std::size_t count, int n, const Fn& f, double h, double t) {
  const double estimate = newest_lagrange(tags, count, n, f, t);
  if (count < 2) return estimate;
  return estimate + newest_lagrange(tags, count, n, f, t - h) - newest_lagrange(tags, count - 1, n, f, t - h);
}

TEST(Ecd, IsThePolynomialPlusItsErrorOneMacroStepLate) {
  for (int n : {1, 3, 5}) {
    for (bool given_step : {false, true}) {
      auto params = order(n);
      if (given_step) params.push_back({"macro_step", "35ms"});
      auto ex = make_form("ecd", params);
      const auto tags = jittered_tags(0.2, 0.04, 20);
      for (std::size_t k = 0; k < tags.size(); ++k) {
        push_sample(*ex, tags[k], sine);
        const double h = given_step ? 0.035 : (k > 0 ? tags[k] - tags[k - 1] : 0.0);
        for (double t : probe_times(tags[k], 0.04)) {
          const double expected = ecd_reference(tags, k + 1, n, sine, h, t);
          EXPECT_NEAR(eval1(*ex, t), expected, 1e-10 * std::max(1.0, std::abs(expected)))
              << "order " << n << " block " << k << " at " << t;
        }
      }
    }
  }
}

// With uniform tags: the integral of u - y^_k over [t_k, t_{k+1}] equals the
// integral of y_I - y^_{k-1} over [t_{k-1}, t_k], y_I = y^_k.
TEST(Ecd, ConservesTheIntegralOverAMacroStep) {
  constexpr double kStep = 0.05;
  for (int n = 1; n <= 5; ++n) {
    auto ex = make_method("ecd", order(n));
    const auto tags = uniform_tags(0.0, kStep, 40);
    int meaningful = 0;
    for (std::size_t k = 0; k + 1 < tags.size(); ++k) {
      push_sample(*ex, tags[k], sine);
      if (k < static_cast<std::size_t>(n) + 1) continue;
      const std::size_t count = k + 1;
      const double carried = gauss_legendre(
          tags[k], tags[k + 1], [&](double t) { return eval1(*ex, t) - newest_lagrange(tags, count, n, sine, t); });
      const double error = gauss_legendre(tags[k - 1], tags[k], [&](double t) {
        return newest_lagrange(tags, count, n, sine, t) - newest_lagrange(tags, count - 1, n, sine, t);
      });
      EXPECT_NEAR(carried, error, 1e-9 * std::abs(error) + 1e-16) << "order " << n << " block " << k;
      // Where the sine makes the step's error vanish the check proves nothing.
      if (std::abs(error) > 1e-10) ++meaningful;
    }
    EXPECT_GT(meaningful, 25) << "order " << n;
  }
}

// The running shortfall of the output against the interpolation of the
// samples, each macro step counted once its closing sample is known,
// D(K) = sum_k integral over [t_{k-1}, t_k] of (y_I,k - u). On a ramp with
// curvature plain extrapolation lags by the same amount every step, so D
// grows with the number of steps; ecd pays each step's shortfall back in the
// next one, so D stays at most a step's error.
TEST(Ecd, RunningIntegralStaysBoundedWherePolynomialDrifts) {
  constexpr double kStep = 0.05;
  struct Case {
    int order;
    Fn signal;
  };
  const std::vector<Case> cases = {{1, [](double t) { return 1.0 + 2.0 * t + 3.0 * t * t; }},
                                   {3, [](double t) { return 0.5 - t + 0.2 * t * t * t * t; }}};
  for (const auto& c : cases) {
    auto ecd = make_method("ecd", order(c.order));
    auto plain = make_method("polynomial", order(c.order));
    const auto tags = uniform_tags(-0.5, kStep, 220);
    std::size_t first = 20;  // the history has been filled by then
    double drift_ecd = 0.0;
    double drift_plain = 0.0;
    double worst_ecd = 0.0;
    double step_error = 0.0;
    double drift_plain_half = 0.0;
    for (std::size_t k = 0; k < tags.size(); ++k) {
      if (k > first) {
        const double delivered_ecd = gauss_legendre(tags[k - 1], tags[k], [&](double t) { return eval1(*ecd, t); });
        const double delivered_plain = gauss_legendre(tags[k - 1], tags[k], [&](double t) { return eval1(*plain, t); });
        const double known = gauss_legendre(
            tags[k - 1], tags[k], [&](double t) { return newest_lagrange(tags, k + 1, c.order, c.signal, t); });
        drift_ecd += known - delivered_ecd;
        drift_plain += known - delivered_plain;
        step_error = std::max(step_error, std::abs(known - delivered_plain));
        worst_ecd = std::max(worst_ecd, std::abs(drift_ecd));
        if (k == first + (tags.size() - first) / 2) drift_plain_half = drift_plain;
      }
      push_sample(*ecd, tags[k], c.signal);
      push_sample(*plain, tags[k], c.signal);
    }
    const double steps = static_cast<double>(tags.size() - first - 1);
    // ecd's own shortfall before its correction is the polynomial's, so this bound is tight.
    EXPECT_LE(worst_ecd, 2.0 * step_error) << "order " << c.order;
    EXPECT_GT(std::abs(drift_plain), 0.9 * steps * step_error) << "order " << c.order;
    EXPECT_GT(std::abs(drift_plain), 1.8 * std::abs(drift_plain_half)) << "order " << c.order;
    EXPECT_GT(std::abs(drift_plain), 50.0 * worst_ecd) << "order " << c.order;
  }
}

TEST(Ecd, StartsAsThePolynomial) {
  auto ex = make_method("ecd", order(3));
  push_block(*ex, 0.1, {2.0});
  for (double t : {0.05, 0.1, 0.2}) EXPECT_EQ(eval1(*ex, t), 2.0) << t;
  push_block(*ex, 0.14, {2.4});
  // The line L through both (slope 10) plus L(t - h) - 2, h = 0.04, the
  // constant 2 being the previous estimate: 2 + 10 (t - 0.1) + 10 (t - 0.14).
  for (double t : {0.14, 0.16, 0.2}) EXPECT_NEAR(eval1(*ex, t), 2.0 + 10.0 * (t - 0.1) + 10.0 * (t - 0.14), 1e-12) << t;
}

TEST(Ecd, RealTimePathAllocatesNothing) { expect_real_time_path_allocates_nothing("ecd", order(8)); }
TEST(Ecd, ZerosBeforeAnyBlock) { expect_zeros_before_any_block("ecd", order(3)); }
TEST(Ecd, StaleBlocksAreIgnoredAndCounted) { expect_stale_blocks_ignored("ecd", order(3)); }
TEST(Ecd, DiscontinuityRestarts) {
  expect_discontinuity_restarts("ecd", order(3));
  expect_discontinuity_restarts("ecd", {{"order", "2"}, {"macro_step", "10ms"}});
}
TEST(Ecd, SignalsAreIndependent) {
  expect_signals_independent("ecd", order(3));
  expect_signals_independent("ecd", {{"order", "5"}, {"macro_step", "20ms"}});
}
TEST(Ecd, SensibleFromTheFirstBlock) {
  for (int n : {1, 3, 5}) expect_sensible_start("ecd", order(n));
}

}  // namespace
}  // namespace rtcosim::coupling::testing
