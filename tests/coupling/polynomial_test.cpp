// polynomial (coupling/methods/polynomial.hpp): Newton divided differences
// through the newest order+1 blocks (reference eq. 1-2), checked against the
// Lagrange form and against polynomials it must reproduce.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/coupling/method_test_util.hpp"

namespace rtcosim::coupling::testing {
namespace {

ParamSettings order(int n) { return {{"order", std::to_string(n)}}; }

TEST(Polynomial, ReproducesEveryPolynomialOfDegreeUpToItsOrder) {
  constexpr double kStep = 0.01;
  for (int n = 1; n <= 8; ++n) {
    for (int degree = 0; degree <= n; ++degree) {
      auto ex = make_form("polynomial", order(n));
      const auto tags = jittered_tags(0.37, kStep, 14);
      const auto p = test_polynomial(degree, 0.37 + 7 * kStep, kStep * (n + 1));
      for (std::size_t k = 0; k < tags.size(); ++k) {
        push_sample(*ex, tags[k], [&](double t) { return p(t); });
        if (k < static_cast<std::size_t>(degree)) continue;  // not enough blocks to know p yet
        for (double t : probe_times(tags[k], kStep)) {
          EXPECT_NEAR(eval1(*ex, t), p(t), 1e-9 * std::max(1.0, std::abs(p(t))))
              << "order " << n << " degree " << degree << " after " << k + 1 << " blocks at " << t;
        }
      }
    }
  }
}

TEST(Polynomial, UsesTheNewestOrderPlusOneBlocks) {
  for (int n : {1, 3, 6}) {
    auto ex = make_form("polynomial", order(n));
    const auto tags = jittered_tags(0.05, 0.02, 16);
    for (std::size_t k = 0; k < tags.size(); ++k) {
      push_sample(*ex, tags[k], sine);
      for (double t : probe_times(tags[k], 0.02)) {
        const double expected = newest_lagrange(tags, k + 1, n, sine, t);
        EXPECT_NEAR(eval1(*ex, t), expected, 1e-11 * std::max(1.0, std::abs(expected)))
            << "order " << n << " after " << k + 1 << " blocks at " << t;
      }
    }
  }
}

TEST(Polynomial, StartsWithTheOrderTheBlocksAllow) {
  auto ex = make_form("polynomial", order(4));
  push_block(*ex, 0.10, {2.0});
  EXPECT_EQ(eval1(*ex, 0.05), 2.0);  // one block: constant
  EXPECT_EQ(eval1(*ex, 0.30), 2.0);
  push_block(*ex, 0.13, {2.6});
  // Two blocks: the line through them, slope 20.
  EXPECT_NEAR(eval1(*ex, 0.20), 2.0 + 20.0 * 0.10, 1e-12);
  EXPECT_NEAR(eval1(*ex, 0.115), 2.3, 1e-12);
  push_block(*ex, 0.14, {2.0});
  // Three blocks: the parabola through them.
  const std::vector<double> nodes = {0.10, 0.13, 0.14};
  const std::vector<double> values = {2.0, 2.6, 2.0};
  for (double t : {0.09, 0.12, 0.15, 0.17}) EXPECT_NEAR(eval1(*ex, t), lagrange(nodes, values, t), 1e-11) << t;
}

// The method is documented to jump at coupling times; this also shows that
// the jump measure the continuous methods are held to sees a jump.
TEST(Polynomial, JumpsAtCouplingTimes) {
  auto ex = make_method("polynomial", order(3));
  const auto tags = jittered_tags(0.0, 0.04, 12);
  for (std::size_t k = 0; k < tags.size(); ++k) {
    const double jump = jump_at_push(*ex, make_block(tags[k], {sine(tags[k])}));
    if (k >= 4) {
      EXPECT_GT(jump, 1e-6) << "block " << k;
    }
  }
}

TEST(Polynomial, RealTimePathAllocatesNothing) { expect_real_time_path_allocates_nothing("polynomial", order(8)); }
TEST(Polynomial, ZerosBeforeAnyBlock) { expect_zeros_before_any_block("polynomial", order(3)); }
TEST(Polynomial, StaleBlocksAreIgnoredAndCounted) { expect_stale_blocks_ignored("polynomial", order(3)); }
TEST(Polynomial, DiscontinuityRestarts) {
  for (int n : {1, 3, 8}) expect_discontinuity_restarts("polynomial", order(n));
}
TEST(Polynomial, SignalsAreIndependent) {
  for (int n : {1, 3, 8}) expect_signals_independent("polynomial", order(n));
}
TEST(Polynomial, SensibleFromTheFirstBlock) {
  for (int n : {1, 3, 5}) expect_sensible_start("polynomial", order(n));
}

}  // namespace
}  // namespace rtcosim::coupling::testing
