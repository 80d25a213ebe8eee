// Model-based coupling with reduced interface models (issue 16) through the
// whole runtime: examples/rim_two_mass.yaml against the monolithic solution,
// the rim-coupled run equal to the monolithic one bit for bit where the
// formulation makes it so, energy of the undamped system, the comparison
// with signal-based coupling over macro steps 1-50 ms (the table and plot of
// docs/rim.md: set RTCOSIM_RIM_REPORT=DIR to write them), and the loader's
// checks of rim links.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>

#include <Eigen/Dense>
#include <Eigen/Eigenvalues>
#include <gtest/gtest.h>

#include "rt_config/loader.hpp"
#include "runtime/virtual_executor.hpp"
#include "session/report/svg_plot.hpp"
#include "tests/support/graphs.hpp"

namespace rtcosim {
namespace {

using rtcosim::testing::build_graph;
using rtcosim::testing::checked;

std::string duration_text(double seconds) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9gus", seconds * 1e6);
  return buf;
}

// The system of examples/rim_two_mass.yaml: body1, a 1 kg mass on a
// 100 N/m ground spring, bolted to body2, a 0.5 kg flange on a 50 N/m
// ground spring joined by a 200 N/m spring to a 0.5 kg payload; at rest,
// displaced by 0.1 m (flange) and 0.12 m (payload).
struct Scenario {
  double macro = 0.020;  // body2's period
  double micro = 0.001;  // body1's period
  std::string integrator = "rk4";
  std::string force_method = "polynomial, order: 1";
  double duration = 5.0;
};

std::string tasks_yaml(const Scenario& s) {
  return "realtime: off\ntasks:\n"
         "  - {name: body2, period: " +
         duration_text(s.macro) + ", cpu: 0, priority: 80, integrator: " + s.integrator +
         ", execution: {nominal: 10us}}\n"
         "  - {name: body1, period: " +
         duration_text(s.micro) + ", cpu: 0, priority: 70, integrator: " + s.integrator +
         ", execution: {nominal: 10us}}\n";
}

// body2 extrapolates body1's force over its whole step: beyond the default
// horizon (4 of body1's periods) every method would hold it.
std::string horizon(const Scenario& s) { return ", max_extrapolation: " + duration_text(2 * s.macro); }

const char* kPayload =
    "  - {name: payload, type: mass_chain, task: body2, params: {masses: [0.5, 0.5], stiffness: [50, 200], "
    "q0: [0.1, 0.12]}}\n";

// Split at the bolt: body1 integrates body2's RIM (`rim` link), body2 takes
// the bolt force back as a signal through `force_method`.
std::string rim_yaml(const Scenario& s) {
  return "name: rim\n" + tasks_yaml(s) + "blocks:\n" + kPayload +
         "  - {name: arm, type: mass_chain, task: body1, params: {masses: [1.0], stiffness: [100], interface: rim, "
         "q0: [0.1]}}\n"
         "wires:\n"
         "  - {from: payload.rim, to: arm.rim, coupling: {method: rim}}\n"
         "  - {from: arm.reaction, to: payload.force, coupling: {method: " +
         s.force_method + horizon(s) + "}}\n";
}

// Both directions: each body integrates the other's RIM and solves the bolt
// force of its own model; only state-only RIMs cross (docs/rim.md).
std::string two_way_yaml(const Scenario& s) {
  std::string payload = kPayload;
  payload.replace(payload.find("q0:"), 3, "interface: rim, q0:");
  return "name: rim_two_way\n" + tasks_yaml(s) + "blocks:\n" + payload +
         "  - {name: arm, type: mass_chain, task: body1, params: {masses: [1.0], stiffness: [100], interface: rim, "
         "q0: [0.1]}}\n"
         "wires:\n"
         "  - {from: payload.rim, to: arm.rim, coupling: {method: rim}}\n"
         "  - {from: arm.rim, to: payload.rim, coupling: {method: rim" +
         horizon(s) + "}}\n";
}
const std::string kTwoWay = "rim, both directions";

// Signal-based coupling through a penalty spring: the bolt becomes a spring
// of stiffness k and damping d in body1 (`interface: spring`) between body1
// and body2's motion, and body1 sends its force back; both wires through
// `method`. The sweep (docs/rim.md) takes k = 10^3, 10^4, 10^5 N/m with
// d = 20 N s/m sqrt(k / 10^4): the same damping ratio of the penalty mode
// (0.17) at every stiffness, 20 N s/m at 10^4 as before.
double penalty_damping(double k) { return 20.0 * std::sqrt(k / 1e4); }

std::string number_text(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string signal_yaml(const Scenario& s, const std::string& method, double k = 1e4) {
  return "name: signal\n" + tasks_yaml(s) + "blocks:\n" + kPayload +
         "  - {name: arm, type: mass_chain, task: body1, params: {masses: [1.0], stiffness: [100], interface: spring, "
         "coupling_stiffness: " +
         number_text(k) + ", coupling_damping: " + number_text(penalty_damping(k)) +
         ", q0: [0.1]}}\n"
         "wires:\n"
         "  - {from: payload.motion, to: arm.motion, coupling: {method: " +
         method +
         "}}\n"
         "  - {from: arm.reaction, to: payload.force, coupling: {method: " +
         method + horizon(s) + "}}\n";
}

// Signal-based coupling of the rigid bolt itself, as a force/displacement
// exchange: body2 sends its flange position, body1 returns the force of its
// ground spring on it, -100 x. The bolt being rigid, body1's 1 kg moves with
// the flange, so its inertia goes to body2 (the flange 0.5 + 1 kg): the
// usual way to impose a kinematic constraint by signals without the other
// side's acceleration, which would close an algebraic loop (docs/rim.md).
// With one mass in body1, body1 keeps only its spring: a static map.
std::string lumped_yaml(const Scenario& s, const std::string& method) {
  return "name: lumped\n" + tasks_yaml(s) +
         "blocks:\n"
         "  - {name: payload, type: mass_chain, task: body2, params: {masses: [1.5, 0.5], stiffness: [50, 200], "
         "q0: [0.1, 0.12]}}\n"
         "  - {name: arm_spring, type: gain, task: body1, params: {gain: -100}}\n"
         "wires:\n"
         "  - {from: payload.x, to: arm_spring.u, coupling: {method: " +
         method +
         "}}\n"
         "  - {from: arm_spring.y, to: payload.force, coupling: {method: " +
         method + horizon(s) + "}}\n";
}
const std::string kLumped = "rigid, body1's mass lumped into the flange";

config::GraphSpec spec_of(const std::string& yaml) { return checked(config::load_graph_text(yaml, "rim.yaml")); }

// What a run produced: per frame of body1 its mass position, interface force
// and energy; per frame of body2 its payload position and energy.
struct Trace {
  std::vector<double> t1, x1, force, e1;
  std::vector<double> t2, x2, e2;
  std::vector<double> state1, state2;  // every state of every frame, in order
  // A task stopped on its divergence guard (docs/stalls.md) before its
  // positions could leave [-1, 1] m: diverged all the same.
  bool diverged = false;
};

Trace run(const config::GraphSpec& spec, double duration) {
  auto graph = build_graph(spec);
  runtime::TaskRuntime* body1 = graph->find_task("body1");
  runtime::TaskRuntime* body2 = graph->find_task("body2");
  EXPECT_TRUE(body1 && body2);
  const auto q1 = body1->partition().find_output({"arm", "q"});
  const auto f1 = body1->partition().find_output({"arm", "force"});
  const auto en1 = body1->partition().find_output({"arm", "energy"});
  const auto q2 = body2->partition().find_output({"payload", "q"});
  const auto en2 = body2->partition().find_output({"payload", "energy"});
  Trace tr;
  runtime::VirtualExecutor executor(*graph);
  executor.run(duration, [&](runtime::TaskRuntime& task, const runtime::FrameRecord&) {
    const auto& p = task.partition();
    if (&task == body1) {
      tr.t1.push_back(p.time());
      tr.x1.push_back(p.output(q1)[0]);
      tr.force.push_back(p.output(f1)[0]);
      tr.e1.push_back(p.output(en1)[0]);
      for (double v : p.state()) tr.state1.push_back(v);
    } else {
      tr.t2.push_back(p.time());
      tr.x2.push_back(p.output(q2)[0]);
      tr.e2.push_back(p.output(en2)[0]);
      for (double v : p.state()) tr.state2.push_back(v);
    }
  });
  tr.diverged = body1->failed() || body2->failed();
  return tr;
}

struct Errors {
  double x1 = 0.0, x2 = 0.0, force = 0.0;
  double x2_rigid = NAN;   // RMS x2 against the rigidly bolted system's reference
  double largest_x = 0.0;  // largest |position| of the run
  bool stable = false;
};

// The merged diagram of `spec` integrated with RK4 at 0.1 ms, probed at x1,
// the interface force and x2 (in this order).
std::unique_ptr<tasks::ReferenceSolver> reference_of(const config::GraphSpec& spec, double duration) {
  static const auto blocks = tasks::BlockRegistry::with_builtins();
  auto ref = std::make_unique<tasks::ReferenceSolver>(blocks, spec.diagram, 1e-4);
  ref->run(duration, {{"arm", "q"}, {"arm", "force"}, {"payload", "q"}});
  return ref;
}

// RMS errors against `ref` (a reference_of the run's own graph); with
// `rigid` (the rigidly bolted system's), x2's against that one too.
Errors errors_of(const tasks::ReferenceSolver& ref, const Trace& tr, double duration,
                 const tasks::ReferenceSolver* rigid = nullptr) {
  auto rms = [&](const std::vector<double>& t, const std::vector<double>& y, const tasks::ReferenceSolver& r,
                 std::size_t probe, double* largest) {
    double sum = 0.0;
    std::size_t n = 0;
    for (std::size_t k = 0; k < t.size(); ++k) {
      if (t[k] > duration) break;
      const double d = y[k] - r.value(probe, t[k]);
      sum += d * d;
      ++n;
      if (largest) *largest = std::max(*largest, std::isfinite(y[k]) ? std::fabs(y[k]) : INFINITY);
    }
    return n ? std::sqrt(sum / static_cast<double>(n)) : NAN;
  };
  Errors e;
  e.x1 = rms(tr.t1, tr.x1, ref, 0, &e.largest_x);
  e.force = rms(tr.t1, tr.force, ref, 1, nullptr);
  e.x2 = rms(tr.t2, tr.x2, ref, 2, &e.largest_x);
  if (rigid) e.x2_rigid = rms(tr.t2, tr.x2, *rigid, 2, nullptr);
  // The positions start at 0.1 m and the system loses energy: a run whose
  // positions leave [-1, 1] m, or whose errors are not finite, diverged.
  e.stable = !tr.diverged && std::isfinite(e.x1) && std::isfinite(e.x2) && std::isfinite(e.force) && e.largest_x < 1.0;
  return e;
}

Errors errors_of(const config::GraphSpec& spec, const Trace& tr, double duration) {
  return errors_of(*reference_of(spec, duration), tr, duration);
}

// ------------------------------------------------------------------ example

TEST(RimCoupling, TheExampleFollowsTheMonolithicSolution) {
  const auto spec = rtcosim::testing::load_example("rim_two_mass.yaml");
  const Trace tr = run(spec, spec.duration);
  const Errors e = errors_of(spec, tr, spec.duration);
  std::printf("rim_two_mass.yaml: RMS error x1 %.3g m, x2 %.3g m, bolt force %.3g N over %zu + %zu frames\n", e.x1,
              e.x2, e.force, tr.t1.size(), tr.t2.size());
  EXPECT_EQ(tr.t1.size(), 5000u);
  EXPECT_EQ(tr.t2.size(), 250u);
  EXPECT_TRUE(e.stable);
  EXPECT_LT(e.x1, 1e-3);
  EXPECT_LT(e.x2, 1e-3);
  auto graph = build_graph(spec);
  ASSERT_EQ(graph->links().size(), 2u);
  for (const auto& l : graph->links()) EXPECT_EQ(l->method, l->source == "payload.rim" ? "rim" : "polynomial");
}

// ------------------------------------------------- monolithic, bit for bit

// The co-simulated graph `yaml` with both blocks in one task, wired directly.
std::string monolithic(std::string mono) {
  mono.replace(mono.find("task: body2"), 11, "task: body1");
  for (auto at = mono.find(", coupling: {"); at != std::string::npos; at = mono.find(", coupling: {")) {
    mono.erase(at, mono.find('}', at) + 1 - at);
  }
  mono.replace(mono.find("  - {name: body2"), mono.find("  - {name: body1") - mono.find("  - {name: body2"), "");
  return mono;
}

// Euler, both tasks at 1 ms: the co-simulation of `yaml` against the same
// blocks in one task, frame by frame; the number of frames that differ.
std::size_t frames_unlike_the_monolithic_run(const std::string& yaml, std::vector<double>* force_out) {
  const double duration = 2.0;
  const Trace cosim = run(spec_of(yaml), duration);
  auto mono_spec = spec_of(monolithic(yaml));
  EXPECT_EQ(mono_spec.tasks.size(), 1u);
  auto graph = build_graph(mono_spec);
  runtime::TaskRuntime* task = graph->find_task("body1");
  const auto q1 = task->partition().find_output({"arm", "q"});
  const auto f1 = task->partition().find_output({"arm", "force"});
  const auto q2 = task->partition().find_output({"payload", "q"});
  std::vector<double> x1, force, x2;
  runtime::VirtualExecutor(*graph).run(duration, [&](runtime::TaskRuntime& t, const runtime::FrameRecord&) {
    x1.push_back(t.partition().output(q1)[0]);
    force.push_back(t.partition().output(f1)[0]);
    x2.push_back(t.partition().output(q2)[0]);
  });
  EXPECT_EQ(cosim.x1.size(), 2000u);
  EXPECT_EQ(x1.size(), 2000u);
  EXPECT_EQ(cosim.x2.size(), 2000u);
  std::size_t differ = 0;
  for (std::size_t k = 0; k < std::min({x1.size(), cosim.x1.size(), cosim.x2.size()}); ++k) {
    differ += cosim.x1[k] != x1[k] || cosim.force[k] != force[k] || cosim.x2[k] != x2[k];
  }
  *force_out = force;
  return differ;
}

// With explicit Euler and the macro step equal to the micro step, body1's
// single derivative evaluation per step at t_n sees the payload's RIM of
// t_n exactly (the payload runs first at every instant), and the payload
// sees the bolt force body1 computed at t_n from that RIM: the same numbers,
// in the same operations, as one task integrating both blocks. Any other
// integrator evaluates inside the step, where the RIM is held from t_n:
// equal only to first order there (next test).
TEST(RimCoupling, EulerAtEqualStepsIsTheMonolithicRunBitForBit) {
  Scenario s;
  s.macro = s.micro = 0.001;
  s.integrator = "euler";
  s.force_method = "zoh";
  std::vector<double> force;
  EXPECT_EQ(frames_unlike_the_monolithic_run(rim_yaml(s), &force), 0u);
  // Not a trivially quiet run: the bolt force swings by newtons.
  EXPECT_GT(*std::max_element(force.begin(), force.end()) - *std::min_element(force.begin(), force.end()), 1.0);
}

// Both directions in one task: each block integrates the other's RIM of
// the same evaluation (state-only outputs), the co-simulation the one of
// the same instant through the links.
TEST(RimCoupling, BothDirectionsAtEqualStepsAreTheMonolithicRunBitForBit) {
  Scenario s;
  s.macro = s.micro = 0.001;
  s.integrator = "euler";
  std::vector<double> force;
  EXPECT_EQ(frames_unlike_the_monolithic_run(two_way_yaml(s), &force), 0u);
  EXPECT_GT(*std::max_element(force.begin(), force.end()) - *std::min_element(force.begin(), force.end()), 1.0);
}

// ------------------------------------------------------------------ energy

// Undamped, the two bodies' energies sum to a constant. The coupling, not
// the integrator (RK4), sets the order: body1 takes body2's lambda~ on a
// straight line between its models (rim order 1) and body2 extrapolates the
// bolt force linearly: halving both steps quarters the largest energy
// error. Held instead (rim order 0, zoh), both are first order: it halves.
// The largest change of the two bodies' summed energy, relative to its
// start, at body2's frames (body1 has a frame at each of them).
double largest_energy_drift(const Trace& tr) {
  double e0 = NAN, worst = 0.0;
  std::size_t j = 0;
  for (std::size_t k = 0; k < tr.t2.size(); ++k) {
    while (j < tr.t1.size() && tr.t1[j] < tr.t2[k] - 1e-12) ++j;
    if (j == tr.t1.size()) break;
    const double e = tr.e1[j] + tr.e2[k];
    if (std::isnan(e0)) e0 = e;
    worst = std::max(worst, std::fabs(e - e0));
  }
  return worst / e0;
}

double energy_error(double micro, const std::string& rim_method, const std::string& force_method) {
  Scenario s;
  s.micro = micro;
  s.macro = 4 * micro;
  s.force_method = force_method;
  std::string yaml = rim_yaml(s);
  yaml.replace(yaml.find("{method: rim}"), 13, "{method: " + rim_method + "}");
  return largest_energy_drift(run(spec_of(yaml), 2.0));
}

TEST(RimCoupling, UndampedEnergyErrorIsSecondOrderInTheStep) {
  const double coarse = energy_error(0.001, "rim", "polynomial, order: 1");
  const double fine = energy_error(0.0005, "rim", "polynomial, order: 1");
  std::printf("largest relative energy error: %.4g (h 1 ms, H 4 ms), %.4g (0.5 ms, 2 ms), ratio %.3f\n", coarse, fine,
              coarse / fine);
  EXPECT_LT(coarse, 1e-3);
  EXPECT_GT(coarse / fine, 3.6);
  EXPECT_LT(coarse / fine, 4.4);
}

// Both directions: body2 extrapolates body1's model linearly over its step
// and body1 interpolates body2's, so the energy error is second order too.
double two_way_energy_error(double micro) {
  Scenario s;
  s.micro = micro;
  s.macro = 4 * micro;
  return largest_energy_drift(run(spec_of(two_way_yaml(s)), 2.0));
}

TEST(RimCoupling, BothDirectionsKeepTheEnergyToSecondOrder) {
  const double coarse = two_way_energy_error(0.001);
  const double fine = two_way_energy_error(0.0005);
  std::printf("both directions: largest relative energy error %.4g (h 1 ms, H 4 ms), %.4g (0.5 ms, 2 ms), ratio %.3f\n",
              coarse, fine, coarse / fine);
  EXPECT_LT(coarse, 1e-3);
  EXPECT_GT(coarse / fine, 3.6);
  EXPECT_LT(coarse / fine, 4.4);
}

TEST(RimCoupling, HeldModelsMakeTheEnergyErrorFirstOrder) {
  const double coarse = energy_error(0.001, "rim, order: 0", "zoh");
  const double fine = energy_error(0.0005, "rim, order: 0", "zoh");
  std::printf("held: largest relative energy error %.4g (h 1 ms, H 4 ms), %.4g (0.5 ms, 2 ms), ratio %.3f\n", coarse,
              fine, coarse / fine);
  EXPECT_GT(coarse / fine, 1.8);
  EXPECT_LT(coarse / fine, 2.2);
}

// ------------------------------------------- against signal-based coupling

// The two monolithic systems, solved without a block or an integrator:
// M x'' + C x' + K x = 0 from x0 at rest, through the eigenvectors of the
// first-order system, x(t) = Re V exp(Lambda t) V^-1 [x0; 0]. Coordinates:
// rigid bolt (body1's mass and the flange as one 1.5 kg body on 150 N/m,
// the payload); penalty bolt (body1, the flange, the payload); body2 alone
// (the flange, the payload).
struct LinearSystem {
  Eigen::MatrixXd m, c, k;
  Eigen::VectorXd x0;
};

LinearSystem rigid_bolt() {
  LinearSystem s;
  s.m = Eigen::Vector2d(1.5, 0.5).asDiagonal();
  s.k = (Eigen::Matrix2d() << 350, -200, -200, 200).finished();
  s.c = Eigen::Matrix2d::Zero();
  s.x0 = Eigen::Vector2d(0.1, 0.12);
  return s;
}

LinearSystem penalty_bolt(double k) {
  const double d = penalty_damping(k);
  LinearSystem s;
  s.m = Eigen::Vector3d(1.0, 0.5, 0.5).asDiagonal();
  s.k = (Eigen::Matrix3d() << 100 + k, -k, 0, -k, 250 + k, -200, 0, -200, 200).finished();
  s.c = (Eigen::Matrix3d() << d, -d, 0, -d, d, 0, 0, 0, 0).finished();
  s.x0 = Eigen::Vector3d(0.1, 0.1, 0.12);
  return s;
}

LinearSystem body2_alone() {
  LinearSystem s;
  s.m = Eigen::Vector2d(0.5, 0.5).asDiagonal();
  s.k = (Eigen::Matrix2d() << 250, -200, -200, 200).finished();
  s.c = Eigen::Matrix2d::Zero();
  s.x0 = Eigen::Vector2d(0.1, 0.12);
  return s;
}

class ModalSolution {
 public:
  explicit ModalSolution(const LinearSystem& s) {
    const Eigen::Index n = s.m.rows();
    Eigen::MatrixXd a = Eigen::MatrixXd::Zero(2 * n, 2 * n);
    a.topRightCorner(n, n).setIdentity();
    const Eigen::MatrixXd minv = s.m.inverse();
    a.bottomLeftCorner(n, n) = -minv * s.k;
    a.bottomRightCorner(n, n) = -minv * s.c;
    Eigen::EigenSolver<Eigen::MatrixXd> es(a);
    lambda_ = es.eigenvalues();
    v_ = es.eigenvectors();
    Eigen::VectorXcd z0 = Eigen::VectorXcd::Zero(2 * n);
    z0.head(n) = s.x0.cast<std::complex<double>>();
    coef_ = v_.partialPivLu().solve(z0);
  }
  [[nodiscard]] double position(Eigen::Index i, double t) const {
    std::complex<double> sum = 0.0;
    for (Eigen::Index j = 0; j < lambda_.size(); ++j) sum += v_(i, j) * coef_(j) * std::exp(lambda_(j) * t);
    return sum.real();
  }
  // The natural frequencies |lambda| (rad/s), ascending, one per mode, with
  // their damping ratios -Re lambda / |lambda|.
  [[nodiscard]] std::vector<std::pair<double, double>> modes() const {
    std::vector<std::pair<double, double>> out;
    for (Eigen::Index j = 0; j < lambda_.size(); ++j) {
      if (lambda_(j).imag() > 0.0) out.emplace_back(std::abs(lambda_(j)), -lambda_(j).real() / std::abs(lambda_(j)));
    }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  Eigen::VectorXcd lambda_, coef_;
  Eigen::MatrixXcd v_;
};

// RK4 is stable on an undamped mode of frequency w for w h <= 2 sqrt(2).
const double kRk4Limit = 2.0 * std::sqrt(2.0);

// The bolt models of the sweep: the rigid bolt (rim) and penalty springs.
std::string bolt_text(double k) {
  if (k == 0.0) return "rigid";
  char buf[60];
  const int e = static_cast<int>(std::lround(std::log10(k)));
  const char* sup[] = {"⁰", "¹", "²", "³", "⁴", "⁵", "⁶"};
  std::snprintf(buf, sizeof buf, "10%s N/m, %.3g N s/m", sup[e], penalty_damping(k));
  return buf;
}

/*
 * Where the rim coupling stands against signal-based coupling (issue 29):
 * the system of rim_two_mass.yaml, body1 at 1 ms, body2's period (the macro
 * step) 1-100 ms, RK4, 5 s. Signal methods cannot join the bodies rigidly:
 * they couple through a penalty spring, whose stiffness sets both their
 * stability limit (the spring's mode, about sqrt(k / 0.33 kg)) and their
 * model error against the rigid bolt; the sweep takes three. Every figure
 * of docs/rim.md's table; RTCOSIM_RIM_REPORT=DIR writes the tables and the
 * plot. Held: each penalty model's monolithic error against the rigid bolt
 * equal to the analytic modal solution's, and the largest stable step of
 * every method at every stiffness.
 */
TEST(RimCoupling, AgainstSignalCouplingThroughAPenaltySpring) {
  const std::vector<double> steps = {0.001, 0.002, 0.005, 0.010, 0.020, 0.050, 0.100};
  const std::vector<double> stiffnesses = {1e3, 1e4, 1e5};
  // ecc at its default order 3 diverges at every step here, 1 ms included;
  // order 1 is its best.
  const std::vector<std::string> signal_methods = {"predictor", "hermite", "ecc, order: 1, interp_order: 1"};
  const double duration = Scenario().duration;

  // The monolithic references, one per graph (not per macro step).
  const auto rim_ref = reference_of(spec_of(rim_yaml(Scenario())), duration);
  const auto two_way_ref = reference_of(spec_of(two_way_yaml(Scenario())), duration);
  const ModalSolution rigid(rigid_bolt());
  const auto& grid = rim_ref->times();
  ASSERT_EQ(grid.size(), 50001u);
  // The rigid reference itself against the analytic solution.
  double rigid_vs_analytic = 0.0;
  for (double t : grid)
    rigid_vs_analytic = std::max(rigid_vs_analytic, std::fabs(rim_ref->value(2, t) - rigid.position(0, t)));
  EXPECT_LT(rigid_vs_analytic, 1e-9);

  struct Bolt {
    double k = 0.0;
    std::unique_ptr<tasks::ReferenceSolver> ref;
    double model_error = 0.0, analytic_error = 0.0, omega = 0.0, zeta = 0.0;
  };
  std::vector<Bolt> bolts;
  for (double k : stiffnesses) {
    Bolt b;
    b.k = k;
    b.ref = reference_of(spec_of(signal_yaml(Scenario(), "zoh", k)), duration);
    const ModalSolution penalty(penalty_bolt(k));
    double sum = 0.0, sum_analytic = 0.0;
    for (double t : grid) {
      sum += std::pow(rim_ref->value(2, t) - b.ref->value(2, t), 2);
      sum_analytic += std::pow(rigid.position(0, t) - penalty.position(1, t), 2);
    }
    b.model_error = std::sqrt(sum / static_cast<double>(grid.size()));
    b.analytic_error = std::sqrt(sum_analytic / static_cast<double>(grid.size()));
    b.omega = penalty.modes().back().first;
    b.zeta = penalty.modes().back().second;
    EXPECT_NEAR(b.model_error, b.analytic_error, 1e-3 * b.analytic_error) << "k = " << k;
    bolts.push_back(std::move(b));
  }

  std::ostringstream table;
  table << "| bolt | macro step | method | RMS x1 (m) | RMS x2 (m) | RMS x2 against the rigid bolt (m) | RMS interface "
           "force (N) | stable |\n"
        << "|---|---|---|---|---|---|---|---|\n";
  // Per (bolt, method): the largest step up to which every step is stable,
  // and the RMS x2 against the rigid bolt per step (NAN: diverged).
  std::map<std::string, double> largest_stable;
  std::map<std::string, std::vector<double>> x2_rigid;
  std::vector<std::string> series;
  auto sweep = [&](const std::string& key, const std::string& bolt, const std::string& method,
                   const std::function<std::string(const Scenario&)>& yaml, const tasks::ReferenceSolver& ref) {
    series.push_back(key);
    bool all_stable = true;
    for (const double h : steps) {
      Scenario s;
      s.macro = h;
      const Trace tr = run(spec_of(yaml(s)), s.duration);
      const Errors e = errors_of(ref, tr, s.duration, rim_ref.get());
      char row[400];
      std::snprintf(row, sizeof row, "| %s | %g ms | %s | %.3g | %.3g | %.3g | %.3g | %s |\n", bolt.c_str(), h * 1e3,
                    method.c_str(), e.x1, e.x2, e.x2_rigid, e.force, e.stable ? "yes" : "no");
      table << row;
      all_stable = all_stable && e.stable;
      if (all_stable) largest_stable[key] = h;
      x2_rigid[key].push_back(e.stable ? e.x2_rigid : NAN);
    }
  };
  sweep("rim", "rigid", "rim", rim_yaml, *rim_ref);
  sweep(kTwoWay, "rigid", kTwoWay, two_way_yaml, *two_way_ref);
  for (const auto& b : bolts) {
    for (const auto& m : signal_methods) {
      sweep(
          m + " @ " + number_text(b.k), bolt_text(b.k), m, [&](const Scenario& s) { return signal_yaml(s, m, b.k); },
          *b.ref);
    }
  }

  // The rigid bolt by signals (lumped_yaml): only body2's flange position is
  // compared, against the rigid reference; the lumped system's own merged
  // reference is the rigid one (the same physics), to RK4's accuracy.
  {
    static const auto blocks = tasks::BlockRegistry::with_builtins();
    tasks::ReferenceSolver lumped_ref(blocks, spec_of(lumped_yaml(Scenario(), "zoh")).diagram, 1e-4);
    lumped_ref.run(duration, {{"payload", "q"}});
    double worst = 0.0;
    for (double t : grid) worst = std::max(worst, std::fabs(lumped_ref.value(0, t) - rim_ref->value(2, t)));
    EXPECT_LT(worst, 1e-9);
  }
  for (const auto& m : signal_methods) {
    const std::string key = m + " @ lumped";
    series.push_back(key);
    bool all_stable = true;
    for (const double h : steps) {
      Scenario sc;
      sc.macro = h;
      auto graph = build_graph(spec_of(lumped_yaml(sc, m)));
      runtime::TaskRuntime* body2 = graph->find_task("body2");
      const auto q2 = body2->partition().find_output({"payload", "q"});
      double sum = 0.0, largest = 0.0;
      std::size_t n = 0;
      runtime::VirtualExecutor executor(*graph);
      executor.run(sc.duration, [&](runtime::TaskRuntime& task, const runtime::FrameRecord&) {
        if (&task != body2 || task.partition().time() > sc.duration) return;
        const double x = task.partition().output(q2)[0];
        const double d = x - rim_ref->value(2, task.partition().time());
        sum += d * d;
        ++n;
        largest = std::max(largest, std::isfinite(x) ? std::fabs(x) : INFINITY);
      });
      const double rms = n ? std::sqrt(sum / static_cast<double>(n)) : NAN;
      const bool stable = !body2->failed() && std::isfinite(rms) && largest < 1.0;
      char row[400];
      std::snprintf(row, sizeof row, "| %s | %g ms | %s | - | %.3g | %.3g | - | %s |\n", kLumped.c_str(), h * 1e3,
                    m.c_str(), rms, rms, stable ? "yes" : "no");
      table << row;
      all_stable = all_stable && stable;
      if (all_stable) largest_stable[key] = h;
      x2_rigid[key].push_back(stable ? rms : NAN);
    }
  }

  // The summary: per bolt model and method the largest stable step, omega H
  // there for the penalty mode, the error there against the rigid bolt (the
  // physical system), and the largest step whose error against the rigid
  // bolt stays within 1 mm and 10 mm (1 % and 10 % of the initial 0.1 m).
  auto within = [&](const std::string& key, double tolerance) {
    double h = 0.0;
    for (std::size_t i = 0; i < steps.size() && steps[i] <= largest_stable[key]; ++i) {
      if (x2_rigid[key][i] <= tolerance) h = steps[i];
    }
    return h;
  };
  auto ms_text = [](double h) { return h > 0.0 ? number_text(h * 1e3) + " ms" : std::string("none"); };
  std::ostringstream summary;
  summary << "| bolt | penalty mode ω (ζ) | model error (m) | method | largest stable macro step H | ω H | RMS x2 "
             "against the rigid bolt at H (m) | largest step within 1 mm | within 10 mm |\n"
          << "|---|---|---|---|---|---|---|---|---|\n";
  auto summary_row = [&](const std::string& bolt, double omega, const std::string& mode, double model_error,
                         const std::string& m, const std::string& key) {
    const double h = largest_stable[key];
    double at = NAN;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      if (steps[i] == h) at = x2_rigid[key][i];
    }
    char wh[40] = "—", error_at[40] = "—";
    if (omega > 0.0 && h > 0.0) std::snprintf(wh, sizeof wh, "%.2f", omega * h);
    if (std::isfinite(at)) std::snprintf(error_at, sizeof error_at, "%.2g", at);
    char row[500];
    std::snprintf(row, sizeof row, "| %s | %s | %.2g | %s | %s | %s | %s | %s | %s |\n", bolt.c_str(), mode.c_str(),
                  model_error, m.c_str(), ms_text(h).c_str(), wh, error_at, ms_text(within(key, 1e-3)).c_str(),
                  ms_text(within(key, 1e-2)).c_str());
    summary << row;
  };
  summary_row("rigid", 0.0, "—", 0.0, "rim", "rim");
  summary_row("rigid", 0.0, "—", 0.0, kTwoWay, kTwoWay);
  for (const auto& b : bolts) {
    char mode[80];
    std::snprintf(mode, sizeof mode, "%.0f rad/s (%.2f)", b.omega, b.zeta);
    for (const auto& m : signal_methods)
      summary_row(bolt_text(b.k), b.omega, mode, b.model_error, m, m + " @ " + number_text(b.k));
  }
  for (const auto& m : signal_methods) summary_row(kLumped, 0.0, "—", 0.0, m, m + " @ lumped");
  std::cout << summary.str() << "\n" << table.str();
  for (const auto& b : bolts) {
    std::printf(
        "k = %g N/m: penalty mode %.1f rad/s (zeta %.3f, omega H = 1 at %.2f ms); model error RMS x2 %.4g m "
        "(analytic %.4g m)\n",
        b.k, b.omega, b.zeta, 1e3 / b.omega, b.model_error, b.analytic_error);
  }
  for (const auto& key : series)
    std::printf("%s: largest stable macro step %g ms\n", key.c_str(), largest_stable[key] * 1e3);

  // The largest stable step of each method at each stiffness (every step up
  // to it stable, the next one not; 0: not even 1 ms). rim stops at 100 ms
  // (TheRimLimitIsBody2sOwnRk4Limit); both directions hold at 100 ms, off
  // by half the amplitude.
  const std::map<std::string, double> expected = {
      {"rim", 0.050},
      {kTwoWay, 0.100},
      {"predictor @ 1000", 0.020},
      {"hermite @ 1000", 0.020},
      {"ecc, order: 1, interp_order: 1 @ 1000", 0.010},
      {"predictor @ 10000", 0.005},
      {"hermite @ 10000", 0.005},
      {"ecc, order: 1, interp_order: 1 @ 10000", 0.005},
      {"predictor @ 100000", 0.002},
      {"hermite @ 100000", 0.001},
      {"ecc, order: 1, interp_order: 1 @ 100000", 0.0},
  };
  for (const auto& [key, h] : expected) EXPECT_EQ(largest_stable[key], h) << key;
  // The signal methods' limit is the penalty mode: predictor holds up to
  // omega H of 1.16 and fails from 1.74 on, at every stiffness.
  for (const auto& b : bolts) {
    const double h = largest_stable["predictor @ " + number_text(b.k)];
    const auto next = std::upper_bound(steps.begin(), steps.end(), h);
    ASSERT_NE(next, steps.end());
    EXPECT_LT(b.omega * h, 1.2) << b.k;
    EXPECT_GT(b.omega * *next, 1.7) << b.k;
  }
  // The claim as it stands: against the rigid bolt, rim reaches 1 mm at 4x
  // and 10 mm at 2.5x the largest macro step of the best signal method at
  // the best of the three stiffnesses (the soft spring is stable longer but
  // its model error alone is 4.6 mm; the stiff one is accurate but stable
  // at 1-2 ms only).
  double signal_1mm = 0.0, signal_10mm = 0.0;
  for (const auto& key : series) {
    if (key == "rim" || key == kTwoWay || key.ends_with(" @ lumped")) continue;
    signal_1mm = std::max(signal_1mm, within(key, 1e-3));
    signal_10mm = std::max(signal_10mm, within(key, 1e-2));
  }
  EXPECT_EQ(within("rim", 1e-3), 0.020);
  EXPECT_EQ(signal_1mm, 0.005);
  EXPECT_EQ(within("rim", 1e-2), 0.050);
  EXPECT_EQ(signal_10mm, 0.020);
  EXPECT_GT(bolts[0].model_error, 1e-3);  // 10^3 N/m: never within 1 mm
  // Against the rigid bolt coupled by signals (body1's mass lumped into the
  // flange) the margin is gone: every method is stable at 100 ms, where rim
  // diverges, and hermite stays within 1 mm up to 50 ms, where rim is off by
  // 5.1 mm. Body1 keeps no dynamics of its own here (docs/rim.md says what
  // that means for the claim).
  for (const auto& m : signal_methods) EXPECT_EQ(largest_stable[m + " @ lumped"], 0.100) << m;
  EXPECT_EQ(within("hermite @ lumped", 1e-3), 0.050);
  EXPECT_EQ(within("predictor @ lumped", 1e-3), 0.020);
  EXPECT_EQ(within("predictor @ lumped", 1e-2), 0.050);

  if (const char* dir = std::getenv("RTCOSIM_RIM_REPORT")) {
    std::ofstream(std::string(dir) + "/rim_comparison.md") << summary.str() << "\n" << table.str();
    plot::Figure fig;
    fig.title =
        "two bodies bolted together: RMS error of the flange position x2 against the rigid bolt (diverged "
        "runs left out)";
    fig.x_label = "macro step (ms)";
    plot::Panel panel;
    panel.y_label = "log10 RMS x2 error (m)";
    std::vector<double> ms;
    for (double h : steps) ms.push_back(h * 1e3);
    auto add = [&](const std::string& label, const std::string& key, const char* color, bool dashed) {
      std::vector<double> y;
      for (double v : x2_rigid[key]) y.push_back(std::log10(v));
      panel.series.push_back({label, ms, y, color, 2.0, dashed, false});
    };
    add("rim", "rim", "#d62728", false);
    add(kTwoWay, kTwoWay, "#ff7f0e", false);
    add("predictor, rigid by signals (mass lumped)", "predictor @ lumped", "#000000", false);
    add("hermite, rigid by signals (mass lumped)", "hermite @ lumped", "#636363", true);
    const char* blue[] = {"#9ecae1", "#3182bd", "#08306b"};
    const char* green[] = {"#a1d99b", "#31a354", "#00441b"};
    const char* purple[] = {"#bcbddc", "#756bb1", "#3f007d"};
    for (std::size_t i = 0; i < bolts.size(); ++i) {
      const std::string k = number_text(bolts[i].k);
      add("predictor, " + k + " N/m", "predictor @ " + k, blue[i], false);
      add("hermite, " + k + " N/m", "hermite @ " + k, green[i], true);
      add("ecc (order 1), " + k + " N/m", "ecc, order: 1, interp_order: 1 @ " + k, purple[i], true);
    }
    fig.panels.push_back(panel);
    std::string why;
    EXPECT_TRUE(plot::write_svg(fig, std::string(dir) + "/rim_comparison.svg", &why)) << why;
  }
}

// Why the rim coupling stops at 100 ms: body2, force-driven, integrates its
// own model over the macro step with the bolt force as a given function of
// time, so RK4 meets its own model's faster mode (flange against payload,
// 29.2 rad/s): w H = 2.92 > 2 sqrt(2) at 100 ms, 1.46 at 50 ms. Body2 alone
// (interface: none), RK4 at its period: bounded at 50 and 90 ms, diverging
// at 100 ms. No coupling method that leaves body2 force-driven gets past
// that; both directions give body2 body1's inertia at the flange (the
// rigid system's modes, 8.4 and 23.7 rad/s: w H = 2.37 at 100 ms).
double largest_position_alone(double period) {
  const std::string yaml =
      "name: body2\nrealtime: off\ntasks:\n  - {name: body2, period: " + duration_text(period) +
      ", integrator: rk4}\nblocks:\n  - {name: payload, type: mass_chain, task: body2, params: {masses: [0.5, 0.5], "
      "stiffness: [50, 200], interface: none, q0: [0.1, 0.12]}}\nwires: []\n";
  auto graph = build_graph(spec_of(yaml));
  auto* task = graph->find_task("body2");
  const auto q = task->partition().find_output({"payload", "q"});
  double largest = 0.0;
  runtime::VirtualExecutor(*graph).run(5.0, [&](runtime::TaskRuntime& tk, const runtime::FrameRecord&) {
    for (double v : tk.partition().output(q)) largest = std::max(largest, std::isfinite(v) ? std::fabs(v) : INFINITY);
  });
  // Stopped by its divergence guard before it could grow that far.
  return task->failed() ? INFINITY : largest;
}

TEST(RimCoupling, TheRimLimitIsBody2sOwnRk4Limit) {
  const auto body2 = ModalSolution(body2_alone()).modes();
  const auto both = ModalSolution(rigid_bolt()).modes();
  ASSERT_EQ(body2.size(), 2u);
  ASSERT_EQ(both.size(), 2u);
  std::printf("body2 alone: %.3f, %.3f rad/s (RK4 limit %.1f ms); rigid system: %.3f, %.3f rad/s (%.1f ms)\n",
              body2[0].first, body2[1].first, 1e3 * kRk4Limit / body2[1].first, both[0].first, both[1].first,
              1e3 * kRk4Limit / both[1].first);
  EXPECT_NEAR(body2[1].first, std::sqrt(450 + std::sqrt(450.0 * 450 - 40000)), 1e-9);
  EXPECT_GT(0.100 * body2[1].first, kRk4Limit);
  EXPECT_LT(0.090 * body2[1].first, kRk4Limit);
  EXPECT_LT(0.100 * both[1].first, kRk4Limit);
  EXPECT_LT(largest_position_alone(0.050), 0.2);
  EXPECT_LT(largest_position_alone(0.090), 0.2);
  EXPECT_GT(largest_position_alone(0.100), 1.0);
}

// ------------------------------------------------------------------ loader

TEST(RimCoupling, TheLoaderPointsAtAMisusedRimLink) {
  Scenario s;
  const std::string good = rim_yaml(s);
  auto error_of = [&](const std::string& from, const std::string& to) {
    std::string bad = good;
    bad.replace(bad.find(from), from.size(), to);
    const auto r = config::load_graph_text(bad, "bad.yaml");
    std::vector<std::string> errors;
    for (const auto& d : r.diagnostics) {
      if (d.severity == config::Diagnostic::Severity::kError) errors.push_back(d.str());
    }
    EXPECT_EQ(errors.size(), 1u);
    return errors.empty() ? std::string() : errors.front();
  };
  EXPECT_EQ(error_of("to: arm.rim, coupling: {method: rim}", "to: arm.rim, coupling: {method: hermite}"),
            "bad.yaml:10:48: error: wire 'payload.rim -> arm.rim' carries a reduced interface model, which method "
            "'hermite' would extrapolate like a signal — expected coupling: {method: rim}");
  EXPECT_EQ(error_of("coupling: {method: polynomial, order: 1, max_extrapolation: 40000us}", "coupling: {method: rim}"),
            "bad.yaml:11:55: error: wire 'arm.reaction -> payload.force' uses method 'rim', which carries a reduced "
            "interface model from a mechanical block's 'rim' output to another's 'rim' input — expected a signal "
            "method (e.g. zoh, predictor) here, or a wire from X.rim to Y.rim");
  EXPECT_NE(error_of("interface: rim,", "interface: rigid,").find("bad.yaml:8:"), std::string::npos);
}

}  // namespace
}  // namespace rtcosim

namespace rtcosim {
namespace {

// RMS error of one output signal of `block.port` in `task`, sampled at the
// end of each of the task's frames, against the merged diagram (RK4, 0.1 ms).
double rms_error(const config::GraphSpec& spec, const std::string& task_name, const tasks::Endpoint& port,
                 std::size_t signal) {
  auto graph = build_graph(spec);
  runtime::TaskRuntime* task = graph->find_task(task_name);
  const auto ref_out = task->partition().find_output(port);
  std::vector<double> t, y;
  runtime::VirtualExecutor(*graph).run(spec.duration, [&](runtime::TaskRuntime& tk, const runtime::FrameRecord&) {
    if (&tk != task) return;
    t.push_back(tk.partition().time());
    y.push_back(tk.partition().output(ref_out)[signal]);
  });
  static const auto blocks = tasks::BlockRegistry::with_builtins();
  tasks::ReferenceSolver ref(blocks, spec.diagram, 1e-4);
  ref.run(spec.duration, {port});
  double sum = 0.0;
  std::size_t n = 0;
  for (std::size_t k = 0; k < t.size() && t[k] <= spec.duration; ++k, ++n) {
    sum += std::pow(y[k] - ref.value(0, t[k], signal), 2);
  }
  return std::sqrt(sum / static_cast<double>(n));
}

// The arm-and-payload example: the payload's distance to the wall follows
// the monolithic solution through the impact and the pushing; the arm,
// driven by the grip force over 10 ms steps, drifts from the payload, less
// with drift_time (docs/rim.md says how much).
// rim_arm_contact.yaml with its drift_time line replaced by `with` ("":
// removed).
std::string arm_contact_with(const std::string& with) {
  std::ifstream in(std::string(RTCOSIM_EXAMPLES_DIR) + "/rim_arm_contact.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string yaml = text.str();
  const auto at = yaml.find("      drift_time:");
  if (at == std::string::npos) return "";
  yaml.replace(at, yaml.find('\n', at) + 1 - at, with);
  return yaml;
}

TEST(RimCoupling, ArmContactDistanceFollowsTheMonolithicSolution) {
  const auto spec = rtcosim::testing::load_example("rim_arm_contact.yaml");
  const double distance = rms_error(spec, "payload", {"load", "x"}, 0);
  const double arm_x = rms_error(spec, "arm", {"robot", "x"}, 0);
  const std::string yaml = arm_contact_with("");
  ASSERT_FALSE(yaml.empty());
  const double arm_x_free = rms_error(spec_of(yaml), "arm", {"robot", "x"}, 0);
  std::printf(
      "rim_arm_contact.yaml: RMS error payload-wall distance %.3g m; arm tip x %.3g m (%.3g m without "
      "drift_time)\n",
      distance, arm_x, arm_x_free);
  EXPECT_LT(distance, 1e-3);
  EXPECT_LT(arm_x, 0.5 * arm_x_free);
}

// position_drift_time also pulls the arm to the payload's interface
// position: the offset the impact leaves (velocity-level correction only)
// shrinks, in the arm's tip and in the payload's tangential position, at
// the price of a larger error of the wall distance (docs/rim.md, drift).
TEST(RimCoupling, PositionDriftTimeHoldsTheArmOnThePayload) {
  const auto velocity_only = rtcosim::testing::load_example("rim_arm_contact.yaml");
  const std::string yaml = arm_contact_with("      drift_time: 0.05\n      position_drift_time: 0.1\n");
  ASSERT_FALSE(yaml.empty());
  const auto both = spec_of(yaml);
  const double tip_y = rms_error(both, "arm", {"robot", "x"}, 1);
  const double tip_y_velocity = rms_error(velocity_only, "arm", {"robot", "x"}, 1);
  const double load_y = rms_error(both, "payload", {"load", "x"}, 1);
  const double load_y_velocity = rms_error(velocity_only, "payload", {"load", "x"}, 1);
  const double distance = rms_error(both, "payload", {"load", "x"}, 0);
  std::printf(
      "position_drift_time 0.1 s: RMS arm tip y %.3g m (%.3g m velocity only), payload y %.3g m (%.3g m), "
      "wall distance %.3g m\n",
      tip_y, tip_y_velocity, load_y, load_y_velocity, distance);
  EXPECT_LT(tip_y, 0.2 * tip_y_velocity);
  EXPECT_LT(load_y, 0.5 * load_y_velocity);
  EXPECT_LT(distance, 2e-3);
}

}  // namespace
}  // namespace rtcosim

namespace rtcosim {
namespace {

// The planar_arm block on its own (interface: none), one task, RK4 at 1 ms:
// two links under gravity with the second joint locked at 90 degrees swing
// as one rigid compound pendulum. Point masses m1 at l1 along link 1 and m2
// at the tip, r2^2 = l1^2 + l2^2 (joint at 90 degrees); the centre of mass
// lies at d = |m1 p1 + m2 p2| / M from the pivot, so small swings about the
// hanging equilibrium have omega^2 = M g d / (m1 l1^2 + m2 r2^2). The locked
// joint stays where it was and the energy stays put.
TEST(RimCoupling, ALockedArmSwingsAsOneRigidPendulum) {
  const double l1 = 1.0, l2 = 0.5, m1 = 2.0, m2 = 1.0, g = 9.81;
  // Link 1 along angle a, the tip at a + pi/2: p1 = l1 (cos a, sin a),
  // p2 = p1 + l2 (-sin a, cos a). The centre of mass hangs straight down
  // when its angle, a + atan2(m2 l2, M l1), is -pi/2.
  const double M = m1 + m2;
  const double offset = std::atan2(m2 * l2, M * l1);
  const double a0 = -M_PI / 2 - offset + 0.01;  // 0.01 rad from the equilibrium
  const std::string yaml =
      "name: pendulum\nduration: 10s\nrealtime: off\ntasks:\n  - {name: t, period: 1ms, integrator: rk4}\n"
      "blocks:\n  - {name: arm, type: planar_arm, task: t, params: {lengths: [1.0, 0.5], masses: [2.0, 1.0], "
      "locked_joints: [1], interface: none, q0: [" +
      std::to_string(a0) + ", 1.5707963267948966]}}\nwires: []\n";
  const auto spec = spec_of(yaml);
  auto graph = build_graph(spec);
  auto* task = graph->find_task("t");
  const auto q = task->partition().find_output({"arm", "q"});
  const auto energy = task->partition().find_output({"arm", "energy"});
  std::vector<double> t, angle;
  double e0 = NAN, worst_e = 0.0, worst_lock = 0.0;
  runtime::VirtualExecutor(*graph).run(10.0, [&](runtime::TaskRuntime& tk, const runtime::FrameRecord&) {
    const auto& p = tk.partition();
    t.push_back(p.time());
    angle.push_back(p.output(q)[0] - (-M_PI / 2 - offset));
    const double e = p.output(energy)[0];
    if (std::isnan(e0)) e0 = e;
    worst_e = std::max(worst_e, std::fabs(e - e0));
    worst_lock = std::max(worst_lock, std::fabs(p.output(q)[1] - M_PI / 2));
  });
  // Period from the first and the last upward zero crossing.
  std::vector<double> crossings;
  for (std::size_t k = 1; k < t.size(); ++k) {
    if (angle[k - 1] < 0.0 && angle[k] >= 0.0) {
      crossings.push_back(t[k - 1] + (t[k] - t[k - 1]) * (-angle[k - 1]) / (angle[k] - angle[k - 1]));
    }
  }
  ASSERT_GE(crossings.size(), 3u);
  const double period = (crossings.back() - crossings.front()) / static_cast<double>(crossings.size() - 1);
  const double d = std::hypot(M * l1, m2 * l2) / M;
  const double inertia = m1 * l1 * l1 + m2 * (l1 * l1 + l2 * l2);
  const double expected = 2 * M_PI / std::sqrt(M * g * d / inertia);
  std::printf(
      "locked arm: period %.6f s, small-swing theory %.6f s; energy drift %.2g J; locked joint moved %.2g rad\n",
      period, expected, worst_e, worst_lock);
  // 0.01 rad lengthens the period by 1 + theta^2/16 = 1 + 6e-6.
  EXPECT_NEAR(period / expected, 1.0, 2e-5);
  EXPECT_LT(worst_e, 1e-9);
  EXPECT_LT(worst_lock, 1e-12);
}

}  // namespace
}  // namespace rtcosim
