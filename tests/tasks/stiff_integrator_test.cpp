// Issue 41: the linearly implicit integrators ros1 and ros2 on a stiff
// linear system (eigenvalues -1 and -1e4) at a 1 ms frame, where every
// explicit integrator diverges; their observed orders; L-stability and
// A-stability from one step's amplification; no allocation per frame.
#include <cmath>

#include <gtest/gtest.h>

#include "tasks/diagram.hpp"
#include "tasks/linear_solver.hpp"
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

std::string fmu(const std::string& name) { return std::string(RTCOSIM_FMU_DIR) + "/" + name + ".fmu"; }

// The model-exchange FMU msd2 (x'' + 0.4 x' + 4 x = F) provides
// directional derivatives. Alone in its partition, its Jacobian is the
// FMU's: exactly the model's matrix [[0, 1], [-4, -0.4]], not a
// difference. With a wire path from its output x back into its input F
// (here through a unit delay and a gain, since its output a feeds F
// through and a direct loop would be algebraic), the partition does not
// take it: the check is structural (any path could move F with the states,
// which the FMU's own Jacobian holds), and the differences find the same
// matrix to their rounding, the delay holding F within a step.
TEST(StiffIntegrators, TakeAnFmusDirectionalDerivativesWhereTheyAreThePartitionsJacobian) {
  const auto registry = BlockRegistry::with_builtins();
  auto alone = build_partition(registry, "msd", {{"msd", "fmu", {{"file", fmu("msd2")}}, ""}}, {},
                               {{"F", 1, {{"msd", "F"}}}}, IntegratorKind::kRos2);
  EXPECT_TRUE(alone->jacobian_from_block());
  EXPECT_EQ(alone->linearisation(), (std::vector<double>{0.0, -4.0, 1.0, -0.4}));
  auto loop = build_partition(registry, "msd",
                              {{"msd", "fmu", {{"file", fmu("msd2")}}, ""},
                               {"d", "unit_delay", {{"sample_time", 1e-3}}, ""},
                               {"k", "gain", {{"gain", -6.0}}, ""}},
                              {{{"msd", "x"}, {"d", "u"}}, {{"d", "y"}, {"k", "u"}}, {{"k", "y"}, {"msd", "F"}}}, {},
                              IntegratorKind::kRos2);
  EXPECT_FALSE(loop->jacobian_from_block());
  const std::vector<double> j = loop->linearisation();
  const double expected[] = {0.0, -4.0, 1.0, -0.4};
  ASSERT_EQ(j.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_NEAR(j[i], expected[i], 1e-7) << i;
  EXPECT_NE(j, (std::vector<double>{0.0, -4.0, 1.0, -0.4}));  // a difference, not the FMU's
  // The one alone integrates the damped oscillator (x0 = 1, v0 = 0, zeta
  // 0.1, wn 2) to ros2's accuracy at 1 ms, against its analytic x(t).
  NoInputs in;
  for (int i = 0; i < 2000; ++i) alone->step(i * 1e-3, 1e-3, in);
  ASSERT_FALSE(alone->failed()) << alone->failure();
  const double wd = 2.0 * std::sqrt(1.0 - 0.01), t = 2.0;
  const double x = std::exp(-0.2 * t) * (std::cos(wd * t) + 0.2 / wd * std::sin(wd * t));
  EXPECT_NEAR(alone->state()[0], x, 2e-5);  // measured 1.28e-5
}

TEST(StiffIntegrators, SteadyStateFramesAllocateNothing) {
  for (IntegratorKind kind : {IntegratorKind::kRos1, IntegratorKind::kRos2}) {
    auto p = stiff(kind);
    auto msd = build_partition(BlockRegistry::with_builtins(), "msd", {{"msd", "fmu", {{"file", fmu("msd2")}}, ""}}, {},
                               {{"F", 1, {{"msd", "F"}}}}, kind);
    NoInputs in;
    for (int i = 0; i < 10; ++i) p->step(i * 1e-3, 1e-3, in), msd->step(i * 1e-3, 1e-3, in);
    testing::AllocationScope scope;
    for (int i = 10; i < 2000; ++i) p->step(i * 1e-3, 1e-3, in), msd->step(i * 1e-3, 1e-3, in);
    EXPECT_EQ(scope.count(), 0u) << integrator_name(kind);
  }
}

// The LU of W = I - c J solves W x = b to rounding at any size, and
// allocates nothing after set-up at n = 500 either (where a blocked LU
// would take its buffers from the heap): the residual |W x - b| against b.
TEST(StiffIntegrators, TheLuSolvesWithoutAllocatingAtAnySize) {
  for (std::size_t n : {1u, 7u, 64u, 500u}) {
    std::vector<double> j(n * n), b(n), x;
    for (std::size_t c = 0; c < n; ++c) {
      for (std::size_t r = 0; r < n; ++r)
        j[r + n * c] = std::sin(static_cast<double>(3 * r + 7 * c + 1)) - (r == c ? 5.0 : 0.0);
      b[c] = std::cos(static_cast<double>(c));
    }
    ShiftedLu lu(n);
    x = b;
    bool ok = false;
    {
      testing::AllocationScope scope;
      ok = lu.factor(j.data(), 0.3);
      lu.solve(x.data());
      EXPECT_EQ(scope.count(), 0u) << n;
    }
    ASSERT_TRUE(ok) << n;
    double worst = 0.0;
    for (std::size_t r = 0; r < n; ++r) {
      double w = x[r];  // (I - c J) x
      for (std::size_t c = 0; c < n; ++c) w -= 0.3 * j[r + n * c] * x[c];
      worst = std::max(worst, std::fabs(w - b[r]));
    }
    EXPECT_LT(worst, 1e-12 * static_cast<double>(n)) << n;
  }
  // A singular W is refused: J = I / c makes W = 0.
  ShiftedLu lu(2);
  const double j[] = {2.0, 0.0, 0.0, 2.0};
  EXPECT_FALSE(lu.factor(j, 0.5));
}

}  // namespace
}  // namespace rtcosim::tasks
