// A stiff model with state events: the ideal-diode half-wave rectifier of
// tests/fmus/rectifier2.c (vs = 10 sin(2 pi 50 t), diode R_on 1e-3 / R_off
// 1e6, C1 1e-3, R2 10, C2 1e-4, R_L 100) at a 10 us frame over two mains
// periods, against the same ODE written again here and integrated with
// classical RK4 at 10 ns. While the diode conducts the fast eigenvalue is
// about -1 / (R_on C1) = -1e6 1/s: h lambda = -10 at the frame, outside
// every explicit method's stability interval; ros2 and ros1 stay stable.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numbers>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tasks/diagram.hpp"

namespace rtcosim::tasks {
namespace {

std::string fmu(const std::string& name) { return std::string(RTCOSIM_FMU_DIR) + "/" + name + ".fmu"; }

struct NoInputs final : InputSource {
  void sample(std::size_t, double, std::span<double>) noexcept override {}
};

constexpr double kFrame = 10e-6;
constexpr int kFrames = 4000;  // 40 ms: two mains periods

// The model's parameters (rectifier2.xml's start values).
constexpr double kV = 10.0, kF = 50.0, kRon = 1e-3, kRoff = 1e6, kC1 = 1e-3, kC2 = 1e-4, kR2 = 10.0, kRL = 100.0;
double vs(double t) { return kV * std::sin(2.0 * std::numbers::pi * kF * t); }

// The reference at every frame end: v1, v2, v1' and the diode's mode, and
// the instants its mode switched.
struct Reference {
  std::vector<double> v1, v2, dv1;
  std::vector<int> on;
  std::vector<double> switches;
};

// RK4 at kFrame / 1000 = 10 ns (h lambda = -0.01 while conducting). The
// mode follows the sign of vs - v1, switched at the end of the 10 ns step
// in which it changed: the diode current is z / R in either mode, nearly 0
// at z = 0, so a switch 10 ns late changes almost nothing.
Reference compute_reference() {
  constexpr int kSub = 1000;
  const double dt = kFrame / kSub;
  Reference r;
  double x[2] = {0.0, 0.0};
  bool on = vs(0.0) - x[0] > 0.0;
  auto f = [&](double t, const double* y, double* d) {
    const double i_d = (vs(t) - y[0]) / (on ? kRon : kRoff), i_2 = (y[0] - y[1]) / kR2;
    d[0] = (i_d - i_2) / kC1;
    d[1] = (i_2 - y[1] / kRL) / kC2;
  };
  for (int i = 0; i < kFrames; ++i) {
    for (int k = 0; k < kSub; ++k) {
      const double t = i * kFrame + k * dt;
      double k1[2], k2[2], k3[2], k4[2], y[2];
      f(t, x, k1);
      for (int j = 0; j < 2; ++j) y[j] = x[j] + 0.5 * dt * k1[j];
      f(t + 0.5 * dt, y, k2);
      for (int j = 0; j < 2; ++j) y[j] = x[j] + 0.5 * dt * k2[j];
      f(t + 0.5 * dt, y, k3);
      for (int j = 0; j < 2; ++j) y[j] = x[j] + dt * k3[j];
      f(t + dt, y, k4);
      for (int j = 0; j < 2; ++j) x[j] += dt / 6.0 * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j]);
      const bool now = vs(t + dt) - x[0] > 0.0;
      if (now != on) {
        on = now;
        r.switches.push_back(t + dt);
      }
    }
    double d[2];
    f((i + 1) * kFrame, x, d);
    r.v1.push_back(x[0]);
    r.v2.push_back(x[1]);
    r.dv1.push_back(d[0]);
    r.on.push_back(on ? 1 : 0);
  }
  return r;
}

const Reference& reference() {
  static const Reference r = compute_reference();
  return r;
}

// The FMU run at kFrame: outputs and events handled at every frame end.
struct FmuRun {
  std::vector<double> v1, v2, on;
  std::vector<std::uint64_t> events;  // handled in each frame
  bool failed = false;
  double max_abs_v1 = 0.0;
  std::uint64_t located = 0;
};

FmuRun run(IntegratorKind kind) {
  auto p = build_partition(BlockRegistry::with_builtins(), "rectifier",
                           {{"r", "fmu", {{"file", fmu("rectifier2")}}, ""}}, {}, {}, kind);
  const auto v1 = p->find_output({"r", "v1"}), v2 = p->find_output({"r", "v2"}), on = p->find_output({"r", "on"});
  NoInputs in;
  FmuRun r;
  for (int i = 0; i < kFrames; ++i) {
    const std::uint64_t before = p->events();
    p->step(i * kFrame, kFrame, in);
    if (p->failed()) break;
    r.v1.push_back(p->output(v1)[0]);
    r.v2.push_back(p->output(v2)[0]);
    r.on.push_back(p->output(on)[0]);
    r.events.push_back(p->events() - before);
    r.max_abs_v1 = std::max(r.max_abs_v1, std::fabs(r.v1.back()));
  }
  r.failed = p->failed();
  r.located = p->event_counts().located;
  return r;
}

double max_error(const std::vector<double>& a, const std::vector<double>& b) {
  double e = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) e = std::max(e, std::fabs(a[i] - b[i]));
  return e;
}
double range(const std::vector<double>& a) {
  const auto [lo, hi] = std::minmax_element(a.begin(), a.end());
  return *hi - *lo;
}

/*
 * The diode's mode under a linearly implicit method. While the diode
 * conducts, v1 follows its quasi-steady value g (vs less the forward drop)
 * with time constant R_on C1 = 1 us, a tenth of the frame: the Rosenbrock
 * step is near its stiff limit. Without the df/dt term a step lags g by
 * (for y' = lambda (y - g(t)), h lambda -> -inf) c h g', c = 1 - 1/(2
 * gamma) = 1/sqrt(2) for ros2, 1 for ros1 (measured before the partition
 * took df/dt: v1 off by 2.15e-2 V = 0.68 h v1' with ros2, 3.14e-2 V with
 * ros1, and 208 / 240 events for the reference's 4 switches); with it, v1
 * is off by 2.4e-4 / 2.9e-4 V. Near a turn-off the indicator z = vs - v1
 * is the forward drop R_on i_d, which falls to the size of that error
 * before the real turn-off: there z's sign is the method's and the diode
 * may chatter, every crossing located and handled (measured: 18 events
 * with ros2, 28 with ros1). The window in which it may, bounded by the lag
 * without df/dt: conducting, v1' < 0 and R_on i_d < 2 c h |v1'|. Rising,
 * the error moves z up: turn-ons do not chatter.
 * Checked: outside the windows and the frames holding a reference switch no
 * event at all, and the mode at the frame end is the reference's; each run
 * of such frames holds one reference switch, a turn-on exactly one event, a
 * turn-off an odd number (the mode ends switched once): the net mode
 * switches are the reference's, each where the reference has it; and at
 * most 40 events in all.
 */
void expect_reference_switches(const FmuRun& r, double lag, const char* what) {
  const Reference& ref = reference();
  ASSERT_EQ(r.events.size(), static_cast<std::size_t>(kFrames)) << what;
  std::vector<int> special(kFrames, 0), holds_switch(kFrames, -1);
  for (int i = 0; i < kFrames; ++i) {
    const double t = (i + 1) * kFrame;
    special[i] = ref.on[i] && ref.dv1[i] < 0.0 && vs(t) - ref.v1[i] < 2.0 * lag * kFrame * -ref.dv1[i];
  }
  for (std::size_t k = 0; k < ref.switches.size(); ++k) {
    const auto i = static_cast<int>(std::ceil(ref.switches[k] / kFrame)) - 1;  // (i h, (i + 1) h]
    ASSERT_GE(i, 0);
    ASSERT_LT(i, kFrames);
    special[i] = 1;
    holds_switch[i] = static_cast<int>(k);
  }
  std::size_t groups = 0;
  for (int i = 0; i < kFrames;) {
    if (!special[i]) {
      EXPECT_EQ(r.events[i], 0u) << what << ": an event in the frame ending at " << (i + 1) * kFrame;
      EXPECT_EQ(r.on[i], ref.on[i]) << what << ": the mode at " << (i + 1) * kFrame;
      ++i;
      continue;
    }
    int j = i, sw = -1, switches = 0;
    std::uint64_t events = 0;
    for (; j < kFrames && special[j]; ++j) {
      events += r.events[j];
      if (holds_switch[j] >= 0) sw = holds_switch[j], ++switches;
    }
    ++groups;
    EXPECT_EQ(switches, 1) << what << ": frames " << (i + 1) * kFrame << " to " << j * kFrame;
    if (sw >= 0) {
      // The reference's switches alternate on, off, on, off from on = 0.
      const bool turn_on = sw % 2 == 0;
      if (turn_on) {
        EXPECT_EQ(events, 1u) << what << ": the turn-on at " << ref.switches[sw];
      } else {
        EXPECT_EQ(events % 2, 1u) << what << ": the turn-off at " << ref.switches[sw] << ", " << events << " events";
      }
    }
    i = j;
  }
  EXPECT_EQ(groups, ref.switches.size()) << what;
  std::uint64_t all = 0;
  for (const std::uint64_t e : r.events) all += e;
  EXPECT_LE(all, 40u) << what;
}

TEST(Rectifier, ReferenceSwitchesTwicePerMainsPeriod) {
  const Reference& ref = reference();
  // On right after t = 0, off past the peak (5 ms) once C1's current no
  // longer feeds the load, on again when vs passes the decayed v1.
  ASSERT_EQ(ref.switches.size(), 4u);
  EXPECT_LT(ref.switches[0], 1e-7);
  EXPECT_GT(ref.switches[1], 0.005);
  EXPECT_LT(ref.switches[1], 0.006);
  EXPECT_GT(ref.switches[2], 0.020);
  EXPECT_LT(ref.switches[2], ref.switches[3]);
  EXPECT_LT(ref.switches[3], 0.026);
}

// Runs `kind` at 10 us and holds it to the FMI Cross-Check's 1 % rule for
// v1 and v2, to located switches and to the reference's switches; v1's
// largest error.
double expect_follows_reference(IntegratorKind kind, double lag, const char* what) {
  const Reference& ref = reference();
  const FmuRun r = run(kind);
  EXPECT_FALSE(r.failed) << what;
  if (r.failed || r.v2.size() != ref.v2.size()) {
    ADD_FAILURE() << what << ": " << r.v2.size() << " frames";
    return 0.0;
  }
  const double e1 = max_error(r.v1, ref.v1), e2 = max_error(r.v2, ref.v2);
  EXPECT_LT(e2, 0.01 * range(ref.v2)) << what << " " << e2;
  EXPECT_LT(e1, 0.01 * range(ref.v1)) << what << " " << e1;
  // The diode's switching instants were located inside the frames.
  EXPECT_GT(r.located, 0u) << what;
  expect_reference_switches(r, lag, what);
  return e1;
}

// ros2 at 10 us: stable where the fast mode has h lambda = -10, within the
// FMI Cross-Check's rule (max error < 1 % of the signal's range).
// Measured: v2 1.5e-4 V of its range 8.94 V (0.002 %), v1 2.4e-4 V of
// 9.97 V (0.0077 h max |v1'|; without df/dt 0.68 h max |v1'|).
TEST(Rectifier, Ros2AtTenMicrosecondsFollowsTheReference) {
  const double e1 = expect_follows_reference(IntegratorKind::kRos2, std::numbers::sqrt2 / 2.0, "ros2");
  double max_dv1 = 0.0;
  for (double d : reference().dv1) max_dv1 = std::max(max_dv1, std::fabs(d));
  EXPECT_LE(e1, 0.02 * kFrame * max_dv1) << e1;
}

// rk4 at the same frame: h lambda = -10 is outside its stability interval
// (-2.79). Measured: the chatter of the unstable fast mode makes events in
// every conducting frame (4210 located, 700 of them at the trial bound),
// and integrating each such frame in pieces keeps it accurate for the
// first conduction interval (v2 within 1.1e-6 V over 20 ms); in the second
// the fast mode grows without a crossing: |v1| > 1e3 at 25.17 ms, a NaN
// state at 26.37 ms, and the partition stops.
TEST(Rectifier, Rk4AtTenMicrosecondsDiverges) {
  const FmuRun r = run(IntegratorKind::kRk4);
  EXPECT_TRUE(r.failed || r.max_abs_v1 > 1e3) << r.max_abs_v1;
}

// ros1 at 10 us also holds the 1 % rule. Measured: v2 5.1e-3 V (0.06 % of
// 8.94 V), v1 2.9e-4 V.
TEST(Rectifier, Ros1AtTenMicrosecondsFollowsTheReference) {
  (void)expect_follows_reference(IntegratorKind::kRos1, 1.0, "ros1");
}

}  // namespace
}  // namespace rtcosim::tasks
