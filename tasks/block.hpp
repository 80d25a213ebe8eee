#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace rtcosim::tasks {

namespace plant {
class LiveSource;
}

class KernelFamily;

// A named input or output port carrying `width` signals. An input with a
// `start` (one value per signal) may be left unconnected and then holds it:
// an FMU's input keeps its start value, as FMI and SSP say.
struct PortInfo {
  std::string name;
  std::size_t width = 1;
  std::vector<double> start;  // empty: the input must be wired
};

/*
 * BlockContext: what a block sees during one evaluation, all views into the
 * partition's preallocated work memory. Inputs are the values (and time
 * derivatives, where known) of whatever drives each input port; outputs are
 * written by the block. `x` is the block's slice of the continuous state,
 * `xd` its slice of the discrete state. `sample_hit` is true in the major
 * evaluation at which a discrete block's sample time is due.
 */
struct BlockContext {
  double t = 0.0;
  // In `update` at a sample hit: the step about to be taken from t (a
  // co-simulated FMU advances by it); 0 elsewhere.
  double h = 0.0;
  bool sample_hit = false;
  std::span<const std::span<const double>> u;   // per input port
  std::span<const std::span<const double>> du;  // per input port
  std::span<const std::span<const unsigned char>> du_valid;
  std::span<const std::span<double>> y;   // per output port
  std::span<const std::span<double>> dy;  // per output port
  std::span<const std::span<unsigned char>> dy_valid;
  std::span<const double> x;
  std::span<double> xd;

  [[nodiscard]] double in(std::size_t port, std::size_t i = 0) const noexcept { return u[port][i]; }
  [[nodiscard]] bool in_derivative_known(std::size_t port) const noexcept {
    for (unsigned char v : du_valid[port]) {
      if (v == 0) return false;
    }
    return true;
  }
  void out(std::size_t port, std::size_t i, double value) const noexcept { y[port][i] = value; }
  void out_derivative(std::size_t port, std::size_t i, double value, bool known = true) const noexcept {
    dy[port][i] = value;
    dy_valid[port][i] = known ? 1 : 0;
  }
  // Marks every output derivative of `port` unknown.
  void unknown_derivative(std::size_t port) const noexcept {
    for (std::size_t i = 0; i < dy[port].size(); ++i) {
      dy[port][i] = 0.0;
      dy_valid[port][i] = 0;
    }
  }
};

/*
 * Block: one element of a block diagram. A concrete block declares its
 * ports, state sizes, sample time and direct feedthrough in its constructor
 * (the set-up phase, which may allocate and throw BlockError), and
 * implements the per-evaluation functions, which run on the real-time path.
 *
 * RT-safe: `initialize`, `output`, `derivatives`, `output_derivatives` and
 * `update` are noexcept and must not allocate, lock or block. The owning
 * Partition calls them in this order within a step: `output` in
 * evaluation order (then `update` for blocks whose sample is due, in a
 * major evaluation), `derivatives` for blocks with continuous states, and
 * `output_derivatives` once per step, in evaluation order, after the state
 * derivatives are known.
 */
class Block {
 public:
  Block(std::string name, std::string type) : name_(std::move(name)), type_(std::move(type)) {}
  virtual ~Block() = default;
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] const std::string& type() const noexcept { return type_; }
  [[nodiscard]] const std::vector<PortInfo>& inputs() const noexcept { return inputs_; }
  [[nodiscard]] const std::vector<PortInfo>& outputs() const noexcept { return outputs_; }
  // True when output values depend on input `port` at the same instant;
  // decides the evaluation order and detects algebraic loops.
  [[nodiscard]] bool feedthrough(std::size_t port) const noexcept { return feedthrough_[port] != 0; }
  [[nodiscard]] std::size_t continuous_states() const noexcept { return continuous_states_; }
  [[nodiscard]] std::size_t discrete_states() const noexcept { return discrete_states_; }
  // Sample period of a discrete block; 0 for a continuous one;
  // kEveryMajorStep for a block whose memory is updated once per step
  // (rate limiter, dead-time-free hold of the last output).
  [[nodiscard]] double sample_time() const noexcept { return sample_time_; }
  static constexpr double kEveryMajorStep = -1.0;
  // True when the output depends on time itself (sources): such a block
  // makes the diagram non-autonomous.
  [[nodiscard]] bool time_dependent() const noexcept { return time_dependent_; }

  // Initial states (x: continuous, xd: discrete).
  virtual void initialize(std::span<double> x, std::span<double> xd) const noexcept {
    for (double& v : x) v = 0.0;
    for (double& v : xd) v = 0.0;
  }
  virtual void output(const BlockContext& c) const noexcept = 0;
  virtual void derivatives(const BlockContext& c, std::span<double> dx) const noexcept { (void)c, (void)dx; }
  // Time derivatives of the outputs: exact for outputs that are states
  // (from `dx`, this block's slice of the state derivatives), by the chain
  // rule where cheap, else flagged unknown (the default).
  virtual void output_derivatives(const BlockContext& c, std::span<const double> dx) const noexcept {
    (void)dx;
    for (std::size_t p = 0; p < outputs_.size(); ++p) c.unknown_derivative(p);
  }
  // Discrete state update at a sample hit, after `output` at that instant.
  virtual void update(const BlockContext& c) const noexcept { (void)c; }

  // State-only outputs: ports declared with add_output(..., true) depend on
  // the block's state and time, never directly on an input. The partition
  // calls state_outputs() before the evaluation order starts for a block
  // whose state-only port feeds a feedthrough input in the same partition
  // (and output_derivatives() once before it too),
  // so a wire from such a port orders nothing and closes no algebraic loop:
  // two mechanical bodies that each integrate the other's reduced interface
  // model (docs/rim.md). state_outputs() writes at least those ports;
  // output() writes them again, with the same values.
  virtual void state_outputs(const BlockContext& c) const noexcept { (void)c; }
  [[nodiscard]] bool state_only(std::size_t port) const noexcept { return state_only_[port] != 0; }

  // Tunable parameters: the ones a block lets its owner change between steps
  // (the state synchronisation's decision variables, docs/sync.md). Names
  // are static strings; `set_tunable` takes the index into them and returns
  // false for an index it does not know. Noexcept, allocation-free.
  [[nodiscard]] virtual std::span<const char* const> tunable_parameters() const noexcept { return {}; }
  virtual bool set_tunable(std::size_t index, double value) noexcept { return (void)index, (void)value, false; }
  [[nodiscard]] virtual double tunable(std::size_t index) const noexcept { return (void)index, 0.0; }

  // State a block keeps outside the partition's vectors (an FMU's, inside
  // the FMU): saved with Partition::snapshot and put back by its restore.
  // False when the block cannot (an FMU without canGetAndSetFMUstate): a
  // snapshot of its partition is then no snapshot. Not RT for an FMU (the
  // FMU allocates): outside the frame path, as snapshots are.
  virtual bool save_state() noexcept { return true; }
  virtual bool restore_state() noexcept { return true; }
  // True for a block whose save_state keeps something (one saved copy
  // only): its partition can be snapshotted but not kept in many saved
  // states at once (Partition::save_to_slot).
  [[nodiscard]] virtual bool keeps_own_state() const noexcept { return false; }

  // Set-up only: why `name` is not one of this block's ports although the
  // block knows it (an FMU's parameter, or a variable of a type that is no
  // port), for the loader's message; empty when the name means nothing.
  [[nodiscard]] virtual std::string why_not_a_port(const std::string& name) const {
    (void)name;
    return {};
  }

  // For a block that declared `set_jumps` (a step source, a switch): a
  // number that changes exactly when the output jumps (the branch it is
  // on). The partition compares it at the end of each step with the one
  // before and marks every output downstream of a change discontinuous, so
  // that the links carrying them restart their methods there.
  [[nodiscard]] virtual double branch(const BlockContext& c) const noexcept {
    (void)c;
    return 0.0;
  }
  [[nodiscard]] bool jumps() const noexcept { return jumps_; }

  // For a block that declared `set_events` (an FMU with state or time
  // events): called once at the end of each step, after the outputs at
  // that instant, with write access to the block's continuous states. It
  // locates and handles the events of the step just taken (at the step's
  // resolution) and returns true when one was handled, so that the
  // partition drops its integrator history there.
  virtual bool event(const BlockContext& c, std::span<double> x) const noexcept {
    (void)c, (void)x;
    return false;
  }
  [[nodiscard]] bool has_events() const noexcept { return events_; }
  // For a block with events that has event indicators (a model-exchange
  // FMU's): how many, and their values at the instant of the last `output`
  // call (its time, states and inputs). A partition with a one-step
  // integrator locates a sign change of one inside the step with them and
  // calls `event` there (Partition::step, docs/config.md "Events"). False
  // when they could not be read. RT-safe.
  [[nodiscard]] std::size_t event_indicators() const noexcept { return indicators_; }
  virtual bool indicators(const BlockContext& c, std::span<double> z) const noexcept {
    (void)c, (void)z;
    return false;
  }
  // For a block with events: called when the partition's outputs are
  // refreshed outside a step (the start of a run, a restored snapshot),
  // with the inputs known and write access to its states; true when it
  // handled an event there (a model-exchange FMU whose wired discrete
  // inputs differ from its start values sets them in Event Mode at t0, as
  // an importer sets inputs before the first step).
  virtual bool inputs_event(const BlockContext& c, std::span<double> x) const noexcept {
    (void)c, (void)x;
    return false;
  }
  // For a block with events that knows its next time event in advance (an
  // FMU's nextEventTime): that time, +inf when none. A partition whose
  // integrator is a one-step method (euler, rk2, rk4) ends a sub-step
  // exactly there, calls `event` at that instant and integrates the rest of
  // the step after it (Partition::step); with ab2 the event is handled at
  // the end of the step that contains it. RT-safe.
  [[nodiscard]] virtual double next_time_event() const noexcept { return std::numeric_limits<double>::infinity(); }

  // For a block that declared `set_state_jacobian` (a model-exchange FMU
  // that provides directional derivatives): d(its state derivatives)/d(its
  // states) at the instant of its last `output` call, inputs held,
  // column-major, continuous_states() squared; false when it could not.
  // The Rosenbrock integrators take it instead of differences where the
  // partition's Jacobian is this block's alone (Partition::step). RT-safe.
  virtual bool state_jacobian(const BlockContext& c, std::span<double> j) const noexcept {
    (void)c, (void)j;
    return false;
  }
  [[nodiscard]] bool has_state_jacobian() const noexcept { return state_jacobian_; }

  // For a block that declared `set_can_fail` (an FMU): true once a call
  // into it failed; the partition's task then stops. `failure` (not RT)
  // says what failed, where and when.
  [[nodiscard]] virtual bool failed() const noexcept { return false; }
  [[nodiscard]] virtual std::string failure() const { return {}; }
  [[nodiscard]] bool can_fail() const noexcept { return can_fail_; }
  // For such a block: true once its model ended the simulation itself (an
  // FMU's terminateSimulation). The step that said so completed; the run
  // then ends normally, at the end of that frame (docs/fmi.md,
  // "Termination"). `termination` (not RT) says who, when and how.
  [[nodiscard]] virtual bool terminated() const noexcept { return false; }
  [[nodiscard]] virtual std::string termination() const { return {}; }
  // The model time at which it ended (an FMU's last successful time, which
  // may lie inside the step): the partition's step ends there.
  [[nodiscard]] virtual double termination_time() const noexcept { return std::numeric_limits<double>::infinity(); }

  // Heap requests the block's foreign code (an FMU) made in its frames
  // since the run started, where they can be detected (an FMI 2.0 FMU's
  // allocateMemory); the run reports a nonzero count.
  [[nodiscard]] virtual std::uint64_t foreign_allocations() const noexcept { return 0; }
  // What the run should tell its user about this block beyond a failure
  // (an FMU's 64-bit outputs read inexactly as doubles); empty when
  // nothing. Not RT: after or beside the run.
  [[nodiscard]] virtual std::string run_notice() const { return {}; }

  // Non-empty when the block can only take equal steps (a co-simulated
  // FMU without canHandleVariableCommunicationStepSize): why, for the
  // configuration check of a task with `step: measured`.
  [[nodiscard]] virtual std::string fixed_step_reason() const { return {}; }

  // The live source whose rows this block's frames take (a `plant` with
  // `source: udp` or `follow: true`), or null: a replay log taps it
  // (docs/replay.md).
  [[nodiscard]] virtual plant::LiveSource* live_source() const noexcept { return nullptr; }

  // Set-up only: true when `name` is no port of this block but can become an
  // output port when the block is made again with it in its `observe`
  // parameter (an FMU's local or parameter): the loader does that for a
  // variable that a wire or `record.signals` names.
  [[nodiscard]] virtual bool can_observe(const std::string& name) const {
    (void)name;
    return false;
  }

  // The kernel family that evaluates runs of blocks of this type in one
  // loop (tasks/kernel.hpp, docs/frame-program.md); null: the partition
  // calls this block's virtual functions, as a kernel of one.
  [[nodiscard]] virtual const KernelFamily* kernel_family() const noexcept { return nullptr; }

 protected:
  std::size_t add_input(std::string name, std::size_t width, bool feedthrough = true, std::vector<double> start = {}) {
    inputs_.push_back({std::move(name), width, std::move(start)});
    feedthrough_.push_back(feedthrough ? 1 : 0);
    return inputs_.size() - 1;
  }
  std::size_t add_output(std::string name, std::size_t width, bool state_only = false) {
    outputs_.push_back({std::move(name), width, {}});
    state_only_.push_back(state_only ? 1 : 0);
    return outputs_.size() - 1;
  }
  void set_continuous_states(std::size_t n) noexcept { continuous_states_ = n; }
  void set_discrete_states(std::size_t n) noexcept { discrete_states_ = n; }
  void set_sample_time(double period) noexcept { sample_time_ = period; }
  void set_time_dependent(bool v = true) noexcept { time_dependent_ = v; }
  void set_jumps(bool v = true) noexcept { jumps_ = v; }
  void set_events(bool v = true) noexcept { events_ = v; }
  void set_event_indicators(std::size_t n) noexcept { indicators_ = n; }
  void set_can_fail(bool v = true) noexcept { can_fail_ = v; }
  void set_state_jacobian(bool v = true) noexcept { state_jacobian_ = v; }

 private:
  std::string name_;
  std::string type_;
  std::vector<PortInfo> inputs_;
  std::vector<PortInfo> outputs_;
  std::vector<unsigned char> feedthrough_;
  std::vector<unsigned char> state_only_;
  std::size_t continuous_states_ = 0;
  std::size_t discrete_states_ = 0;
  double sample_time_ = 0.0;
  bool time_dependent_ = false;
  bool jumps_ = false;
  bool events_ = false;
  std::size_t indicators_ = 0;
  bool can_fail_ = false;
  bool state_jacobian_ = false;
};

}  // namespace rtcosim::tasks
