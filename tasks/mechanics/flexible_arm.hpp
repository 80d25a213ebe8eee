#pragma once

#include <array>
#include <vector>

#include "tasks/mechanics/mechanical_model.hpp"

namespace rtcosim::tasks::mechanics {

/*
 * A planar serial arm like PlanarArm (revolute joints, the first at the
 * origin, massless rigid links with a point mass at their distal end,
 * relative joint angles, gravity along -y, viscous joint dampers, joint
 * springs, locked joints as constraints v_j = 0) in which one link (default
 * the last) is an Euler-Bernoulli beam: bending stiffness EI, mass per
 * length rhoA, length L = lengths[flexible_link], clamped in the joint, with
 * a point mass masses[flexible_link] (>= 0) at its tip. It is the flexible
 * model of the reduced-interface-model paper (Dai et al., eq. 1, floating
 * frame of reference after Shabana): the beam's frame rotates with its
 * joint, and the small transverse deflection in that frame is
 *   u(x, t) = sum_k phi_k(x) eta_k(t),   k < N (modes, 1..3),
 * with the clamped-free cantilever eigenfunctions
 *   phi_k(x) = cosh(b_k x) - cos(b_k x) - s_k (sinh(b_k x) - sin(b_k x)),
 *   s_k = (cosh b_k L + cos b_k L) / (sinh b_k L + sin b_k L),
 *   b_k L = 1.875104069, 4.694091133, 7.854757438,
 * normalised so that int_0^L phi_k^2 dx = L (phi_k(L) = +-2). They are
 * orthogonal, so the elastic force is diagonal: f_e,k = -EI b_k^4 L eta_k,
 * and the clamped beam alone vibrates at omega_k = (b_k L)^2 sqrt(EI / (rhoA L^4)).
 *
 * Generalized coordinates q = [joint angles (n_j); eta (N)], v = q'. A link
 * after the beam is attached to the beam's tip and turns with its slope:
 * its absolute angle gains u'(L) = sum_k phi_k'(L) eta_k (small rotation).
 * The interface is the velocity of the tip of the last link (ni = 2); if
 * the beam is the last link, that is the deflected beam tip.
 *
 * The mass matrix and the velocity-product terms are those of the
 * particle system: M = sum m J^T J, c = sum m J^T (J' v), gravity
 * f_o = -g sum m J^T e_y, summed over the point masses and, for the beam,
 * integrated by 24-point Gauss-Legendre quadrature of rhoA (the integrands
 * are entire functions of frequency <= 2 b_3 L ~ 16: the quadrature is
 * exact to rounding). They are the exact Lagrange equations of this
 * kinematics, so the undamped free arm conserves v^T M v / 2 + potential,
 * and M depends on eta (the u^2 term of the beam's rotary inertia is kept);
 * A_i and A_i' v are the exact Jacobian of the tip and its derivative.
 *
 * Neglected (small deformation): axial deformation and foreshortening (the
 * tip does not move towards the joint as the beam bends), hence geometric
 * (centrifugal) stiffening — a fast-spinning beam comes out too soft;
 * shear and the rotary inertia of the cross-sections (Euler-Bernoulli);
 * any deflection shape outside the N modes.
 *
 * Structural damping per mode (optional): f_d,k = -2 zeta_k omega_k rhoA L
 * eta_k' (modal damping ratio of the clamped beam without tip mass).
 *
 * Ownership: the model owns its parameters and the tables of the shape
 * functions at the quadrature nodes, all built by the constructor;
 * evaluate() works in fixed-capacity stack matrices (at most kMaxJoints
 * joints), allocates nothing and is noexcept. The caller owns the terms.
 */
class FlexibleArm final : public MechanicalModel {
 public:
  static constexpr int kMaxJoints = 16;
  static constexpr int kMaxModes = 3;
  static constexpr int kNodes = 24;
  // b_k L of the clamped-free beam (roots of cos x cosh x = -1).
  static constexpr std::array<double, kMaxModes> kBetaL{1.875104068711961, 4.694091132974175, 7.854757438237613};

  struct Params {
    std::vector<double> lengths{};
    std::vector<double> masses{};  // point mass at each link's tip; >= 0 on the beam
    std::vector<double> joint_damping{};
    double gravity = 9.81;
    std::vector<int> locked_joints{};
    std::vector<double> joint_stiffness{};
    std::vector<double> joint_targets{};
    int flexible_link = -1;  // -1: the last link
    int modes = 1;
    double bending_stiffness = 0.0;       // EI, N m^2
    double mass_per_length = 0.0;         // rhoA, kg/m
    std::vector<double> modal_damping{};  // zeta per mode, empty or one per mode
  };
  // Throws std::invalid_argument saying which field is wrong.
  explicit FlexibleArm(Params params);
  [[nodiscard]] int dofs() const noexcept override { return joints_ + modes_; }
  [[nodiscard]] int constraints() const noexcept override { return static_cast<int>(p_.locked_joints.size()); }
  [[nodiscard]] int interface_dims() const noexcept override { return 2; }
  void evaluate(const Eigen::VectorXd& q, const Eigen::VectorXd& v, double t,
                MechanicalTerms& terms) const noexcept override;
  void interface_position(const Eigen::VectorXd& q, Eigen::Ref<Eigen::VectorXd> out) const noexcept override;
  [[nodiscard]] double potential(const Eigen::VectorXd& q) const noexcept override;

  [[nodiscard]] int joints() const noexcept { return joints_; }
  [[nodiscard]] int modes() const noexcept { return modes_; }
  [[nodiscard]] int flexible_link() const noexcept { return p_.flexible_link; }
  // phi_k(x) and phi_k'(x) of the model (for tests and plots).
  [[nodiscard]] double shape(int k, double x) const noexcept;
  [[nodiscard]] double shape_slope(int k, double x) const noexcept;
  // omega_k of the clamped beam without tip mass, rad/s.
  [[nodiscard]] double clamped_frequency(int k) const noexcept;

 private:
  // d theta_i / d q_j: the absolute angle of link i is the sum of the
  // joint angles up to i, plus the beam's tip slope beyond the beam.
  [[nodiscard]] double angle_gradient(int i, int j) const noexcept;

  Params p_;
  int joints_ = 0;
  int modes_ = 0;
  double length_ = 0.0;  // L of the beam
  std::array<double, kMaxModes> beta_{};
  std::array<double, kMaxModes> stiffness_{};  // EI b_k^4 L
  std::array<double, kMaxModes> damping_{};    // 2 zeta_k omega_k rhoA L
  std::array<double, kMaxModes> tip_{};        // phi_k(L)
  std::array<double, kMaxModes> tip_slope_{};  // phi_k'(L)
  std::array<double, kNodes> x_{};             // quadrature nodes on [0, L]
  std::array<double, kNodes> w_{};             // their weights times rhoA
  std::array<std::array<double, kMaxModes>, kNodes> phi_{};
};

}  // namespace rtcosim::tasks::mechanics
