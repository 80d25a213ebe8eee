// Issue 41: state events located inside a frame. The locator alone against
// analytic roots; the bouncing ball (tests/fmus/bball2.c, bball3.c) at a
// 1 ms frame against its analytic bounce times over ten bounces; the bounds
// (trials per location, landings per step) counted when reached.
#include <cmath>
#include <numbers>

#include <gtest/gtest.h>

#include "tasks/diagram.hpp"
#include "tasks/event_locator.hpp"

namespace rtcosim::tasks {
namespace {

std::string fmu(const std::string& name) { return std::string(RTCOSIM_FMU_DIR) + "/" + name + ".fmu"; }

struct NoInputs final : InputSource {
  void sample(std::size_t, double, std::span<double>) noexcept override {}
};

TEST(EventLocator, FindsTheRootOfOneIndicatorNeverBeforeIt) {
  EventLocator loc;
  loc.resize(1);
  const double z0 = std::cos(0.0), z1 = std::cos(3.0);
  int kept = 0;
  const auto r = loc.locate(
      &z0, &z1, 3.0, 1e-12, 24,
      [](double theta, double* z) {
        z[0] = std::cos(theta);
        return true;
      },
      [&](double) { ++kept; });
  EXPECT_TRUE(r.converged);
  EXPECT_FALSE(r.failed);
  EXPECT_GE(r.at, std::numbers::pi / 2);
  EXPECT_LE(r.at, std::numbers::pi / 2 + 1e-12);
  EXPECT_LE(r.trials, 12);
  EXPECT_GE(kept, 1);
}

TEST(EventLocator, TakesTheEarliestOfSeveralCrossings) {
  EventLocator loc;
  loc.resize(3);
  // theta - 2 rises through 0 at 2, 1.2 - theta falls through it at 1.2,
  // 5 - theta never crosses in [0, 3].
  auto f = [](double theta, double* z) {
    z[0] = theta - 2.0;
    z[1] = 1.2 - theta;
    z[2] = 5.0 - theta;
    return true;
  };
  double z0[3], z1[3];
  f(0.0, z0);
  f(3.0, z1);
  const auto r = loc.locate(z0, z1, 3.0, 1e-12, 24, f, [](double) {});
  EXPECT_TRUE(r.converged);
  EXPECT_GE(r.at, 1.2);
  EXPECT_LE(r.at, 1.2 + 1e-12);
}

TEST(EventLocator, StopsAtItsTrialBoundOnTheFarSideOfTheRoot) {
  EventLocator loc;
  loc.resize(1);
  // A root where regula falsi crawls: z = theta^9 - 0.5^9 on [0, 1].
  auto f = [](double theta, double* z) {
    z[0] = std::pow(theta, 9) - std::pow(0.5, 9);
    return true;
  };
  double z0, z1;
  f(0.0, &z0);
  f(1.0, &z1);
  const auto bounded = loc.locate(&z0, &z1, 1.0, 1e-14, 3, f, [](double) {});
  EXPECT_FALSE(bounded.converged);
  EXPECT_EQ(bounded.trials, 3);
  EXPECT_GE(bounded.at, 0.5);
  // With the default bound the Illinois weights reach it.
  const auto full = loc.locate(&z0, &z1, 1.0, 1e-12, Partition::kMaxLocateTrials, f, [](double) {});
  EXPECT_TRUE(full.converged) << full.trials;
  EXPECT_GE(full.at, 0.5);
  EXPECT_LE(full.at, 0.5 + 1e-12);
}

TEST(EventLocator, ReportsATrialThatFailed) {
  EventLocator loc;
  loc.resize(1);
  const double z0 = 1.0, z1 = -1.0;
  const auto r = loc.locate(
      &z0, &z1, 1.0, 1e-12, 24, [](double, double*) { return false; }, [](double) {});
  EXPECT_TRUE(r.failed);
  EXPECT_EQ(r.trials, 1);
}

// The analytic bounces of a ball dropped from 1 m (g 9.81, e 0.8): the
// first impact at sqrt(2 / g), then flights of 2 e^n v1 / g.
std::vector<double> impacts(int n) {
  const double g = 9.81, e = 0.8, v1 = std::sqrt(2.0 * g);
  std::vector<double> t{std::sqrt(2.0 / g)};
  for (int k = 1; k < n; ++k) t.push_back(t.back() + 2.0 * std::pow(e, k) * v1 / g);
  return t;
}

// Each bounce's time as the partition located it, recovered from the state
// at the end of the frame it happened in: in free flight (rk2 and rk4 are
// exact for it) v_up^2 = v^2 + 2 g h, and the bounce was (v_up - v) / g
// before.
std::vector<double> bounce_times(Partition& p, double h, int frames) {
  const double g = 9.81;
  NoInputs in;
  std::vector<double> seen;
  for (int i = 0; i < frames; ++i) {
    const auto before = p.events();
    p.step(i * h, h, in);
    if (p.failed()) break;
    if (p.events() == before) continue;
    const double ht = p.state()[0], v = p.state()[1];
    const double v_up = std::sqrt(v * v + 2.0 * g * ht);
    seen.push_back(p.time() - (v_up - v) / g);
  }
  return seen;
}

TEST(EventLocation, TenBouncesAtOneMillisecondFramesLandOnTheAnalyticTimes) {
  const auto expected = impacts(10);
  for (const char* file : {"bball2", "bball3"}) {
    for (IntegratorKind kind : {IntegratorKind::kRk2, IntegratorKind::kRk4}) {
      auto p = build_partition(BlockRegistry::with_builtins(), "ball", {{"ball", "fmu", {{"file", fmu(file)}}, ""}}, {},
                               {}, kind);
      const auto seen = bounce_times(*p, 0.001, 3600);  // the tenth bounce is at 3.58 s
      ASSERT_FALSE(p->failed()) << p->failure();
      ASSERT_EQ(seen.size(), expected.size()) << file << " " << integrator_name(kind);
      for (std::size_t k = 0; k < seen.size(); ++k) {
        EXPECT_NEAR(seen[k], expected[k], 1e-10) << file << " " << integrator_name(kind) << " bounce " << k + 1;
      }
      const auto& c = p->event_counts();
      EXPECT_EQ(c.located, 10u) << file;
      EXPECT_EQ(c.trial_limits, 0u) << file;
      EXPECT_EQ(c.landing_limits, 0u) << file;
      EXPECT_EQ(p->events(), 10u) << file;
      EXPECT_GT(c.trials, 0u);
      EXPECT_LE(c.trials, 10u * Partition::kMaxLocateTrials);
    }
  }
}

// ab2 is a two-step method: no re-integration from inside a step; its
// events are found at the end of the frame that holds them, each at most
// a frame late, and nothing is counted as located.
TEST(EventLocation, Ab2HandlesEventsAtTheFrameEnd) {
  auto p = build_partition(BlockRegistry::with_builtins(), "ball", {{"ball", "fmu", {{"file", fmu("bball2")}}, ""}}, {},
                           {}, IntegratorKind::kAb2);
  NoInputs in;
  const double h = 0.001;
  const auto expected = impacts(3);
  std::vector<double> seen;
  for (int i = 0; i < 2000; ++i) {
    const auto before = p->events();
    p->step(i * h, h, in);
    if (p->events() != before) seen.push_back((i + 1) * h);
  }
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_GE(seen[0], expected[0]);
  EXPECT_LE(seen[0], expected[0] + h);
  EXPECT_EQ(p->event_counts().located, 0u);
}

// Past the ball's Zeno time (t1 + 2 e v1 / (g (1 - e)) = 4.06 s) the
// bounces come faster than any frame: a step reaches kMaxLandings, is
// counted, and integrates the rest of the step in one piece; the run goes
// on without failing or hanging.
TEST(EventLocation, AStepWithMoreEventsThanTheBoundIsCountedAndFinished) {
  auto p = build_partition(BlockRegistry::with_builtins(), "ball", {{"ball", "fmu", {{"file", fmu("bball2")}}, ""}}, {},
                           {}, IntegratorKind::kRk4);
  NoInputs in;
  const double h = 0.001;
  for (int i = 0; i < 4200; ++i) p->step(i * h, h, in);
  EXPECT_FALSE(p->failed()) << p->failure();
  EXPECT_NEAR(p->time(), 4.2, 1e-9);
  EXPECT_GE(p->event_counts().landing_limits, 1u);
  // Before the bound, every event was a located one.
  EXPECT_GE(p->event_counts().located, 40u);
}

}  // namespace
}  // namespace rtcosim::tasks
