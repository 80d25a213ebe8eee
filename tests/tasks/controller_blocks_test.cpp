// pid through a real partition: P, PI and filtered-D responses against
// their closed forms, anti-windup modes against the analytic trajectories
// of the integral and against each other, parameter errors.
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "tests/support/alloc_counter.hpp"
#include "tests/tasks/block_rig.hpp"

namespace rtcosim::tasks {
namespace {

using testing::creation_error;
using testing::Rig;

// pid `c` fed by a source block `e` (so that e' is known).
Rig pid_on(const std::string& source_type, BlockParams source, BlockParams pid) {
  return Rig({{"e", source_type, std::move(source)}, {"c", "pid", std::move(pid)}}, {{{"e", "y"}, {"c", "e"}}}, {});
}

double integral(Rig& r) { return r.partition().state()[0]; }

TEST(PidBlock, ProportionalOnlyIsKpTimesTheError) {
  const double w = 2.0 * M_PI * 1.5;
  Rig r = pid_on("sine", {{"amplitude", 0.8}, {"frequency", 1.5}}, {{"kp", 2.5}});
  for (long k = 0; k < 100; ++k) {
    r.step_at(k, 0.01);
    const double t = r.time();
    EXPECT_NEAR(r.y("c", "u"), 2.5 * 0.8 * std::sin(w * t), 1e-12) << t;
    EXPECT_NEAR(r.dy("c", "u"), 2.5 * 0.8 * w * std::cos(w * t), 1e-12) << t;
    EXPECT_TRUE(r.dy_known("c", "u"));
  }
}

TEST(PidBlock, SaturatedOutputHasAKnownZeroSlope) {
  Rig r = pid_on("sine", {{"amplitude", 1.0}, {"frequency", 1.0}}, {{"kp", 2.0}, {"lower", -1.0}, {"upper", 1.0}});
  for (long k = 0; k < 100; ++k) {
    r.step_at(k, 0.01);
    const double v = 2.0 * std::sin(2.0 * M_PI * r.time());
    EXPECT_NEAR(r.y("c", "u"), std::clamp(v, -1.0, 1.0), 1e-12);
    if (std::fabs(v) > 1.0 + 1e-9) {
      EXPECT_EQ(r.dy("c", "u"), 0.0);
      EXPECT_TRUE(r.dy_known("c", "u"));
    }
  }
}

TEST(PidBlock, PiOnAConstantErrorGrowsLinearly) {
  // u = kp e + ki e t, exactly (rk4 integrates a constant exactly).
  Rig r = pid_on("constant", {{"value", 0.5}}, {{"kp", 2.0}, {"ki", 3.0}});
  EXPECT_DOUBLE_EQ(r.y("c", "u"), 1.0);
  for (long k = 0; k < 200; ++k) {
    r.step_at(k, 0.01);
    const double t = r.time();
    ASSERT_NEAR(r.y("c", "u"), 1.0 + 1.5 * t, 1e-12) << t;
    ASSERT_NEAR(integral(r), 1.5 * t, 1e-12) << t;
    ASSERT_DOUBLE_EQ(r.dy("c", "u"), 1.5);
    ASSERT_TRUE(r.dy_known("c", "u"));
  }
}

TEST(PidBlock, DerivativeIsFilteredAtN) {
  // e = t: D(s) = kd N s / (s + N) gives u = kd (1 - exp(-N t)) and
  // u' = kd N exp(-N t).
  for (const auto& [n, given] : {std::pair{20.0, true}, std::pair{100.0, false}}) {
    BlockParams params{{"kp", 0.0}, {"kd", 0.5}};
    if (given) params.set("filter", n);
    Rig r = pid_on("ramp", {{"slope", 1.0}}, params);
    const double h = 2.5e-4;
    for (long k = 0; k < 400; ++k) {
      r.step_at(k, h);
      const double t = r.time();
      ASSERT_NEAR(r.y("c", "u"), 0.5 * (1.0 - std::exp(-n * t)), 1e-8) << n << " " << t;
      ASSERT_NEAR(r.dy("c", "u"), 0.5 * n * std::exp(-n * t), 1e-6) << n << " " << t;
    }
  }
}

/*
 * kp = ki = 1 between -2 and 2; e = +1 up to t = 5, then -1 (held over each
 * step, switching on a step boundary, so every trajectory below is exact up
 * to rk4's error on smooth pieces). v = e + I is the unsaturated output.
 *   none:              I = t to 5, u stays at 2 until I < 3 (t = 7),
 *                      u = 0 at t = 9.
 *   back_calculation:  kb = ki/kp = 1. I = t to 1, then I' = 2 - I:
 *                      I = 2 - exp(-(t - 1)); after the switch u = -1 + I
 *                      is unsaturated at once and falls at 1/s.
 *   clamping:          I = t to 1, then frozen (within one step of 1).
 */
struct WindupRun {
  double i_at_5 = 0.0, i_max = 0.0, u_at_5_5 = 0.0;
  double zero_crossing = 0.0;  // first time after 5 that u <= 0
};

WindupRun run_windup(const std::string& mode, double h) {
  Rig r({{"c", "pid", {{"kp", 1.0}, {"ki", 1.0}, {"lower", -2.0}, {"upper", 2.0}, {"anti_windup", mode}}}}, {},
        {{"e", {{"c", "e"}}, [](double t) { return t < 5.0 ? 1.0 : -1.0; }, true}});
  WindupRun out;
  for (long k = 0; r.time() < 12.0; ++k) {
    r.step_at(k, h);
    out.i_max = std::max(out.i_max, integral(r));
    if (r.time() == 5.0) out.i_at_5 = integral(r);
    if (r.time() == 5.5) out.u_at_5_5 = r.y("c", "u");
    if (r.time() > 5.0 && out.zero_crossing == 0.0 && r.y("c", "u") <= 1e-12) out.zero_crossing = r.time();
  }
  return out;
}

TEST(PidBlock, AntiWindupKeepsTheIntegralBoundedAndRecoversFaster) {
  const double h = 1.0 / 64.0;  // exact in binary: t = 5 and 5.5 are step ends
  const WindupRun none = run_windup("none", h);
  const WindupRun back = run_windup("back_calculation", h);
  const WindupRun clamp = run_windup("clamping", h);

  EXPECT_NEAR(none.i_at_5, 5.0, 1e-12);
  EXPECT_NEAR(none.u_at_5_5, 2.0, 1e-12);  // still saturated: I = 4.5, v = 3.5
  EXPECT_NEAR(none.zero_crossing, 9.0, 1e-9);

  const double i5 = 2.0 - std::exp(-4.0);
  EXPECT_NEAR(back.i_at_5, i5, 1e-9);
  EXPECT_LE(back.i_max, 2.0);
  EXPECT_NEAR(back.u_at_5_5, -1.0 + i5 - 0.5, 1e-9);
  EXPECT_NEAR(back.zero_crossing, 5.0 + (i5 - 1.0), h);

  EXPECT_GE(clamp.i_at_5, 1.0);
  EXPECT_LE(clamp.i_max, 1.0 + h);
  EXPECT_LE(clamp.zero_crossing, 5.0 + h);

  EXPECT_LT(back.zero_crossing, none.zero_crossing - 2.5);
  EXPECT_LT(clamp.zero_crossing, none.zero_crossing - 2.5);
}

TEST(PidBlock, DefaultTrackingGainFollowsTheDocumentedRule) {
  // Saturated at `upper` under a constant error e, back-calculation settles
  // where ki e + kb (upper - v) = 0 with v = kp e + I (the filtered D has
  // decayed): I = upper - kp e + ki e / kb.
  struct Case {
    BlockParams params;
    double settled;
  };
  const std::vector<Case> cases = {
      // PID: kb = sqrt(ki/kd) = 2.
      {{{"kp", 1.0}, {"ki", 4.0}, {"kd", 1.0}, {"upper", 2.0}}, 2.0 - 1.0 + 4.0 / 2.0},
      // PI: kb = ki/kp = 0.5.
      {{{"kp", 2.0}, {"ki", 1.0}, {"upper", 1.0}}, 1.0 - 2.0 + 1.0 / 0.5},
      // Reverse-acting PI saturated at `lower`: kb = |ki/kp| = 0.5.
      {{{"kp", -2.0}, {"ki", -1.0}, {"lower", -1.0}}, -1.0 + 2.0 - 1.0 / 0.5},
      // Pure I: kb = 1.
      {{{"kp", 0.0}, {"ki", 3.0}, {"upper", 1.0}}, 1.0 + 3.0},
      // Given explicitly.
      {{{"kp", 1.0}, {"ki", 4.0}, {"kd", 1.0}, {"upper", 2.0}, {"tracking_gain", 0.5}}, 2.0 - 1.0 + 8.0},
      // P only: kb = 0, the integral state never moves.
      {{{"kp", 5.0}, {"upper", 1.0}}, 0.0},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    Rig r = pid_on("constant", {{"value", 1.0}}, cases[i].params);
    for (long k = 0; k < 8000; ++k) r.step_at(k, 0.005);
    EXPECT_NEAR(integral(r), cases[i].settled, 1e-6) << "case " << i;
  }
}

TEST(PidBlock, StepsAllocateNothingInAClosedLoop) {
  for (const char* mode : {"back_calculation", "clamping", "none"}) {
    Rig r(
        {{"ref", "step", {{"time", 0.1}, {"final", 0.5}}},
         {"err", "sum", {{"signs", std::string("+-")}}},
         {"c",
          "pid",
          {{"kp", 2.0}, {"ki", 4.0}, {"kd", 0.1}, {"lower", -1.0}, {"upper", 1.0}, {"anti_windup", std::string(mode)}}},
         {"plant", "first_order_lag", {{"time_constant", 0.5}}}},
        {{{"ref", "y"}, {"err", "u1"}},
         {{"plant", "y"}, {"err", "u2"}},
         {{"err", "y"}, {"c", "e"}},
         {{"c", "u"}, {"plant", "u"}}},
        {});
    for (long k = 0; k < 10; ++k) r.step_at(k, 0.001);
    rtcosim::testing::AllocationScope scope;
    for (long k = 10; k < 5000; ++k) r.step_at(k, 0.001);
    EXPECT_EQ(scope.count(), 0u) << mode;
    EXPECT_NEAR(r.y("plant"), 0.5, 1e-3) << mode;  // the integral removes the offset
  }
}

TEST(PidBlock, BadParametersAreBlockErrorsNamingTheParameter) {
  EXPECT_EQ(creation_error("pid", {{"anti_windup", std::string("sometimes")}}),
            "block 'b': 'anti_windup' = 'sometimes' — expected \"back_calculation\", \"clamping\" or \"none\"");
  EXPECT_EQ(creation_error("pid", {{"lower", 1.0}, {"upper", 0.0}}),
            "block 'b': lower (1) must be below upper (0) — expected lower < upper");
  EXPECT_EQ(creation_error("pid", {{"filter", 0.0}}), "block 'b': parameter 'filter' = 0 — expected a positive number");
  EXPECT_EQ(creation_error("pid", {{"kp", std::string("high")}}),
            "block 'b': parameter 'kp' is 'high' — expected a number");
  EXPECT_EQ(creation_error("pid", {{"ki", 1.0}, {"tracking_gain", -1.0}}),
            "block 'b': parameter 'tracking_gain' = -1 — expected a number >= 0");
  EXPECT_EQ(creation_error("pid", {{"anti_windup", std::string("clamping")}, {"tracking_gain", 1.0}}),
            "block 'b': parameter 'tracking_gain' is given with anti_windup 'clamping' — expected it only with "
            "anti_windup \"back_calculation\"");
  EXPECT_NE(creation_error("pid", {{"Kp", 1.0}}).find("has no parameter 'Kp'"), std::string::npos);
  EXPECT_NE(creation_error("pid", {{"Kp", 1.0}}).find("(did you mean 'kp'?)"), std::string::npos);
}

}  // namespace
}  // namespace rtcosim::tasks
