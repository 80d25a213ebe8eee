// ecc (coupling/methods/interpolated.hpp, energy_conserving): interpolated
// extrapolation of corrected predictions plus the error total of the last
// macro step spread over the next one (reference eq. 9-12).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "coupling/methods/interpolated.hpp"
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

const methods::Interpolated& as_interpolated(const Extrapolator& ex) {
  const auto* interpolated = dynamic_cast<const methods::Interpolated*>(&ex);
  EXPECT_NE(interpolated, nullptr) << ex.method_id() << " is not the Interpolated class";
  return *interpolated;
}

double uncorrected1(const Extrapolator& ex, double t) {
  double out = -12345.0;
  as_interpolated(ex).evaluate_uncorrected(t, std::span<double>(&out, 1));
  return out;
}

// ecc written out from its formulas for uniform tags, after the start-up:
//   corrected prediction for t_j:  q_j = y^_{j-1}(t_j) + c_{j-1},
//   c_i = y_i - y^_{i-1}(t_i) (c_0 = 0),
//   k_k(t) = Lagrange through (t_j, q_j), j = k+1-n .. k+1,
//   E_k = integral over [t_{k-1}, t_k] of y^_k - k_{k-1}   (y_I = y^_k),
//   u(t) = k_k(t) + E_k 6x(1-x)/h, x = (t - t_k)/h, on [t_k, t_{k+1}].
class EccReference {
 public:
  EccReference(std::vector<double> tags, Fn f, Orders o) : tags_(std::move(tags)), f_(std::move(f)), o_(o) {}

  double estimate(std::size_t count, double t) const { return newest_lagrange(tags_, count, o_.extrapolation, f_, t); }
  double correction(std::size_t i) const { return i == 0 ? 0.0 : f_(tags_[i]) - estimate(i, tags_[i]); }
  double corrected_prediction(std::size_t j) const { return estimate(j, tags_[j]) + correction(j - 1); }
  double uncorrected(std::size_t k, double t) const {
    std::vector<double> nodes, values;
    for (std::size_t j = k + 1 - static_cast<std::size_t>(o_.interpolation); j <= k + 1; ++j) {
      nodes.push_back(tags_[j]);
      values.push_back(corrected_prediction(j));
    }
    return lagrange(nodes, values, t);
  }
  double error_total(std::size_t k) const {
    return gauss_legendre(tags_[k - 1], tags_[k], [&](double t) { return estimate(k + 1, t) - uncorrected(k - 1, t); });
  }
  double output(std::size_t k, double t) const {
    const double h = tags_[k + 1] - tags_[k];
    const double x = (t - tags_[k]) / h;
    return uncorrected(k, t) + error_total(k) * 6.0 * x * (1.0 - x) / h;
  }

 private:
  std::vector<double> tags_;
  Fn f_;
  Orders o_;
};

TEST(Ecc, MatchesItsFormulasAtUniformTags) {
  for (const auto& o : kOrders) {
    auto ex = make_method("ecc", orders(o.extrapolation, o.interpolation));
    const auto tags = uniform_tags(0.0, 0.04, 30);
    const EccReference reference(tags, sine, o);
    for (std::size_t k = 0; k + 1 < tags.size(); ++k) {
      push_sample(*ex, tags[k], sine);
      if (k < static_cast<std::size_t>(o.interpolation) + 3) continue;
      for (double x : {0.0, 0.13, 0.5, 0.71, 0.999}) {
        const double t = tags[k] + x * 0.04;
        EXPECT_NEAR(eval1(*ex, t), reference.output(k, t), 1e-11)
            << "orders " << o.extrapolation << "/" << o.interpolation << " block " << k << " x " << x;
        EXPECT_NEAR(uncorrected1(*ex, t), reference.uncorrected(k, t), 1e-11)
            << "orders " << o.extrapolation << "/" << o.interpolation << " block " << k << " x " << x;
      }
    }
  }
}

// Correction (1): at t_k the output is the prediction made at block k-1 plus
// the error of the plain extrapolation made at block k-2 for t_{k-1}.
TEST(Ecc, AtACouplingTimeItIsTheCorrectedPrediction) {
  for (const auto& o : kOrders) {
    auto ex = make_method("ecc", orders(o.extrapolation, o.interpolation));
    const auto tags = uniform_tags(0.0, 0.04, 30);
    const EccReference reference(tags, sine, o);
    for (std::size_t k = 0; k < tags.size(); ++k) {
      push_sample(*ex, tags[k], sine);
      if (k < 2) continue;
      const double expected = newest_lagrange(tags, k, o.extrapolation, sine, tags[k]) + sine(tags[k - 1]) -
                              newest_lagrange(tags, k - 1, o.extrapolation, sine, tags[k - 1]);
      EXPECT_NEAR(eval1(*ex, tags[k]), expected, 1e-12) << "orders " << o.extrapolation << "/" << o.interpolation;
      EXPECT_NEAR(reference.corrected_prediction(k), expected, 1e-15);
    }
  }
}

void expect_no_jump(const ParamSettings& params, const std::vector<double>& tags) {
  auto ex = make_method("ecc", params);
  for (std::size_t k = 0; k < tags.size(); ++k) {
    const double jump = jump_at_push(*ex, make_block(tags[k], {sine(tags[k])}));
    EXPECT_LT(jump, 1e-12) << "block " << k << " at " << tags[k];
  }
}

TEST(Ecc, NoJumpAtCouplingTimes) {
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

// With uniform tags: the integral of (evaluate - evaluate_uncorrected) over
// [t_k, t_{k+1}] equals that of y_I - k_{k-1} over [t_{k-1}, t_k], with
// k_{k-1} the uncorrected output before block k was pushed and y_I the
// Lagrange polynomial through the newest n_E+1 samples.
TEST(Ecc, ConservesTheErrorTotalOverAMacroStep) {
  constexpr double kStep = 0.05;
  for (const auto& o : kOrders) {
    auto ex = make_method("ecc", orders(o.extrapolation, o.interpolation));
    const auto tags = uniform_tags(0.0, kStep, 40);
    int meaningful = 0;
    for (std::size_t k = 0; k + 1 < tags.size(); ++k) {
      const double before =
          k == 0 ? 0.0 : gauss_legendre(tags[k - 1], tags[k], [&](double t) { return uncorrected1(*ex, t); });
      push_sample(*ex, tags[k], sine);
      if (k < 3) continue;
      const double interpolated = gauss_legendre(
          tags[k - 1], tags[k], [&](double t) { return newest_lagrange(tags, k + 1, o.extrapolation, sine, t); });
      const double error = interpolated - before;
      const double spread =
          gauss_legendre(tags[k], tags[k + 1], [&](double t) { return eval1(*ex, t) - uncorrected1(*ex, t); });
      EXPECT_NEAR(spread, error, 1e-9 * std::abs(error) + 1e-16)
          << "orders " << o.extrapolation << "/" << o.interpolation << " block " << k;
      // Where the sine makes the step's error vanish the check proves nothing.
      if (std::abs(error) > 1e-10) ++meaningful;
    }
    EXPECT_GT(meaningful, 25) << "orders " << o.extrapolation << "/" << o.interpolation;
  }
}

// D(K) = sum over completed macro steps of the integral of y_I,k - u: what the
// output fell short of the samples' interpolation. On a ramp with curvature
// `interpolated` lags every step the same way and D grows with the number of
// steps; ecc pays each error total back over the next step, so D stays at
// the size of one step's error, with uniform tags and with jittery ones.
TEST(Ecc, RunningIntegralStaysBoundedWhereInterpolatedDrifts) {
  // Quartic: correction (1) makes the predictions of a cubic exact, which
  // would leave ecc nothing to pay back.
  const Fn ramp = [](double t) { return 1.0 + 2.0 * t - 0.5 * t * t + 0.4 * t * t * t + 0.05 * t * t * t * t; };
  for (bool jitter : {false, true}) {
    auto ecc = make_method("ecc", orders(2, 2));
    auto plain = make_method("interpolated", orders(2, 2));
    const auto tags = jitter ? jittered_tags(-0.5, 0.05, 220, 0.2) : uniform_tags(-0.5, 0.05, 220);
    const std::size_t first = 20;
    double drift_ecc = 0.0;
    double drift_plain = 0.0;
    double drift_plain_half = 0.0;
    double worst_ecc = 0.0;
    double step_error = 0.0;      // interpolated's shortfall over one step
    double step_error_ecc = 0.0;  // k's shortfall over one step: what ecc pays back
    for (std::size_t k = 0; k < tags.size(); ++k) {
      if (k > first) {
        auto integral = [&](const Fn& g) { return gauss_legendre(tags[k - 1], tags[k], g); };
        const double known = integral([&](double t) { return newest_lagrange(tags, k + 1, 2, ramp, t); });
        const double from_plain = integral([&](double t) { return eval1(*plain, t); });
        drift_ecc += known - integral([&](double t) { return eval1(*ecc, t); });
        drift_plain += known - from_plain;
        step_error = std::max(step_error, std::abs(known - from_plain));
        step_error_ecc =
            std::max(step_error_ecc, std::abs(known - integral([&](double t) { return uncorrected1(*ecc, t); })));
        worst_ecc = std::max(worst_ecc, std::abs(drift_ecc));
        if (k == first + (tags.size() - first) / 2) drift_plain_half = drift_plain;
      }
      push_sample(*ecc, tags[k], ramp);
      push_sample(*plain, tags[k], ramp);
    }
    const double steps = static_cast<double>(tags.size() - first - 1);
    EXPECT_LE(worst_ecc, 3.0 * step_error_ecc) << "jitter " << jitter;
    EXPECT_GT(std::abs(drift_plain), 0.3 * steps * step_error) << "jitter " << jitter;
    EXPECT_GT(std::abs(drift_plain), 1.6 * std::abs(drift_plain_half)) << "jitter " << jitter;
    EXPECT_GT(std::abs(drift_plain), 30.0 * worst_ecc) << "jitter " << jitter;
  }
}

// The bookkeeping behind the bound above, exact with tags that come early
// (the rest of the old error total is added to the new one) and late: the
// shortfall summed over completed macro steps equals how much more error
// total is pending now than at the start. The pending total is the integral
// of d = evaluate - evaluate_uncorrected over the window after the newest tag.
TEST(Ecc, ErrorTotalIsCarriedOverExactlyWithJitteryTags) {
  const Fn ramp = [](double t) { return 1.0 + 2.0 * t - 0.5 * t * t + 0.4 * t * t * t + 0.05 * t * t * t * t; };
  for (double jitter : {0.2, 0.45}) {
    auto ex = make_method("ecc", orders(2, 2));
    const auto tags = jittered_tags(0.0, 0.05, 120, jitter);
    const std::size_t first = 10;
    double shortfall = 0.0;
    double pending_at_start = 0.0;
    int early = 0;
    int late = 0;
    for (std::size_t k = 0; k < tags.size(); ++k) {
      if (k > first) {
        // u has seams where the windows of the previous block end (h_s is
        // the spacing of the two tags before); integrate either side.
        const double window_end = tags[k - 1] + (tags[k - 1] - tags[k - 2]);
        const double seam = std::min(window_end, tags[k]);
        (window_end < tags[k] ? late : early) += 1;
        auto integral = [&](const Fn& g) {
          return gauss_legendre(tags[k - 1], seam, g) + gauss_legendre(seam, tags[k], g);
        };
        shortfall += integral([&](double t) { return newest_lagrange(tags, k + 1, 2, ramp, t); }) -
                     integral([&](double t) { return eval1(*ex, t); });
      }
      push_sample(*ex, tags[k], ramp);
      if (k >= first) {
        const double h = tags[k] - tags[k - 1];
        const double pending =
            gauss_legendre(tags[k], tags[k] + h, [&](double t) { return eval1(*ex, t) - uncorrected1(*ex, t); });
        if (k == first) pending_at_start = pending;
        EXPECT_NEAR(shortfall, pending - pending_at_start, 1e-12) << "jitter " << jitter << " block " << k;
      }
    }
    EXPECT_GT(early, 20) << "jitter " << jitter;
    EXPECT_GT(late, 20) << "jitter " << jitter;
  }
}

// Errors must not grow from block to block when tags are not where they
// were predicted, at any interpolation order.
TEST(Ecc, StaysAccurateWithJitteryTagsAtEveryInterpolationOrder) {
  for (int n = 1; n <= 8; ++n) {
    for (double jitter : {0.1, 0.3, 0.45}) {
      auto ex = make_method("ecc", orders(3, n));
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

TEST(Ecc, ReproducesLowDegreePolynomialsAtNonUniformTags) {
  for (const auto& o : kOrders) {
    const int degree = std::min(o.extrapolation, o.interpolation);
    const auto p = test_polynomial(degree, 0.6, 0.2);
    auto ex = make_method("ecc", orders(o.extrapolation, o.interpolation));
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

TEST(Ecc, StartsWithTheFirstValue) {
  auto ex = make_method("ecc", orders(3, 3));
  push_block(*ex, 0.2, {1.5});
  for (double t : {0.1, 0.2, 0.23, 0.5}) EXPECT_EQ(eval1(*ex, t), 1.5) << t;
  push_block(*ex, 0.24, {1.9});
  EXPECT_NEAR(eval1(*ex, 0.24), 1.5, 1e-14);
}

TEST(Ecc, RegistryMakesTheEnergyConservingInterpolated) {
  auto ex = make_method("ecc");
  EXPECT_EQ(ex->method_id(), "ecc");
  EXPECT_NE(dynamic_cast<const methods::Interpolated*>(ex.get()), nullptr);
}

TEST(Ecc, RealTimePathAllocatesNothing) { expect_real_time_path_allocates_nothing("ecc", orders(8, 8)); }
TEST(Ecc, ZerosBeforeAnyBlock) { expect_zeros_before_any_block("ecc", orders(3, 3)); }
TEST(Ecc, StaleBlocksAreIgnoredAndCounted) { expect_stale_blocks_ignored("ecc", orders(3, 3)); }
TEST(Ecc, DiscontinuityRestarts) {
  expect_discontinuity_restarts("ecc", orders(3, 3));
  expect_discontinuity_restarts("ecc", {{"order", "2"}, {"interp_order", "4"}, {"macro_step", "10ms"}});
}
TEST(Ecc, SignalsAreIndependent) {
  expect_signals_independent("ecc", orders(3, 3));
  expect_signals_independent("ecc", {{"order", "4"}, {"interp_order", "2"}, {"macro_step", "20ms"}});
}
TEST(Ecc, SensibleFromTheFirstBlock) {
  for (const auto& o : kOrders) expect_sensible_start("ecc", orders(o.extrapolation, o.interpolation));
}

// With jittered tags the correction y_k - y^_{k-1}(t_k) is the error of an
// extrapolation over another distance than the next prediction's; scaled by
// the ratio of the extrapolants' nodal polynomials it is that prediction's
// error exactly whenever the signal is a polynomial of degree n_E + 1. So
// for a quartic, n_E = 3, every prediction is exact and k(t), interpolated
// through five of them (n = 4), is the quartic itself, on any tags. (The
// unscaled correction was off by the ratio, e.g. 2x for a 20 % longer step.)
// The macro step is set shorter than any spacing, so that each block comes
// after the error total's window and k(t) carries no continuity jump.
TEST(Ecc, ScaledCorrectionMakesKExactOnAQuarticWithJitteredTags) {
  const auto quartic = test_polynomial(4, 0.5, 0.4);
  for (double jitter : {0.0, 0.3, 0.6}) {
    auto params = orders(3, 4);
    params.push_back({"macro_step", std::to_string(0.04 * (1.0 - jitter) * 0.95) + "s"});
    auto ex = make_method("ecc", params);
    const auto tags = jittered_tags(0.0, 0.04, 40, jitter);
    double worst = 0.0;
    for (std::size_t k = 0; k < tags.size(); ++k) {
      push_sample(*ex, tags[k], quartic);
      if (k < 12) continue;  // the start, with fewer blocks than the orders need, and its jumps
      for (double f : {0.0, 0.3, 0.7, 1.0}) {
        const double t = tags[k] + f * (tags[k] - tags[k - 1]);
        worst = std::max(worst, std::abs(uncorrected1(*ex, t) - quartic(t)));
      }
    }
    EXPECT_LT(worst, 1e-9) << "jitter " << jitter;
  }
}

}  // namespace
}  // namespace rtcosim::coupling::testing
