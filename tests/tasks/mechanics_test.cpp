#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>

#include <gtest/gtest.h>

#include "tasks/mechanics/mechanical_model.hpp"
#include "tasks/mechanics/reduced_interface.hpp"
#include "tests/support/alloc_counter.hpp"

namespace rtcosim::tasks::mechanics {
namespace {

constexpr double kTol = 1e-12;

struct Reduced {
  MechanicalTerms terms;
  RimQuantities rim;
};

Reduced reduce(const MechanicalModel& model, const Eigen::VectorXd& q, const Eigen::VectorXd& v) {
  Reduced r{model.make_terms(), {}};
  ReducedInterface reducer(model);
  r.rim = reducer.make_quantities();
  model.evaluate(q, v, 0.0, r.terms);
  reducer.compute(r.terms, r.rim);
  return r;
}

void expect_finite(const RimQuantities& rim) {
  EXPECT_TRUE(rim.m_eff.allFinite());
  EXPECT_TRUE(rim.lambda_tilde.allFinite());
  EXPECT_TRUE(rim.z.allFinite());
}

Eigen::VectorXd vec(std::initializer_list<double> values) {
  Eigen::VectorXd out(static_cast<Eigen::Index>(values.size()));
  Eigen::Index k = 0;
  for (const double x : values) out(k++) = x;
  return out;
}

// Two masses m1 = 2, m2 = 3, spring k = 100 and damper d = 2 between them,
// force 4 on the second, interface at the second mass, no constraint.
// P_c = 0, A_i = [0 1], M^-1 = diag(1/2, 1/3):
//   eq. 3  M_eff = (A_i M^-1 A_i^T)^-1 = (1/3)^-1 = 3 = m2
//   eq. 4  lambda~ = 3 * (1/3) * f_2 = f_2 = -k (x2 - x1) - d (v2 - v1) + 4
//                  = -100 * 0.1 - 2 * 0.5 + 4 = -7
//   eq. 5  c = 0, A_i' = 0, no A_c: z = 0.
TEST(MassChainRim, FreeSecondMassHasItsOwnMass) {
  const MassChain chain({.masses = {2.0, 3.0},
                         .stiffness = {0.0, 100.0},
                         .damping = {0.0, 2.0},
                         .force = {0.0, 4.0},
                         .joints = {},
                         .interface_mass = 1});
  const auto r = reduce(chain, vec({0.0, 0.1}), vec({0.0, 0.5}));
  EXPECT_EQ(r.rim.status, RimStatus::kOk);
  EXPECT_NEAR(r.rim.m_eff(0, 0), 3.0, kTol);
  EXPECT_NEAR(r.rim.lambda_tilde(0), -7.0, kTol);
  EXPECT_NEAR(r.rim.z(0), 0.0, kTol);
  EXPECT_NEAR(r.rim.condition, 1.0, kTol);
}

// The same masses joined rigidly (A_c = [1 -1]), a ground spring 50 on the
// first, forces (1.5, 4), interface at the second mass.
//   M^-1 A_c^T = (1/2, -1/3), S = 1/2 + 1/3 = 5/6, A_i M^-1 A_c^T = -1/3
//   G = 1/3 - (1/3)^2 / (5/6) = 1/3 - 2/15 = 1/5   => M_eff = 5 = m1 + m2
//   A_i (I - P_c) M^-1 = [0 1/3] - (-2/5) (1/2, -1/3) = [1/5 1/5]
//   lambda~ = 5 * (f_1 + f_2) / 5 = the sum of the external forces: the
//   internal spring and damper cancel, the ground spring gives -50 * 0.2:
//   lambda~ = -10 + 1.5 + 4 = -4.5;  z = 0 (A_c' = 0, c = 0).
TEST(MassChainRim, RigidlyJoinedMassesAddUp) {
  const MassChain chain({.masses = {2.0, 3.0},
                         .stiffness = {50.0, 100.0},
                         .damping = {0.0, 2.0},
                         .force = {1.5, 4.0},
                         .joints = {{0, 1}},
                         .interface_mass = 1});
  const auto r = reduce(chain, vec({0.2, 0.3}), vec({0.0, 0.5}));
  EXPECT_EQ(r.rim.status, RimStatus::kOk);
  EXPECT_NEAR(r.rim.m_eff(0, 0), 5.0, kTol);
  EXPECT_NEAR(r.rim.lambda_tilde(0), -4.5, kTol);
  EXPECT_NEAR(r.rim.z(0), 0.0, kTol);
}

// Interface at a mass fixed to the ground: G = 0, M_eff infinite. Reported,
// not propagated: status singular_interface, rank 0, finite zeros.
TEST(MassChainRim, FixedInterfaceMassIsReportedSingular) {
  const MassChain chain({.masses = {2.0, 3.0},
                         .stiffness = {0.0, 100.0},
                         .damping = {},
                         .force = {},
                         .joints = {{1, -1}},
                         .interface_mass = 1});
  const auto r = reduce(chain, vec({0.0, 0.1}), vec({0.0, 0.0}));
  EXPECT_EQ(r.rim.status, RimStatus::kSingularInterface);
  EXPECT_EQ(r.rim.rank, 0);
  expect_finite(r.rim);
  EXPECT_EQ(r.rim.m_eff(0, 0), 0.0);
}

// An interface of two masses (ni = 2): masses 2, 3, 4, the second and third
// joined rigidly (v_1 = v_2), interface velocities (v_0, v_2). Mass 0 moves
// alone, masses 1 and 2 as one body, so M_eff = diag(2, 3 + 4) and lambda~
// is the applied force on each: springs 10 (ground-0), 20 (0-1), 100 (1-2)
// at q = (0.1, 0.3, 0.35), forces (1, 2, 3):
//   f_0 = 1 - 10 * 0.1 + 20 * 0.2 = 4
//   f_1 + f_2 = 2 - 20 * 0.2 + 3 (the 1-2 spring is internal) = 1
TEST(MassChainRim, TwoInterfaceMassesGiveTheirBodiesInertia) {
  const MassChain chain({.masses = {2.0, 3.0, 4.0},
                         .stiffness = {10.0, 20.0, 100.0},
                         .damping = {},
                         .force = {1.0, 2.0, 3.0},
                         .joints = {{1, 2}},
                         .interface_mass = 0,
                         .interface_masses = {0, 2}});
  ASSERT_EQ(chain.interface_dims(), 2);
  const auto r = reduce(chain, vec({0.1, 0.3, 0.35}), vec({0.0, 0.0, 0.0}));
  EXPECT_EQ(r.rim.status, RimStatus::kOk);
  EXPECT_NEAR(r.rim.m_eff(0, 0), 2.0, kTol);
  EXPECT_NEAR(r.rim.m_eff(1, 1), 7.0, 1e-11);
  EXPECT_NEAR(r.rim.m_eff(0, 1), 0.0, kTol);
  EXPECT_NEAR(r.rim.m_eff(1, 0), 0.0, kTol);
  EXPECT_NEAR(r.rim.lambda_tilde(0), 4.0, kTol);
  EXPECT_NEAR(r.rim.lambda_tilde(1), 1.0, 1e-11);
  EXPECT_NEAR(r.rim.z.norm(), 0.0, kTol);
  Eigen::VectorXd x(2);
  chain.interface_position(vec({0.1, 0.3, 0.35}), x);
  EXPECT_EQ(x(0), 0.1);
  EXPECT_EQ(x(1), 0.35);
  EXPECT_THROW(MassChain({.masses = {1.0, 1.0}, .interface_masses = {1, 1}}), std::invalid_argument);
  EXPECT_THROW(MassChain({.masses = {1.0, 1.0}, .interface_masses = {0, 2}}), std::invalid_argument);
}

TEST(MassChainRim, BadParametersSayWhatIsWrong) {
  try {
    MassChain chain({.masses = {2.0, -1.0}});
    FAIL() << "negative mass accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("masses[1] = -1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(MassChain({.masses = {1.0}, .interface_mass = 1}), std::invalid_argument);
  EXPECT_THROW(MassChain({.masses = {1.0}, .joints = {{0, 0}}}), std::invalid_argument);
}

// Two-link arm, l = (1, 0.8), point masses m = (2, 1.5), q = (0, pi/2),
// v = (1, 0), g = 9.81. Tip Jacobians: J_1 = [0 0; 1 0],
// J_2 = [-0.8 -0.8; 1 0].
//   M = m1 J1^T J1 + m2 J2^T J2 = [4.46 0.96; 0.96 0.96]  (textbook:
//   M11 = m1 l1^2 + m2 (l1^2 + l2^2 + 2 l1 l2 cos q2), M12 = m2 (l2^2 +
//   l1 l2 cos q2), M22 = m2 l2^2)
//   c = (-m2 l1 l2 sin q2 (2 w1 w2 + w2^2), m2 l1 l2 sin q2 w1^2) = (0, 1.2)
// J_2 is invertible (det 0.8), J^-1 = [0 1; -1.25 -1], so
//   eq. 3  M_eff = (J M^-1 J^T)^-1 = J^-T M J^-1 = diag(1.5, 3.5)
//          (x: only joint 2 moves, carrying m2; y: joint 1, carrying both)
//   eq. 4  f_o = -g (m1 J1^T + m2 J2^T) e_y, lambda~ = J^-T f_o
//          = (0, -g (m1 + m2)) = (0, -34.335)
//   eq. 5  z = J^-T c - M_eff J' v, J' v = -(l1 w1^2 (c1, s1) + l2 w12^2
//          (c12, s12)) = (-1, -0.8): z = (-1.5, -1.2) - (-1.5, -2.8) = (0, 1.6)
TEST(PlanarArmRim, TwoLinkAtRightAngleMatchesHandDerivation) {
  const PlanarArm arm({.lengths = {1.0, 0.8}, .masses = {2.0, 1.5}});
  const auto r = reduce(arm, vec({0.0, std::numbers::pi / 2}), vec({1.0, 0.0}));
  EXPECT_NEAR(r.terms.mass(0, 0), 4.46, kTol);
  EXPECT_NEAR(r.terms.mass(0, 1), 0.96, kTol);
  EXPECT_NEAR(r.terms.mass(1, 0), 0.96, kTol);
  EXPECT_NEAR(r.terms.mass(1, 1), 0.96, kTol);
  EXPECT_NEAR(r.terms.coriolis(0), 0.0, kTol);
  EXPECT_NEAR(r.terms.coriolis(1), 1.2, kTol);
  EXPECT_EQ(r.rim.status, RimStatus::kOk);
  EXPECT_NEAR(r.rim.m_eff(0, 0), 1.5, 1e-10);
  EXPECT_NEAR(r.rim.m_eff(0, 1), 0.0, 1e-10);
  EXPECT_NEAR(r.rim.m_eff(1, 0), 0.0, 1e-10);
  EXPECT_NEAR(r.rim.m_eff(1, 1), 3.5, 1e-10);
  EXPECT_NEAR(r.rim.condition, 3.5 / 1.5, 1e-10);
  EXPECT_NEAR(r.rim.lambda_tilde(0), 0.0, 1e-10);
  EXPECT_NEAR(r.rim.lambda_tilde(1), -9.81 * 3.5, 1e-10);
  EXPECT_NEAR(r.rim.z(0), 0.0, 1e-10);
  EXPECT_NEAR(r.rim.z(1), 1.6, 1e-10);
}

// Stretched out (q = 0): J_2 = [0 0; 1.8 0.8] has rank 1, the tip cannot
// move along x. Reported singular with rank 1; in y, M = [6.86 2.16; 2.16
// 0.96] (det 1.92) gives [1.8 0.8] M^-1 [1.8 0.8]^T = 1.28 / 1.92 = 2/3, so
// the kept direction has M_eff_yy = 1.5 (joint 2 alone moves the tip in y,
// carrying m2 only); the blocked direction is zero, not NaN.
TEST(PlanarArmRim, StretchedArmIsReportedSingular) {
  const PlanarArm arm({.lengths = {1.0, 0.8}, .masses = {2.0, 1.5}});
  const auto r = reduce(arm, vec({0.0, 0.0}), vec({0.3, -0.2}));
  EXPECT_EQ(r.rim.status, RimStatus::kSingularInterface);
  EXPECT_EQ(r.rim.rank, 1);
  EXPECT_GT(r.rim.condition, 1e10);
  expect_finite(r.rim);
  EXPECT_NEAR(r.rim.m_eff(0, 0), 0.0, 1e-9);
  EXPECT_NEAR(r.rim.m_eff(0, 1), 0.0, 1e-9);
  EXPECT_NEAR(r.rim.m_eff(1, 1), 1.5, 1e-9);
}

// Near-stretched, q = (0, e): J_2 = [-0.8 sin e, -0.8 sin e; 1 + 0.8 cos e,
// 0.8 cos e] is invertible, so e_x^T M_eff e_x is twice the kinetic energy
// of the joint motion giving a unit tip velocity along x: v1 = cot e moves
// m1 at cot e, the tip carries m2 at 1, M_eff_xx = 2 cot^2 e + 1.5; along y
// v1 = 1 = -v2 moves both masses at 1, M_eff_yy = 3.5; the cross term is
// m1 cot e * 1 = 2 cot e. The condition is that of this 2 x 2 matrix
// (eigenvalues tr/2 -+ sqrt(tr^2/4 - det)), about (4/3) / e^2: ok at
// e = 1e-3 (1.3e6), singular_interface beyond 1e10 (e = 1e-6, 1.3e12).
TEST(PlanarArmRim, NearStretchedArmReportsItsCondition) {
  const PlanarArm arm({.lengths = {1.0, 0.8}, .masses = {2.0, 1.5}});
  const double e = 1e-3;
  const double cot = std::cos(e) / std::sin(e);
  const double xx = 2.0 * cot * cot + 1.5;
  const double xy = 2.0 * cot;
  const double yy = 3.5;
  const double half_tr = 0.5 * (xx + yy);
  const double root = std::sqrt(half_tr * half_tr - (xx * yy - xy * xy));
  const double condition = (half_tr + root) / (half_tr - root);
  const auto r = reduce(arm, vec({0.0, e}), vec({0.0, 0.0}));
  EXPECT_EQ(r.rim.status, RimStatus::kOk);
  EXPECT_NEAR(r.rim.m_eff(0, 0), xx, 1e-8 * xx);
  EXPECT_NEAR(r.rim.m_eff(0, 1), xy, 1e-8 * xx);
  EXPECT_NEAR(r.rim.m_eff(1, 1), yy, 1e-8 * xx);
  EXPECT_NEAR(r.rim.condition, condition, 1e-6 * condition);
  EXPECT_NEAR(r.rim.condition * e * e, 4.0 / 3.0, 1e-3);
  const auto s = reduce(arm, vec({0.0, 1e-6}), vec({0.0, 0.0}));
  EXPECT_EQ(s.rim.status, RimStatus::kSingularInterface);
  EXPECT_GT(s.rim.condition, 1e10);
  EXPECT_EQ(s.rim.rank, 1);
  expect_finite(s.rim);
}

// Shoulder locked (A_c = [1 0]) at q = (0, pi/2): only joint 2 moves, the
// tip moves along x only, carrying m2: rank 1, M_eff = diag(1.5, 0).
// Gravity (along y) has no component the interface can feel: lambda~ = 0.
// With v = (0, 1) the centripetal term J' v = (0, -0.8) lies in the blocked
// direction, c = (-1.2, 0) is taken by the lock: z = 0.
TEST(PlanarArmRim, LockedShoulderLeavesOneDirection) {
  const PlanarArm arm({.lengths = {1.0, 0.8}, .masses = {2.0, 1.5}, .locked_joints = {0}});
  const auto r = reduce(arm, vec({0.0, std::numbers::pi / 2}), vec({0.0, 1.0}));
  EXPECT_NEAR(r.terms.coriolis(0), -1.2, kTol);
  EXPECT_EQ(r.rim.status, RimStatus::kSingularInterface);
  EXPECT_EQ(r.rim.rank, 1);
  expect_finite(r.rim);
  EXPECT_NEAR(r.rim.m_eff(0, 0), 1.5, 1e-9);
  EXPECT_NEAR(r.rim.m_eff(1, 1), 0.0, 1e-9);
  EXPECT_NEAR(r.rim.lambda_tilde.norm(), 0.0, 1e-9);
  EXPECT_NEAR(r.rim.z.norm(), 0.0, 1e-9);
}

// Independent reference: eqs. 3-5 written literally with explicit inverses
// for a 3-link arm with a locked middle joint at a generic configuration.
TEST(PlanarArmRim, ThreeLinkLockedMatchesLiteralFormulas) {
  const PlanarArm arm(
      {.lengths = {0.7, 0.5, 0.4}, .masses = {1.0, 0.8, 0.6}, .joint_damping = {0.1, 0.2, 0.3}, .locked_joints = {1}});
  const Eigen::VectorXd q = vec({0.3, 0.9, -0.6});
  const Eigen::VectorXd v = vec({0.5, 0.0, -1.1});
  const auto r = reduce(arm, q, v);
  ASSERT_EQ(r.rim.status, RimStatus::kOk);
  const auto& t = r.terms;
  const Eigen::MatrixXd minv = t.mass.inverse();
  const Eigen::MatrixXd s_inv = (t.ac * minv * t.ac.transpose()).inverse();
  const Eigen::MatrixXd pc = minv * t.ac.transpose() * s_inv * t.ac;
  const Eigen::MatrixXd id = Eigen::MatrixXd::Identity(3, 3);
  const Eigen::MatrixXd m_eff = (t.ai * (id - pc) * minv * t.ai.transpose()).inverse();
  const Eigen::VectorXd lt = m_eff * (t.ai * (id - pc) * minv * t.applied);
  const Eigen::VectorXd z =
      m_eff * (t.ai * (id - pc) * minv * t.coriolis - t.ai_dot_v + t.ai * minv * t.ac.transpose() * s_inv * t.ac_dot_v);
  EXPECT_LT((r.rim.m_eff - m_eff).norm(), 1e-10 * m_eff.norm());
  EXPECT_LT((r.rim.lambda_tilde - lt).norm(), 1e-10 * lt.norm());
  EXPECT_LT((r.rim.z - z).norm(), 1e-10 * (z.norm() + 1.0));
  EXPECT_GT(lt.norm(), 1.0);  // gravity is felt: the comparison is not 0 == 0
  EXPECT_GT(z.norm(), 1e-3);
}

// A moving constraint against the full constrained dynamics. A 3-link arm
// (no locked joint) whose first link's tip slides on the line y = y1 (a
// slider: y1 = l0 sin q0 constant), so A_c = [l0 cos q0, 0, 0] and
// A_c' v = -l0 sin q0 q0'^2, nonzero while the arm moves. The reference is
// independent of eqs. 3-5: for an interface force lambda_i, the KKT system
//   [M    A_c^T] [v'   ]   [f - c + A_i^T lambda_i]
//   [A_c  0    ] [-l_c ] = [-A_c' v               ]
// gives v', hence w_i' = A_i v' + A_i' v, which must satisfy eq. 2,
// M_eff w_i' + z_i = lambda_i + lambda~, for every lambda_i.
TEST(PlanarArmRim, SlidingConstraintMatchesTheKktDynamics) {
  const PlanarArm arm({.lengths = {0.7, 0.5, 0.4}, .masses = {1.0, 0.8, 0.6}, .joint_damping = {0.1, 0.2, 0.3}});
  const Eigen::VectorXd q = vec({0.4, 0.9, -0.6});
  const Eigen::VectorXd v = vec({1.3, -0.7, 0.8});
  MechanicalTerms t = arm.make_terms();
  arm.evaluate(q, v, 0.0, t);
  const double l0 = 0.7;
  t.ac = Eigen::MatrixXd::Zero(1, 3);
  t.ac(0, 0) = l0 * std::cos(q(0));
  t.ac_dot_v = vec({-l0 * std::sin(q(0)) * v(0) * v(0)});
  ReducedInterface reducer(3, 1, 2);
  auto rim = reducer.make_quantities();
  reducer.compute(t, rim);
  ASSERT_EQ(rim.status, RimStatus::kOk);

  Eigen::MatrixXd kkt = Eigen::MatrixXd::Zero(4, 4);
  kkt.topLeftCorner(3, 3) = t.mass;
  kkt.topRightCorner(3, 1) = t.ac.transpose();
  kkt.bottomLeftCorner(1, 3) = t.ac;
  const auto w_dot = [&](const Eigen::VectorXd& lambda_i) {
    Eigen::VectorXd rhs(4);
    rhs.head(3) = t.applied - t.coriolis + t.ai.transpose() * lambda_i;
    rhs(3) = -t.ac_dot_v(0);
    const Eigen::VectorXd sol = kkt.fullPivLu().solve(rhs);
    return Eigen::VectorXd(t.ai * sol.head(3) + t.ai_dot_v);
  };
  for (const Eigen::VectorXd& lambda_i : {vec({0.0, 0.0}), vec({3.0, -2.0}), vec({-1.5, 7.0})}) {
    const Eigen::VectorXd lhs = rim.m_eff * w_dot(lambda_i) + rim.z;
    const Eigen::VectorXd rhs = lambda_i + rim.lambda_tilde;
    EXPECT_LT((lhs - rhs).norm(), 1e-10 * (rhs.norm() + 1.0)) << "lambda_i = " << lambda_i.transpose();
  }
  // The constraint's motion matters here: without its A_c' v term, z_i
  // moves by more than the tolerance by many orders (the comparison above
  // is not blind to it).
  MechanicalTerms still = t;
  still.ac_dot_v.setZero();
  auto rim_still = reducer.make_quantities();
  reducer.compute(still, rim_still);
  EXPECT_GT((rim_still.z - rim.z).norm(), 0.1);
}

TEST(PlanarArmRim, NonFiniteConfigurationIsReportedNotPropagated) {
  const PlanarArm arm({.lengths = {1.0, 0.8}, .masses = {2.0, 1.5}});
  const auto r = reduce(arm, vec({std::numeric_limits<double>::quiet_NaN(), 0.0}), vec({0.0, 0.0}));
  EXPECT_EQ(r.rim.status, RimStatus::kNonFinite);
  expect_finite(r.rim);
}

TEST(PlanarArmRim, EvaluateAndComputeAllocateNothing) {
  const PlanarArm arm({.lengths = {1.0, 0.8, 0.5}, .masses = {2.0, 1.5, 1.0}, .locked_joints = {1}});
  auto terms = arm.make_terms();
  ReducedInterface reducer(arm);
  auto rim = reducer.make_quantities();
  const Eigen::VectorXd q = vec({0.1, 0.2, 0.3});
  const Eigen::VectorXd v = vec({0.4, 0.0, 0.6});
  // The first call counts too: every workspace was sized by the constructors.
  testing::AllocationScope scope;
  arm.evaluate(q, v, 0.0, terms);
  reducer.compute(terms, rim);
  EXPECT_EQ(scope.count(), 0U);
  EXPECT_EQ(rim.status, RimStatus::kOk);
}

}  // namespace
}  // namespace rtcosim::tasks::mechanics
