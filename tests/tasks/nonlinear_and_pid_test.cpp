// saturation, dead_zone, rate_limiter, lookup_1d and pid through a real
// partition, against their analytic responses.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "tasks/diagram.hpp"

namespace rtcosim::tasks {
namespace {

// One block of `type` fed by an external input u(t).
struct Rig {
  Rig(const std::string& type, BlockParams params, std::function<double(double)> u, IntegratorKind kind = IntegratorKind::kRk4)
      : source(std::move(u)) {
    const auto registry = BlockRegistry::with_builtins();
    const std::string in = type == "pid" ? "e" : "u";
    const std::string out = type == "pid" ? "u" : "y";
    partition = build_partition(registry, "p", {{"b", type, std::move(params), ""}}, {}, {{"u", 1, {{"b", in}}}}, kind);
    ref = partition->find_output({"b", out});
    partition->refresh_outputs(inputs);
  }
  struct Inputs final : InputSource {
    explicit Inputs(Rig* r) : rig(r) {}
    Rig* rig;
    void sample(std::size_t, double t, std::span<double> o) noexcept override { o[0] = rig->source(t); }
  };
  double y() const { return partition->output(ref)[0]; }
  double dy() const { return partition->output_derivative(ref)[0]; }
  void step(double h) { partition->step(partition->time(), h, inputs); }
  std::function<double(double)> source;
  Inputs inputs{this};
  std::unique_ptr<Partition> partition;
  OutputRef ref;
};

TEST(Saturation, ClipsAndPassesTheSlopeOnlyInside) {
  for (double u : {-3.0, -1.0, 0.25, 1.0, 5.0}) {
    Rig r("saturation", {{"lower", -1.0}, {"upper", 1.0}}, [u](double t) { return u + 0.0 * t; });
    r.step(0.01);
    EXPECT_DOUBLE_EQ(r.y(), std::clamp(u, -1.0, 1.0)) << u;
  }
  EXPECT_THROW(Rig("saturation", {{"lower", 1.0}, {"upper", 1.0}}, [](double) { return 0.0; }), BlockError);
}

TEST(DeadZone, IsZeroInsideAndShiftedOutside) {
  for (auto [u, y] : {std::pair{-2.0, -1.5}, std::pair{-0.3, 0.0}, std::pair{0.4, 0.0}, std::pair{3.0, 2.0}}) {
    Rig r("dead_zone", {{"start", -0.5}, {"end", 1.0}}, [u = u](double) { return u; });
    r.step(0.01);
    EXPECT_DOUBLE_EQ(r.y(), y) << u;
  }
}

TEST(RateLimiter, TurnsALateStepIntoARampOfExactlyTheRate) {
  // Step from 0 to 1 at t = 0.1; rising rate 2 per second: y = min(1, 2 (t - 0.1)).
  Rig r("rate_limiter", {{"rising", 2.0}}, [](double t) { return t >= 0.1 - 1e-12 ? 1.0 : 0.0; },
        IntegratorKind::kEuler);
  // The memory is the output at the previous step's start, so the ramp
  // leaves 0 at the last major point before the step, t = 0.09:
  // y(t_k) = clamp(2 (t_k - 0.09), 0, 1) at every step end.
  for (int k = 1; k <= 100; ++k) {
    r.step(0.01);
    const double t = 0.01 * k;
    EXPECT_NEAR(r.y(), std::clamp(2.0 * (t - 0.09), 0.0, 1.0), 1e-12) << t;
  }
  // After the run the limiter has long reached the step.
  EXPECT_DOUBLE_EQ(r.y(), 1.0);
}

TEST(RateLimiter, LimitsEveryMajorStepToRateTimesStep) {
  Rig r("rate_limiter", {{"rising", 2.0}, {"falling", 4.0}}, [](double t) { return t >= 0.05 ? 1.0 : 0.0; },
        IntegratorKind::kEuler);
  double previous = r.y();
  double worst_rise = 0.0;
  for (int k = 0; k < 60; ++k) {
    r.step(0.01);
    worst_rise = std::max(worst_rise, r.y() - previous);
    previous = r.y();
  }
  EXPECT_LE(worst_rise, 2.0 * 0.01 + 1e-12);
  EXPECT_GT(worst_rise, 0.0);
  EXPECT_DOUBLE_EQ(r.y(), 1.0);
}

TEST(Lookup1D, InterpolatesClipsAndExtrapolates) {
  const BlockParams table{{"breakpoints", Vector{0, 1, 3}}, {"table", Vector{0, 10, 30}}};
  for (auto [u, y] : {std::pair{0.5, 5.0}, std::pair{2.0, 20.0}, std::pair{-1.0, 0.0}, std::pair{4.0, 30.0}}) {
    Rig r("lookup_1d", table, [u = u](double) { return u; });
    r.step(0.01);
    EXPECT_DOUBLE_EQ(r.y(), y) << u;
  }
  BlockParams linear = table;
  linear.set("extrapolation", std::string("linear"));
  Rig r("lookup_1d", linear, [](double) { return 4.0; });
  r.step(0.01);
  EXPECT_DOUBLE_EQ(r.y(), 40.0);
  EXPECT_THROW(Rig("lookup_1d", {{"breakpoints", Vector{0, 0}}, {"table", Vector{1, 2}}}, [](double) { return 0.0; }),
               BlockError);
}

TEST(Pid, ProportionalOnlyIsKpTimesTheError) {
  Rig r("pid", {{"kp", 2.5}}, [](double t) { return std::sin(t); });
  for (int k = 0; k < 50; ++k) {
    r.step(0.01);
    EXPECT_NEAR(r.y(), 2.5 * std::sin(r.partition->time()), 1e-12);
  }
}

TEST(Pid, PiOnAConstantErrorGrowsLinearly) {
  Rig r("pid", {{"kp", 2.0}, {"ki", 3.0}}, [](double) { return 0.5; });
  for (int k = 0; k < 100; ++k) r.step(0.01);
  EXPECT_NEAR(r.y(), 2.0 * 0.5 + 3.0 * 0.5 * 1.0, 1e-12);
  EXPECT_NEAR(r.dy(), 3.0 * 0.5, 1e-12);
}

TEST(Pid, BackCalculationBoundsTheIntegralWhileSaturated) {
  // Error 1, kp 1, ki 1, upper 2: without anti-windup I = t grows without
  // end; with back-calculation (kb = 1) I settles where ki e + kb (2 - v) = 0,
  // v = 1 + I, so I -> 2.
  Rig with("pid", {{"kp", 1.0}, {"ki", 1.0}, {"upper", 2.0}}, [](double) { return 1.0; });
  Rig none("pid", {{"kp", 1.0}, {"ki", 1.0}, {"upper", 2.0}, {"anti_windup", std::string("none")}},
           [](double) { return 1.0; });
  for (int k = 0; k < 2000; ++k) {
    with.step(0.01);
    none.step(0.01);
  }
  EXPECT_NEAR(with.partition->state()[0], 2.0, 1e-6);
  EXPECT_NEAR(none.partition->state()[0], 20.0, 1e-9);
  EXPECT_DOUBLE_EQ(with.y(), 2.0);
  EXPECT_THROW(Rig("pid", {{"anti_windup", std::string("sometimes")}}, [](double) { return 0.0; }), BlockError);
}

}  // namespace
}  // namespace rtcosim::tasks
