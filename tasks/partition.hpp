#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tasks/block.hpp"
#include "tasks/integrator.hpp"

namespace rtcosim::tasks {

// "block.port" as written in a configuration.
struct Endpoint {
  std::string block;
  std::string port;
  [[nodiscard]] std::string str() const { return block + "." + port; }
};

struct WireSpec {
  Endpoint from;  // a block output
  Endpoint to;    // a block input
};

// An input of the partition fed from outside (another task's link, a test):
// `width` signals driving every input port in `targets`.
struct ExternalInputSpec {
  std::string name;
  std::size_t width = 1;
  std::vector<Endpoint> targets;
};

// What the samples that follow are for. An averaging input (reference
// eq. 10.7) replaces the input by its step mean only inside the integration
// formulas; discrete blocks at their sample hits and the outputs at the end
// of a step see the input's value at that instant.
enum class InputPass {
  kDiscrete,     // the major evaluation at the step start: sample hits, discrete updates
  kIntegration,  // the integrator's stage evaluations inside [t, t + h]
  kOutput,       // the outputs at the end of the step (or at t0, before the first step)
  kEvent,        // the outputs at a time event inside the step: as kOutput, but not the frame's counters
};

/*
 * InputSource: where a partition's external inputs come from. The partition
 * calls `begin_step` once per step with the step's span, `begin_pass` before
 * each group of samples, then `sample` at the times its integrator chooses
 * inside [t, t + h] (the runtime answers from its links' extrapolators, a
 * test from a formula).
 * RT-safe contract: every function noexcept, allocation-free.
 */
class InputSource {
 public:
  virtual ~InputSource() = default;
  virtual void begin_step(double t, double h) noexcept { (void)t, (void)h; }
  virtual void begin_pass(InputPass pass) noexcept { (void)pass; }
  virtual void sample(std::size_t input, double t, std::span<double> out) noexcept = 0;
  // Every input at t: `ext` holds them one after another, input i at
  // [offsets[i], offsets[i + 1]). The default asks `sample` for each; a
  // source that answers several inputs with one evaluation (the runtime's
  // bundled links) overrides it.
  virtual void sample_all(double t, std::span<double> ext, std::span<const std::size_t> offsets) noexcept {
    for (std::size_t i = 0; i + 1 < offsets.size(); ++i)
      sample(i, t, ext.subspan(offsets[i], offsets[i + 1] - offsets[i]));
  }
};

// Where one output port's values live in the partition's signal memory.
struct OutputRef {
  std::size_t offset = 0;
  std::size_t width = 0;
};

/*
 * Partition: the part of a block diagram one task computes, compiled into
 * an evaluation order (topological over direct feedthrough; an algebraic
 * loop is a BlockError naming its blocks), one contiguous continuous-state
 * vector, one discrete-state vector and preallocated work memory.
 *
 * Set-up: the constructor takes ownership of the blocks, checks the wiring
 * (unknown blocks and ports, widths, unconnected inputs, two sources on one
 * input) and allocates everything; it throws BlockError.
 *
 * Real time: `reset`, `step`, `snapshot`, `restore` and the output accessors
 * are noexcept and allocate nothing. One thread owns a partition.
 */
class Partition {
 public:
  Partition(std::string name, std::vector<std::unique_ptr<Block>> blocks, const std::vector<WireSpec>& wires,
            std::vector<ExternalInputSpec> externals, IntegratorKind integrator);
  ~Partition();
  Partition(const Partition&) = delete;
  Partition& operator=(const Partition&) = delete;

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] IntegratorKind integrator() const noexcept { return integrator_; }
  [[nodiscard]] std::size_t state_size() const noexcept;
  [[nodiscard]] std::size_t discrete_state_size() const noexcept;
  [[nodiscard]] std::size_t block_count() const noexcept;
  [[nodiscard]] const Block& block(std::size_t i) const noexcept;
  // For tunable parameters between steps (Block::set_tunable); the partition's owner only.
  [[nodiscard]] Block& mutable_block(std::size_t i) noexcept;
  [[nodiscard]] const std::vector<ExternalInputSpec>& externals() const noexcept { return externals_; }
  // Block names in evaluation order.
  [[nodiscard]] std::vector<std::string> evaluation_order() const;

  // Set-up: locates an output port; throws BlockError with did-you-mean.
  [[nodiscard]] OutputRef find_output(const Endpoint& port) const;

  // Set-up: only these output ports' time derivatives are read outside the
  // partition (the links whose method uses them); the frame program then
  // computes output derivatives only where these, or a block of its own
  // code, read them. Until it is called every derivative is computed. The
  // others read as unknown (flag 0, value 0). Recompiles and resets.
  void set_derivative_consumers(std::span<const OutputRef> ports);
  // Set-up: false evaluates every block through its virtual functions, in
  // the evaluation order, in every pass, with every derivative, as a
  // reference for the compiled program (whose results are the same bits).
  // Recompiles and resets.
  void set_compiled(bool compiled);
  // Kernels of the frame program (one per run of blocks of one type, one
  // per block of its own code).
  [[nodiscard]] std::size_t kernel_count() const noexcept;

  // Initial states at time t0; clears the integrator's history.
  void reset(double t0) noexcept;

  // Advances one step from t to t + h (h > 0). Afterwards the outputs hold
  // their values and time derivatives at t + h.
  void step(double t, double h, InputSource& inputs) noexcept;

  // Recomputes the outputs and their derivatives at the current time and
  // state without advancing (no discrete update): the outputs at t0 after
  // reset, before the first step.
  void refresh_outputs(InputSource& inputs) noexcept;

  // Time of the current state: t + h of the last step, summed with
  // compensation over consecutive steps, so that it stays within an ulp of
  // the exact sum of the steps however long the run.
  [[nodiscard]] double time() const noexcept;
  [[nodiscard]] std::span<const double> state() const noexcept;
  [[nodiscard]] std::span<const double> discrete_state() const noexcept;
  [[nodiscard]] std::span<const double> output(const OutputRef& ref) const noexcept;
  [[nodiscard]] std::span<const double> output_derivative(const OutputRef& ref) const noexcept;
  [[nodiscard]] bool output_derivative_valid(const OutputRef& ref, std::size_t i) const noexcept;
  // True when the port's output is downstream of a block that jumped
  // (Block::branch changed) in the last step: the value, or a derivative,
  // is discontinuous between the last two steps' ends.
  [[nodiscard]] bool output_jumped(const OutputRef& ref) const noexcept;
  // Set-up: true when the port is downstream of a block that can jump, so
  // that output_jumped can ever be true for it.
  [[nodiscard]] bool output_may_jump(const OutputRef& ref) const noexcept;
  // Per signal of the port, nonzero where its derivative is known.
  [[nodiscard]] std::span<const unsigned char> output_derivative_flags(const OutputRef& ref) const noexcept;

  // True once a block that can fail (an FMU) has failed, or a step left a
  // state NaN or infinite (whatever block owns it): the task stops
  // stepping, time stays where that step began. `failure` (not RT) is its
  // message, naming the block. `reset` and `restore` clear the latter.
  [[nodiscard]] bool failed() const noexcept;
  [[nodiscard]] std::string failure() const;
  // True once a block's model ended the simulation itself (an FMU's
  // terminateSimulation, Block::terminated): the step that said so
  // completed (to the event's time when it ended at an event inside the
  // step) and no block is asked anything more. `termination` (not RT)
  // names the block and what it said.
  [[nodiscard]] bool terminated() const noexcept;
  [[nodiscard]] std::string termination() const;
  // Not RT: df/dx at the initial state (time 0, external inputs 0,
  // unconnected inputs their starts), column-major state_size() squared, by
  // the differences the Rosenbrock step takes; resets the partition. For
  // the configuration check's stability warning (docs/config.md,
  // "Integrators").
  [[nodiscard]] std::vector<double> linearisation();
  // True when the Rosenbrock integrators and linearisation() take the
  // Jacobian from a block (Block::state_jacobian: an FMU's directional
  // derivatives) rather than from differences: the partition's only block
  // with states knows its own, and none of its inputs depends on them.
  [[nodiscard]] bool jacobian_from_block() const noexcept;

  // Events handled by blocks with events (FMUs) since reset.
  [[nodiscard]] std::uint64_t events() const noexcept;

  // State events located inside steps (docs/config.md "Events"). With a
  // one-step integrator (every one but ab2), a block with event indicators
  // (Block::indicators) is asked for them at each step's end; where one
  // changed sign the step is integrated again from its start to trial
  // instants until the earliest crossing is bracketed to kLocateTolerance
  // of the step, or kMaxLocateTrials trials were made (then the bracket's
  // right end is taken: never before the event, at most the bracket late);
  // the event is handled there and the rest of the step integrated after
  // it. At most kMaxLandings events (time or state) per step; the rest of
  // a step past that is integrated in one piece and its events handled at
  // its end. Each bound reached is counted.
  // Set-up: false handles state events at the end of the (sub-)step that
  // holds them, as ab2 does, for every integrator: the baseline the event
  // location is measured against (bench/integrator_bench.cpp).
  void set_locate_events(bool locate) noexcept;
  static constexpr double kLocateTolerance = 1e-9;
  static constexpr int kMaxLocateTrials = 24;
  static constexpr int kMaxLandings = 16;
  struct EventCounts {
    std::uint64_t located = 0;         // crossings located inside a step
    std::uint64_t trials = 0;          // re-integrations they took
    std::uint64_t trial_limits = 0;    // locations stopped at kMaxLocateTrials
    std::uint64_t landing_limits = 0;  // steps that reached kMaxLandings
  };
  [[nodiscard]] const EventCounts& event_counts() const noexcept;

  // ab2: a step longer than this many times the previous one restarts the
  // two-step history (that step is a one-step Euler step at mid-frame).
  static constexpr double kAb2MaxRatio = 2.0;

  // ab2 only: the on-line local truncation-error estimate of the last step,
  // max over states of h_n^2 (h_n/6 + h_{n-1}/4) |x'''| (the variable-step
  // form of the reference's (5/12) h^3 |x'''|, eq. 9.7), x''' from the
  // derivative history; 0 until three steps are known.
  [[nodiscard]] double truncation_error() const noexcept;

  // Copies the whole state (continuous, discrete, integrator history,
  // sample-hit schedule, outputs) into preallocated storage, and back, with
  // the state its blocks keep themselves (Block::save_state: an FMU's).
  // False when a block could not save or restore its own.
  bool snapshot() noexcept;
  bool restore() noexcept;

  // More saved states than snapshot()'s one, numbered from 0: the state
  // synchronisation keeps the state after each distinct execution to reuse
  // it (docs/sync.md, thesis Ansatz 2). Only for a partition none of whose
  // blocks keeps its own state (Block::keeps_own_state: an FMU, a mechanics
  // body), whose whole state is the partition's vectors. Not RT: a new slot
  // allocates the first time; `clear_slots` keeps the storage for reuse.
  [[nodiscard]] bool slots_possible() const noexcept;
  std::size_t save_to_slot();
  void load_slot(std::size_t slot) noexcept;
  void clear_slots() noexcept;

  // What stops a partition whose simulation diverged (docs/stalls.md):
  // a relative local error (local_error) above `tolerance` for at least
  // `steps` steps in a row while the magnitude of the state it is largest
  // for grew by kDivergenceGrowth or more since the excess began, or a state
  // whose magnitude passes `state_bound`. A zero turns that check off.
  // Set-up only.
  struct DivergenceGuard {
    double tolerance = 0.0;
    int steps = 1;
    double state_bound = 0.0;
  };
  static constexpr double kDivergenceGrowth = 2.0;
  void set_divergence_guard(const DivergenceGuard& guard) noexcept { guard_ = guard; }
  [[nodiscard]] const DivergenceGuard& divergence_guard() const noexcept { return guard_; }
  // The relative local error of the last step, max over states of
  // e_i / (|x_i| + the largest |x_i| so far): e_i the ab2 truncation-error
  // estimate, or for euler, rk2 and rk4 the local error of an Euler step
  // from the change of the derivative, h_n^2 / (2 h_{n-1}) |f_n - f_{n-1}|.
  // 0 until the history allows an estimate. Which block's state it was
  // (not RT): local_error_owner.
  [[nodiscard]] double local_error() const noexcept;
  [[nodiscard]] std::string local_error_owner() const;

 private:
  struct Impl;
  struct Step;  // the stages of one step (partition_step.cpp)
  bool guard_divergence(double t, double h, double ab2_error_scale) noexcept;
  [[nodiscard]] std::string state_owner(std::size_t state) const;
  DivergenceGuard guard_;
  std::string name_;
  IntegratorKind integrator_;
  std::vector<ExternalInputSpec> externals_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rtcosim::tasks
