#pragma once

// Private to Partition (tasks/partition.hpp): its memory and compiled
// calls, shared by its three files: partition_build.cpp (the constructor's
// steps), partition_step.cpp (a step and the divergence guard) and
// partition.cpp (everything else). Not installed, not for other code.

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "tasks/event_locator.hpp"
#include "tasks/kernel.hpp"
#include "tasks/linear_solver.hpp"
#include "tasks/partition.hpp"

namespace rtcosim::tasks {

inline constexpr std::size_t kNoState = static_cast<std::size_t>(-1);

struct Partition::Impl {
  struct Builder;  // the constructor's steps
  struct Slot {
    std::unique_ptr<Block> block;
    std::size_t x_offset = 0;
    std::size_t xd_offset = 0;
    std::vector<std::size_t> out_offsets;
    BlockContext context;  // its port views point into the partition's PortViews
    bool discrete = false;
  };

  // Everything snapshot() copies. Vectors keep their sizes for life, so copy
  // assignment between two of these reuses storage and never allocates.
  struct State {
    double time = 0.0;
    // Rounding the running sum of steps has lost (Kahan): with it, time
    // after millions of frames is within an ulp of the exact sum, and
    // sample hits at n ts keep lining up with it.
    double time_error = 0.0;
    std::vector<double> x, xd;
    std::vector<double> signals, dsignals;
    std::vector<unsigned char> dvalid;
    std::vector<double> next_hit;
    int history = 0;  // AB-2 steps since the last restart, counted to 3
    double prev_h = 0.0, prev2_h = 0.0, prev_tau = 0.0;
    std::vector<double> prev_main, prev2_main, prev_ext, prev_xd;
    double truncation_error = 0.0;
    std::vector<double> branch;         // per slot: Block::branch at the last step's end (NaN: none yet)
    std::vector<unsigned char> jumped;  // per signal: downstream of a jump in the last step
    // A state that became NaN or infinite in a step stops the partition
    // (failed()): the index into x (or, past nx, into xd), its value, and
    // the time the step began; npos while every state is finite.
    std::size_t nonfinite = kNoState;
    double nonfinite_value = 0.0;
    double nonfinite_from = 0.0;
    // The divergence guard (docs/stalls.md): one-step methods' derivative
    // at the last step's start and that step, each state's largest
    // magnitude so far (its scale), the last step's relative local error
    // and its state, steps in a row above the tolerance, and what stopped
    // the partition (kNoState: nothing).
    std::vector<double> prev_f, scale, scale_at_excess;
    double prev_f_h = 0.0;
    bool have_prev_f = false;
    double local_error = 0.0;
    std::size_t local_error_state = kNoState;
    int over_tolerance = 0;
    std::size_t diverged = kNoState;
    double diverged_value = 0.0, diverged_error = 0.0, diverged_from = 0.0;
    bool diverged_bound = false;
    // The event indicators (Block::indicators) at `time`, after any event
    // there; unknown after reset until the next step reads them.
    std::vector<double> z;
    bool z_known = false;
  };

  std::vector<Slot> slots;
  // Every block's port views, laid end to end, each block's context spanning its own: six small vectors per
  // block were six allocations and 56 bytes of headers each (a partition of 10^4 signals held 3.4 MB in them).
  struct PortViews {
    std::vector<std::span<const double>> u, du;
    std::vector<std::span<const unsigned char>> du_valid;
    std::vector<std::span<double>> y, dy;
    std::vector<std::span<unsigned char>> dy_valid;
  } views;
  std::vector<std::size_t> order;  // slot indices in evaluation order

  // The frame program (docs/frame-program.md): the blocks in runs, each run
  // one kernel, in an order that computes what `order` computes.
  struct Run {
    std::unique_ptr<Kernel> kernel;  // null for a block of its own code
    Slot* slot = nullptr;
    bool stage = true;        // evaluated in the integrator's stages
    bool derivatives = true;  // its output derivatives are consumed
    bool stateful = false;
  };
  std::vector<Run> runs;
  // One entry per run in a pass: a block of its own code is called
  // directly (one virtual call, as before the frame program), a kernel
  // through its interface.
  struct Call {
    Kernel* kernel = nullptr;  // null: `slot`'s block
    Slot* slot = nullptr;
    void output(const FrameMemory& mem, double t) const noexcept {
      if (kernel) {
        kernel->output(mem, t);
      } else {
        slot->context.t = t;
        slot->block->output(slot->context);
      }
    }
    void derivatives(const FrameMemory& mem, double t, double* dx) const noexcept {
      if (kernel) {
        kernel->derivatives(mem, t, dx);
      } else {
        slot->block->derivatives(slot->context,
                                 std::span<double>(dx + slot->x_offset, slot->block->continuous_states()));
      }
    }
    void output_derivatives(const FrameMemory& mem, double t, const double* dx) const noexcept {
      if (kernel) {
        kernel->output_derivatives(mem, t, dx);
      } else {
        slot->block->output_derivatives(slot->context,
                                        std::span<const double>(dx + slot->x_offset, slot->block->continuous_states()));
      }
    }
  };
  std::vector<Call> all_runs, stage_runs, stateful_runs, derivative_runs;
  FrameMemory mem;
  double output_time = 0.0;  // t of the last outputs, which output derivatives are taken at
  // Set-up data kept for compiling: per slot, the unified offset of each
  // input port's signals, the slots it reads through any wire and through a
  // feedthrough wire.
  std::vector<std::vector<std::size_t>> in_offsets, upstream, feedthrough_from;
  // Per block output signal: its derivative is consumed outside the
  // partition (empty: every one is).
  std::vector<unsigned char> derivative_wanted;
  std::unordered_map<std::string, std::size_t> by_name;  // block name -> slot (set-up lookups)
  std::vector<unsigned char> may_jump;                   // per block output signal: downstream of a block that can jump
  bool compiled = true;
  void compile();
  // compile's steps, in its order (partition_build.cpp).
  struct PendingRun;
  std::vector<const KernelFamily*> kernel_families() const;
  std::vector<unsigned char> in_stages(const std::vector<const KernelFamily*>& family) const;
  std::vector<unsigned char> derivatives_needed(const std::vector<const KernelFamily*>& family) const;
  std::vector<PendingRun> plan_runs(const std::vector<const KernelFamily*>& family,
                                    const std::vector<unsigned char>& stage,
                                    const std::vector<unsigned char>& deriv) const;
  void make_runs(std::vector<PendingRun>& pending);
  void index_runs();
  std::vector<std::size_t> early;     // slots whose state-only outputs feed a feedthrough input here, before `order`
  std::vector<std::size_t> discrete;  // slots with discrete updates
  std::vector<std::size_t> jumpers;   // slots whose output can jump (Block::jumps)
  std::vector<std::size_t> eventful;  // slots with events (Block::has_events)
  std::vector<const Block*> timed;    // their blocks, asked for their next time event
  std::vector<std::size_t> fallible;  // slots that can fail (Block::can_fail)
  std::uint64_t events = 0;
  // State events located inside steps (Block::indicators): the slots with
  // indicators and where theirs start in State::z, the locator, the state
  // at a segment's start and at the bracket's right end, the indicators
  // at a segment's end; what the location cost and where it hit a bound.
  std::vector<std::size_t> indicating, z_offsets;
  EventLocator locator;
  std::vector<double> x_from, x_right, z_end;
  Partition::EventCounts event_counts;
  bool locate_events = true;
  bool read_indicators(double* z) noexcept {
    for (std::size_t k = 0; k < indicating.size(); ++k) {
      Slot& slot = slots[indicating[k]];
      if (!slot.block->indicators(slot.context, std::span<double>(z + z_offsets[k], slot.block->event_indicators())))
        return false;
    }
    return true;
  }
  std::vector<std::vector<std::size_t>> downstream;  // every wire, feedthrough or not: from -> to
  std::vector<std::size_t> walk;                     // work stack of mark_jumps
  std::vector<unsigned char> reached;                // per slot, work memory of mark_jumps
  std::size_t nx = 0, nxd = 0;
  bool autonomous = true;

  State s, saved;
  std::vector<State> kept;  // save_to_slot's; the first kept_used are in use
  std::size_t kept_used = 0;
  // The external inputs: the tail of the signal memory, after the block outputs.
  std::size_t ext_base = 0;
  // The values unconnected inputs hold (their ports' starts), at held_base
  // in the signal memory; put back by every reset.
  std::vector<double> held;
  std::size_t held_base = 0;
  void put_back_held() noexcept {
    const auto at = static_cast<std::ptrdiff_t>(held_base);
    std::copy(held.begin(), held.end(), s.signals.begin() + at);
    std::fill(s.dvalid.begin() + at, s.dvalid.begin() + at + static_cast<std::ptrdiff_t>(held.size()), 1);
  }
  std::span<double> ext;
  std::vector<std::size_t> ext_offsets;
  std::vector<double> xe;  // the state an evaluation sees
  std::vector<double> k1, k2, k3, k4, xs, scratch_xd;
  // The Rosenbrock methods': df/dx column-major, and W = I - gamma h J's LU.
  std::vector<double> jac, ft, jump_branch;
  std::unique_ptr<ShiftedLu> lu;
  std::size_t jacobian_block = kNoState;  // the slot whose state_jacobian is the partition's
  bool lu_singular = false;               // a step found W singular: the partition stopped

  // J = df/dx at (t, x) by forward differences, f = f(t, x) given: one
  // evaluation per state, each state moved by eps^(1/3) of its magnitude
  // (its largest so far, at least 1e-3: a state that starts at 0 moved by
  // 6e-12 gave J entries off by 5e-5 of their size from f's rounding).
  // Not sqrt(eps), the usual balance of rounding against curvature:
  // stiffness mostly sits in linear parts,
  // where a difference has no curvature error and its rounding error
  // (eps |f| / delta) is the whole of J's; carried into the stiff modes'
  // stages it cost ros2 its order on the stiff test (error ratio 3.5 per
  // halved step at sqrt(eps), 3.98 at eps^(1/3); docs/config.md).
  void jacobian(double t, std::span<const double> x, std::span<const double> f, double* out) noexcept {
    const std::size_t n = nx;
    // The partition's only block with states, which knows its own
    // Jacobian and reads nothing that depends on its states: that one, as
    // the last evaluation (at t, x) left it.
    if (jacobian_block != kNoState) {
      Slot& slot = slots[jacobian_block];
      if (slot.block->state_jacobian(slot.context, std::span<double>(out, n * n))) return;
    }
    std::copy(x.begin(), x.end(), xs.begin());
    for (std::size_t j = 0; j < n; ++j) {
      const double delta = 6.0554544523933395e-06 * std::max({std::fabs(x[j]), s.scale[j], 1e-3});
      xs[j] = x[j] + delta;
      const double step = xs[j] - x[j];  // what the perturbation is in floating point
      evaluate(t, xs, k4);
      for (std::size_t i = 0; i < n; ++i) out[i + n * j] = (k4[i] - f[i]) / step;
      xs[j] = x[j];
    }
  }

  void run_outputs(double t, const std::vector<Call>& list) noexcept {
    for (std::size_t i : early) {
      Slot& slot = slots[i];
      slot.context.t = t;
      slot.block->state_outputs(slot.context);
    }
    for (const Call& c : list) c.output(mem, t);
    output_time = t;
  }
  void outputs(double t) noexcept { run_outputs(t, all_runs); }

  // f(t, x): outputs then state derivatives, x copied into the evaluation
  // state. In an integrator's stage (`stage`) only the blocks that a state
  // derivative or a block of its own code reads are evaluated: the others'
  // outputs are read by nobody before the step's end evaluates them all.
  void evaluate(double t, std::span<const double> x, std::span<double> dx, bool stage = true) noexcept {
    if (x.data() != xe.data()) std::copy(x.begin(), x.end(), xe.begin());
    run_outputs(t, stage ? stage_runs : all_runs);
    for (const Call& c : stateful_runs) c.derivatives(mem, t, dx.data());
  }

  bool due(std::size_t i, double t) const noexcept {
    const double ts = slots[i].block->sample_time();
    if (ts < 0.0) return true;  // every major step
    return s.next_hit[i] <= t + 1e-9 * std::max(1.0, ts);
  }

  // The major evaluation at the start of a step: discrete blocks whose
  // sample is due see sample_hit, then update their states.
  void major_pass(double t, double h) noexcept {
    std::copy(s.x.begin(), s.x.end(), xe.begin());
    for (std::size_t i : discrete) {
      slots[i].context.sample_hit = due(i, t);
      slots[i].context.h = h;
    }
    outputs(t);
    for (std::size_t i : discrete) {
      Slot& slot = slots[i];
      if (!slot.context.sample_hit) continue;
      slot.block->update(slot.context);
      slot.context.sample_hit = false;
      slot.context.h = 0.0;
      const double ts = slot.block->sample_time();
      if (ts > 0.0) {
        // The next multiple of ts, computed rather than summed, so that
        // hits do not drift from the grid over a long run.
        s.next_hit[i] = (std::floor((t + 1e-9 * std::max(1.0, ts)) / ts) + 1.0) * ts;
      }
    }
  }

  // After the outputs at a step's end: the blocks whose branch changed
  // since the last step's end jumped in between, and with them every output
  // downstream of them through any wire (a jump behind an integrator is a
  // kink, which an extrapolation overshoots just as well). With mark false
  // the branches are only recorded.
  void mark_jumps(bool mark) noexcept {
    std::fill(s.jumped.begin(), s.jumped.end(), 0);
    if (jumpers.empty()) return;
    std::fill(reached.begin(), reached.end(), 0);
    walk.clear();
    for (std::size_t i : jumpers) {
      const double b = slots[i].block->branch(slots[i].context);
      const bool changed = mark && !std::isnan(s.branch[i]) && b != s.branch[i];
      s.branch[i] = b;
      if (changed && !reached[i]) {
        reached[i] = 1;
        walk.push_back(i);  // capacity: one per slot, reserved at build
      }
    }
    while (!walk.empty()) {
      const std::size_t i = walk.back();
      walk.pop_back();
      const Slot& slot = slots[i];
      for (std::size_t p = 0; p < slot.context.y.size(); ++p) {
        std::fill_n(s.jumped.begin() + static_cast<std::ptrdiff_t>(slot.out_offsets[p]), slot.context.y[p].size(), 1);
      }
      for (std::size_t to : downstream[i]) {
        if (reached[to]) continue;
        reached[to] = 1;
        walk.push_back(to);
      }
    }
  }

  void output_derivatives(std::span<const double> dx) noexcept {
    // State-only outputs' derivatives depend on no input either: fresh
    // before a block that reads them comes first in the order.
    for (std::size_t i : early) {
      Slot& slot = slots[i];
      slot.block->output_derivatives(slot.context, dx.subspan(slot.x_offset, slot.block->continuous_states()));
    }
    for (const Call& c : derivative_runs) c.output_derivatives(mem, output_time, dx.data());
  }
};

}  // namespace rtcosim::tasks
