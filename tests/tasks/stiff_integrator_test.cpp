// Issue 41: the linearly implicit integrators ros1 and ros2 on a stiff
// linear system (eigenvalues -1 and -1e4) at a 1 ms frame, where every
// explicit integrator diverges; their observed orders; L-stability and
// A-stability from one step's amplification; no allocation per frame.
#include <cmath>

#include <gtest/gtest.h>

#include "tasks/diagram.hpp"
#include "tests/support/alloc_counter.hpp"

namespace rtcosim::tasks {
namespace {

struct NoInputs final : InputSource {
  void sample(std::size_t, double, std::span<double> o) noexcept override {
    for (double& v : o) v = 0.0;
  }
};

// x1' = x2, x2' = -1e4 x1 - 10001 x2: (s + 1)(s + 1e4), from x = (1, 0).
// x1(t) = c1 e^-t + c2 e^-1e4 t with c1 + c2 = 1, -c1 - 1e4 c2 = 0.
std::unique_ptr<Partition> stiff(IntegratorKind kind) {
  return build_partition(BlockRegistry::with_builtins(), "stiff",
                         {{"sys",
                           "state_space",
                           {{"A", Matrix{{0, 1}, {-1e4, -10001}}},
                            {"B", Matrix{{0}, {0}}},
                            {"C", Matrix{{1, 0}}},
                            {"initial", Vector{1, 0}}},
                           ""}},
                         {}, {{"u", 1, {{"sys", "u"}}}}, kind);
}
double stiff_exact(double t) {
  const double c1 = 1.0 / (1.0 - 1e-4), c2 = 1.0 - c1;
  return c1 * std::exp(-t) + c2 * std::exp(-1e4 * t);
}

// |x1(2 s) - exact|, or +inf once the partition stopped on a non-finite state.
double stiff_error(IntegratorKind kind, double h) {
  auto p = stiff(kind);
  NoInputs in;
  const int n = static_cast<int>(std::lround(2.0 / h));
  for (int i = 0; i < n && !p->failed(); ++i) p->step(i * h, h, in);
  if (p->failed()) return std::numeric_limits<double>::infinity();
  return std::fabs(p->state()[0] - stiff_exact(2.0));
}

TEST(StiffIntegrators, AreStableAtAOneMillisecondFrameWhereTheExplicitOnesDiverge) {
  // h lambda = -10 for the fast mode: outside euler's (-2), rk2's (-2),
  // rk4's (-2.79) and ab2's (-1) stability intervals.
  for (IntegratorKind kind :
       {IntegratorKind::kEuler, IntegratorKind::kAb2, IntegratorKind::kRk2, IntegratorKind::kRk4}) {
    auto p = stiff(kind);
    NoInputs in;
    for (int i = 0; i < 2000 && !p->failed(); ++i) p->step(i * 1e-3, 1e-3, in);
    EXPECT_TRUE(p->failed() || std::fabs(p->state()[0]) > 1e6) << integrator_name(kind);
  }
  // ros1 and ros2 follow the slow mode, and halving the frame divides the
  // error by 2 and 4: their orders, with the fast mode damped.
  for (const auto& [kind, order] : {std::pair{IntegratorKind::kRos1, 1.0}, std::pair{IntegratorKind::kRos2, 2.0}}) {
    const double e1 = stiff_error(kind, 1e-3), e2 = stiff_error(kind, 0.5e-3);
    ASSERT_TRUE(std::isfinite(e1)) << integrator_name(kind);
    EXPECT_LT(e1, order == 1.0 ? 1e-3 : 1e-6) << integrator_name(kind);
    EXPECT_NEAR(e1 / e2, std::pow(2.0, order), 0.05 * std::pow(2.0, order)) << integrator_name(kind);
  }
}

// One step of y' = lambda y from 1 is the method's stability function R(h
// lambda). L-stable: R(z) -> 0 as z -> -inf; here z = -1e6, where ros1's
// R = 1 / (1 + 1e6) and ros2's 1 + 2z/d + (z^2/2 - z)/d^2, d = 1 - gamma z.
TEST(StiffIntegrators, AreLStable) {
  for (IntegratorKind kind : {IntegratorKind::kRos1, IntegratorKind::kRos2}) {
    auto p = build_partition(BlockRegistry::with_builtins(), "decay",
                             {{"lag", "first_order_lag", {{"time_constant", 1e-6}, {"initial", 1.0}}, ""}}, {},
                             {{"u", 1, {{"lag", "u"}}}}, kind);
    NoInputs in;
    p->step(0.0, 1.0, in);
    const double z = -1e6, gamma = 1.0 + 1.0 / std::sqrt(2.0), d = 1.0 - gamma * z;
    const double r = kind == IntegratorKind::kRos1 ? 1.0 / (1.0 - z) : 1.0 + 2.0 * z / d + (0.5 * z * z - z) / (d * d);
    EXPECT_NEAR(p->state()[0], r, 1e-9) << integrator_name(kind);
    EXPECT_LT(std::fabs(p->state()[0]), 1e-5) << integrator_name(kind);
  }
}

// A-stable: an undamped oscillator (eigenvalues +-i) never grows, at any
// step: the amplitude after 100 steps of 0.1 and of 10 s stays <= 1.
TEST(StiffIntegrators, AreAStableOnTheImaginaryAxis) {
  for (IntegratorKind kind : {IntegratorKind::kRos1, IntegratorKind::kRos2}) {
    for (double h : {0.1, 10.0}) {
      auto p = build_partition(
          BlockRegistry::with_builtins(), "osc",
          {{"osc",
            "state_space",
            {{"A", Matrix{{0, 1}, {-1, 0}}}, {"B", Matrix{{0}, {0}}}, {"C", Matrix{{1, 0}}}, {"initial", Vector{1, 0}}},
            ""}},
          {}, {{"u", 1, {{"osc", "u"}}}}, kind);
      NoInputs in;
      for (int i = 0; i < 100; ++i) p->step(i * h, h, in);
      const double amplitude = std::hypot(p->state()[0], p->state()[1]);
      EXPECT_LE(amplitude, 1.0 + 1e-9) << integrator_name(kind) << " h " << h;
    }
  }
}

TEST(StiffIntegrators, SteadyStateFramesAllocateNothing) {
  for (IntegratorKind kind : {IntegratorKind::kRos1, IntegratorKind::kRos2}) {
    auto p = stiff(kind);
    NoInputs in;
    for (int i = 0; i < 10; ++i) p->step(i * 1e-3, 1e-3, in);
    testing::AllocationScope scope;
    for (int i = 10; i < 2000; ++i) p->step(i * 1e-3, 1e-3, in);
    EXPECT_EQ(scope.count(), 0u) << integrator_name(kind);
  }
}

}  // namespace
}  // namespace rtcosim::tasks
