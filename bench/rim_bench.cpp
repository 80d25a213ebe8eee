// ns per reduced interface model (docs/rim.md): ReducedInterface::compute,
// which a mechanical block runs at every output evaluation (each stage of
// its integrator; the link takes the one at the frame's end), giving
// M_eff, lambda~ and z_i (eqs. 3-5), for interfaces of n_i = 1, 3 and 6
// dimensions of a 12-dof subsystem with 2 bilateral constraints, beside its
// baseline in the same binary: the same subsystem's plain forward dynamics
// (M v' = f with the constraint forces, two LDLT factorisations and solves),
// which every frame of a mechanical block computes anyway. The ratio is
// what the RIM adds to a frame that produces one.
//
// The receiving side, BM_RimCoupledFrames: one whole frame (drain, RK4
// step, publish) of each of two 6-mass chains, one driven by a force at an
// interface of n_i = 1, 3 or 6 masses and sending its RIM, the other
// integrating that RIM and sending the force back, against
// BM_FreeBodyFrames: the same two chains' frames with nothing at their
// interfaces (each still computes its own RIM, as every mechanical block
// does at its output), in the same binary.
#include <cmath>
#include <memory>
#include <string>

#include <Eigen/Dense>
#include <benchmark/benchmark.h>

#include "bench/frames.hpp"
#include "tasks/mechanics/mechanical_model.hpp"
#include "tasks/mechanics/reduced_interface.hpp"

namespace {

using rtcosim::tasks::mechanics::MechanicalTerms;
using rtcosim::tasks::mechanics::ReducedInterface;

constexpr int kDofs = 12;
constexpr int kConstraints = 2;

// Deterministic, well-conditioned terms: M = B B^T + n I, smooth Jacobians.
MechanicalTerms terms(int ni) {
  MechanicalTerms t;
  Eigen::MatrixXd b(kDofs, kDofs);
  for (int i = 0; i < kDofs; ++i) {
    for (int j = 0; j < kDofs; ++j) b(i, j) = std::sin(0.7 * i + 1.3 * j);
  }
  t.mass = b * b.transpose() + kDofs * Eigen::MatrixXd::Identity(kDofs, kDofs);
  t.coriolis = Eigen::VectorXd::LinSpaced(kDofs, -0.5, 0.5);
  t.applied = Eigen::VectorXd::LinSpaced(kDofs, 1.0, 2.0);
  t.ac = Eigen::MatrixXd::Zero(kConstraints, kDofs);
  for (int r = 0; r < kConstraints; ++r) t.ac(r, r) = 1.0, t.ac(r, r + 1) = -1.0;
  t.ac_dot_v = Eigen::VectorXd::Zero(kConstraints);
  t.ai.resize(ni, kDofs);
  for (int r = 0; r < ni; ++r) {
    for (int j = 0; j < kDofs; ++j) t.ai(r, j) = std::cos(0.3 * r + 0.9 * j) * (j >= kConstraints + r ? 1.0 : 0.1);
  }
  t.ai_dot_v = Eigen::VectorXd::Constant(ni, 0.01);
  return t;
}

void BM_RimCompute(benchmark::State& state) {
  const int ni = static_cast<int>(state.range(0));
  const MechanicalTerms t = terms(ni);
  ReducedInterface rim(kDofs, kConstraints, ni);
  auto q = rim.make_quantities();
  for (auto _ : state) {
    rim.compute(t, q);
    benchmark::DoNotOptimize(q.m_eff.data());
    benchmark::DoNotOptimize(q.z.data());
  }
  if (q.status != rtcosim::tasks::mechanics::RimStatus::kOk) state.SkipWithError("the RIM is not ok");
}
BENCHMARK(BM_RimCompute)->Arg(1)->Arg(3)->Arg(6);

// The baseline: the constrained forward dynamics of the same subsystem.
void BM_ForwardDynamics(benchmark::State& state) {
  const MechanicalTerms t = terms(1);
  Eigen::LDLT<Eigen::MatrixXd> m_ldlt(kDofs), s_ldlt(kConstraints);
  // rc sized here: the right-hand side as an expression would put a
  // temporary on the heap in every iteration, which the RIM does not.
  Eigen::VectorXd f(kDofs), vdot(kDofs), mu(kConstraints), rc(kConstraints);
  Eigen::MatrixXd minv_act(kDofs, kConstraints), s(kConstraints, kConstraints);
  for (auto _ : state) {
    f = t.applied - t.coriolis;
    m_ldlt.compute(t.mass);
    vdot = m_ldlt.solve(f);
    minv_act = m_ldlt.solve(t.ac.transpose());
    s.noalias() = t.ac * minv_act;
    s_ldlt.compute(s);
    rc.noalias() = t.ac * vdot;
    rc += t.ac_dot_v;
    rc = -rc;
    mu = s_ldlt.solve(rc);
    vdot.noalias() += minv_act * mu;
    benchmark::DoNotOptimize(vdot.data());
  }
}
BENCHMARK(BM_ForwardDynamics);

// Two 6-mass chains; `receiver` integrates `sender`'s RIM over the masses
// 0 .. ni-1 (ni = 0: no coupling at all, the baseline).
std::string chains(int ni) {
  std::string masses = "[";
  for (int k = 0; k < ni; ++k) masses += (k > 0 ? ", " : "") + std::to_string(k);
  masses += "]";
  const std::string chain = "masses: [1, 1.2, 0.8, 1.1, 0.9, 1], stiffness: [100, 80, 120, 90, 110, 100]";
  std::string g =
      "name: rim_bench\nduration: 1s\n"
      "tasks:\n"
      "  - {name: sender, period: 1ms, integrator: rk4, step: fixed}\n"
      "  - {name: receiver, period: 1ms, integrator: rk4, step: fixed}\n"
      "blocks:\n";
  if (ni == 0) {
    g += "  - {name: a, type: mass_chain, task: sender, params: {" + chain + ", interface: none}}\n";
    g += "  - {name: b, type: mass_chain, task: receiver, params: {" + chain +
         ", interface: none, q0: [0.1, 0, 0, 0, 0, 0]}}\n";
    return g + "wires: []\n";
  }
  g += "  - {name: a, type: mass_chain, task: sender, params: {" + chain +
       ", interface: force, interface_masses: " + masses + "}}\n";
  g += "  - {name: b, type: mass_chain, task: receiver, params: {" + chain +
       ", interface: rim, interface_masses: " + masses + ", q0: [0.1, 0, 0, 0, 0, 0]}}\n";
  g += "wires:\n";
  g += "  - {from: a.rim, to: b.rim, coupling: {method: rim}}\n";
  g += "  - {from: b.reaction, to: a.force, coupling: {method: zoh}}\n";
  return g;
}

void frames(benchmark::State& state, int ni) {
  auto g = rtcosim::bench::make_graph(chains(ni));
  auto& sender = *g->find_task("sender");
  auto& receiver = *g->find_task("receiver");
  for (auto _ : state) rtcosim::bench::frame_pair(sender, receiver, 1e-3);
  const double q0 = g->find_task("receiver")->partition().state()[0];
  if (!std::isfinite(q0)) state.SkipWithError("the coupled chains diverged");
}

void BM_RimCoupledFrames(benchmark::State& state) { frames(state, static_cast<int>(state.range(0))); }
BENCHMARK(BM_RimCoupledFrames)->Arg(1)->Arg(3)->Arg(6);

void BM_FreeBodyFrames(benchmark::State& state) { frames(state, 0); }
BENCHMARK(BM_FreeBodyFrames);

}  // namespace

BENCHMARK_MAIN();
