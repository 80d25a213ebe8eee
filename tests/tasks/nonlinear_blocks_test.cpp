// saturation, dead_zone, rate_limiter and lookup_1d through a real
// partition: values and time derivatives at chosen inputs against the
// formulas, the rate limiter against the exact ramp, parameter errors.
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "tests/support/alloc_counter.hpp"
#include "tests/tasks/block_rig.hpp"

namespace rtcosim::tasks {
namespace {

using testing::creation_error;
using testing::Rig;

// The block `b` of `type` driven by a ramp source u = u0 + slope t, whose
// derivative the partition knows exactly (a source block, not an external
// input, because external inputs carry no derivative).
Rig ramp_into(const std::string& type, BlockParams params, double u0, double slope) {
  return Rig({{"src", "ramp", {{"initial", u0}, {"slope", slope}}}, {"b", type, std::move(params)}},
             {{{"src", "y"}, {"b", "u"}}}, {});
}

// The block `b` of `type` driven by an external input u(t) (derivative unknown).
Rig external_into(const std::string& type, BlockParams params, std::function<double(double)> u,
                  IntegratorKind kind = IntegratorKind::kRk4) {
  return Rig({{"b", type, std::move(params)}}, {}, {{"u", {{"b", "u"}}, std::move(u)}}, kind);
}

TEST(SaturationBlock, ClipsAndPassesTheSlopeOnlyInside) {
  const BlockParams limits{{"lower", -1.0}, {"upper", 2.0}};
  // At the end of a 0.1 s step u = u0 + 0.5 * 0.1.
  for (const double u0 : {-3.0, -1.2, -0.5, 0.0, 1.5, 1.99, 4.0}) {
    Rig r = ramp_into("saturation", limits, u0, 0.5);
    r.step(0.1);
    const double u = u0 + 0.05;
    EXPECT_DOUBLE_EQ(r.y("b"), std::clamp(u, -1.0, 2.0)) << u;
    const bool inside = u > -1.0 && u < 2.0;
    EXPECT_DOUBLE_EQ(r.dy("b"), inside ? 0.5 : 0.0) << u;
    EXPECT_TRUE(r.dy_known("b")) << u;
  }
}

TEST(SaturationBlock, DerivativeIsKnownOutsideEvenWhenTheInputIsNot) {
  Rig outside = external_into("saturation", {{"lower", -1.0}, {"upper", 1.0}}, [](double t) { return 3.0 + t; });
  outside.step(0.01);
  EXPECT_TRUE(outside.dy_known("b"));
  EXPECT_EQ(outside.dy("b"), 0.0);
  Rig inside = external_into("saturation", {{"lower", -1.0}, {"upper", 1.0}}, [](double t) { return 0.5 * t; });
  inside.step(0.01);
  EXPECT_FALSE(inside.dy_known("b"));
  EXPECT_DOUBLE_EQ(inside.y("b"), 0.005);
}

TEST(DeadZoneBlock, ZeroInsideShiftedOutsideWithTheMatchingSlope) {
  const BlockParams zone{{"start", -0.5}, {"end", 1.0}};
  for (const double u0 : {-2.0, -0.6, -0.5, 0.0, 0.9, 1.0, 3.0}) {
    Rig r = ramp_into("dead_zone", zone, u0, -2.0);
    r.step(0.01);
    const double u = u0 - 0.02;
    const double expected = u > 1.0 ? u - 1.0 : u < -0.5 ? u + 0.5 : 0.0;
    EXPECT_NEAR(r.y("b"), expected, 1e-15) << u;
    const bool outside = u > 1.0 || u < -0.5;
    EXPECT_DOUBLE_EQ(r.dy("b"), outside ? -2.0 : 0.0) << u;
    EXPECT_TRUE(r.dy_known("b")) << u;
  }
}

TEST(Lookup1DBlock, InterpolatesAtChosenInputsWithTheSegmentSlope) {
  const BlockParams table{{"breakpoints", Vector{-1.0, 0.0, 2.0, 5.0}}, {"table", Vector{3.0, 1.0, 2.0, -4.0}}};
  struct Case {
    double u, y, slope;
  };
  // Inside: the segment's line; beyond the ends: clipped with slope 0.
  // (Away from breakpoints: the ramp's rounding must not pick the segment.)
  for (const Case& k : {Case{-0.5, 2.0, -2.0}, Case{1.0, 1.5, 0.5}, Case{3.5, -1.0, -2.0}, Case{-3.0, 3.0, 0.0},
                        Case{7.0, -4.0, 0.0}}) {
    // The ramp reaches k.u at the end of the step with derivative 0.25.
    Rig r = ramp_into("lookup_1d", table, k.u - 0.25 * 0.01, 0.25);
    r.step(0.01);
    EXPECT_NEAR(r.y("b"), k.y, 1e-12) << k.u;
    EXPECT_NEAR(r.dy("b"), k.slope * 0.25, 1e-12) << k.u;
    EXPECT_TRUE(r.dy_known("b")) << k.u;
  }
}

TEST(Lookup1DBlock, HitsTheTableAtEveryBreakpoint) {
  const Vector x{-1.0, 0.0, 2.0, 5.0}, y{3.0, 1.0, 2.0, -4.0};
  for (std::size_t i = 0; i < x.size(); ++i) {
    for (const char* mode : {"clip", "linear"}) {
      Rig r = external_into("lookup_1d", {{"breakpoints", x}, {"table", y}, {"extrapolation", std::string(mode)}},
                            [u = x[i]](double) { return u; });
      r.step(0.01);
      EXPECT_EQ(r.y("b"), y[i]) << x[i] << " " << mode;
    }
  }
}

TEST(Lookup1DBlock, LinearExtrapolationContinuesTheEndSegments) {
  BlockParams table{{"breakpoints", Vector{0.0, 1.0, 3.0}},
                    {"table", Vector{0.0, 10.0, 30.0}},
                    {"extrapolation", std::string("linear")}};
  for (const auto& [u, y] : {std::pair{-2.0, -20.0}, std::pair{4.5, 45.0}, std::pair{0.5, 5.0}}) {
    Rig r = external_into("lookup_1d", table, [u = u](double) { return u; });
    r.step(0.01);
    EXPECT_DOUBLE_EQ(r.y("b"), y) << u;
    EXPECT_FALSE(r.dy_known("b")) << u;  // slope 10 times an unknown du
  }
  // In clip mode a flat end is known flat even though du is not.
  table.set("extrapolation", std::string("clip"));
  Rig r = external_into("lookup_1d", table, [](double) { return 9.0; });
  r.step(0.01);
  EXPECT_EQ(r.y("b"), 30.0);
  EXPECT_TRUE(r.dy_known("b"));
}

// Step from 0 to 1 at t = 0.105, between two major steps of 0.01 s, rising
// rate 2/s, then down to -1 at t = 1.005 with falling rate 4/s. The memory
// is the output at the start of the step (t_k), so the first limited step
// ends at 0.11 with y = 2 * 0.01: the ramp starts at the last major point
// before the input moved and climbs at exactly the rate.
TEST(RateLimiterBlock, StepBecomesARampOfExactlyTheRate) {
  Rig r = external_into(
      "rate_limiter", {{"rising", 2.0}, {"falling", 4.0}},
      [](double t) { return t < 0.105   ? 0.0
                            : t < 1.005 ? 1.0
                                        : -1.0; }, IntegratorKind::kEuler);
  const double h = 0.01;
  for (long k = 0; k < 200; ++k) {
    r.step_at(k, h);
    const double t = static_cast<double>(k + 1) * h;
    double expected = std::clamp(2.0 * (t - 0.10), 0.0, 1.0);
    if (t > 1.005) expected = std::max(-1.0, 1.0 - 4.0 * (t - 1.0));
    ASSERT_NEAR(r.y("b"), expected, 1e-12) << t;
    // While limited the derivative is the active rate, exactly; at rest it
    // is du, unknown for an external input.
    // (The steps that end exactly where the ramp meets u are skipped: there
    // "limited" is decided by the last bit of the accumulated ramp.)
    const bool rising = t > 0.105 && t<0.6 - 1e-9, falling = t> 1.005 && t < 1.5 - 1e-9;
    const bool at_rest = t < 0.105 || (t > 0.6 + 1e-9 && t < 1.005) || t > 1.5 + 1e-9;
    if (rising || falling) {
      EXPECT_TRUE(r.dy_known("b")) << t;
      EXPECT_EQ(r.dy("b"), rising ? 2.0 : -4.0) << t;
    } else if (at_rest) {
      EXPECT_FALSE(r.dy_known("b")) << t;
    }
  }
}

// Within a step the limit grows with t - t_k, so the integrator's stages see
// the ramp itself: rk4 integrates the limited output exactly (a ramp is a
// polynomial), which a memory updated per evaluation would not give.
TEST(RateLimiterBlock, IsContinuousInTimeInsideAStep) {
  Rig r({{"b", "rate_limiter", {{"rising", 0.5}}}, {"int", "integrator", {}}}, {{{"b", "y"}, {"int", "u"}}},
        {{"u", {{"b", "u"}}, [](double t) { return t < 0.05 ? 0.0 : 1.0; }}});
  const double h = 0.1;
  for (long k = 0; k < 40; ++k) r.step_at(k, h);
  // y = 0.5 (t - 0) from the first major point (the step at 0.05 lies in
  // [0, 0.1]) up to 1 at t = 2, then 1: integral to 4 is 1 + 2 = 3.
  EXPECT_NEAR(r.y("int"), 1.0 + 2.0, 1e-12);
  EXPECT_DOUBLE_EQ(r.y("b"), 1.0);
}

TEST(RateLimiterBlock, PassesSlowInputsAndTheFirstValueThrough) {
  // Slower than the limit: y = u and y' = u' exactly.
  Rig slow = ramp_into("rate_limiter", {{"rising", 2.0}, {"falling", 2.0}}, 5.0, -1.5);
  EXPECT_EQ(slow.y("b"), 5.0);  // the first evaluation passes u through
  for (int k = 0; k < 30; ++k) {
    slow.step(0.01);
    EXPECT_NEAR(slow.y("b"), 5.0 - 1.5 * slow.time(), 1e-12);
    EXPECT_DOUBLE_EQ(slow.dy("b"), -1.5);
    EXPECT_TRUE(slow.dy_known("b"));
  }
  // A large initial value is not ramped to from 0.
  Rig first = external_into("rate_limiter", {{"rising", 1.0}}, [](double) { return 100.0; });
  first.step(0.01);
  EXPECT_EQ(first.y("b"), 100.0);
}

TEST(NonlinearBlocks, StepsAllocateNothing) {
  Rig r({{"src", "sine", {{"amplitude", 3.0}, {"frequency", 2.0}}},
         {"sat", "saturation", {{"lower", -1.0}, {"upper", 1.0}}},
         {"dz", "dead_zone", {{"start", -0.5}, {"end", 0.5}}},
         {"rl", "rate_limiter", {{"rising", 4.0}, {"falling", 8.0}}},
         {"lut", "lookup_1d", {{"breakpoints", Vector{-3, -1, 0, 1, 3}}, {"table", Vector{9, 1, 0, 1, 9}}}}},
        {{{"src", "y"}, {"sat", "u"}},
         {{"src", "y"}, {"dz", "u"}},
         {{"src", "y"}, {"rl", "u"}},
         {{"src", "y"}, {"lut", "u"}}},
        {});
  for (long k = 0; k < 10; ++k) r.step_at(k, 0.001);
  rtcosim::testing::AllocationScope scope;
  for (long k = 10; k < 5000; ++k) r.step_at(k, 0.001);
  EXPECT_EQ(scope.count(), 0u);
}

TEST(NonlinearBlocks, BadParametersAreBlockErrorsNamingTheParameter) {
  EXPECT_EQ(creation_error("saturation", {{"lower", 1.0}}),
            "block 'b': parameter 'upper' is missing — expected a number");
  EXPECT_EQ(creation_error("saturation", {{"lower", 1.0}, {"upper", 1.0}}),
            "block 'b': lower (1) must be below upper (1) — expected lower < upper");
  EXPECT_EQ(creation_error("dead_zone", {{"start", 1.0}, {"end", std::string("x")}}),
            "block 'b': parameter 'end' is 'x' — expected a number");
  EXPECT_EQ(creation_error("dead_zone", {{"start", 1.0}, {"end", 0.0}}),
            "block 'b': start (1) is above end (0) — expected start <= end");
  EXPECT_EQ(creation_error("rate_limiter", {{"rising", -2.0}}),
            "block 'b': parameter 'rising' = -2 — expected a positive number");
  EXPECT_EQ(creation_error("rate_limiter", {{"rising", 2.0}, {"falling", -3.0}}),
            "block 'b': parameter 'falling' = -3 — expected a positive number (the magnitude of the fastest fall, "
            "per second)");
  EXPECT_EQ(creation_error("rate_limiter", {{"rising", 0.0}}),
            "block 'b': parameter 'rising' = 0 — expected a positive number");
  EXPECT_EQ(creation_error("lookup_1d", {{"breakpoints", Vector{0, 1, 1}}, {"table", Vector{1, 2, 3}}}),
            "block 'b': 'breakpoints' are not strictly increasing at position 3 (1, 1) — expected strictly "
            "increasing values");
  EXPECT_EQ(creation_error("lookup_1d", {{"breakpoints", Vector{0, 2, 1}}, {"table", Vector{1, 2, 3}}}),
            "block 'b': 'breakpoints' are not strictly increasing at position 3 (2, 1) — expected strictly "
            "increasing values");
  EXPECT_EQ(creation_error("lookup_1d", {{"breakpoints", Vector{0, 1}}, {"table", Vector{1, 2, 3}}}),
            "block 'b': 'table' has 3 values and 'breakpoints' 2 — expected one value per breakpoint");
  EXPECT_EQ(creation_error("lookup_1d", {{"breakpoints", 1.0}, {"table", 1.0}}),
            "block 'b': 'breakpoints' has 1 value(s) — expected at least 2");
  EXPECT_EQ(
      creation_error("lookup_1d",
                     {{"breakpoints", Vector{0, 1}}, {"table", Vector{1, 2}}, {"extrapolation", std::string("hold")}}),
      "block 'b': 'extrapolation' = 'hold' — expected \"clip\" or \"linear\"");
}

}  // namespace
}  // namespace rtcosim::tasks
