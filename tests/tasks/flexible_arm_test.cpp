// The flexible-link arm (tasks/mechanics/flexible_arm.hpp) against hand
// integrals, the clamped beam's analytic frequencies, its own energy under
// RK4, and an independent computation of its terms and its reduced
// interface model (finite differences of a separately written kinematics,
// Simpson's rule instead of the model's Gauss quadrature).
#include "tasks/mechanics/flexible_arm.hpp"

#include <cmath>
#include <functional>
#include <numbers>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "tasks/block_registry.hpp"
#include "tasks/mechanics/reduced_interface.hpp"
#include "tests/support/alloc_counter.hpp"

namespace rtcosim::tasks::mechanics {
namespace {

Eigen::VectorXd vec(std::initializer_list<double> values) {
  Eigen::VectorXd out(static_cast<Eigen::Index>(values.size()));
  Eigen::Index k = 0;
  for (const double x : values) out(k++) = x;
  return out;
}

constexpr double kBetaL1 = 1.875104068711961;
constexpr double kBetaL2 = 4.694091132974175;

// The textbook cantilever mode, written directly (not the model's
// cancellation-free form): phi = cosh bx - cos bx - s (sinh bx - sin bx).
struct Mode {
  double b, s;
  Mode(double beta_l, double length)
      : b(beta_l / length), s((std::cosh(beta_l) + std::cos(beta_l)) / (std::sinh(beta_l) + std::sin(beta_l))) {}
  [[nodiscard]] double phi(double x) const {
    return std::cosh(b * x) - std::cos(b * x) - s * (std::sinh(b * x) - std::sin(b * x));
  }
  [[nodiscard]] double slope(double x) const {
    return b * (std::sinh(b * x) + std::sin(b * x) - s * (std::cosh(b * x) - std::cos(b * x)));
  }
  [[nodiscard]] double curvature(double x) const {
    return b * b * (std::cosh(b * x) + std::cos(b * x) - s * (std::sinh(b * x) + std::sin(b * x)));
  }
};

// Composite Simpson's rule on [0, l], 2 m intervals.
double simpson(const std::function<double(double)>& f, double l, int m = 400) {
  const int n = 2 * m;
  const double h = l / n;
  double sum = f(0.0) + f(l);
  for (int i = 1; i < n; ++i) sum += (i % 2 ? 4.0 : 2.0) * f(i * h);
  return sum * h / 3.0;
}

// One flexible link (L = 1.2 m, EI = 50 N m^2, rhoA = 2 kg/m, tip mass
// 0.5 kg), one mode, no gravity; q = (theta, eta). A beam point is
// x e + u n with u = phi(x) eta, e = (cos th, sin th), n = (-sin th, cos th):
// its velocity is om (x n - u e) + u' n, so with I_2 = rhoA int phi^2 + m_t phi(L)^2,
//   M_thth = rhoA L^3/3 + m_t L^2 + I_2 eta^2
//   M_theta = rhoA int x phi dx + m_t L phi(L),  int x phi dx = phi''(0)/b^4 = 2/b^2
//             (phi = phi''''/b^4 twice by parts, phi'' = phi''' = 0 at the free end)
//   M_etaeta = I_2,
// and from T = (M_thth om^2 + 2 M_theta om eta' + I_2 eta'^2)/2:
//   c = (2 I_2 eta eta' om, -I_2 eta om^2),  f_e = -EI b^4 L eta (int phi''^2 = b^4 int phi^2).
// int phi^2 = L for this normalisation; Simpson checks it independently.
TEST(FlexibleArmMechanics, MassMatrixAndInertiaTermsMatchHandIntegrals) {
  const double l = 1.2, ei = 50.0, rho = 2.0, mt = 0.5;
  const FlexibleArm arm(
      {.lengths = {l}, .masses = {mt}, .gravity = 0.0, .bending_stiffness = ei, .mass_per_length = rho});
  const Mode m1(kBetaL1, l);
  const double phi_l = m1.phi(l);
  const double int_phi2 = simpson([&](double x) { return m1.phi(x) * m1.phi(x); }, l);
  EXPECT_NEAR(int_phi2, l, 1e-9);
  EXPECT_NEAR(std::fabs(phi_l), 2.0, 1e-9);
  const double i2 = rho * int_phi2 + mt * phi_l * phi_l;
  const double coupling = rho * 2.0 / (m1.b * m1.b) + mt * l * phi_l;
  auto terms = arm.make_terms();

  arm.evaluate(vec({0.0, 0.0}), vec({0.0, 0.0}), 0.0, terms);
  EXPECT_NEAR(terms.mass(0, 0), rho * l * l * l / 3 + mt * l * l, 1e-12);
  EXPECT_NEAR(terms.mass(0, 1), coupling, 1e-12);
  EXPECT_NEAR(terms.mass(1, 0), coupling, 1e-12);
  EXPECT_NEAR(terms.mass(1, 1), i2, 1e-9);

  const double th = 0.3, eta = 0.02, om = 0.7, etad = 0.4;
  arm.evaluate(vec({th, eta}), vec({om, etad}), 0.0, terms);
  EXPECT_NEAR(terms.mass(0, 0), rho * l * l * l / 3 + mt * l * l + i2 * eta * eta, 1e-11);
  EXPECT_NEAR(terms.mass(0, 1), coupling, 1e-12);
  EXPECT_NEAR(terms.mass(1, 1), i2, 1e-9);
  EXPECT_NEAR(terms.coriolis(0), 2 * i2 * eta * etad * om, 1e-11);
  EXPECT_NEAR(terms.coriolis(1), -i2 * eta * om * om, 1e-11);
  EXPECT_NEAR(terms.applied(0), 0.0, 1e-12);
  EXPECT_NEAR(terms.applied(1), -ei * std::pow(m1.b, 4) * l * eta, 1e-9);
  EXPECT_NEAR(arm.shape(0, l), phi_l, 1e-12);
  // The tip: (L cos th - u sin th, L sin th + u cos th).
  Eigen::VectorXd tip(2);
  arm.interface_position(vec({th, eta}), tip);
  EXPECT_NEAR(tip(0), l * std::cos(th) - phi_l * eta * std::sin(th), 1e-12);
  EXPECT_NEAR(tip(1), l * std::sin(th) + phi_l * eta * std::cos(th), 1e-12);
}

// The joint locked, no tip mass: the beam is a clamped-free cantilever and
// the assumed modes are its eigenfunctions, so the constrained system
// K phi = w^2 M phi has w_k = (b_k L)^2 sqrt(EI / (rhoA L^4)) exactly,
// 1.875104^2 sqrt(EI/(rhoA L^4)) for the first.
TEST(FlexibleArmMechanics, LockedJointGivesTheCantileverFrequencies) {
  const double l = 0.9, ei = 12.0, rho = 1.5;
  const FlexibleArm arm({.lengths = {l},
                         .masses = {0.0},
                         .gravity = 0.0,
                         .locked_joints = {0},
                         .modes = 3,
                         .bending_stiffness = ei,
                         .mass_per_length = rho});
  auto terms = arm.make_terms();
  Eigen::MatrixXd k(3, 3);
  for (int j = 0; j < 3; ++j) {
    Eigen::VectorXd q = Eigen::VectorXd::Zero(4);
    q(1 + j) = 1.0;
    arm.evaluate(q, Eigen::VectorXd::Zero(4), 0.0, terms);
    k.col(j) = -terms.applied.tail(3);
  }
  arm.evaluate(Eigen::VectorXd::Zero(4), Eigen::VectorXd::Zero(4), 0.0, terms);
  ASSERT_EQ(terms.ac.rows(), 1);
  EXPECT_EQ(terms.ac(0, 0), 1.0);
  // The lock removes theta: what is left is the (eta, eta) block.
  const Eigen::MatrixXd m = terms.mass.bottomRightCorner(3, 3);
  Eigen::GeneralizedSelfAdjointEigenSolver<Eigen::MatrixXd> eig(k, m);
  const double scale = std::sqrt(ei / (rho * std::pow(l, 4)));
  const double beta_l[3] = {1.875104068711961, 4.694091132974175, 7.854757438237613};
  for (int j = 0; j < 3; ++j) {
    const double expected = beta_l[j] * beta_l[j] * scale;
    EXPECT_NEAR(std::sqrt(eig.eigenvalues()(j)) / expected, 1.0, 1e-9) << "mode " << j;
    EXPECT_NEAR(arm.clamped_frequency(j) / expected, 1.0, 1e-14);
  }
  EXPECT_NEAR(std::sqrt(eig.eigenvalues()(0)), 1.875104068711961 * 1.875104068711961 * scale, 1e-8);
}

// Free, undamped, under gravity with joint springs: RK4 on M v' = f - c
// keeps v^T M v / 2 + V to its order. RK4's global error is O(h^4); on
// the nearly linear modal oscillation its energy error is the amplitude
// factor 1 - (w h)^6 / 144 per step, O(h^5) over a fixed time. The ratio
// between h and h/2 therefore lies between 2^4 and 2^5 (23.4 here): any
// inconsistency of M, c and f with the potential would make it O(1).
TEST(FlexibleArmMechanics, UndampedFreeArmConservesEnergyToTheIntegratorsOrder) {
  const FlexibleArm arm({.lengths = {0.6, 1.0},
                         .masses = {1.0, 0.3},
                         .gravity = 9.81,
                         .joint_stiffness = {5.0, 0.0},
                         .joint_targets = {0.2, 0.0},
                         .modes = 2,
                         .bending_stiffness = 20.0,
                         .mass_per_length = 1.0});
  auto terms = arm.make_terms();
  const int n = arm.dofs();
  const auto accel = [&](const Eigen::VectorXd& q, const Eigen::VectorXd& v) -> Eigen::VectorXd {
    arm.evaluate(q, v, 0.0, terms);
    return terms.mass.ldlt().solve(terms.applied - terms.coriolis);
  };
  const auto energy = [&](const Eigen::VectorXd& q, const Eigen::VectorXd& v) {
    arm.evaluate(q, v, 0.0, terms);
    return 0.5 * v.dot(terms.mass * v) + arm.potential(q);
  };
  const auto worst_error = [&](double h) {
    Eigen::VectorXd q = vec({-0.4, 0.8, 0.03, -0.004});
    Eigen::VectorXd v = Eigen::VectorXd::Zero(n);
    const double e0 = energy(q, v);
    double worst = 0.0;
    const int steps = static_cast<int>(std::lround(1.0 / h));
    for (int s = 0; s < steps; ++s) {
      const Eigen::VectorXd k1q = v, k1v = accel(q, v);
      const Eigen::VectorXd k2q = v + 0.5 * h * k1v, k2v = accel(q + 0.5 * h * k1q, k2q);
      const Eigen::VectorXd k3q = v + 0.5 * h * k2v, k3v = accel(q + 0.5 * h * k2q, k3q);
      const Eigen::VectorXd k4q = v + h * k3v, k4v = accel(q + h * k3q, k4q);
      q += h / 6 * (k1q + 2 * k2q + 2 * k3q + k4q);
      v += h / 6 * (k1v + 2 * k2v + 2 * k3v + k4v);
      worst = std::max(worst, std::fabs(energy(q, v) - e0));
    }
    return worst / std::fabs(e0);
  };
  const double e1 = worst_error(1e-3);
  const double e2 = worst_error(5e-4);
  std::printf("flexible arm energy: largest relative error %.3e at 1 ms, %.3e at 0.5 ms, ratio %.2f\n", e1, e2,
              e1 / e2);
  EXPECT_LT(e1, 1e-4);
  EXPECT_GT(e1 / e2, 15.0);
  EXPECT_LT(e1 / e2, 33.0);
}

// An independent model of a 3-link arm whose middle link is the beam
// (2 modes, tip mass), the shoulder (joint 1) locked: positions written
// directly, Jacobians and J' v = d^2/ds^2 p(q + s v) by finite differences,
// the beam by Simpson's rule, f_e from int phi_i'' phi_j''; then eqs. 3-5
// literally with explicit inverses.
struct Independent {
  std::vector<double> len{0.8, 1.0, 0.4}, mass{2.0, 0.7, 1.0};
  double ei = 40.0, rho = 1.2, g = 9.81;
  std::vector<Mode> modes{Mode(kBetaL1, 1.0), Mode(kBetaL2, 1.0)};
  std::vector<double> zeta{0.02, 0.05}, jdamp{0.5, 0.0, 0.3}, jk{10.0, 0.0, 4.0}, jt{0.1, 0.0, -0.2};
  static constexpr int kJ = 3, kF = 1, kN = 5;

  // The point at x along link `link` (x = its length: its tip).
  [[nodiscard]] Eigen::Vector2d point(const Eigen::VectorXd& q, int link, double x) const {
    Eigen::Vector2d p(0, 0);
    double theta = 0.0;
    for (int i = 0; i <= link; ++i) {
      theta += q(i);
      double th = theta;
      if (i > kF) {
        for (int k = 0; k < 2; ++k) th += modes[k].slope(len[kF]) * q(kJ + k);
      }
      const Eigen::Vector2d e(std::cos(th), std::sin(th)), nn(-std::sin(th), std::cos(th));
      const double along = i < link ? len[i] : x;
      p += along * e;
      if (i == kF) {
        for (int k = 0; k < 2; ++k) p += modes[k].phi(along) * q(kJ + k) * nn;
      }
    }
    return p;
  }
  [[nodiscard]] Eigen::MatrixXd jacobian(const Eigen::VectorXd& q, int link, double x) const {
    Eigen::MatrixXd j(2, kN);
    const double h = 1e-6;
    for (int c = 0; c < kN; ++c) {
      Eigen::VectorXd a = q, b = q;
      a(c) += h;
      b(c) -= h;
      j.col(c) = (point(a, link, x) - point(b, link, x)) / (2 * h);
    }
    return j;
  }
  [[nodiscard]] Eigen::Vector2d jdot_v(const Eigen::VectorXd& q, const Eigen::VectorXd& v, int link, double x) const {
    const double s = 1e-4;
    return (point(q + s * v, link, x) - 2 * point(q, link, x) + point(q - s * v, link, x)) / (s * s);
  }
  void terms(const Eigen::VectorXd& q, const Eigen::VectorXd& v, MechanicalTerms& t) const {
    t.mass = Eigen::MatrixXd::Zero(kN, kN);
    t.coriolis = Eigen::VectorXd::Zero(kN);
    t.applied = Eigen::VectorXd::Zero(kN);
    const auto add = [&](double m, int link, double x) {
      const Eigen::MatrixXd j = jacobian(q, link, x);
      t.mass += m * j.transpose() * j;
      t.coriolis += m * j.transpose() * jdot_v(q, v, link, x);
      t.applied -= m * g * j.row(1).transpose();
    };
    for (int i = 0; i < kJ; ++i) add(mass[i], i, len[i]);
    // The beam: Simpson's rule over the density, entry by entry.
    const int m = 200;
    const double h = len[kF] / (2 * m);
    for (int s = 0; s <= 2 * m; ++s) {
      const double w = (s == 0 || s == 2 * m ? 1.0 : (s % 2 ? 4.0 : 2.0)) * h / 3.0;
      add(rho * w, kF, s * h);
    }
    for (int a = 0; a < 2; ++a) {
      for (int b = 0; b < 2; ++b) {
        const double kab =
            ei * simpson([&](double x) { return modes[a].curvature(x) * modes[b].curvature(x); }, len[kF]);
        t.applied(kJ + a) -= kab * q(kJ + b);
      }
      const double w = modes[a].b * modes[a].b * std::sqrt(ei / rho);
      t.applied(kJ + a) -= 2 * zeta[a] * w * rho * len[kF] * v(kJ + a);
    }
    for (int i = 0; i < kJ; ++i) t.applied(i) -= jdamp[i] * v(i) + jk[i] * (q(i) - jt[i]);
    t.ac = Eigen::MatrixXd::Zero(1, kN);
    t.ac(0, 1) = 1.0;
    t.ac_dot_v = Eigen::VectorXd::Zero(1);
    t.ai = jacobian(q, kJ - 1, len[kJ - 1]);
    t.ai_dot_v = jdot_v(q, v, kJ - 1, len[kJ - 1]);
  }
};

FlexibleArm independent_model(const Independent& r) {
  return FlexibleArm({.lengths = r.len,
                      .masses = r.mass,
                      .joint_damping = r.jdamp,
                      .gravity = r.g,
                      .locked_joints = {1},
                      .joint_stiffness = r.jk,
                      .joint_targets = r.jt,
                      .flexible_link = 1,
                      .modes = 2,
                      .bending_stiffness = r.ei,
                      .mass_per_length = r.rho,
                      .modal_damping = r.zeta});
}

double rel(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) { return (a - b).norm() / b.norm(); }

TEST(FlexibleArmRim, TermsAndReducedModelMatchAnIndependentComputation) {
  const Independent ref;
  const FlexibleArm arm = independent_model(ref);
  const Eigen::VectorXd q = vec({0.4, 0.7, -0.5, 0.03, -0.006});
  const Eigen::VectorXd v = vec({0.9, 0.0, -1.3, 0.5, 0.8});
  auto mine = arm.make_terms();
  arm.evaluate(q, v, 0.0, mine);
  MechanicalTerms theirs;
  ref.terms(q, v, theirs);
  EXPECT_LT(rel(mine.mass, theirs.mass), 1e-8);
  EXPECT_LT(rel(mine.coriolis, theirs.coriolis), 1e-6);
  EXPECT_LT(rel(mine.applied, theirs.applied), 1e-8);
  EXPECT_LT(rel(mine.ai, theirs.ai), 1e-8);
  EXPECT_LT(rel(mine.ai_dot_v, theirs.ai_dot_v), 1e-6);
  Eigen::VectorXd tip(2);
  arm.interface_position(q, tip);
  EXPECT_LT((tip - ref.point(q, 2, ref.len[2])).norm(), 1e-13);

  ReducedInterface reducer(arm);
  auto rim = reducer.make_quantities();
  reducer.compute(mine, rim);
  ASSERT_EQ(rim.status, RimStatus::kOk);
  const auto& t = theirs;
  const Eigen::MatrixXd minv = t.mass.inverse();
  const Eigen::MatrixXd s_inv = (t.ac * minv * t.ac.transpose()).inverse();
  const Eigen::MatrixXd pc = minv * t.ac.transpose() * s_inv * t.ac;
  const Eigen::MatrixXd id = Eigen::MatrixXd::Identity(5, 5);
  const Eigen::MatrixXd m_eff = (t.ai * (id - pc) * minv * t.ai.transpose()).inverse();
  const Eigen::VectorXd lt = m_eff * (t.ai * (id - pc) * minv * t.applied);
  const Eigen::VectorXd z =
      m_eff * (t.ai * (id - pc) * minv * t.coriolis - t.ai_dot_v + t.ai * minv * t.ac.transpose() * s_inv * t.ac_dot_v);
  std::printf("flexible arm RIM: M_eff = [%.6g %.6g; %.6g %.6g], lambda~ = (%.6g, %.6g), z = (%.6g, %.6g)\n",
              m_eff(0, 0), m_eff(0, 1), m_eff(1, 0), m_eff(1, 1), lt(0), lt(1), z(0), z(1));
  EXPECT_LT(rel(rim.m_eff, m_eff), 1e-7);
  EXPECT_LT(rel(rim.lambda_tilde, lt), 1e-7);
  EXPECT_LT(rel(rim.z, z), 1e-5);
  EXPECT_GT(lt.norm(), 1.0);
  EXPECT_GT(z.norm(), 0.1);
}

// Stretched with the shoulder locked, the rigid arm's tip cannot move along
// the arm (singular_interface); the beam's bending gives the flexible arm
// that direction back, with a finite effective mass.
TEST(FlexibleArmRim, BendingRemovesTheRigidArmsSingularity) {
  FlexibleArm::Params p{.lengths = {1.0, 0.8, 0.4},
                        .masses = {4.0, 0.5, 1.0},
                        .gravity = 0.0,
                        .locked_joints = {1},
                        .flexible_link = 1,
                        .modes = 1,
                        .bending_stiffness = 200.0,
                        .mass_per_length = 3.0};
  const FlexibleArm arm(p);
  auto terms = arm.make_terms();
  ReducedInterface reducer(arm);
  auto rim = reducer.make_quantities();
  // Links 1 and 2 in line with link 0 except for the shoulder angle a: the
  // rigid tip is stretched along R when joint 2 is turned back to R's angle.
  const double a = 0.3;
  const double back = -std::atan2(1.0 * std::sin(a), 1.0 * std::cos(a) + 0.8);
  const Eigen::VectorXd q = vec({0.2, a, back, 0.0});
  arm.evaluate(q, Eigen::VectorXd::Zero(4), 0.0, terms);
  reducer.compute(terms, rim);
  EXPECT_EQ(rim.status, RimStatus::kOk);
  EXPECT_LT(rim.condition, 1e4);
  // The rigid arm (the beam's column removed) is singular there.
  MechanicalTerms rigid{terms.mass.topLeftCorner(3, 3),
                        terms.coriolis.head(3),
                        terms.applied.head(3),
                        terms.ac.leftCols(3),
                        terms.ac_dot_v,
                        terms.ai.leftCols(3),
                        terms.ai_dot_v};
  const PlanarArm rigid_arm({.lengths = {1.0, 0.8, 0.4}, .masses = {4.0, 0.5, 1.0}, .locked_joints = {1}});
  ReducedInterface rigid_reducer(rigid_arm);
  auto rigid_rim = rigid_reducer.make_quantities();
  rigid_reducer.compute(rigid, rigid_rim);
  EXPECT_EQ(rigid_rim.status, RimStatus::kSingularInterface);
}

TEST(FlexibleArmRim, EvaluateAndComputeAllocateNothing) {
  const Independent ref;
  const FlexibleArm arm = independent_model(ref);
  auto terms = arm.make_terms();
  ReducedInterface reducer(arm);
  auto rim = reducer.make_quantities();
  const Eigen::VectorXd q = vec({0.4, 0.7, -0.5, 0.03, -0.006});
  const Eigen::VectorXd v = vec({0.9, 0.0, -1.3, 0.5, 0.8});
  Eigen::VectorXd x(2);
  testing::AllocationScope scope;
  arm.evaluate(q, v, 0.0, terms);
  reducer.compute(terms, rim);
  arm.interface_position(q, x);
  const double e = arm.potential(q);
  EXPECT_EQ(scope.count(), 0U);
  EXPECT_EQ(rim.status, RimStatus::kOk);
  EXPECT_TRUE(std::isfinite(e));
}

TEST(FlexibleArmMechanics, ParametersAreCheckedByName) {
  const auto error = [](FlexibleArm::Params p) {
    try {
      const FlexibleArm arm(std::move(p));
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const FlexibleArm::Params ok{
      .lengths = {1.0, 0.5}, .masses = {1.0, 0.0}, .bending_stiffness = 10.0, .mass_per_length = 1.0};
  EXPECT_EQ(error(ok), "no error");
  auto p = ok;
  p.modes = 4;
  EXPECT_EQ(error(p), "flexible arm: modes = 4: must be 1, 2 or 3");
  p = ok;
  p.bending_stiffness = 0.0;
  EXPECT_NE(error(p).find("bending_stiffness"), std::string::npos);
  p = ok;
  p.flexible_link = 2;
  EXPECT_EQ(error(p), "flexible arm: flexible_link 2 is not in [0, 1]");
  p = ok;
  p.flexible_link = 1;
  p.masses = {0.0, 1.0};
  EXPECT_NE(error(p).find("masses[0] = 0"), std::string::npos);
  p = ok;
  p.modal_damping = {0.1, 0.1};
  EXPECT_NE(error(p).find("modal_damping needs one entry per mode (1)"), std::string::npos);

  // Through the block registry: the block and the parameter by name.
  const auto r = BlockRegistry::with_builtins();
  const auto block_error = [&](BlockParams bp) {
    try {
      (void)r.create("flexible_arm", "b", bp);
    } catch (const BlockError& e) {
      return std::string(e.parameter()) + ": " + e.what();
    }
    return std::string("no error");
  };
  EXPECT_EQ(block_error({{"lengths", Vector{1.0}},
                         {"masses", Vector{0.0}},
                         {"bending_stiffness", 5.0},
                         {"mass_per_length", 1.0},
                         {"interface", std::string("rim")},
                         {"q0", Vector{0.0, 0.0}}}),
            "no error");
  EXPECT_EQ(block_error({{"lengths", Vector{1.0}},
                         {"masses", Vector{0.0}},
                         {"bending_stiffness", 5.0},
                         {"mass_per_length", 1.0},
                         {"modes", 5.0}})
                .rfind("modes: ", 0),
            0U);
  EXPECT_EQ(block_error({{"lengths", Vector{1.0}}, {"masses", Vector{0.0}}, {"mass_per_length", 1.0}})
                .rfind("bending_stiffness: ", 0),
            0U);
  EXPECT_EQ(block_error({{"lengths", Vector{1.0}},
                         {"masses", Vector{0.0}},
                         {"bending_stiffness", 5.0},
                         {"mass_per_length", 1.0},
                         {"q0", Vector{0.0}}})
                .rfind("q0: ", 0),
            0U);
}

}  // namespace
}  // namespace rtcosim::tasks::mechanics
