#include "tasks/mechanics/flexible_arm.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

namespace rtcosim::tasks::mechanics {

namespace {

// Two rows (x, y), one column per generalized coordinate, on the stack:
// evaluate() must not allocate.
using Jacobian =
    Eigen::Matrix<double, 2, Eigen::Dynamic, Eigen::ColMajor, 2, FlexibleArm::kMaxJoints + FlexibleArm::kMaxModes>;

void require_arm(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

void require_all(const std::vector<double>& values, const char* name, bool allow_zero) {
  for (std::size_t k = 0; k < values.size(); ++k) {
    const bool ok = std::isfinite(values[k]) && (allow_zero ? values[k] >= 0.0 : values[k] > 0.0);
    require_arm(ok, std::string("flexible arm: ") + name + "[" + std::to_string(k) +
                        "] = " + std::to_string(values[k]) +
                        (allow_zero ? ": must be a finite number >= 0" : ": must be a finite number > 0"));
  }
}

// Gauss-Legendre nodes and weights on [-1, 1] by Newton's iteration on P_n.
void gauss_legendre(std::array<double, FlexibleArm::kNodes>& x, std::array<double, FlexibleArm::kNodes>& w) {
  constexpr int n = FlexibleArm::kNodes;
  for (int i = 0; i < n; ++i) {
    double z = std::cos(std::numbers::pi * (i + 0.75) / (n + 0.5));
    double dp = 1.0;
    for (int it = 0; it < 100; ++it) {
      double p0 = 1.0;
      double p1 = z;
      for (int k = 2; k <= n; ++k) {
        const double p2 = ((2.0 * k - 1.0) * z * p1 - (k - 1.0) * p0) / k;
        p0 = p1;
        p1 = p2;
      }
      dp = n * (z * p1 - p0) / (z * z - 1.0);
      const double step = p1 / dp;
      z -= step;
      if (std::fabs(step) < 1e-16) break;
    }
    x[static_cast<std::size_t>(i)] = z;
    w[static_cast<std::size_t>(i)] = 2.0 / ((1.0 - z * z) * dp * dp);
  }
}

}  // namespace

FlexibleArm::FlexibleArm(Params params) : p_(std::move(params)) {
  const auto n = p_.lengths.size();
  require_arm(n > 0, "flexible arm: lengths is empty; give at least one link");
  require_arm(n <= static_cast<std::size_t>(kMaxJoints),
              "flexible arm: lengths has " + std::to_string(n) + " links; at most " + std::to_string(kMaxJoints));
  require_arm(p_.masses.size() == n, "flexible arm: masses needs one entry per link (" + std::to_string(n) + "), has " +
                                         std::to_string(p_.masses.size()));
  require_all(p_.lengths, "lengths", false);
  if (p_.flexible_link < 0) p_.flexible_link = static_cast<int>(n) - 1;
  require_arm(p_.flexible_link < static_cast<int>(n), "flexible arm: flexible_link " +
                                                          std::to_string(p_.flexible_link) + " is not in [0, " +
                                                          std::to_string(n - 1) + "]");
  require_all(p_.masses, "masses", true);
  for (std::size_t k = 0; k < n; ++k) {
    // A massless rigid link would leave its joint without inertia whenever
    // nothing lies beyond it; the beam's tip mass may be 0 (the beam has mass).
    require_arm(static_cast<int>(k) == p_.flexible_link || p_.masses[k] > 0.0,
                "flexible arm: masses[" + std::to_string(k) + "] = 0: only the flexible link's tip mass may be 0");
  }
  require_arm(p_.modes >= 1 && p_.modes <= kMaxModes,
              "flexible arm: modes = " + std::to_string(p_.modes) + ": must be 1, 2 or 3");
  require_arm(std::isfinite(p_.bending_stiffness) && p_.bending_stiffness > 0.0,
              "flexible arm: bending_stiffness must be a finite number > 0 (EI, N m^2)");
  require_arm(std::isfinite(p_.mass_per_length) && p_.mass_per_length > 0.0,
              "flexible arm: mass_per_length must be a finite number > 0 (rhoA, kg/m)");
  if (p_.joint_damping.empty()) p_.joint_damping.assign(n, 0.0);
  require_arm(p_.joint_damping.size() == n,
              "flexible arm: joint_damping needs one entry per joint (" + std::to_string(n) + ") or none");
  require_all(p_.joint_damping, "joint_damping", true);
  require_arm(std::isfinite(p_.gravity), "flexible arm: gravity must be finite");
  if (p_.joint_stiffness.empty()) p_.joint_stiffness.assign(n, 0.0);
  if (p_.joint_targets.empty()) p_.joint_targets.assign(n, 0.0);
  require_arm(
      p_.joint_stiffness.size() == n && p_.joint_targets.size() == n,
      "flexible arm: joint_stiffness and joint_targets need one entry per joint (" + std::to_string(n) + ") or none");
  require_all(p_.joint_stiffness, "joint_stiffness", true);
  for (std::size_t k = 0; k < n; ++k) {
    require_arm(std::isfinite(p_.joint_targets[k]),
                "flexible arm: joint_targets[" + std::to_string(k) + "] must be finite");
  }
  for (const int j : p_.locked_joints) {
    require_arm(j >= 0 && j < static_cast<int>(n),
                "flexible arm: locked joint " + std::to_string(j) + " is not in [0, " + std::to_string(n - 1) + "]");
  }
  const auto modes = static_cast<std::size_t>(p_.modes);
  if (p_.modal_damping.empty()) p_.modal_damping.assign(modes, 0.0);
  require_arm(p_.modal_damping.size() == modes,
              "flexible arm: modal_damping needs one entry per mode (" + std::to_string(modes) + ") or none");
  require_all(p_.modal_damping, "modal_damping", true);

  joints_ = static_cast<int>(n);
  modes_ = p_.modes;
  length_ = p_.lengths[static_cast<std::size_t>(p_.flexible_link)];
  const double ei = p_.bending_stiffness;
  const double rho_a = p_.mass_per_length;
  for (std::size_t k = 0; k < modes; ++k) {
    const double bl = kBetaL[k];
    beta_[k] = bl / length_;
    stiffness_[k] = ei * std::pow(beta_[k], 4) * length_;
    damping_[k] = 2.0 * p_.modal_damping[k] * clamped_frequency(static_cast<int>(k)) * rho_a * length_;
    tip_[k] = shape(static_cast<int>(k), length_);
    tip_slope_[k] = shape_slope(static_cast<int>(k), length_);
  }
  std::array<double, kNodes> xi{};
  std::array<double, kNodes> wi{};
  gauss_legendre(xi, wi);
  for (std::size_t g = 0; g < static_cast<std::size_t>(kNodes); ++g) {
    x_[g] = 0.5 * length_ * (xi[g] + 1.0);
    w_[g] = 0.5 * length_ * wi[g] * rho_a;
    for (std::size_t k = 0; k < modes; ++k) phi_[g][k] = shape(static_cast<int>(k), x_[g]);
  }
}

namespace {

// A clamped-free mode's terms at x: b = beta_k, y = b x, and s_k as 1 - s_k
// and s_k. s_k is 1 - O(e^-bL); 1 - s_k is formed exactly (sinh - cosh =
// -e^-x) so the growing exponentials of phi cancel without losing digits
// (mode 3).
struct ModeTerms {
  double b, y, one_minus, sigma;
};
ModeTerms mode_terms(double bl, double length, double x) noexcept {
  const double b = bl / length;
  const double one_minus = (-std::exp(-bl) + std::sin(bl) - std::cos(bl)) / (std::sinh(bl) + std::sin(bl));
  return {b, b * x, one_minus, 1.0 - one_minus};
}

}  // namespace

double FlexibleArm::shape(int k, double x) const noexcept {
  const auto [b, y, one_minus, sigma] = mode_terms(kBetaL[static_cast<std::size_t>(k)], length_, x);
  (void)b;
  // cosh y - s sinh y = ((1 - s) e^y + (1 + s) e^-y) / 2
  return 0.5 * (one_minus * std::exp(y) + (1.0 + sigma) * std::exp(-y)) - std::cos(y) + sigma * std::sin(y);
}

double FlexibleArm::shape_slope(int k, double x) const noexcept {
  const auto [b, y, one_minus, sigma] = mode_terms(kBetaL[static_cast<std::size_t>(k)], length_, x);
  // sinh y - s cosh y = ((1 - s) e^y - (1 + s) e^-y) / 2
  return b * (0.5 * (one_minus * std::exp(y) - (1.0 + sigma) * std::exp(-y)) + std::sin(y) + sigma * std::cos(y));
}

double FlexibleArm::clamped_frequency(int k) const noexcept {
  const double bl = kBetaL[static_cast<std::size_t>(k)];
  return bl * bl * std::sqrt(p_.bending_stiffness / (p_.mass_per_length * std::pow(length_, 4)));
}

double FlexibleArm::angle_gradient(int i, int j) const noexcept {
  if (j < joints_) return j <= i ? 1.0 : 0.0;
  return i > p_.flexible_link ? tip_slope_[static_cast<std::size_t>(j - joints_)] : 0.0;
}

// One body on purpose, not split into steps: this is the model's
// right-hand side, called on the frame path (every derivative evaluation);
// one body keeps it one loop nest that the compiler optimises as a whole.
void FlexibleArm::evaluate(const Eigen::VectorXd& q, const Eigen::VectorXd& v, double /*t*/,
                           MechanicalTerms& terms) const noexcept {
  const int n = dofs();
  const int nj = joints_;
  const int f = p_.flexible_link;
  const double g = p_.gravity;
  terms.mass.setZero();
  terms.coriolis.setZero();
  terms.applied.setZero();
  // A point mass m with position Jacobian J and J' v = a adds m J^T J to M,
  // m J^T a to c and -m g J^T e_y to f_o (lower triangle of M only).
  const auto add = [&](double m, const Jacobian& jac, double ax, double ay) {
    for (int a = 0; a < n; ++a) {
      const double x0 = jac(0, a);
      const double x1 = jac(1, a);
      terms.coriolis(a) += m * (x0 * ax + x1 * ay);
      terms.applied(a) -= m * g * x1;
      for (int b = 0; b <= a; ++b) terms.mass(a, b) += m * (x0 * jac(0, b) + x1 * jac(1, b));
    }
  };
  Jacobian jp(2, n);  // Jacobian of the base of the current link
  jp.setZero();
  Jacobian jx(2, n);
  double apx = 0.0;  // J' v of the base of the current link
  double apy = 0.0;
  double theta = 0.0;
  double omega = 0.0;
  double slope = 0.0;  // the beam's tip slope and its rate, felt beyond the beam
  double slope_rate = 0.0;
  for (int i = 0; i < nj; ++i) {
    const auto si = static_cast<std::size_t>(i);
    theta += q(i);
    omega += v(i);
    const double th = theta + (i > f ? slope : 0.0);
    const double om = omega + (i > f ? slope_rate : 0.0);
    const double c = std::cos(th);
    const double s = std::sin(th);
    if (i != f) {
      const double l = p_.lengths[si];
      for (int j = 0; j < n; ++j) {
        const double gj = angle_gradient(i, j);
        jp(0, j) -= l * s * gj;
        jp(1, j) += l * c * gj;
      }
      apx -= om * om * l * c;
      apy -= om * om * l * s;
      add(p_.masses[si], jp, apx, apy);
      continue;
    }
    // A beam point at x: p = P_f + x e + u n (e along the beam's frame, n
    // normal to it); J = J_P + (x n - u e) g_f^T + n phi^T, and
    // J' v = a_P - om^2 (x e + u n) - 2 om u' e.
    double ax = 0.0;
    double ay = 0.0;
    const auto beam_point = [&](double x, const double* phi) {
      double u = 0.0;
      double ud = 0.0;
      for (int k = 0; k < modes_; ++k) {
        u += phi[k] * q(nj + k);
        ud += phi[k] * v(nj + k);
      }
      const double rx = -x * s - u * c;
      const double ry = x * c - u * s;
      jx = jp;
      for (int j = 0; j <= f; ++j) {
        jx(0, j) += rx;
        jx(1, j) += ry;
      }
      for (int k = 0; k < modes_; ++k) {
        jx(0, nj + k) -= s * phi[k];
        jx(1, nj + k) += c * phi[k];
      }
      ax = apx - om * om * (x * c - u * s) - 2.0 * om * ud * c;
      ay = apy - om * om * (x * s + u * c) - 2.0 * om * ud * s;
    };
    for (std::size_t gi = 0; gi < static_cast<std::size_t>(kNodes); ++gi) {
      beam_point(x_[gi], phi_[gi].data());
      add(w_[gi], jx, ax, ay);
    }
    beam_point(length_, tip_.data());
    jp = jx;
    apx = ax;
    apy = ay;
    if (p_.masses[si] > 0.0) add(p_.masses[si], jp, apx, apy);
    for (int k = 0; k < modes_; ++k) {
      slope += tip_slope_[static_cast<std::size_t>(k)] * q(nj + k);
      slope_rate += tip_slope_[static_cast<std::size_t>(k)] * v(nj + k);
    }
  }
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) terms.mass(a, b) = terms.mass(b, a);
  }
  for (int j = 0; j < nj; ++j) {
    const auto s = static_cast<std::size_t>(j);
    terms.applied(j) -= p_.joint_damping[s] * v(j) + p_.joint_stiffness[s] * (q(j) - p_.joint_targets[s]);
  }
  for (int k = 0; k < modes_; ++k) {
    const auto s = static_cast<std::size_t>(k);
    terms.applied(nj + k) -= stiffness_[s] * q(nj + k) + damping_[s] * v(nj + k);
  }
  terms.ac.setZero();
  terms.ac_dot_v.setZero();  // constant Jacobian
  for (int r = 0; r < constraints(); ++r) terms.ac(r, p_.locked_joints[static_cast<std::size_t>(r)]) = 1.0;
  terms.ai = jp;
  terms.ai_dot_v(0) = apx;
  terms.ai_dot_v(1) = apy;
}

void FlexibleArm::interface_position(const Eigen::VectorXd& q, Eigen::Ref<Eigen::VectorXd> out) const noexcept {
  const int nj = joints_;
  double px = 0.0;
  double py = 0.0;
  double theta = 0.0;
  double slope = 0.0;
  for (int i = 0; i < nj; ++i) {
    theta += q(i);
    const double th = theta + (i > p_.flexible_link ? slope : 0.0);
    const double c = std::cos(th);
    const double s = std::sin(th);
    if (i != p_.flexible_link) {
      px += p_.lengths[static_cast<std::size_t>(i)] * c;
      py += p_.lengths[static_cast<std::size_t>(i)] * s;
      continue;
    }
    double u = 0.0;
    for (int k = 0; k < modes_; ++k) {
      u += tip_[static_cast<std::size_t>(k)] * q(nj + k);
      slope += tip_slope_[static_cast<std::size_t>(k)] * q(nj + k);
    }
    px += length_ * c - u * s;
    py += length_ * s + u * c;
  }
  out(0) = px;
  out(1) = py;
}

double FlexibleArm::potential(const Eigen::VectorXd& q) const noexcept {
  const int nj = joints_;
  const double g = p_.gravity;
  double py = 0.0;
  double theta = 0.0;
  double slope = 0.0;
  double e = 0.0;
  for (int i = 0; i < nj; ++i) {
    const auto si = static_cast<std::size_t>(i);
    theta += q(i);
    const double th = theta + (i > p_.flexible_link ? slope : 0.0);
    const double c = std::cos(th);
    const double s = std::sin(th);
    const double dq = q(i) - p_.joint_targets[si];
    e += 0.5 * p_.joint_stiffness[si] * dq * dq;
    if (i != p_.flexible_link) {
      py += p_.lengths[si] * s;
      e += p_.masses[si] * g * py;
      continue;
    }
    for (std::size_t gi = 0; gi < static_cast<std::size_t>(kNodes); ++gi) {
      double u = 0.0;
      for (int k = 0; k < modes_; ++k) u += phi_[gi][static_cast<std::size_t>(k)] * q(nj + k);
      e += w_[gi] * g * (py + x_[gi] * s + u * c);
    }
    double u = 0.0;
    for (int k = 0; k < modes_; ++k) {
      const auto sk = static_cast<std::size_t>(k);
      u += tip_[sk] * q(nj + k);
      slope += tip_slope_[sk] * q(nj + k);
      e += 0.5 * stiffness_[sk] * q(nj + k) * q(nj + k);
    }
    py += length_ * s + u * c;
    e += p_.masses[si] * g * py;
  }
  return e;
}

}  // namespace rtcosim::tasks::mechanics
