// Mechanical subsystems as blocks (issue 16): a mass chain, a planar arm
// (rigid, or with one flexible link) and a point mass, whose interface is
// driven by a force, a spring to another body's motion, or the other body's
// reduced interface model (RIM, the `rim` coupling).
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>

#include "interface/rim_payload.hpp"
#include "tasks/block_registry.hpp"
#include "tasks/mechanics/flexible_arm.hpp"
#include "tasks/mechanics/mechanical_model.hpp"
#include "tasks/mechanics/reduced_interface.hpp"

namespace rtcosim::tasks {

namespace {

using mechanics::MechanicalModel;
using mechanics::RimStatus;

// What drives the interface (parameter `interface`).
enum class Drive { kNone, kForce, kSpring, kRim };

// The model's std::invalid_argument as a BlockError naming the parameter:
// the models' messages read "<model>: <parameter>[k] ...".
BlockError model_error(const std::string& block, const std::exception& e) {
  const std::string what = e.what();
  const auto colon = what.find(": ");
  std::string parameter;
  if (colon != std::string::npos) {
    const auto end = what.find_first_of("[ ", colon + 2);
    parameter = what.substr(colon + 2, end == std::string::npos ? std::string::npos : end - colon - 2);
  }
  return BlockError("block '" + block + "': " + what, block, parameter);
}

int integer(const std::string& block, const std::string& name, double v, int min, int max) {
  if (!(v == std::floor(v)) || v < min || v > max) {
    throw BlockError("block '" + block + "': parameter '" + name + "' has " + describe(ParamValue(v)) +
                         " — expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]",
                     block, name);
  }
  return static_cast<int>(v);
}

/*
 * A mechanical subsystem in generalized coordinates (tasks/mechanics) as a
 * block: continuous states [q; v], v' from M v' + c = f + A_i^T lambda with
 * the model's bilateral constraints A_c v = 0 (Schur complement of the
 * LDL^T-factored mass matrix). The interface force lambda comes from the
 * `interface` parameter:
 *   force   input `force` (ni): lambda is the input (signal-based side);
 *   spring  input `motion` (2 ni: position, velocity of the other body's
 *           interface): lambda = k (x_other - x_i) + d (w_other - w_i);
 *   rim     input `rim` (a packed RIM of the other body, interface/rim_payload):
 *           the other body is M_eff w' + z = -lambda + lambda~ and the
 *           interface velocities are equal, w_other = w_i = A_i v. With
 *           w' = A_i v' + A_i' v that makes
 *             (M + A_i^T M_eff A_i) v' = f - c + A_i^T (lambda~ - z - M_eff A_i' v)
 *           and lambda = lambda~ - z - M_eff (A_i v' + A_i' v), solved at
 *           every derivative evaluation (every micro step and stage);
 *   none    lambda = 0.
 * Outputs: q, v, the interface position x and velocity w (and both as
 * `motion`, the input of a spring-driven body), the energy
 * (v^T M v / 2 plus the model's potential), this body's own RIM packed for
 * a `rim` link, and, for spring and rim, `force` (lambda, on this body) and
 * `reaction` (-lambda, on the other body). The RIM output depends on the
 * state only (lambda~ holds f_e + f_d + f_o, not the interface force): a
 * state-only output (Block::state_outputs), so two bodies wired both ways
 * form no algebraic loop.
 * A RIM input that does not unpack, or reports singular_mass/non_finite,
 * counts as no RIM (lambda = 0) for that evaluation; singular_interface
 * uses the finite pseudo-inverse M_eff (no inertia in the blocked
 * directions; docs/rim.md). Real time: every workspace sized here, all
 * evaluations noexcept and allocation-free (tests/tasks/rim_block_test.cpp).
 */
class MechanicalBlock final : public Block {
 public:
  MechanicalBlock(const std::string& name, const std::string& type, const BlockParams& p,
                  std::unique_ptr<MechanicalModel> model)
      : Block(name, type), model_(std::move(model)), reduction_(*model_) {
    n_ = model_->dofs();
    nc_ = model_->constraints();
    ni_ = model_->interface_dims();
    const auto n = static_cast<std::size_t>(n_);
    const auto ni = static_cast<std::size_t>(ni_);
    read_drive(name, p);
    q0_ = initial(name, p, "q0", n);
    v0_ = initial(name, p, "v0", n);
    declare_ports(n, ni);
    set_continuous_states(2 * n);
    size_workspaces();
  }

  void initialize(std::span<double> x, std::span<double>) const noexcept override {
    offset_known_ = false;
    saved_offset_known_ = false;
    for (std::size_t i = 0; i < q0_.size(); ++i) {
      x[i] = q0_[i];
      x[q0_.size() + i] = v0_[i];
    }
  }

  void output(const BlockContext& c) const noexcept override {
    solve(c);
    const auto n = static_cast<std::size_t>(n_);
    const auto ni = static_cast<std::size_t>(ni_);
    for (std::size_t i = 0; i < n; ++i) {
      c.out(kQ, i, c.x[i]);
      c.out(kV, i, c.x[n + i]);
    }
    model_->interface_position(q_, xi_);
    wi_.noalias() = terms_.ai * v_;
    for (std::size_t i = 0; i < ni; ++i) {
      c.out(kX, i, xi_(static_cast<Eigen::Index>(i)));
      c.out(kW, i, wi_(static_cast<Eigen::Index>(i)));
      c.out(kMotion, i, xi_(static_cast<Eigen::Index>(i)));
      c.out(kMotion, ni + i, wi_(static_cast<Eigen::Index>(i)));
    }
    c.out(kEnergy, 0, 0.5 * v_.dot(terms_.mass * v_) + model_->potential(q_));
    publish_rim(c);
    if (drive_ == Drive::kSpring || drive_ == Drive::kRim) {
      // The other body, driven by `reaction` over its own longer step,
      // drifts from the interface velocity this body computed; with a
      // drift_time its reaction also pulls it back: M_eff (w_i - w_other) / T,
      // and with a position_drift_time T_p to this body's interface
      // position as well: M_eff (x_i - x_other - d_0) / T_p^2, d_0 the
      // offset of the two interfaces at the first RIM (a grip point need
      // not be the payload's reference point).
      correction_.setZero();
      // (position_drift_time needs a drift_time: the constructor says so.)
      if (rim_ok_ && drift_time_ > 0.0) {
        if (!offset_known_) {
          for (Eigen::Index i = 0; i < ni_; ++i) offset_(i) = xi_(i) - payload_.position[static_cast<std::size_t>(i)];
          offset_known_ = true;
        }
        for (Eigen::Index i = 0; i < ni_; ++i) wo_(i) = wi_(i) - payload_.velocity[static_cast<std::size_t>(i)];
        correction_.noalias() = meff_ * wo_;
        correction_ /= drift_time_;
        if (position_drift_time_ > 0.0) {
          const double k = 1.0 / (position_drift_time_ * position_drift_time_);
          for (Eigen::Index i = 0; i < ni_; ++i)
            wo_(i) = k * (xi_(i) - payload_.position[static_cast<std::size_t>(i)] - offset_(i));
          correction_.noalias() += meff_ * wo_;
        }
      }
      for (std::size_t i = 0; i < ni; ++i) {
        const auto e = static_cast<Eigen::Index>(i);
        c.out(kForce, i, lambda_(e));
        c.out(kReaction, i, -lambda_(e) + correction_(e));
      }
    }
  }

  // d_0 is state kept outside the partition's vectors: a snapshot taken
  // before the first usable RIM must not keep the one a rejected trial
  // latched (state synchronisation).
  bool save_state() noexcept override {
    saved_offset_known_ = offset_known_;
    saved_offset_ = offset_;
    return true;
  }
  bool restore_state() noexcept override {
    offset_known_ = saved_offset_known_;
    offset_ = saved_offset_;
    return true;
  }
  [[nodiscard]] bool keeps_own_state() const noexcept override { return true; }

  // This body's RIM at (t, x): it holds no interface force, so it is ready
  // before any input is (docs/rim.md, both directions).
  void state_outputs(const BlockContext& c) const noexcept override {
    load_state(c);
    model_->evaluate(q_, v_, c.t, terms_);
    model_->interface_position(q_, xi_);
    wi_.noalias() = terms_.ai * v_;
    publish_rim(c);
  }

  void derivatives(const BlockContext& c, std::span<double> dx) const noexcept override {
    solve(c);
    const auto n = static_cast<std::size_t>(n_);
    for (std::size_t i = 0; i < n; ++i) {
      dx[i] = c.x[n + i];
      dx[n + i] = vdot_(static_cast<Eigen::Index>(i));
    }
  }

  void output_derivatives(const BlockContext& c, std::span<const double> dx) const noexcept override {
    const auto n = static_cast<std::size_t>(n_);
    const auto ni = static_cast<std::size_t>(ni_);
    for (std::size_t i = 0; i < n; ++i) {
      c.out_derivative(kQ, i, dx[i]);
      c.out_derivative(kV, i, dx[n + i]);
    }
    load_state(c);
    model_->evaluate(q_, v_, c.t, terms_);
    for (std::size_t i = 0; i < n; ++i) vdot_(static_cast<Eigen::Index>(i)) = dx[n + i];
    wi_.noalias() = terms_.ai * v_;
    wdot_.noalias() = terms_.ai * vdot_;
    wdot_ += terms_.ai_dot_v;
    for (std::size_t i = 0; i < ni; ++i) {
      c.out_derivative(kX, i, wi_(static_cast<Eigen::Index>(i)));
      c.out_derivative(kW, i, wdot_(static_cast<Eigen::Index>(i)));
      c.out_derivative(kMotion, i, wi_(static_cast<Eigen::Index>(i)));
      c.out_derivative(kMotion, ni + i, wdot_(static_cast<Eigen::Index>(i)));
    }
    c.unknown_derivative(kEnergy);
    c.unknown_derivative(kRim);
    if (drive_ == Drive::kSpring && c.in_derivative_known(0)) {
      // lambda' = k (x_other' - w_i) + d (w_other' - w_i').
      for (std::size_t i = 0; i < ni; ++i) {
        const auto e = static_cast<Eigen::Index>(i);
        const double d = stiffness_ * (c.du[0][i] - wi_(e)) + damping_ * (c.du[0][ni + i] - wdot_(e));
        c.out_derivative(kForce, i, d);
        c.out_derivative(kReaction, i, -d);
      }
    } else if (drive_ == Drive::kSpring || drive_ == Drive::kRim) {
      c.unknown_derivative(kForce);
      c.unknown_derivative(kReaction);
    }
  }

 private:
  enum Port : std::size_t { kQ, kV, kX, kW, kEnergy, kRim, kMotion, kForce, kReaction };

  static std::vector<double> initial(const std::string& block, const BlockParams& p, const char* name, std::size_t n) {
    const auto v = p.vector_if(block, name);
    if (!v) return std::vector<double>(n, 0.0);
    if (v->size() != n) {
      throw BlockError("block '" + block + "': parameter '" + name + "' has " + std::to_string(v->size()) +
                           " values — expected " + std::to_string(n) + " (one per generalized coordinate)",
                       block, name);
    }
    return *v;
  }

  // The interface drive and the parameters only it takes, checked before
  // anything is sized from them.
  void read_drive(const std::string& name, const BlockParams& p) {
    const std::string drive = p.text(name, "interface", "force");
    if (drive == "force") {
      drive_ = Drive::kForce;
    } else if (drive == "spring") {
      drive_ = Drive::kSpring;
    } else if (drive == "rim") {
      drive_ = Drive::kRim;
    } else if (drive == "none") {
      drive_ = Drive::kNone;
    } else {
      throw BlockError(
          "block '" + name + "': parameter 'interface' is '" + drive + "' — expected force, spring, rim or none", name,
          "interface");
    }
    if (drive_ == Drive::kRim) {
      drift_time_ = p.non_negative(name, "drift_time", 0.0);
      position_drift_time_ = p.non_negative(name, "position_drift_time", 0.0);
      if (position_drift_time_ > 0.0 && !(drift_time_ > 0.0)) {
        throw BlockError("block '" + name +
                             "': parameter 'position_drift_time' needs a drift_time > 0 — without the velocity "
                             "term the position pull is an undamped spring (critical damping: drift_time = "
                             "position_drift_time / 2)",
                         name, "position_drift_time");
      }
    }
    if (drive_ == Drive::kSpring) {
      stiffness_ = p.non_negative(name, "coupling_stiffness", 0.0);
      damping_ = p.non_negative(name, "coupling_damping", 0.0);
    }
  }

  // The ports the drive asks for, in the order the Port indices name.
  void declare_ports(std::size_t n, std::size_t ni) {
    // A force input feeds no output through (outputs are states or the RIM):
    // that is what lets a force-driven body and a rim-driven one close a loop.
    if (drive_ == Drive::kForce) add_input("force", ni, false);
    if (drive_ == Drive::kSpring) add_input("motion", 2 * ni, true);
    if (drive_ == Drive::kRim) add_input("rim", interface::RimPayload::flat_size(ni), true);
    add_output("q", n);
    add_output("v", n);
    add_output("x", ni);
    add_output("w", ni);
    add_output("energy", 1);
    add_output("rim", interface::RimPayload::flat_size(ni), true);  // state only: two-way rim closes no loop
    add_output("motion", 2 * ni);
    if (drive_ == Drive::kSpring || drive_ == Drive::kRim) {
      add_output("force", ni);
      add_output("reaction", ni);
    }
  }

  // Every workspace of the evaluations sized here, at set-up: the frame
  // path then allocates nothing.
  void size_workspaces() {
    terms_ = model_->make_terms();
    own_ = reduction_.make_quantities();
    q_ = Eigen::VectorXd::Zero(n_);
    v_ = Eigen::VectorXd::Zero(n_);
    vdot_ = Eigen::VectorXd::Zero(n_);
    f_ = Eigen::VectorXd::Zero(n_);
    m_ = Eigen::MatrixXd::Zero(n_, n_);
    // Sized by factoring an identity in place: moving a sized LDLT in reads
    // its uninitialised `info` (Eigen 3.4; UBSan: invalid ComputationInfo).
    m_ldlt_.compute(Eigen::MatrixXd::Identity(n_, n_));
    minv_act_ = Eigen::MatrixXd::Zero(n_, nc_);
    s_ = Eigen::MatrixXd::Zero(nc_, nc_);
    if (nc_ > 0) s_ldlt_.compute(Eigen::MatrixXd::Identity(nc_, nc_));
    mu_ = Eigen::VectorXd::Zero(nc_);
    rc_ = Eigen::VectorXd::Zero(nc_);
    meff_ = Eigen::MatrixXd::Zero(ni_, ni_);
    meff_ai_ = Eigen::MatrixXd::Zero(ni_, n_);
    ri_ = Eigen::VectorXd::Zero(ni_);
    lambda_ = Eigen::VectorXd::Zero(ni_);
    xi_ = Eigen::VectorXd::Zero(ni_);
    wi_ = Eigen::VectorXd::Zero(ni_);
    wdot_ = Eigen::VectorXd::Zero(ni_);
    lt_in_ = Eigen::VectorXd::Zero(ni_);
    wo_ = Eigen::VectorXd::Zero(ni_);
    correction_ = Eigen::VectorXd::Zero(ni_);
    z_in_ = Eigen::VectorXd::Zero(ni_);
    offset_ = Eigen::VectorXd::Zero(ni_);
    saved_offset_ = Eigen::VectorXd::Zero(ni_);
  }

  void load_state(const BlockContext& c) const noexcept {
    for (Eigen::Index i = 0; i < n_; ++i) {
      q_(i) = c.x[static_cast<std::size_t>(i)];
      v_(i) = c.x[static_cast<std::size_t>(n_ + i)];
    }
  }

  // v' and lambda at (t, x) with this evaluation's inputs.
  void solve(const BlockContext& c) const noexcept {
    load_state(c);
    model_->evaluate(q_, v_, c.t, terms_);
    m_ = terms_.mass;
    f_ = terms_.applied - terms_.coriolis;
    bool rim = false;
    switch (drive_) {
      case Drive::kNone:
        lambda_.setZero();
        break;
      case Drive::kForce:
        for (Eigen::Index i = 0; i < ni_; ++i) lambda_(i) = c.u[0][static_cast<std::size_t>(i)];
        break;
      case Drive::kSpring:
        model_->interface_position(q_, xi_);
        wi_.noalias() = terms_.ai * v_;
        for (Eigen::Index i = 0; i < ni_; ++i) {
          const auto s = static_cast<std::size_t>(i);
          lambda_(i) =
              stiffness_ * (c.u[0][s] - xi_(i)) + damping_ * (c.u[0][static_cast<std::size_t>(ni_) + s] - wi_(i));
        }
        break;
      case Drive::kRim:
        rim = load_rim(c.u[0]);
        rim_ok_ = rim;
        if (rim) {
          // The other body's inertia joins this one's at the interface, its
          // force lambda~ - z - M_eff A_i' v acts there.
          meff_ai_.noalias() = meff_ * terms_.ai;
          m_.noalias() += terms_.ai.transpose() * meff_ai_;
          ri_ = lt_in_ - z_in_;
          ri_.noalias() -= meff_ * terms_.ai_dot_v;
          lambda_ = ri_;  // the part independent of v'; completed below
        } else {
          lambda_.setZero();
        }
        break;
    }
    if (drive_ != Drive::kRim || !rim)
      f_.noalias() += terms_.ai.transpose() * lambda_;
    else
      f_.noalias() += terms_.ai.transpose() * ri_;
    m_ldlt_.compute(m_);
    vdot_ = m_ldlt_.solve(f_);
    if (nc_ > 0) {
      // A_c v' = -A_c' v: v' = M^-1 (f + A_c^T mu), S mu = -A_c' v - A_c M^-1 f.
      minv_act_ = m_ldlt_.solve(terms_.ac.transpose());
      s_.noalias() = terms_.ac * minv_act_;
      s_ldlt_.compute(s_);
      rc_ = -terms_.ac_dot_v;
      rc_.noalias() -= terms_.ac * vdot_;
      mu_ = s_ldlt_.solve(rc_);
      vdot_.noalias() += minv_act_ * mu_;
    }
    if (rim) {
      wdot_.noalias() = terms_.ai * vdot_;
      lambda_.noalias() -= meff_ * wdot_;
    }
  }

  // Reads the other body's RIM from the input; false when there is none
  // usable (not yet received, malformed, or singular mass / non-finite).
  bool load_rim(std::span<const double> in) const noexcept {
    if (interface::unpack_rim_payload(in, payload_) != interface::RimUnpackError::kNone) return false;
    if (payload_.dims != static_cast<std::size_t>(ni_)) return false;
    const auto status = static_cast<RimStatus>(payload_.status);
    if (status != RimStatus::kOk && status != RimStatus::kSingularInterface) return false;
    for (Eigen::Index r = 0; r < ni_; ++r) {
      const auto rs = static_cast<std::size_t>(r);
      lt_in_(r) = payload_.lambda_tilde[rs];
      z_in_(r) = payload_.z[rs];
      for (Eigen::Index k = 0; k < ni_; ++k) meff_(r, k) = payload_.m(rs, static_cast<std::size_t>(k));
    }
    return true;
  }

  // This body's own RIM at (t, x), packed (for a `rim` link to the other
  // body). A link carries finite numbers only: an infinite condition
  // travels as the largest double.
  void publish_rim(const BlockContext& c) const noexcept {
    reduction_.compute(terms_, own_);
    interface::RimPayload& out = outgoing_;
    out.tag = c.t;
    out.dims = static_cast<std::size_t>(ni_);
    out.status = static_cast<std::uint8_t>(own_.status);
    out.condition = std::isfinite(own_.condition) ? own_.condition : std::numeric_limits<double>::max();
    for (Eigen::Index r = 0; r < ni_; ++r) {
      const auto rs = static_cast<std::size_t>(r);
      out.lambda_tilde[rs] = own_.lambda_tilde(r);
      out.z[rs] = own_.z(r);
      out.velocity[rs] = wi_(r);
      out.position[rs] = xi_(r);
      for (Eigen::Index k = 0; k < ni_; ++k) out.m(rs, static_cast<std::size_t>(k)) = own_.m_eff(r, k);
    }
    (void)out.pack(c.y[kRim]);
  }

  std::unique_ptr<MechanicalModel> model_;
  mutable mechanics::ReducedInterface reduction_;
  Drive drive_ = Drive::kForce;
  double stiffness_ = 0.0;
  double damping_ = 0.0;
  double drift_time_ = 0.0;
  double position_drift_time_ = 0.0;
  int n_ = 0, nc_ = 0, ni_ = 0;
  std::vector<double> q0_, v0_;
  // Work memory of the evaluations (one thread owns the partition).
  mutable mechanics::MechanicalTerms terms_;
  mutable mechanics::RimQuantities own_;
  mutable interface::RimPayload payload_;
  mutable interface::RimPayload outgoing_;
  mutable Eigen::VectorXd q_, v_, vdot_, f_, mu_, rc_, ri_, lambda_, xi_, wi_, wdot_, lt_in_, z_in_, wo_, correction_;
  mutable bool rim_ok_ = false;
  mutable bool offset_known_ = false;
  mutable Eigen::VectorXd offset_;  // x_i - x_other at the first RIM (position_drift_time)
  mutable bool saved_offset_known_ = false;
  Eigen::VectorXd saved_offset_;
  mutable Eigen::MatrixXd m_, minv_act_, s_, meff_, meff_ai_;
  mutable Eigen::LDLT<Eigen::MatrixXd> m_ldlt_, s_ldlt_;
};

// The block around a model built from `params`; the model's complaint about
// them as a BlockError.
template <typename Model>
std::unique_ptr<Block> model_block(const std::string& name, const std::string& type, const BlockParams& p,
                                   typename Model::Params params) {
  std::unique_ptr<MechanicalModel> model;
  try {
    model = std::make_unique<Model>(std::move(params));
  } catch (const std::invalid_argument& e) {
    throw model_error(name, e);
  }
  return std::make_unique<MechanicalBlock>(name, type, p, std::move(model));
}

std::unique_ptr<Block> make_mass_chain(const std::string& name, const BlockParams& p) {
  mechanics::MassChain::Params mp;
  mp.masses = p.vector(name, "masses");
  mp.stiffness = p.vector_if(name, "stiffness").value_or(Vector{});
  mp.damping = p.vector_if(name, "damping").value_or(Vector{});
  mp.force = p.vector_if(name, "force").value_or(Vector{});
  const int last = static_cast<int>(mp.masses.size()) - 1;
  if (const auto joints = p.matrix_if(name, "joints")) {
    for (const auto& row : *joints) {
      if (row.size() != 2) {
        throw BlockError("block '" + name + "': parameter 'joints' has a row of " + std::to_string(row.size()) +
                             " numbers — expected pairs [a, b] of mass indices (b = -1: the ground)",
                         name, "joints");
      }
      mp.joints.push_back({integer(name, "joints", row[0], 0, last), integer(name, "joints", row[1], -1, last)});
    }
  }
  mp.interface_mass = integer(name, "interface_mass", p.number(name, "interface_mass", 0.0), 0, last);
  if (const auto masses = p.vector_if(name, "interface_masses")) {
    for (double m : *masses) mp.interface_masses.push_back(integer(name, "interface_masses", m, 0, last));
  }
  return model_block<mechanics::MassChain>(name, "mass_chain", p, std::move(mp));
}

// What a rigid and a flexible arm are both given, read in one order (the
// first wrong parameter is the one named); the index of the last link.
template <typename ArmParams>
int read_arm(const std::string& name, const BlockParams& p, ArmParams& ap) {
  ap.lengths = p.vector(name, "lengths");
  ap.masses = p.vector(name, "masses");
  ap.joint_damping = p.vector_if(name, "joint_damping").value_or(Vector{});
  ap.gravity = p.number(name, "gravity", 9.81);
  const int last = static_cast<int>(ap.lengths.size()) - 1;
  if (const auto locked = p.vector_if(name, "locked_joints")) {
    for (double j : *locked) ap.locked_joints.push_back(integer(name, "locked_joints", j, 0, last));
  }
  ap.joint_stiffness = p.vector_if(name, "joint_stiffness").value_or(Vector{});
  ap.joint_targets = p.vector_if(name, "joint_targets").value_or(Vector{});
  return last;
}

std::unique_ptr<Block> make_planar_arm(const std::string& name, const BlockParams& p) {
  mechanics::PlanarArm::Params ap;
  (void)read_arm(name, p, ap);
  return model_block<mechanics::PlanarArm>(name, "planar_arm", p, std::move(ap));
}

std::unique_ptr<Block> make_flexible_arm(const std::string& name, const BlockParams& p) {
  mechanics::FlexibleArm::Params ap;
  const int last = read_arm(name, p, ap);
  // No links: the model names `lengths`, not a flexible_link out of range.
  if (last >= 0) ap.flexible_link = integer(name, "flexible_link", p.number(name, "flexible_link", last), 0, last);
  ap.modes = integer(name, "modes", p.number(name, "modes", 1.0), 1, mechanics::FlexibleArm::kMaxModes);
  ap.bending_stiffness = p.positive(name, "bending_stiffness");
  ap.mass_per_length = p.positive(name, "mass_per_length");
  ap.modal_damping = p.vector_if(name, "modal_damping").value_or(Vector{});
  return model_block<mechanics::FlexibleArm>(name, "flexible_arm", p, std::move(ap));
}

std::unique_ptr<Block> make_point_mass(const std::string& name, const BlockParams& p) {
  mechanics::PointMass::Params mp;
  mp.mass = p.positive(name, "mass");
  mp.gravity = p.number(name, "gravity", 9.81);
  mp.wall_x = p.number(name, "wall_x", 1e300);
  mp.wall_stiffness = p.non_negative(name, "wall_stiffness", 0.0);
  mp.wall_damping = p.non_negative(name, "wall_damping", 0.0);
  return model_block<mechanics::PointMass>(name, "point_mass", p, mp);
}

std::vector<BlockParamDoc> interface_docs() {
  return {{"interface", "text", "force",
           "what drives the interface: force (input 'force'), spring (input 'motion' = other body's x, w), "
           "rim (input 'rim': the other body's reduced interface model, coupling method rim), none"},
          {"drift_time", "number >= 0", "0",
           "interface: rim only, s: the reaction also pulls the other body's interface velocity to this one's "
           "within about this time (0: off)"},
          {"position_drift_time", "number >= 0", "0",
           "interface: rim only, s: the reaction also pulls the other body's interface position to this one's "
           "(needs drift_time; critically damped at drift_time = position_drift_time / 2; 0: off)"},
          {"coupling_stiffness", "number >= 0", "0", "interface: spring only, N/m"},
          {"coupling_damping", "number >= 0", "0", "interface: spring only, N s/m"},
          {"q0", "list of numbers", "zeros", "generalized coordinates at t = 0"},
          {"v0", "list of numbers", "zeros", "generalized velocities at t = 0"}};
}

}  // namespace

void register_mechanics_blocks(BlockRegistry& r) {
  auto chain = interface_docs();
  chain.insert(chain.begin(),
               {{"masses", "list of positive numbers", "", "kg, one per mass"},
                {"stiffness", "list of numbers >= 0", "zeros", "element k joins mass k-1 and k (k = 0: ground), N/m"},
                {"damping", "list of numbers >= 0", "zeros", "element k, N s/m"},
                {"force", "list of numbers", "zeros", "constant applied force per mass, N"},
                {"joints", "matrix", "none", "rigid joints [a, b]: v_a = v_b (b = -1: mass a fixed)"},
                {"interface_mass", "integer", "0", "the mass whose velocity is the interface (ni = 1)"},
                {"interface_masses", "list of integers", "[interface_mass]",
                 "the masses whose velocities form the interface, in order (ni = their count)"}});
  r.add({"mass_chain", "masses on a line with springs, dampers and rigid joints; interface: one or more masses",
         std::move(chain), make_mass_chain});
  auto arm = interface_docs();
  arm.insert(arm.begin(), {{"lengths", "list of positive numbers", "", "m, one per link"},
                           {"masses", "list of positive numbers", "", "kg, point mass at each link's tip"},
                           {"joint_damping", "list of numbers >= 0", "zeros", "N m s/rad per joint"},
                           {"gravity", "number", "9.81", "m/s^2 along -y"},
                           {"locked_joints", "list of numbers", "none", "joints held at their q0"},
                           {"joint_stiffness", "list of numbers >= 0", "zeros", "position control: N m/rad per joint"},
                           {"joint_targets", "list of numbers", "zeros", "rad, the angles the joint springs pull to"}});
  r.add({"planar_arm", "planar serial arm of rigid links, point masses; interface: the tip velocity (ni = 2)",
         std::move(arm), make_planar_arm});
  auto flex = interface_docs();
  flex.insert(flex.begin(),
              {{"lengths", "list of positive numbers", "", "m, one per link (the flexible link's is the beam's L)"},
               {"masses", "list of numbers", "",
                "kg, point mass at each link's tip (> 0; >= 0 for the flexible link: its tip mass)"},
               {"flexible_link", "integer", "last link", "the link that is an Euler-Bernoulli beam"},
               {"modes", "integer", "1", "assumed modes of the beam (clamped-free cantilever shapes), 1..3"},
               {"bending_stiffness", "positive number", "", "EI of the beam, N m^2"},
               {"mass_per_length", "positive number", "", "rhoA of the beam, kg/m"},
               {"modal_damping", "list of numbers >= 0", "zeros", "damping ratio per mode (of the clamped beam)"},
               {"joint_damping", "list of numbers >= 0", "zeros", "N m s/rad per joint"},
               {"gravity", "number", "9.81", "m/s^2 along -y"},
               {"locked_joints", "list of numbers", "none", "joints held at their q0"},
               {"joint_stiffness", "list of numbers >= 0", "zeros", "position control: N m/rad per joint"},
               {"joint_targets", "list of numbers", "zeros", "rad, the angles the joint springs pull to"}});
  r.add({"flexible_arm",
         "planar serial arm with one flexible link (assumed modes, floating frame); q = [joint angles; modal "
         "coordinates]; interface: the tip velocity (ni = 2)",
         std::move(flex), make_flexible_arm});
  auto mass = interface_docs();
  mass.insert(mass.begin(), {{"mass", "positive number", "", "kg"},
                             {"gravity", "number", "9.81", "m/s^2 along -y"},
                             {"wall_x", "number", "none", "m, a wall x = wall_x (penalty contact while x > wall_x)"},
                             {"wall_stiffness", "number >= 0", "0", "N/m"},
                             {"wall_damping", "number >= 0", "0", "N s/m, only while pushing"}});
  r.add({"point_mass",
         "a point mass in the plane with penalty contact against a wall; interface: its velocity (ni = 2)",
         std::move(mass), make_point_mass});
}

}  // namespace rtcosim::tasks
