#pragma once

#include <vector>

#include <Eigen/Dense>

namespace rtcosim::tasks::mechanics {

/*
 * The terms of a mechanical subsystem in generalized coordinates at one
 * configuration (q, v, t), in the notation of the reduced-interface-model
 * paper (eq. 1):  M v' + c = f_i + f_c + f_e + f_d + f_o,  A_c v = 0,
 * w_i = A_i v.  `applied` holds f_e + f_d + f_o (the paper only ever uses
 * their sum); `ac_dot_v` and `ai_dot_v` are the velocity-product terms
 * A_c' v and A_i' v of the acceleration-level constraint and interface.
 * Sized once by MechanicalModel::make_terms(); evaluating into it never
 * reallocates. The caller owns it.
 */
struct MechanicalTerms {
  Eigen::MatrixXd mass;      // n x n, symmetric positive definite
  Eigen::VectorXd coriolis;  // n, c(q, v)
  Eigen::VectorXd applied;   // n, f_e + f_d + f_o
  Eigen::MatrixXd ac;        // nc x n, bilateral constraint Jacobian
  Eigen::VectorXd ac_dot_v;  // nc
  Eigen::MatrixXd ai;        // ni x n, interface Jacobian
  Eigen::VectorXd ai_dot_v;  // ni
};

/*
 * A mechanical subsystem: n generalized coordinates q and velocities v
 * (v = q' for every built-in model), nc bilateral constraints and an
 * ni-dimensional interface. Construction allocates; evaluate() writes into
 * terms from make_terms(), allocates nothing, and is noexcept, so it may
 * run in a frame. q and v must have dofs() entries and the terms must come
 * from this model's make_terms() (not checked on the real-time path). The
 * model holds no mutable state; the caller owns the terms.
 */
class MechanicalModel {
 public:
  virtual ~MechanicalModel() = default;
  [[nodiscard]] virtual int dofs() const noexcept = 0;
  [[nodiscard]] virtual int constraints() const noexcept = 0;
  [[nodiscard]] virtual int interface_dims() const noexcept = 0;
  virtual void evaluate(const Eigen::VectorXd& q, const Eigen::VectorXd& v, double t,
                        MechanicalTerms& terms) const noexcept = 0;
  // The interface position x_i(q) (ni entries, x_i' = w_i = A_i v).
  virtual void interface_position(const Eigen::VectorXd& q, Eigen::Ref<Eigen::VectorXd> out) const noexcept = 0;
  // Potential energy of the conservative applied forces (springs, constant
  // forces, gravity) at q; with the kinetic energy v^T M v / 2 it is the
  // energy the model conserves when undamped and free.
  [[nodiscard]] virtual double potential(const Eigen::VectorXd& q) const noexcept = 0;
  [[nodiscard]] MechanicalTerms make_terms() const;
};

/*
 * A line of point masses x_0 .. x_{n-1} (generalized coordinates are the
 * displacements). Spring/damper k joins mass k-1 and mass k (for k = 0:
 * the ground and mass 0; a zero stiffness and damping means no element).
 * Applied forces are constant per mass. Constraints are rigid joints
 * v_a - v_b = 0 (b = -1: v_a = 0, the mass is fixed). The interface is
 * the velocity of one mass, or of several (interface_masses: ni = their
 * count, each an independent direction of the interface).
 */
class MassChain final : public MechanicalModel {
 public:
  struct Joint {
    int a = 0;
    int b = -1;
  };
  struct Params {
    std::vector<double> masses{};
    std::vector<double> stiffness{};  // same size as masses; element k: (k-1, k)
    std::vector<double> damping{};    // same size as masses
    std::vector<double> force{};      // applied force per mass, same size
    std::vector<Joint> joints{};
    int interface_mass = 0;
    std::vector<int> interface_masses{};  // non-empty: these, in order, instead of interface_mass
  };
  // Throws std::invalid_argument saying which field is wrong.
  explicit MassChain(Params params);
  [[nodiscard]] int dofs() const noexcept override;
  [[nodiscard]] int constraints() const noexcept override;
  [[nodiscard]] int interface_dims() const noexcept override { return static_cast<int>(p_.interface_masses.size()); }
  void evaluate(const Eigen::VectorXd& q, const Eigen::VectorXd& v, double t,
                MechanicalTerms& terms) const noexcept override;
  void interface_position(const Eigen::VectorXd& q, Eigen::Ref<Eigen::VectorXd> out) const noexcept override;
  [[nodiscard]] double potential(const Eigen::VectorXd& q) const noexcept override;

 private:
  Params p_;  // interface_masses filled from interface_mass when empty
};

/*
 * A planar serial arm of n rigid links joined by revolute joints, the
 * first at the origin. Each link is massless with a point mass at its
 * distal end (point masses, not rods: the mass matrix then has the
 * textbook closed form used by the tests, and a rod adds only a constant
 * inertia per link). q are the relative joint angles (q_0 from the x
 * axis), gravity acts along -y, each joint has a viscous damper. Locked
 * joints become constraints v_j = 0 (the paper locks a shoulder joint to
 * reach near-singular configurations). The interface is the end-effector
 * (tip of the last link) velocity in the plane, ni = 2.
 */
class PlanarArm final : public MechanicalModel {
 public:
  struct Params {
    std::vector<double> lengths{};
    std::vector<double> masses{};         // point mass at the tip of each link
    std::vector<double> joint_damping{};  // empty or one per joint
    double gravity = 9.81;
    std::vector<int> locked_joints{};
    // Joint position control as springs: torque -k_j (q_j - target_j);
    // empty or one per joint (a joint with k_j = 0 is free).
    std::vector<double> joint_stiffness{};
    std::vector<double> joint_targets{};
  };
  // Throws std::invalid_argument saying which field is wrong.
  explicit PlanarArm(Params params);
  [[nodiscard]] int dofs() const noexcept override;
  [[nodiscard]] int constraints() const noexcept override;
  [[nodiscard]] int interface_dims() const noexcept override { return 2; }
  void evaluate(const Eigen::VectorXd& q, const Eigen::VectorXd& v, double t,
                MechanicalTerms& terms) const noexcept override;
  void interface_position(const Eigen::VectorXd& q, Eigen::Ref<Eigen::VectorXd> out) const noexcept override;
  [[nodiscard]] double potential(const Eigen::VectorXd& q) const noexcept override;

 private:
  Params p_;
};

/*
 * A point mass in the plane (q = (x, y)) under gravity along -y, with a
 * wall x = wall_x: unilateral penalty contact, a spring-damper that pushes
 * back only while x > wall_x and only as far as it pushes (the damping
 * force never pulls the mass into the wall). The interface is its
 * velocity, ni = 2 (a payload held at a robot's tip).
 */
class PointMass final : public MechanicalModel {
 public:
  struct Params {
    double mass = 1.0;
    double gravity = 9.81;
    double wall_x = 1e300;  // no wall
    double wall_stiffness = 0.0;
    double wall_damping = 0.0;
  };
  // Throws std::invalid_argument saying which field is wrong.
  explicit PointMass(Params params);
  [[nodiscard]] int dofs() const noexcept override { return 2; }
  [[nodiscard]] int constraints() const noexcept override { return 0; }
  [[nodiscard]] int interface_dims() const noexcept override { return 2; }
  void evaluate(const Eigen::VectorXd& q, const Eigen::VectorXd& v, double t,
                MechanicalTerms& terms) const noexcept override;
  void interface_position(const Eigen::VectorXd& q, Eigen::Ref<Eigen::VectorXd> out) const noexcept override;
  [[nodiscard]] double potential(const Eigen::VectorXd& q) const noexcept override;

 private:
  Params p_;
};

}  // namespace rtcosim::tasks::mechanics
