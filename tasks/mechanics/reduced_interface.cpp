#include "tasks/mechanics/reduced_interface.hpp"

#include <cmath>
#include <limits>

namespace rtcosim::tasks::mechanics {

std::string_view rim_status_name(RimStatus status) noexcept {
  switch (status) {
    case RimStatus::kOk:
      return "ok";
    case RimStatus::kSingularInterface:
      return "singular_interface";
    case RimStatus::kSingularMass:
      return "singular_mass";
    case RimStatus::kNonFinite:
      return "non_finite";
  }
  return "unknown";
}

ReducedInterface::ReducedInterface(int dofs, int constraints, int interface_dims, double singular_condition)
    : n_(dofs),
      nc_(constraints),
      ni_(interface_dims),
      singular_condition_(singular_condition),
      mass_ldlt_(dofs),
      s_ldlt_(constraints),
      g_eigen_(interface_dims),
      minv_ait_(dofs, interface_dims),
      minv_act_(dofs, constraints),
      s_(constraints, constraints),
      ai_minv_act_(interface_dims, constraints),
      s_inv_x_(constraints, interface_dims),
      g_(interface_dims, interface_dims),
      rows_(interface_dims, dofs),
      inv_eig_(interface_dims),
      s_inv_acdv_(constraints),
      bracket_(interface_dims) {}

RimQuantities ReducedInterface::make_quantities() const {
  RimQuantities q;
  q.m_eff = Eigen::MatrixXd::Zero(ni_, ni_);
  q.lambda_tilde = Eigen::VectorXd::Zero(ni_);
  q.z = Eigen::VectorXd::Zero(ni_);
  return q;
}

void ReducedInterface::zero(RimQuantities& out, RimStatus status) const noexcept {
  out.m_eff.setZero();
  out.lambda_tilde.setZero();
  out.z.setZero();
  out.condition = std::numeric_limits<double>::infinity();
  out.rank = 0;
  out.status = status;
}

void ReducedInterface::compute(const MechanicalTerms& t, RimQuantities& out) noexcept {
  if (!t.mass.allFinite() || !t.coriolis.allFinite() || !t.applied.allFinite() || !t.ac.allFinite() ||
      !t.ac_dot_v.allFinite() || !t.ai.allFinite() || !t.ai_dot_v.allFinite()) {
    zero(out, RimStatus::kNonFinite);
    return;
  }
  mass_ldlt_.compute(t.mass);
  const double d_max = mass_ldlt_.vectorD().cwiseAbs().maxCoeff();
  if (mass_ldlt_.info() != Eigen::Success || !(mass_ldlt_.vectorD().minCoeff() > 1e-14 * d_max)) {
    zero(out, RimStatus::kSingularMass);
    return;
  }
  minv_ait_ = mass_ldlt_.solve(t.ai.transpose());
  // G = A_i M^-1 A_i^T - (A_i M^-1 A_c^T) S^-1 (A_c M^-1 A_i^T), and
  // A_i (I - P_c) M^-1 = (M^-1 A_i^T)^T - (S^-1 A_c M^-1 A_i^T)^T (M^-1 A_c^T)^T
  // because (I - P_c) M^-1 is symmetric.
  g_.noalias() = t.ai * minv_ait_;
  rows_ = minv_ait_.transpose();
  bracket_ = -t.ai_dot_v;
  if (nc_ > 0) {
    minv_act_ = mass_ldlt_.solve(t.ac.transpose());
    s_.noalias() = t.ac * minv_act_;
    s_ldlt_.compute(s_);
    ai_minv_act_.noalias() = t.ai * minv_act_;
    s_inv_x_ = s_ldlt_.solve(ai_minv_act_.transpose());
    g_.noalias() -= ai_minv_act_ * s_inv_x_;
    rows_.noalias() -= s_inv_x_.transpose() * minv_act_.transpose();
    s_inv_acdv_ = s_ldlt_.solve(t.ac_dot_v);
    bracket_.noalias() += ai_minv_act_ * s_inv_acdv_;
  }
  bracket_.noalias() += rows_ * t.coriolis;
  // G is symmetric positive semi-definite; its eigenvalues give the
  // condition and the (pseudo-)inverse M_eff = V diag(1/mu) V^T.
  g_eigen_.compute(g_);
  const auto& mu = g_eigen_.eigenvalues();  // ascending
  const double mu_max = mu(ni_ - 1);
  if (g_eigen_.info() != Eigen::Success || !(mu_max > 0.0)) {
    zero(out, RimStatus::kSingularInterface);
    return;
  }
  const double mu_min = mu(0);
  out.condition = mu_min > 0.0 ? mu_max / mu_min : std::numeric_limits<double>::infinity();
  out.rank = 0;
  for (int k = 0; k < ni_; ++k) {
    const bool keep = mu(k) * singular_condition_ > mu_max;
    inv_eig_(k) = keep ? 1.0 / mu(k) : 0.0;
    out.rank += keep ? 1 : 0;
  }
  out.status = out.rank == ni_ ? RimStatus::kOk : RimStatus::kSingularInterface;
  const auto& vecs = g_eigen_.eigenvectors();
  out.m_eff.noalias() = vecs * inv_eig_.asDiagonal() * vecs.transpose();
  // lambda~ = M_eff A_i (I - P_c) M^-1 (f_e + f_d + f_o)           (eq. 4)
  // z_i = M_eff [A_i (I - P_c) M^-1 c - A_i' v
  //              + A_i M^-1 A_c^T S^-1 A_c' v]                     (eq. 5)
  inv_eig_.noalias() = rows_ * t.applied;  // reuse as scratch, ni long
  out.lambda_tilde.noalias() = out.m_eff * inv_eig_;
  out.z.noalias() = out.m_eff * bracket_;
}

}  // namespace rtcosim::tasks::mechanics
