// interpolated (coupling/methods/interpolated.hpp): Knorr's integrated
// extrapolation, an interpolation through predictions of the next coupling
// time, continuous at every coupling time.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/coupling/method_test_util.hpp"

namespace rtcosim::coupling::testing {
namespace {

ParamSettings orders(int extrapolation, int interpolation) {
  return {{"order", std::to_string(extrapolation)}, {"interp_order", std::to_string(interpolation)}};
}

struct Orders {
  int extrapolation;
  int interpolation;
};
const std::vector<Orders> kOrders = {{3, 3}, {1, 2}, {4, 2}, {2, 5}, {1, 1}};

void expect_no_jump(const ParamSettings& params, const std::vector<double>& tags) {
  auto ex = make_method("interpolated", params);
  for (std::size_t k = 0; k < tags.size(); ++k) {
    const double jump = jump_at_push(*ex, make_block(tags[k], {sine(tags[k])}));
    EXPECT_LT(jump, 1e-12) << "block " << k << " at " << tags[k];
  }
}

TEST(Interpolated, NoJumpAtCouplingTimes) {
  for (const auto& o : kOrders) {
    const auto params = orders(o.extrapolation, o.interpolation);
    expect_no_jump(params, uniform_tags(0.0, 0.04, 40));
    expect_no_jump(params, jittered_tags(0.0, 0.04, 40));
    auto fixed = params;
    fixed.push_back({"macro_step", "40ms"});
    expect_no_jump(fixed, uniform_tags(0.0, 0.04, 40));
    expect_no_jump(fixed, jittered_tags(0.0, 0.04, 40));
  }
}

// Knorr's form: with uniform tags the output at t_k is the value predicted for
// t_k at block k-1 by the order-n_E polynomial through the blocks up to k-1.
TEST(Interpolated, AtACouplingTimeItIsThePredictionMadeOneBlockEarlier) {
  for (const auto& o : kOrders) {
    for (bool given_step : {false, true}) {
      auto params = orders(o.extrapolation, o.interpolation);
      if (given_step) params.push_back({"macro_step", "40ms"});
      auto ex = make_method("interpolated", params);
      const auto tags = uniform_tags(0.0, 0.04, 30);
      for (std::size_t k = 0; k < tags.size(); ++k) {
        push_sample(*ex, tags[k], sine);
        // Without a given step the first block cannot predict: h_s is unknown.
        if (k < (given_step ? 1u : 2u)) continue;
        const double predicted = newest_lagrange(tags, k, o.extrapolation, sine, tags[k]);
        EXPECT_NEAR(eval1(*ex, tags[k]), predicted, 1e-12)
            << "orders " << o.extrapolation << "/" << o.interpolation << " block " << k;
      }
    }
  }
}

// Between coupling times: the order-n interpolation through the newest n+1
// predictions p_j (made at block j-1 for t_j), the newest for t_{k+1}.
TEST(Interpolated, BetweenCouplingTimesItInterpolatesThePredictions) {
  for (const auto& o : kOrders) {
    auto ex = make_method("interpolated", orders(o.extrapolation, o.interpolation));
    const auto tags = uniform_tags(0.0, 0.04, 40);
    auto prediction = [&](std::size_t j) { return newest_lagrange(tags, j, o.extrapolation, sine, tags[j]); };
    const auto n = static_cast<std::size_t>(o.interpolation);
    for (std::size_t k = 0; k + 1 < tags.size(); ++k) {
      push_sample(*ex, tags[k], sine);
      if (k < n + 1) continue;  // the start-up anchors are not predictions yet
      std::vector<double> nodes, values;
      for (std::size_t j = k + 1 - n; j <= k + 1; ++j) {
        nodes.push_back(tags[j]);
        values.push_back(prediction(j));
      }
      for (double x : {0.0, 0.2, 0.5, 0.77, 1.0, 1.3}) {
        const double t = tags[k] + x * 0.04;
        EXPECT_NEAR(eval1(*ex, t), lagrange(nodes, values, t), 1e-11)
            << "orders " << o.extrapolation << "/" << o.interpolation << " block " << k << " x " << x;
      }
    }
  }
}

// A polynomial both orders can represent is reproduced once the start-up
// anchors have left the interpolation, also at non-uniform tags.
TEST(Interpolated, ReproducesLowDegreePolynomialsAtNonUniformTags) {
  for (const auto& o : kOrders) {
    const int degree = std::min(o.extrapolation, o.interpolation);
    const auto p = test_polynomial(degree, 0.6, 0.2);
    for (bool given_step : {false, true}) {
      auto params = orders(o.extrapolation, o.interpolation);
      if (given_step) params.push_back({"macro_step", "40ms"});
      auto ex = make_method("interpolated", params);
      const auto tags = jittered_tags(0.0, 0.04, 40);
      for (std::size_t k = 0; k < tags.size(); ++k) {
        push_sample(*ex, tags[k], [&](double t) { return p(t); });
        if (k < 25) continue;
        for (double t : probe_times(tags[k], 0.04)) {
          EXPECT_NEAR(eval1(*ex, t), p(t), 1e-9 * std::max(1.0, std::abs(p(t))))
              << "orders " << o.extrapolation << "/" << o.interpolation << " block " << k << " at " << t;
        }
      }
    }
  }
}

TEST(Interpolated, AccurateOnASmoothSignalAtNonUniformTags) {
  auto ex = make_method("interpolated", orders(3, 3));
  auto zoh = make_method("zoh");
  const auto tags = jittered_tags(0.0, 0.02, 80);
  double worst = 0.0;
  double zoh_worst = 0.0;
  for (std::size_t k = 0; k + 1 < tags.size(); ++k) {
    push_sample(*ex, tags[k], sine);
    push_sample(*zoh, tags[k], sine);
    if (k < 10) continue;
    for (double t = tags[k]; t < tags[k + 1]; t += 0.001) {
      worst = std::max(worst, std::abs(eval1(*ex, t) - sine(t)));
      zoh_worst = std::max(zoh_worst, std::abs(eval1(*zoh, t) - sine(t)));
    }
  }
  EXPECT_LT(worst, 1e-3);
  EXPECT_LT(worst, 0.01 * zoh_worst);
}

// Errors must not grow from block to block when tags are not where they
// were predicted, at any interpolation order (an interpolation through the
// output's own past values grew by about n |jitter| per block and diverged).
TEST(Interpolated, StaysAccurateWithJitteryTagsAtEveryInterpolationOrder) {
  for (int n = 1; n <= 8; ++n) {
    for (double jitter : {0.1, 0.3, 0.45}) {
      auto ex = make_method("interpolated", orders(3, n));
      const auto tags = jittered_tags(0.0, 0.02, 300, jitter);
      double worst = 0.0;
      for (std::size_t k = 0; k + 1 < tags.size(); ++k) {
        push_sample(*ex, tags[k], sine);
        if (k < 20) continue;
        for (double t = tags[k]; t < tags[k + 1]; t += 0.0017)
          worst = std::max(worst, std::abs(eval1(*ex, t) - sine(t)));
      }
      EXPECT_LT(worst, 0.03) << "interp_order " << n << " jitter " << jitter;
    }
  }
}

TEST(Interpolated, StartsWithTheFirstValue) {
  auto ex = make_method("interpolated", orders(3, 3));
  push_block(*ex, 0.2, {1.5});
  for (double t : {0.1, 0.2, 0.23, 0.5}) EXPECT_EQ(eval1(*ex, t), 1.5) << t;
  // The second block anchors at the output's own value: still continuous.
  push_block(*ex, 0.24, {1.9});
  EXPECT_NEAR(eval1(*ex, 0.24), 1.5, 1e-14);
}

TEST(Interpolated, RealTimePathAllocatesNothing) {
  expect_real_time_path_allocates_nothing("interpolated", orders(8, 8));
}
TEST(Interpolated, ZerosBeforeAnyBlock) { expect_zeros_before_any_block("interpolated", orders(3, 3)); }
TEST(Interpolated, StaleBlocksAreIgnoredAndCounted) { expect_stale_blocks_ignored("interpolated", orders(3, 3)); }
TEST(Interpolated, DiscontinuityRestarts) {
  expect_discontinuity_restarts("interpolated", orders(3, 3));
  expect_discontinuity_restarts("interpolated", {{"order", "2"}, {"interp_order", "4"}, {"macro_step", "10ms"}});
}
TEST(Interpolated, SignalsAreIndependent) {
  expect_signals_independent("interpolated", orders(3, 3));
  expect_signals_independent("interpolated", {{"order", "4"}, {"interp_order", "2"}, {"macro_step", "20ms"}});
}
TEST(Interpolated, SensibleFromTheFirstBlock) {
  for (const auto& o : kOrders) expect_sensible_start("interpolated", orders(o.extrapolation, o.interpolation));
}

}  // namespace
}  // namespace rtcosim::coupling::testing
