#include "tasks/mechanics/mechanical_model.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace rtcosim::tasks::mechanics {

MechanicalTerms MechanicalModel::make_terms() const {
  const int n = dofs();
  const int nc = constraints();
  const int ni = interface_dims();
  MechanicalTerms t;
  t.mass = Eigen::MatrixXd::Zero(n, n);
  t.coriolis = Eigen::VectorXd::Zero(n);
  t.applied = Eigen::VectorXd::Zero(n);
  t.ac = Eigen::MatrixXd::Zero(nc, n);
  t.ac_dot_v = Eigen::VectorXd::Zero(nc);
  t.ai = Eigen::MatrixXd::Zero(ni, n);
  t.ai_dot_v = Eigen::VectorXd::Zero(ni);
  return t;
}

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) {
    throw std::invalid_argument(what);
  }
}

void require_positive(const std::vector<double>& values, const char* name) {
  for (std::size_t k = 0; k < values.size(); ++k) {
    require(std::isfinite(values[k]) && values[k] > 0.0, std::string(name) + "[" + std::to_string(k) +
                                                             "] = " + std::to_string(values[k]) +
                                                             ": must be a finite number > 0");
  }
}

void require_non_negative(const std::vector<double>& values, const char* name) {
  for (std::size_t k = 0; k < values.size(); ++k) {
    require(std::isfinite(values[k]) && values[k] >= 0.0, std::string(name) + "[" + std::to_string(k) +
                                                              "] = " + std::to_string(values[k]) +
                                                              ": must be a finite number >= 0");
  }
}

}  // namespace

MassChain::MassChain(Params params) : p_(std::move(params)) {
  const auto n = p_.masses.size();
  require(n > 0, "mass chain: masses is empty; give at least one mass");
  require_positive(p_.masses, "mass chain: masses");
  if (p_.stiffness.empty()) p_.stiffness.assign(n, 0.0);
  if (p_.damping.empty()) p_.damping.assign(n, 0.0);
  if (p_.force.empty()) p_.force.assign(n, 0.0);
  require(p_.stiffness.size() == n && p_.damping.size() == n && p_.force.size() == n,
          "mass chain: stiffness, damping and force need one entry per mass (" + std::to_string(n) + ") or none");
  require_non_negative(p_.stiffness, "mass chain: stiffness");
  require_non_negative(p_.damping, "mass chain: damping");
  const int ni = static_cast<int>(n);
  for (const auto& j : p_.joints) {
    require(j.a >= 0 && j.a < ni && j.b >= -1 && j.b < ni && j.a != j.b,
            "mass chain: joint (" + std::to_string(j.a) + ", " + std::to_string(j.b) +
                ") must name two different masses in [0, " + std::to_string(n - 1) + "] (-1 for the ground as second)");
  }
  if (p_.interface_masses.empty()) p_.interface_masses.push_back(p_.interface_mass);
  for (std::size_t r = 0; r < p_.interface_masses.size(); ++r) {
    const int m = p_.interface_masses[r];
    require(m >= 0 && m < ni,
            "mass chain: interface mass " + std::to_string(m) + " is not in [0, " + std::to_string(n - 1) + "]");
    for (std::size_t k = 0; k < r; ++k) {
      // Twice the same velocity would make M_eff singular by construction.
      require(p_.interface_masses[k] != m, "mass chain: interface mass " + std::to_string(m) + " is named twice");
    }
  }
}

int MassChain::dofs() const noexcept { return static_cast<int>(p_.masses.size()); }
int MassChain::constraints() const noexcept { return static_cast<int>(p_.joints.size()); }

void MassChain::evaluate(const Eigen::VectorXd& q, const Eigen::VectorXd& v, double /*t*/,
                         MechanicalTerms& terms) const noexcept {
  const int n = dofs();
  terms.mass.setZero();
  terms.coriolis.setZero();
  for (int k = 0; k < n; ++k) {
    terms.mass(k, k) = p_.masses[static_cast<std::size_t>(k)];
    terms.applied(k) = p_.force[static_cast<std::size_t>(k)];
  }
  // Element k pulls mass k towards mass k-1 (the ground for k = 0).
  for (int k = 0; k < n; ++k) {
    const auto s = static_cast<std::size_t>(k);
    const double dx = q(k) - (k > 0 ? q(k - 1) : 0.0);
    const double dv = v(k) - (k > 0 ? v(k - 1) : 0.0);
    const double f = -p_.stiffness[s] * dx - p_.damping[s] * dv;
    terms.applied(k) += f;
    if (k > 0) terms.applied(k - 1) -= f;
  }
  terms.ac.setZero();
  terms.ac_dot_v.setZero();  // constant Jacobian
  for (int r = 0; r < constraints(); ++r) {
    const auto& j = p_.joints[static_cast<std::size_t>(r)];
    terms.ac(r, j.a) = 1.0;
    if (j.b >= 0) terms.ac(r, j.b) = -1.0;
  }
  terms.ai.setZero();
  for (int r = 0; r < interface_dims(); ++r) terms.ai(r, p_.interface_masses[static_cast<std::size_t>(r)]) = 1.0;
  terms.ai_dot_v.setZero();
}

void MassChain::interface_position(const Eigen::VectorXd& q, Eigen::Ref<Eigen::VectorXd> out) const noexcept {
  for (int r = 0; r < interface_dims(); ++r) out(r) = q(p_.interface_masses[static_cast<std::size_t>(r)]);
}

double MassChain::potential(const Eigen::VectorXd& q) const noexcept {
  double e = 0.0;
  for (int k = 0; k < dofs(); ++k) {
    const auto s = static_cast<std::size_t>(k);
    const double dx = q(k) - (k > 0 ? q(k - 1) : 0.0);
    e += 0.5 * p_.stiffness[s] * dx * dx - p_.force[s] * q(k);
  }
  return e;
}

PlanarArm::PlanarArm(Params params) : p_(std::move(params)) {
  const auto n = p_.lengths.size();
  require(n > 0, "planar arm: lengths is empty; give at least one link");
  require(p_.masses.size() == n, "planar arm: masses needs one entry per link (" + std::to_string(n) + "), has " +
                                     std::to_string(p_.masses.size()));
  require_positive(p_.lengths, "planar arm: lengths");
  require_positive(p_.masses, "planar arm: masses");
  if (p_.joint_damping.empty()) p_.joint_damping.assign(n, 0.0);
  require(p_.joint_damping.size() == n,
          "planar arm: joint_damping needs one entry per joint (" + std::to_string(n) + ") or none");
  require_non_negative(p_.joint_damping, "planar arm: joint_damping");
  require(std::isfinite(p_.gravity), "planar arm: gravity must be finite");
  if (p_.joint_stiffness.empty()) p_.joint_stiffness.assign(n, 0.0);
  if (p_.joint_targets.empty()) p_.joint_targets.assign(n, 0.0);
  require(p_.joint_stiffness.size() == n && p_.joint_targets.size() == n,
          "planar arm: joint_stiffness and joint_targets need one entry per joint (" + std::to_string(n) + ") or none");
  require_non_negative(p_.joint_stiffness, "planar arm: joint_stiffness");
  for (const int j : p_.locked_joints) {
    require(j >= 0 && j < static_cast<int>(n),
            "planar arm: locked joint " + std::to_string(j) + " is not in [0, " + std::to_string(n - 1) + "]");
  }
}

int PlanarArm::dofs() const noexcept { return static_cast<int>(p_.lengths.size()); }
int PlanarArm::constraints() const noexcept { return static_cast<int>(p_.locked_joints.size()); }

void PlanarArm::evaluate(const Eigen::VectorXd& q, const Eigen::VectorXd& v, double /*t*/,
                         MechanicalTerms& terms) const noexcept {
  const int n = dofs();
  const auto len = [&](int i) { return p_.lengths[static_cast<std::size_t>(i)]; };
  // Absolute angle and angular velocity of link i.
  const auto theta = [&](int i) { return q.head(i + 1).sum(); };
  const auto omega = [&](int i) { return v.head(i + 1).sum(); };
  // Jacobian of the tip of link k with respect to joint j (zero for j > k):
  // d/dq_j sum_{i<=k} l_i (cos th_i, sin th_i) = sum_{i=j..k} l_i (-sin th_i, cos th_i).
  const auto jac = [&](int k, int j, double& jx, double& jy) {
    jx = 0.0;
    jy = 0.0;
    for (int i = j; i <= k; ++i) {
      jx -= len(i) * std::sin(theta(i));
      jy += len(i) * std::cos(theta(i));
    }
  };
  // J_k' v = d/dt of the Jacobian times v = -sum_{i<=k} l_i om_i^2 (cos th_i, sin th_i).
  const auto jac_dot_v = [&](int k, double& ax, double& ay) {
    ax = 0.0;
    ay = 0.0;
    for (int i = 0; i <= k; ++i) {
      const double w2 = omega(i) * omega(i);
      ax -= len(i) * w2 * std::cos(theta(i));
      ay -= len(i) * w2 * std::sin(theta(i));
    }
  };
  // M = sum_k m_k J_k^T J_k, c = sum_k m_k J_k^T (J_k' v),
  // gravity f_o = sum_k m_k J_k^T (0, -g).
  terms.mass.setZero();
  terms.coriolis.setZero();
  terms.applied.setZero();
  for (int k = 0; k < n; ++k) {
    const double m = p_.masses[static_cast<std::size_t>(k)];
    double ax = 0.0;
    double ay = 0.0;
    jac_dot_v(k, ax, ay);
    for (int a = 0; a <= k; ++a) {
      double xa = 0.0;
      double ya = 0.0;
      jac(k, a, xa, ya);
      terms.coriolis(a) += m * (xa * ax + ya * ay);
      terms.applied(a) -= m * p_.gravity * ya;
      for (int b = 0; b <= k; ++b) {
        double xb = 0.0;
        double yb = 0.0;
        jac(k, b, xb, yb);
        terms.mass(a, b) += m * (xa * xb + ya * yb);
      }
    }
  }
  for (int j = 0; j < n; ++j) {
    const auto s = static_cast<std::size_t>(j);
    terms.applied(j) -= p_.joint_damping[s] * v(j) + p_.joint_stiffness[s] * (q(j) - p_.joint_targets[s]);
  }
  terms.ac.setZero();
  terms.ac_dot_v.setZero();
  for (int r = 0; r < constraints(); ++r) {
    terms.ac(r, p_.locked_joints[static_cast<std::size_t>(r)]) = 1.0;
  }
  for (int j = 0; j < n; ++j) {
    double x = 0.0;
    double y = 0.0;
    jac(n - 1, j, x, y);
    terms.ai(0, j) = x;
    terms.ai(1, j) = y;
  }
  jac_dot_v(n - 1, terms.ai_dot_v(0), terms.ai_dot_v(1));
}

void PlanarArm::interface_position(const Eigen::VectorXd& q, Eigen::Ref<Eigen::VectorXd> out) const noexcept {
  double theta = 0.0;
  out.setZero();
  for (int i = 0; i < dofs(); ++i) {
    theta += q(i);
    out(0) += p_.lengths[static_cast<std::size_t>(i)] * std::cos(theta);
    out(1) += p_.lengths[static_cast<std::size_t>(i)] * std::sin(theta);
  }
}

double PlanarArm::potential(const Eigen::VectorXd& q) const noexcept {
  double theta = 0.0;
  double y = 0.0;
  double e = 0.0;
  for (int i = 0; i < dofs(); ++i) {
    theta += q(i);
    y += p_.lengths[static_cast<std::size_t>(i)] * std::sin(theta);
    const auto s = static_cast<std::size_t>(i);
    const double dq = q(i) - p_.joint_targets[s];
    e += p_.masses[s] * p_.gravity * y + 0.5 * p_.joint_stiffness[s] * dq * dq;
  }
  return e;
}

PointMass::PointMass(Params params) : p_(params) {
  require(std::isfinite(p_.mass) && p_.mass > 0.0, "point mass: mass must be a finite number > 0");
  require(std::isfinite(p_.gravity), "point mass: gravity must be finite");
  require(!std::isnan(p_.wall_x), "point mass: wall_x must be a number");
  require(std::isfinite(p_.wall_stiffness) && p_.wall_stiffness >= 0.0,
          "point mass: wall_stiffness must be a finite number >= 0");
  require(std::isfinite(p_.wall_damping) && p_.wall_damping >= 0.0,
          "point mass: wall_damping must be a finite number >= 0");
}

void PointMass::evaluate(const Eigen::VectorXd& q, const Eigen::VectorXd& v, double /*t*/,
                         MechanicalTerms& terms) const noexcept {
  terms.mass.setZero();
  terms.mass(0, 0) = p_.mass;
  terms.mass(1, 1) = p_.mass;
  terms.coriolis.setZero();
  terms.applied(0) = 0.0;
  terms.applied(1) = -p_.mass * p_.gravity;
  const double depth = q(0) - p_.wall_x;
  if (depth > 0.0) {
    // Penalty contact: never a pull, so the damper gives up once the
    // spring is spent.
    terms.applied(0) = std::min(0.0, -p_.wall_stiffness * depth - p_.wall_damping * v(0));
  }
  terms.ai.setZero();
  terms.ai(0, 0) = 1.0;
  terms.ai(1, 1) = 1.0;
  terms.ai_dot_v.setZero();
}

void PointMass::interface_position(const Eigen::VectorXd& q, Eigen::Ref<Eigen::VectorXd> out) const noexcept {
  out = q;
}

double PointMass::potential(const Eigen::VectorXd& q) const noexcept {
  const double depth = std::max(0.0, q(0) - p_.wall_x);
  return p_.mass * p_.gravity * q(1) + 0.5 * p_.wall_stiffness * depth * depth;
}

}  // namespace rtcosim::tasks::mechanics
