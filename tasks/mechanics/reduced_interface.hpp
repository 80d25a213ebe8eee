#pragma once

#include <string_view>

#include <Eigen/Dense>

#include "tasks/mechanics/mechanical_model.hpp"

namespace rtcosim::tasks::mechanics {

/*
 * How a reduction went.
 *   ok                M_eff is the inverse of a well-conditioned interface
 *                     mobility G = A_i (I - P_c) M^-1 A_i^T.
 *   singular_interface G is rank-deficient (condition above the limit): the
 *                     interface cannot move in some direction (a stretched
 *                     arm, a locked joint, a fixed mass), M_eff is infinite
 *                     there. M_eff, lambda~ and z_i are then computed with
 *                     the pseudo-inverse of G (zero in the blocked
 *                     directions) so they stay finite; the receiver must
 *                     treat those directions as rigid.
 *   singular_mass     M is not positive definite: outputs are zero.
 *   non_finite        an input term is NaN or infinite: outputs are zero.
 */
enum class RimStatus { kOk, kSingularInterface, kSingularMass, kNonFinite };
std::string_view rim_status_name(RimStatus status) noexcept;

/*
 * The reduced interface model of a subsystem at one communication point
 * (paper eq. 2): M_eff w_i' + z_i = lambda_i + lambda~. `condition` is the
 * 2-norm condition number of G (largest over smallest eigenvalue,
 * +infinity when the smallest is not positive); `rank` the number of
 * eigenvalues of G kept. Sized by ReducedInterface; never reallocated.
 */
struct RimQuantities {
  Eigen::MatrixXd m_eff;         // ni x ni, eq. 3
  Eigen::VectorXd lambda_tilde;  // ni, eq. 4
  Eigen::VectorXd z;             // ni, eq. 5
  double condition = 0.0;
  int rank = 0;
  RimStatus status = RimStatus::kOk;
};

/*
 * Computes eqs. 3-5 from MechanicalTerms. M is factored with LDLT (pivoted,
 * for a mass matrix that is ill-conditioned but definite), the constraint
 * mobility S = A_c M^-1 A_c^T with LDLT too (its solve pseudo-inverts zero
 * pivots, so redundant constraints do not break it), and the interface
 * mobility G with a symmetric eigendecomposition, which gives the
 * condition number and a pseudo-inverse in one go. All workspaces are
 * sized by the constructor (n, nc, ni of the model); compute() is
 * noexcept and never yields NaN. Whether it allocates is held by a test
 * (tests/tasks/mechanics_test.cpp, "compute allocates nothing").
 */
class ReducedInterface {
 public:
  // singular_condition: G with a condition number above it is singular.
  ReducedInterface(int dofs, int constraints, int interface_dims, double singular_condition = 1e10);
  explicit ReducedInterface(const MechanicalModel& model, double singular_condition = 1e10)
      : ReducedInterface(model.dofs(), model.constraints(), model.interface_dims(), singular_condition) {}

  void compute(const MechanicalTerms& terms, RimQuantities& out) noexcept;
  [[nodiscard]] RimQuantities make_quantities() const;

 private:
  void zero(RimQuantities& out, RimStatus status) const noexcept;

  int n_;
  int nc_;
  int ni_;
  double singular_condition_;
  Eigen::LDLT<Eigen::MatrixXd> mass_ldlt_;
  Eigen::LDLT<Eigen::MatrixXd> s_ldlt_;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> g_eigen_;
  Eigen::MatrixXd minv_ait_;     // n x ni   M^-1 A_i^T
  Eigen::MatrixXd minv_act_;     // n x nc   M^-1 A_c^T
  Eigen::MatrixXd s_;            // nc x nc  A_c M^-1 A_c^T
  Eigen::MatrixXd ai_minv_act_;  // ni x nc  A_i M^-1 A_c^T
  Eigen::MatrixXd s_inv_x_;      // nc x ni  S^-1 A_c M^-1 A_i^T
  Eigen::MatrixXd g_;            // ni x ni
  Eigen::MatrixXd rows_;         // ni x n   A_i (I - P_c) M^-1
  Eigen::VectorXd inv_eig_;      // ni
  Eigen::VectorXd s_inv_acdv_;   // nc       S^-1 A_c' v
  Eigen::VectorXd bracket_;      // ni
};

}  // namespace rtcosim::tasks::mechanics
