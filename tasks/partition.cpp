#include "tasks/partition.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>

#include "base/finite.hpp"
#include "base/text.hpp"
#include "tasks/event_locator.hpp"
#include "tasks/kernel.hpp"
#include "tasks/linear_solver.hpp"
#include "tasks/params.hpp"

namespace rtcosim::tasks {

namespace {

// Where an input port reads from: a block output in the signal memory, or
// an external input.
struct Source {
  bool external = false;
  std::size_t offset = 0;  // in signals (block output), the external buffer or the held starts
  std::string description;
  bool held = false;  // an unconnected input that holds its port's start value
};

}  // namespace

namespace {
constexpr std::size_t kNoState = static_cast<std::size_t>(-1);
}  // namespace

struct Partition::Impl {
  struct Builder;  // the constructor's steps
  struct Slot {
    std::unique_ptr<Block> block;
    std::size_t x_offset = 0;
    std::size_t xd_offset = 0;
    std::vector<std::size_t> out_offsets;
    std::vector<std::span<const double>> u, du;
    std::vector<std::span<const unsigned char>> du_valid;
    std::vector<std::span<double>> y, dy;
    std::vector<std::span<unsigned char>> dy_valid;
    BlockContext context;
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
      for (std::size_t p = 0; p < slot.y.size(); ++p) {
        std::fill_n(s.jumped.begin() + static_cast<std::ptrdiff_t>(slot.out_offsets[p]), slot.y[p].size(), 1);
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

/*
 * The steps of Partition's constructor, in the order they depend on each
 * other: lay out the blocks, wire their inputs, order them, size the
 * memory, bind every block's views into it. Set-up only; each step throws
 * BlockError with what was wrong and where.
 */
struct Partition::Impl::Builder {
  Builder(Impl& impl, std::string partition) : m(impl), where(std::move(partition)) {}

  Impl& m;
  const std::string where;  // "partition '<name>'", for errors
  std::vector<std::string> names;
  std::size_t signal_count = 0;     // block outputs
  std::size_t ext_size = 0;         // external inputs
  std::vector<double> held_starts;  // the values of unconnected inputs, after the external inputs
  // Sources of every input port.
  std::vector<std::vector<std::optional<Source>>> sources;
  std::vector<std::vector<std::size_t>> edges;  // feedthrough: from -> to
  // Only a state-only output that a feedthrough input reads without an
  // ordering edge needs computing before the order: any other block's
  // state_outputs would be a second evaluation of its model for nothing.
  std::vector<unsigned char> needs_early;

  // Blocks, names and memory layout.
  void lay_out(std::vector<std::unique_ptr<Block>>& blocks) {
    std::unordered_map<std::string, std::size_t>& by_name = m.by_name;
    for (auto& b : blocks) {
      if (!b) throw BlockError(where + ": null block");
      if (!by_name.emplace(b->name(), m.slots.size()).second) {
        throw BlockError(where + ": two blocks are named '" + b->name() + "' — block names must be unique", b->name());
      }
      names.push_back(b->name());
      Impl::Slot slot;
      slot.x_offset = m.nx;
      slot.xd_offset = m.nxd;
      m.nx += b->continuous_states();
      m.nxd += b->discrete_states();
      for (const auto& port : b->outputs()) {
        slot.out_offsets.push_back(signal_count);
        signal_count += port.width;
      }
      slot.discrete = b->sample_time() != 0.0;
      if (b->time_dependent() || slot.discrete) m.autonomous = false;
      slot.block = std::move(b);
      m.slots.push_back(std::move(slot));
    }
    sources.resize(m.slots.size());
    for (std::size_t i = 0; i < m.slots.size(); ++i) sources[i].resize(m.slots[i].block->inputs().size());
    edges.resize(m.slots.size());
    needs_early.assign(m.slots.size(), 0);
  }

  std::size_t find_block(const Endpoint& e, const std::string& context) const {
    const auto it = m.by_name.find(e.block);
    if (it != m.by_name.end()) return it->second;
    std::string message = context + ": " + where + " has no block '" + e.block + "'";
    if (const auto guess = base::closest_match(e.block, names); !guess.empty())
      message += " (did you mean '" + guess + "'?)";
    throw BlockError(message, e.block);
  }

  static std::size_t find_port(const std::vector<PortInfo>& ports, const Endpoint& e, const Block& b, const char* kind,
                               const std::string& context) {
    for (std::size_t p = 0; p < ports.size(); ++p) {
      if (ports[p].name == e.port) return p;
    }
    std::vector<std::string> port_names;
    for (const auto& p : ports) port_names.push_back(p.name);
    std::string list;
    for (const auto& n : port_names) list += (list.empty() ? "" : ", ") + n;
    std::string message = context + ": block '" + b.name() + "' (" + b.type() + ") has no " + kind + " port '" +
                          e.port + "' — its " + kind + "s: " + (list.empty() ? "none" : list);
    if (const auto guess = base::closest_match(e.port, port_names); !guess.empty()) {
      message += " (did you mean '" + guess + "'?)";
    }
    throw BlockError(message, b.name());
  }

  void connect(const Endpoint& to, Source source, std::size_t width, const std::string& context) {
    const std::size_t bi = find_block(to, context);
    const Block& b = *m.slots[bi].block;
    const std::size_t p = find_port(b.inputs(), to, b, "input", context);
    if (b.inputs()[p].width != width) {
      throw BlockError(context + ": widths differ (" + source.description + " has " + std::to_string(width) +
                           " signal(s), " + to.str() + " expects " + std::to_string(b.inputs()[p].width) + ")",
                       b.name());
    }
    auto& slot_source = sources[bi][p];
    if (slot_source) {
      throw BlockError("input '" + to.str() + "' is driven twice: by '" + slot_source->description + "' and by '" +
                           source.description + "' — an input takes one source",
                       b.name());
    }
    slot_source = std::move(source);
  }

  // Every wire: its input's source, and the feedthrough edges of the order.
  void wire(const std::vector<WireSpec>& wires) {
    const auto& by_name = m.by_name;
    m.downstream.resize(m.slots.size());
    m.upstream.resize(m.slots.size());
    m.feedthrough_from.resize(m.slots.size());
    for (const auto& w : wires) {
      const std::string context = "wire '" + w.from.str() + " -> " + w.to.str() + "'";
      const std::size_t from_block = find_block(w.from, context);
      const Block& fb = *m.slots[from_block].block;
      const std::size_t from_port = find_port(fb.outputs(), w.from, fb, "output", context);
      connect(w.to, Source{false, m.slots[from_block].out_offsets[from_port], w.from.str()},
              fb.outputs()[from_port].width, context);
      const std::size_t to_block = by_name.at(w.to.block);
      m.downstream[from_block].push_back(to_block);
      m.upstream[to_block].push_back(from_block);
      const Block& tb = *m.slots[to_block].block;
      const std::size_t to_port = find_port(tb.inputs(), w.to, tb, "input", context);
      if (tb.feedthrough(to_port)) {
        if (fb.state_only(from_port)) {
          needs_early[from_block] = 1;
        } else {
          edges[from_block].push_back(to_block);
          m.feedthrough_from[to_block].push_back(from_block);
        }
      }
    }
  }

  void wire_externals(const std::vector<ExternalInputSpec>& externals) {
    for (const auto& e : externals) {
      m.ext_offsets.push_back(ext_size);
      for (const auto& target : e.targets) {
        connect(target, Source{true, ext_size, "external input '" + e.name + "'"}, e.width,
                "external input '" + e.name + "' -> " + target.str());
      }
      ext_size += e.width;
    }
    m.ext_offsets.push_back(ext_size);  // the end of the last
  }

  // An unconnected input holds its port's start value (an FMU's, as FMI
  // and SSP say) where it has one; otherwise it is an error.
  void require_every_input_connected() {
    for (std::size_t i = 0; i < m.slots.size(); ++i) {
      const Block& b = *m.slots[i].block;
      for (std::size_t p = 0; p < b.inputs().size(); ++p) {
        const PortInfo& port = b.inputs()[p];
        if (!sources[i][p] && port.start.size() == port.width) {
          sources[i][p] =
              Source{false, held_starts.size(), "the start value of '" + b.name() + "." + port.name + "'", true};
          held_starts.insert(held_starts.end(), port.start.begin(), port.start.end());
        }
        if (!sources[i][p]) {
          throw BlockError("input '" + b.name() + "." + b.inputs()[p].name + "' of block '" + b.name() + "' (" +
                               b.type() + ") is not connected — wire a block output or an external input to it",
                           b.name());
        }
      }
    }
  }

  // Evaluation order: Kahn's algorithm over feedthrough edges, stable in
  // declaration order so that the order is reproducible.
  void order() {
    std::vector<std::size_t> indegree(m.slots.size(), 0);
    for (const auto& out : edges) {
      for (std::size_t to : out) ++indegree[to];
    }
    std::vector<bool> placed(m.slots.size(), false);
    for (bool progress = true; progress;) {
      progress = false;
      for (std::size_t i = 0; i < m.slots.size(); ++i) {
        if (placed[i] || indegree[i] != 0) continue;
        placed[i] = true;
        progress = true;
        m.order.push_back(i);
        for (std::size_t to : edges[i]) --indegree[to];
      }
    }
    if (m.order.size() != m.slots.size()) {
      // Walk feedthrough edges among the unplaced blocks until one repeats:
      // that walk's tail is a loop.
      std::size_t start = 0;
      while (placed[start]) ++start;
      std::vector<std::size_t> path{start};
      std::vector<int> seen_at(m.slots.size(), -1);
      seen_at[start] = 0;
      for (;;) {
        std::size_t next = path.back();
        for (std::size_t to : edges[path.back()]) {
          if (!placed[to]) {
            next = to;
            break;
          }
        }
        if (seen_at[next] >= 0) {
          std::string loop;
          for (std::size_t k = static_cast<std::size_t>(seen_at[next]); k < path.size(); ++k) {
            loop += m.slots[path[k]].block->name() + " -> ";
          }
          loop += m.slots[next].block->name();
          throw BlockError(where + ": algebraic loop through blocks " + loop +
                               " — every block in it passes its input straight to its output; break the loop with a "
                               "unit_delay, an integrator or a first_order_lag",
                           m.slots[next].block->name());
        }
        seen_at[next] = static_cast<int>(path.size());
        path.push_back(next);
      }
    }
  }

  // Memory, then the views every block's context holds into it.
  void allocate() {
    Impl::State& s = m.s;
    s.x.assign(m.nx, 0.0);
    s.xd.assign(m.nxd, 0.0);
    m.ext_base = signal_count;
    // One signal memory: the block outputs, the external inputs, then the
    // start values unconnected inputs hold (constant: derivative 0).
    const std::size_t all = signal_count + ext_size + held_starts.size();
    s.signals.assign(all, 0.0);
    s.dsignals.assign(all, 0.0);
    s.dvalid.assign(all, 0);
    m.held = held_starts;
    m.held_base = signal_count + ext_size;
    m.put_back_held();
    s.next_hit.assign(m.slots.size(), 0.0);
    s.prev_main.assign(m.nx, 0.0);
    s.prev2_main.assign(m.nx, 0.0);
    s.prev_f.assign(m.nx, 0.0);
    s.scale.assign(m.nx, 0.0);
    s.scale_at_excess.assign(m.nx, 0.0);
    s.prev_ext.assign(ext_size, 0.0);
    s.prev_xd.assign(m.nxd, 0.0);
    s.branch.assign(m.slots.size(), std::numeric_limits<double>::quiet_NaN());
    s.jumped.assign(signal_count, 0);
    m.walk.reserve(m.slots.size());
    m.reached.assign(m.slots.size(), 0);
    for (std::size_t i = 0; i < m.slots.size(); ++i) {
      if (m.slots[i].block->jumps()) m.jumpers.push_back(i);
      if (m.slots[i].block->has_events()) {
        m.eventful.push_back(i);
        m.timed.push_back(m.slots[i].block.get());
        if (const std::size_t n = m.slots[i].block->event_indicators(); n > 0) {
          m.indicating.push_back(i);
          m.z_offsets.push_back(s.z.size());
          s.z.resize(s.z.size() + n, 0.0);
        }
      }
      if (m.slots[i].block->can_fail()) m.fallible.push_back(i);
    }
  }

  // What mark_jumps can ever reach: every block downstream of a jumper.
  void find_reach_of_jumps() {
    std::vector<unsigned char> reach(m.slots.size(), 0);
    std::vector<std::size_t> todo(m.jumpers.begin(), m.jumpers.end());
    for (std::size_t i : todo) reach[i] = 1;
    while (!todo.empty()) {
      const std::size_t i = todo.back();
      todo.pop_back();
      for (std::size_t to : m.downstream[i]) {
        if (!reach[to]) {
          reach[to] = 1;
          todo.push_back(to);
        }
      }
    }
    m.may_jump.assign(signal_count, 0);
    for (std::size_t i = 0; i < m.slots.size(); ++i) {
      if (!reach[i]) continue;
      const Block& b = *m.slots[i].block;
      for (std::size_t p = 0; p < b.outputs().size(); ++p) {
        std::fill_n(m.may_jump.begin() + static_cast<std::ptrdiff_t>(m.slots[i].out_offsets[p]), b.outputs()[p].width,
                    1);
      }
    }
  }

  // The slot whose own Jacobian (Block::state_jacobian) is the whole
  // partition's: the only one with continuous states, and no wire path
  // leads from its outputs back into its inputs (through which its states
  // would move its inputs, which its own Jacobian holds). kNoState: none.
  std::size_t own_jacobian_block() const {
    std::size_t only = kNoState;
    for (std::size_t i = 0; i < m.slots.size(); ++i) {
      if (m.slots[i].block->continuous_states() == 0) continue;
      if (only != kNoState) return kNoState;
      only = i;
    }
    if (only == kNoState || !m.slots[only].block->has_state_jacobian()) return kNoState;
    std::vector<unsigned char> seen(m.slots.size(), 0);
    std::vector<std::size_t> todo(m.downstream[only].begin(), m.downstream[only].end());
    while (!todo.empty()) {
      const std::size_t i = todo.back();
      todo.pop_back();
      if (i == only) return kNoState;
      if (seen[i]) continue;
      seen[i] = 1;
      todo.insert(todo.end(), m.downstream[i].begin(), m.downstream[i].end());
    }
    return only;
  }

  // The saved state, the integrators' scratch, and every block's views.
  void bind_views(IntegratorKind integrator) {
    Impl::State& s = m.s;
    m.saved = s;
    m.ext = std::span<double>(s.signals.data() + m.ext_base, ext_size);
    m.xe.assign(m.nx, 0.0);
    for (auto* v : {&m.k1, &m.k2, &m.k3, &m.k4, &m.xs, &m.x_from, &m.x_right}) v->assign(m.nx, 0.0);
    m.z_end.assign(s.z.size(), 0.0);
    m.locator.resize(s.z.size());
    m.jacobian_block = own_jacobian_block();
    if (linearly_implicit(integrator)) {
      m.jac.assign(m.nx * m.nx, 0.0);
      m.ft.assign(m.nx, 0.0);
      m.jump_branch.assign(m.jumpers.size(), 0.0);
      m.lu = std::make_unique<ShiftedLu>(m.nx);
    }
    m.scratch_xd.assign(m.nxd, 0.0);

    m.in_offsets.resize(m.slots.size());
    for (std::size_t i = 0; i < m.slots.size(); ++i) {
      Impl::Slot& slot = m.slots[i];
      const Block& b = *slot.block;
      for (std::size_t p = 0; p < b.inputs().size(); ++p) {
        const Source& src = *sources[i][p];
        const std::size_t w = b.inputs()[p].width;
        const std::size_t at = src.held       ? m.ext_base + ext_size + src.offset
                               : src.external ? m.ext_base + src.offset
                                              : src.offset;
        m.in_offsets[i].push_back(at);
        slot.u.emplace_back(s.signals.data() + at, w);
        slot.du.emplace_back(s.dsignals.data() + at, w);
        slot.du_valid.emplace_back(s.dvalid.data() + at, w);
      }
      for (std::size_t p = 0; p < b.outputs().size(); ++p) {
        const std::size_t w = b.outputs()[p].width;
        slot.y.emplace_back(s.signals.data() + slot.out_offsets[p], w);
        slot.dy.emplace_back(s.dsignals.data() + slot.out_offsets[p], w);
        slot.dy_valid.emplace_back(s.dvalid.data() + slot.out_offsets[p], w);
      }
      slot.context.u = slot.u;
      slot.context.du = slot.du;
      slot.context.du_valid = slot.du_valid;
      slot.context.y = slot.y;
      slot.context.dy = slot.dy;
      slot.context.dy_valid = slot.dy_valid;
      slot.context.x = std::span<const double>(m.xe.data() + slot.x_offset, b.continuous_states());
      slot.context.xd = std::span<double>(s.xd.data() + slot.xd_offset, b.discrete_states());
      if (needs_early[i]) m.early.push_back(i);
      if (slot.discrete) m.discrete.push_back(i);
    }
  }
};

Partition::Partition(std::string name, std::vector<std::unique_ptr<Block>> blocks, const std::vector<WireSpec>& wires,
                     std::vector<ExternalInputSpec> externals, IntegratorKind integrator)
    : name_(std::move(name)),
      integrator_(integrator),
      externals_(std::move(externals)),
      impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  Impl::Builder build(m, "partition '" + name_ + "'");
  build.lay_out(blocks);
  if (!externals_.empty()) m.autonomous = false;
  build.wire(wires);
  build.wire_externals(externals_);
  build.require_every_input_connected();
  build.order();
  build.allocate();
  build.find_reach_of_jumps();
  build.bind_views(integrator);
  m.mem = FrameMemory{m.s.signals.data(), m.s.dsignals.data(), m.s.dvalid.data(), m.xe.data(), m.s.xd.data()};
  m.compile();
  reset(0.0);
}

void Partition::Impl::compile() {
  const std::size_t n = slots.size();
  // A block joins a kernel of its type when it offers one and needs none of
  // what only its own code handles.
  std::vector<const KernelFamily*> family(n, nullptr);
  for (std::size_t i = 0; i < n; ++i) {
    const Block& b = *slots[i].block;
    bool plain = b.discrete_states() == 0 && b.sample_time() == 0.0 && !b.jumps() && !b.has_events() && !b.can_fail();
    for (std::size_t p = 0; p < b.outputs().size(); ++p) plain = plain && !b.state_only(p);
    if (plain && compiled) family[i] = b.kernel_family();
  }
  // In the stages: every block with states or its own code, and whatever
  // they read, through any wire.
  std::vector<unsigned char> stage(n, 0), deriv(n, 0);
  std::vector<std::size_t> work;
  auto mark = [&](std::vector<unsigned char>& set, std::size_t i) {
    if (set[i]) return;
    set[i] = 1;
    work.push_back(i);
  };
  for (std::size_t i = 0; i < n; ++i) {
    if (!family[i] || slots[i].block->continuous_states() > 0) mark(stage, i);
  }
  while (!work.empty()) {
    const std::size_t i = work.back();
    work.pop_back();
    for (std::size_t from : upstream[i]) mark(stage, from);
  }
  // Output derivatives: where consumed outside, where a block of its own
  // code may read them, and upstream of a kernel that reads its inputs'.
  for (std::size_t i = 0; i < n; ++i) {
    const Slot& slot = slots[i];
    bool wanted = derivative_wanted.empty() || !family[i];
    for (std::size_t p = 0; p < slot.out_offsets.size() && !wanted; ++p) {
      for (std::size_t k = 0; k < slot.block->outputs()[p].width; ++k) {
        wanted = wanted || derivative_wanted[slot.out_offsets[p] + k] != 0;
      }
    }
    if (wanted) mark(deriv, i);
  }
  while (!work.empty()) {
    const std::size_t i = work.back();
    work.pop_back();
    if (family[i] && !family[i]->reads_input_derivatives(*slots[i].block)) continue;
    for (std::size_t from : upstream[i]) mark(deriv, from);
  }

  // Runs, built along the evaluation order. A block of its own code opens
  // a run of one at the end. A kernel block joins the last run of its kind
  // unless that run comes before a run it must follow: one holding a block
  // it reads through a feedthrough wire, or a block of its own code that
  // reads it (placed before it in the order, which saw its value from the
  // evaluation before and must go on seeing that); else it opens a new run
  // of its kind at the end. A block of its own code follows every block it
  // reads through any wire, as in the order. So each block sees exactly
  // what it saw in the evaluation order, and runs of one kind stay long
  // however the blocks are declared.
  struct Pending {
    const KernelFamily* family;  // null: a block of its own code
    bool stage, deriv, stateful;
    std::vector<KernelSlot> members;
    std::size_t slot = 0;  // the block of its own code
  };
  std::vector<Pending> pending;
  std::vector<std::ptrdiff_t> run_of(n, -1);
  runs.clear();
  auto slot_of = [&](std::size_t i) {
    KernelSlot k;
    k.block = slots[i].block.get();
    k.in = in_offsets[i];
    k.out = slots[i].out_offsets;
    k.x = slots[i].x_offset;
    k.xd = slots[i].xd_offset;
    return k;
  };
  for (std::size_t i : order) {
    Slot& slot = slots[i];
    const bool stateful = slot.block->continuous_states() > 0;
    if (!family[i]) {
      pending.push_back(Pending{nullptr, true, true, stateful, {}, i});
      run_of[i] = static_cast<std::ptrdiff_t>(pending.size() - 1);
      continue;
    }
    std::ptrdiff_t earliest = 0;  // the first run it may join
    for (std::size_t from : feedthrough_from[i]) earliest = std::max(earliest, run_of[from]);
    for (std::size_t to : downstream[i]) {
      if (!family[to] && run_of[to] >= 0) earliest = std::max(earliest, run_of[to] + 1);
    }
    std::ptrdiff_t into = -1;
    for (std::size_t p = pending.size(); p-- > 0;) {
      const Pending& r = pending[p];
      if (r.family == family[i] && r.stage == (stage[i] != 0) && r.deriv == (deriv[i] != 0)) {
        into = static_cast<std::ptrdiff_t>(p);
        break;
      }
    }
    if (into < earliest) {
      pending.push_back(Pending{family[i], stage[i] != 0, deriv[i] != 0, false, {}, 0});
      into = static_cast<std::ptrdiff_t>(pending.size() - 1);
    }
    Pending& r = pending[static_cast<std::size_t>(into)];
    r.members.push_back(slot_of(i));
    r.stateful = r.stateful || stateful;
    run_of[i] = into;
  }
  for (Pending& p : pending) {
    if (!p.family) {
      Slot& slot = slots[p.slot];
      runs.push_back(Run{nullptr, &slot, true, true, p.stateful});
    } else {
      runs.push_back(Run{p.family->compile(p.members), nullptr, p.stage, p.deriv, p.stateful});
    }
  }
  all_runs.clear();
  stage_runs.clear();
  stateful_runs.clear();
  derivative_runs.clear();
  for (Run& r : runs) {
    const Call c{r.kernel.get(), r.slot};
    all_runs.push_back(c);
    if (r.stage) stage_runs.push_back(c);
    if (r.stateful) stateful_runs.push_back(c);
    if (r.derivatives) derivative_runs.push_back(c);
  }
}

Partition::~Partition() = default;

std::size_t Partition::state_size() const noexcept { return impl_->nx; }
std::size_t Partition::discrete_state_size() const noexcept { return impl_->nxd; }
std::size_t Partition::block_count() const noexcept { return impl_->slots.size(); }
const Block& Partition::block(std::size_t i) const noexcept { return *impl_->slots[i].block; }
Block& Partition::mutable_block(std::size_t i) noexcept { return *impl_->slots[i].block; }
double Partition::time() const noexcept { return impl_->s.time; }
std::span<const double> Partition::state() const noexcept { return impl_->s.x; }
std::span<const double> Partition::discrete_state() const noexcept { return impl_->s.xd; }
double Partition::truncation_error() const noexcept { return impl_->s.truncation_error; }

std::vector<std::string> Partition::evaluation_order() const {
  std::vector<std::string> out;
  for (std::size_t i : impl_->order) out.push_back(impl_->slots[i].block->name());
  return out;
}

OutputRef Partition::find_output(const Endpoint& port) const {
  // By name: a graph builder asks once per link, and a scan per call made
  // building a partition of 10^4 blocks quadratic.
  if (const auto it = impl_->by_name.find(port.block); it != impl_->by_name.end()) {
    const auto& slot = impl_->slots[it->second];
    const auto& outs = slot.block->outputs();
    std::vector<std::string> port_names;
    for (std::size_t p = 0; p < outs.size(); ++p) {
      if (outs[p].name == port.port) return OutputRef{slot.out_offsets[p], outs[p].width};
      port_names.push_back(outs[p].name);
    }
    std::string list;
    for (const auto& n : port_names) list += (list.empty() ? "" : ", ") + n;
    throw BlockError("block '" + port.block + "' has no output port '" + port.port +
                         "' — its outputs: " + (list.empty() ? "none" : list),
                     port.block);
  }
  std::vector<std::string> names;
  for (const auto& slot : impl_->slots) names.push_back(slot.block->name());
  std::string message = "partition '" + name_ + "' has no block '" + port.block + "'";
  if (const auto guess = base::closest_match(port.block, names); !guess.empty())
    message += " (did you mean '" + guess + "'?)";
  throw BlockError(message, port.block);
}

std::span<const double> Partition::output(const OutputRef& ref) const noexcept {
  return std::span<const double>(impl_->s.signals.data() + ref.offset, ref.width);
}
std::span<const double> Partition::output_derivative(const OutputRef& ref) const noexcept {
  return std::span<const double>(impl_->s.dsignals.data() + ref.offset, ref.width);
}
std::span<const unsigned char> Partition::output_derivative_flags(const OutputRef& ref) const noexcept {
  return std::span<const unsigned char>(impl_->s.dvalid.data() + ref.offset, ref.width);
}
namespace {
// Any flag of the port's signals set.
bool any_of_port(const std::vector<unsigned char>& flags, const OutputRef& ref) noexcept {
  return std::any_of(flags.begin() + static_cast<std::ptrdiff_t>(ref.offset),
                     flags.begin() + static_cast<std::ptrdiff_t>(ref.offset + ref.width),
                     [](unsigned char j) { return j != 0; });
}
}  // namespace

bool Partition::output_jumped(const OutputRef& ref) const noexcept { return any_of_port(impl_->s.jumped, ref); }
bool Partition::output_may_jump(const OutputRef& ref) const noexcept { return any_of_port(impl_->may_jump, ref); }

bool Partition::output_derivative_valid(const OutputRef& ref, std::size_t i) const noexcept {
  return impl_->s.dvalid[ref.offset + i] != 0;
}

void Partition::reset(double t0) noexcept {
  Impl& m = *impl_;
  Impl::State& s = m.s;
  m.lu_singular = false;
  s.time = t0;
  s.time_error = 0.0;
  s.nonfinite = kNoState;
  s.diverged = kNoState;
  s.have_prev_f = false;
  s.local_error = 0.0;
  s.local_error_state = kNoState;
  s.over_tolerance = 0;
  for (const auto& slot : m.slots) {
    const Block& b = *slot.block;
    b.initialize(std::span<double>(s.x.data() + slot.x_offset, b.continuous_states()),
                 std::span<double>(s.xd.data() + slot.xd_offset, b.discrete_states()));
  }
  // The initial state sets each state's scale: a decay from it is measured
  // against where it started.
  for (std::size_t i = 0; i < m.nx; ++i) s.scale[i] = std::fabs(s.x[i]);
  for (std::size_t i = 0; i < m.slots.size(); ++i) {
    const double ts = m.slots[i].block->sample_time();
    // The first sample is due at the first multiple of the sample time at or after t0.
    s.next_hit[i] = ts > 0.0 ? std::ceil(t0 / ts - 1e-9) * ts : t0;
  }
  s.history = 0;
  m.events = 0;
  m.event_counts = {};
  s.z_known = false;
  s.truncation_error = 0.0;
  std::fill(s.branch.begin(), s.branch.end(), std::numeric_limits<double>::quiet_NaN());
  std::fill(s.jumped.begin(), s.jumped.end(), 0);
  std::fill(s.signals.begin(), s.signals.end(), 0.0);
  std::fill(s.dsignals.begin(), s.dsignals.end(), 0.0);
  std::fill(s.dvalid.begin(), s.dvalid.end(), 0);
  m.put_back_held();
}

void Partition::step(double t, double h, InputSource& inputs) noexcept {
  if (!(h > 0.0)) return;
  // A model that ended the simulation is asked nothing more.
  if (!impl_->fallible.empty() && terminated()) return;
  // A failed FMU is asked nothing more; states that are no numbers are not integrated on.
  if ((!impl_->fallible.empty() || impl_->s.nonfinite != kNoState || impl_->s.diverged != kNoState) && failed()) return;
  Impl& m = *impl_;
  Impl::State& s = m.s;
  const std::size_t n_ext = externals_.size();
  auto sample = [&](double at, InputPass pass = InputPass::kIntegration) noexcept {
    inputs.begin_pass(pass);
    if (n_ext > 0) inputs.sample_all(at, m.ext, m.ext_offsets);
  };
  inputs.begin_step(t, h);
  // A step from anywhere but where the last one ended starts a new sum.
  if (t != s.time) s.time_error = 0.0;
  s.time = t;
  if (!m.discrete.empty()) {
    sample(t, InputPass::kDiscrete);
    m.major_pass(t, h);
    // A co-simulated model that ended itself inside the step (its last
    // successful time) ends the partition's step there too.
    if (!m.fallible.empty() && terminated()) {
      double te = std::numeric_limits<double>::infinity();
      for (std::size_t i : m.fallible) te = std::min(te, m.slots[i].block->termination_time());
      if (te > t && te < t + h) h = te - t;
    }
  }
  std::vector<double>& x = s.x;
  const std::size_t nx = m.nx;
  // ab2: set when this step estimated its truncation error (m.k3 then holds
  // each state's divided difference).
  double ab2_error_scale = -1.0;

  // ros1/ros2: f(t0, x), J and f_t of the last step, reused by a
  // location's trials (advance), and whether that step used f_t.
  bool ros_reuse = false, ros_timed = false;
  // One step of a one-step method from t0 to t0 + hs.
  auto one_step = [&](double t0, double hs) noexcept {
    switch (integrator_) {
      case IntegratorKind::kEuler:
        sample(t0);
        m.evaluate(t0, x, m.k1);
        for (std::size_t i = 0; i < nx; ++i) x[i] += hs * m.k1[i];
        break;
      case IntegratorKind::kRk2:
        sample(t0);
        m.evaluate(t0, x, m.k1);
        for (std::size_t i = 0; i < nx; ++i) m.xs[i] = x[i] + hs * m.k1[i];
        sample(t0 + hs);
        m.evaluate(t0 + hs, m.xs, m.k2);
        for (std::size_t i = 0; i < nx; ++i) x[i] += 0.5 * hs * (m.k1[i] + m.k2[i]);
        break;
      case IntegratorKind::kRk4:
        sample(t0);
        m.evaluate(t0, x, m.k1);
        for (std::size_t i = 0; i < nx; ++i) m.xs[i] = x[i] + 0.5 * hs * m.k1[i];
        sample(t0 + 0.5 * hs);
        m.evaluate(t0 + 0.5 * hs, m.xs, m.k2);
        for (std::size_t i = 0; i < nx; ++i) m.xs[i] = x[i] + 0.5 * hs * m.k2[i];
        m.evaluate(t0 + 0.5 * hs, m.xs, m.k3);
        for (std::size_t i = 0; i < nx; ++i) m.xs[i] = x[i] + hs * m.k3[i];
        sample(t0 + hs);
        m.evaluate(t0 + hs, m.xs, m.k4);
        for (std::size_t i = 0; i < nx; ++i) x[i] += hs / 6.0 * (m.k1[i] + 2.0 * m.k2[i] + 2.0 * m.k3[i] + m.k4[i]);
        break;
      case IntegratorKind::kRos1:
      case IntegratorKind::kRos2: {
        // Linearly implicit: one Jacobian and one LU of W = I - gamma h J
        // per (sub-)step; k1 keeps f(t0, x), as the one-step divergence
        // measure reads it.
        // A location's trials start where the segment did, from the same
        // state: f, J and f_t are the segment's (ros_reuse), only W is new.
        const bool ros1 = integrator_ == IntegratorKind::kRos1;
        constexpr double kRos2Gamma = 1.7071067811865475;  // 1 + 1/sqrt(2): L-stable
        const double gamma = ros1 ? 1.0 : kRos2Gamma;
        // df/dt by a forward difference in time, where f can depend on it
        // (inputs, sources, an FMU's own time): without it a stiff mode
        // that follows a moving equilibrium lags it by about h x' (a W-
        // method keeps its order, not the equilibrium). The time step: a
        // fraction of h, and never so small that t's rounding spoils it.
        // A block that jumps between t0 and t0 + dt (a step source's
        // instant, a switch) would make f_t its jump over dt: then the step
        // goes without f_t, as a W-method may.
        if (!ros_reuse) {
          sample(t0);
          m.evaluate(t0, x, m.k1);
          m.jacobian(t0, x, m.k1, m.jac.data());
          ros_timed = !m.autonomous || !m.fallible.empty();
        }
        if (ros_timed && !ros_reuse) {
          for (std::size_t k = 0; k < m.jumpers.size(); ++k) {
            Impl::Slot& slot = m.slots[m.jumpers[k]];
            m.jump_branch[k] = slot.block->branch(slot.context);
          }
          const double t1 = t0 + std::min(std::max(6.0554544523933395e-06 * hs, 1e-10 * std::fabs(t0)), hs);
          sample(t1);
          m.evaluate(t1, x, m.ft);
          const double dt = t1 - t0;
          for (std::size_t i = 0; i < nx; ++i) m.ft[i] = (m.ft[i] - m.k1[i]) / dt;
          for (std::size_t k = 0; k < m.jumpers.size() && ros_timed; ++k) {
            Impl::Slot& slot = m.slots[m.jumpers[k]];
            ros_timed = slot.block->branch(slot.context) == m.jump_branch[k];
          }
        }
        if (!m.lu->factor(m.jac.data(), gamma * hs)) {
          // W singular at this step: no finite step exists; the state is
          // marked as no number, which stops the partition and says where.
          m.lu_singular = true;
          x[0] = std::numeric_limits<double>::quiet_NaN();
          break;
        }
        const double ght = ros_timed ? gamma * hs : 0.0;  // gamma h f_t's weight
        for (std::size_t i = 0; i < nx; ++i) m.k2[i] = m.k1[i] + ght * m.ft[i];
        m.lu->solve(m.k2.data());  // stage 1
        if (ros1) {
          for (std::size_t i = 0; i < nx; ++i) x[i] += hs * m.k2[i];
          break;
        }
        for (std::size_t i = 0; i < nx; ++i) m.xs[i] = x[i] + hs * m.k2[i];
        sample(t0 + hs);
        m.evaluate(t0 + hs, m.xs, m.k3);
        for (std::size_t i = 0; i < nx; ++i) m.k3[i] -= 2.0 * m.k2[i] + ght * m.ft[i];
        m.lu->solve(m.k3.data());  // stage 2
        for (std::size_t i = 0; i < nx; ++i) x[i] += hs * (1.5 * m.k2[i] + 0.5 * m.k3[i]);
        break;
      }
      case IntegratorKind::kAb2:
        break;
    }
  };
  // The eventful blocks' events at `at` (the outputs there first); true
  // when one was handled.
  auto handle_events = [&](double at) noexcept {
    std::copy(x.begin(), x.end(), m.xe.begin());
    m.outputs(at);
    bool any = false;
    for (std::size_t i : m.eventful) {
      Impl::Slot& slot = m.slots[i];
      if (slot.block->event(slot.context,
                            std::span<double>(x.data() + slot.x_offset, slot.block->continuous_states()))) {
        any = true;
        ++m.events;
      }
    }
    return any;
  };
  // Time and state events inside the step, for a one-step method: a
  // segment ends exactly on the next time event (Block::next_time_event);
  // within a segment, a sign change of an event indicator (Block::
  // indicators) is located (EventLocator: the segment integrated again
  // from its start to trial instants). Each event is handled where it is
  // and the rest of the step integrated after it. A time event within
  // 1e-9 h of either end is handled at the step's end (or was, at the last
  // one's). At most kMaxLandings per step (event_counts).
  const bool locating = m.locate_events && !m.indicating.empty() && integrator_ != IntegratorKind::kAb2;
  // The indicators at `at` for the state in x, into z.
  auto indicators_at = [&](double at, double* z) noexcept {
    sample(at, InputPass::kEvent);
    std::copy(x.begin(), x.end(), m.xe.begin());
    m.outputs(at);
    return m.read_indicators(z);
  };
  if (locating && !s.z_known) {
    s.z_known = indicators_at(t, s.z.data());
    if (!m.fallible.empty() && failed()) return;
  }
  // Integrates [a, a + hs]; with indicators that crossed by its end, back
  // to the earliest crossing. The offset reached: hs, or the event's.
  const double tolerance = kLocateTolerance * h;
  auto advance = [&](double a, double hs) noexcept {
    if (!locating || !s.z_known) {
      one_step(a, hs);
      return hs;
    }
    std::copy(x.begin(), x.end(), m.x_from.begin());
    one_step(a, hs);
    if (!m.fallible.empty() && failed()) return hs;
    if (!indicators_at(a + hs, m.z_end.data())) return hs;
    if (!any_crossed(s.z.data(), m.z_end.data(), s.z.size())) return hs;
    std::copy(x.begin(), x.end(), m.x_right.begin());
    const EventLocator::Result r = m.locator.locate(
        s.z.data(), m.z_end.data(), hs, tolerance, kMaxLocateTrials,
        [&](double theta, double* z) noexcept {
          std::copy(m.x_from.begin(), m.x_from.end(), x.begin());
          ros_reuse = true;
          one_step(a, theta);
          ros_reuse = false;
          return !(!m.fallible.empty() && failed()) && indicators_at(a + theta, z);
        },
        [&](double) noexcept { std::copy(x.begin(), x.end(), m.x_right.begin()); });
    std::copy(m.x_right.begin(), m.x_right.end(), x.begin());
    ++m.event_counts.located;
    m.event_counts.trials += static_cast<std::uint64_t>(r.trials);
    if (!r.converged) ++m.event_counts.trial_limits;
    return r.at;
  };
  double from = t;
  if (integrator_ != IntegratorKind::kAb2) {
    const double margin = 1e-9 * h;
    for (int landings = 0;; ++landings) {
      const bool more = landings < kMaxLandings;
      double te = std::numeric_limits<double>::infinity();
      for (const Block* b : m.timed) te = std::min(te, b->next_time_event());
      const bool timed = te > from + margin && te < t + h - margin;
      if (!more) {
        // The bound: the rest of the step in one piece, its events at the
        // step's end. Counted when the rest held one (a time event, or a
        // crossing by its end).
        const bool crossing_was_known = locating && s.z_known;
        one_step(from, t + h - from);
        if (!m.fallible.empty() && failed()) return;
        const bool left = timed || (crossing_was_known && indicators_at(t + h, m.z_end.data()) &&
                                    any_crossed(s.z.data(), m.z_end.data(), s.z.size()));
        if (left) ++m.event_counts.landing_limits;
        break;
      }
      // (t + h) - t is not h in floating point: without a landing, h itself.
      const double segment = timed ? te - from : (from == t ? h : t + h - from);
      const double reached = advance(from, segment);
      if (!m.fallible.empty() && failed()) return;
      if (reached == segment && !timed) break;
      const double at = reached == segment ? te : from + reached;
      sample(at, InputPass::kEvent);
      (void)handle_events(at);
      if (!m.fallible.empty() && failed()) return;
      // A model that ended itself at the event ends the step there, with
      // the outputs after the event (a terminated FMU's are only read).
      if (!m.fallible.empty() && terminated()) {
        s.time = at;
        m.evaluate(at, x, m.k4, false);
        m.output_derivatives(m.k4);
        m.mark_jumps(true);
        return;
      }
      from = at;
      // What the next segment's crossings are measured from: after the event.
      if (locating) {
        s.z_known = indicators_at(at, s.z.data());
        if (!m.fallible.empty() && failed()) return;
      }
    }
  }

  switch (integrator_) {
    case IntegratorKind::kEuler:
    case IntegratorKind::kRk2:
    case IntegratorKind::kRk4:
    case IntegratorKind::kRos1:
    case IntegratorKind::kRos2:
      break;
    case IntegratorKind::kAb2: {
      // Real-time form (reference eq. 10.2/10.9): inputs and time at
      // mid-frame, AB-2 on the state-dependent part. F_n - F_{n-1} is taken
      // under the previous step's input conditions (its mid-frame time,
      // external values and discrete states), so that input changes are
      // integrated once, at mid-frame, and never extrapolated.
      const double tau = t + 0.5 * h;
      sample(tau);
      m.evaluate(tau, x, m.k1);  // main: f(x_n, conditions at tau)
      // A step more than kAb2MaxRatio times the last (the first after a
      // stall, docs/stalls.md) restarts the history: the two-step formula
      // would extrapolate the last derivative difference that far, with a
      // weight growing with the ratio, and its error estimate with it.
      if (s.history >= 1 && h > kAb2MaxRatio * s.prev_h) s.history = 0;
      bool prev_ext_is_tau = false;
      if (s.history >= 1) {
        const double r = h / (2.0 * s.prev_h);
        if (m.autonomous) {
          for (std::size_t i = 0; i < nx; ++i) m.k2[i] = m.k1[i];
        } else {
          // The inputs trade places with the previous step's: prev_ext then
          // holds this step's, as it must after the step, and the output
          // pass samples every input anew before anything reads them.
          std::swap_ranges(m.ext.begin(), m.ext.end(), s.prev_ext.begin());
          prev_ext_is_tau = true;
          std::copy(s.xd.begin(), s.xd.end(), m.scratch_xd.begin());
          std::copy(s.prev_xd.begin(), s.prev_xd.end(), s.xd.begin());
          m.evaluate(s.prev_tau, m.xe, m.k2);  // f(x_n, previous conditions); xe holds x_n
          std::copy(m.scratch_xd.begin(), m.scratch_xd.end(), s.xd.begin());
        }
        for (std::size_t i = 0; i < nx; ++i) x[i] += h * (m.k1[i] + r * (m.k2[i] - s.prev_main[i]));
        // From the fourth step of a history on: the oldest of the three
        // derivatives is then at x_1, which the start-up Euler step placed;
        // at x_0 the Euler step's own error would enter the divided
        // difference (eq. 5.6 at h = 10 ms: 0.00204 against a true local
        // error of 0.00106). No states: the estimate stays 0.
        if (s.history >= 3 && nx > 0) {
          // x''' ~ 2 f[t_n, t_{n-1}, t_{n-2}]: the three main evaluations
          // are at the states x_n, x_{n-1}, x_{n-2}, which the steps h_{n-1}
          // and h_{n-2} separate (their mid-frame times would not: with
          // unequal steps they are spaced by the means of two steps).
          // Variable-step AB-2 local error: h_n^2 (h_n/6 + h_{n-1}/4) x''',
          // (5/12) h^3 x''' for equal steps.
          const double d1 = s.prev_h, d2 = s.prev2_h, d02 = d1 + d2;
          const double factor = h * h * (h / 6.0 + s.prev_h / 4.0) * 2.0;
          // max_i |factor dd_i| = |factor| (max_i |e_i| / d02) to the bit,
          // with dd_i = e_i / d02 (a product's or quotient's magnitude
          // ignores signs, d02 > 0, rounding is monotone): the divisions by
          // d1 and d2 run in one loop the compiler vectorises, the one by
          // d02 once, the maximum in four independent chains (NaNs skipped,
          // as before).
          double* dd = m.k3.data();
          const double* k1 = m.k1.data();
          const double* p1 = s.prev_main.data();
          const double* p2 = s.prev2_main.data();
          for (std::size_t i = 0; i < nx; ++i) dd[i] = std::fabs((k1[i] - p1[i]) / d1 - (p1[i] - p2[i]) / d2);
          double w[4] = {0.0, 0.0, 0.0, 0.0};
          std::size_t i = 0;
          for (; i + 4 <= nx; i += 4) {
            for (std::size_t j = 0; j < 4; ++j) w[j] = w[j] < dd[i + j] ? dd[i + j] : w[j];
          }
          for (; i < nx; ++i) w[0] = w[0] < dd[i] ? dd[i] : w[0];
          const double largest = std::max(std::max(w[0], w[1]), std::max(w[2], w[3]));
          s.truncation_error = std::fabs(factor) * (largest / d02);
          ab2_error_scale = std::fabs(factor) / d02;  // per state: times dd_i in k3
        }
      } else {
        for (std::size_t i = 0; i < nx; ++i) x[i] += h * m.k1[i];
      }
      std::swap(s.prev2_main, s.prev_main);
      std::copy(m.k1.begin(), m.k1.end(), s.prev_main.begin());
      if (!prev_ext_is_tau) std::copy(m.ext.begin(), m.ext.end(), s.prev_ext.begin());
      std::copy(s.xd.begin(), s.xd.end(), s.prev_xd.begin());
      s.prev_tau = tau;
      s.prev2_h = s.prev_h;
      s.prev_h = h;
      if (s.history < 3) ++s.history;
      break;
    }
  }

  // A block that failed inside the step (an FMU) leaves time where the
  // step began: the task stops at the frame that did not complete.
  if (!m.fallible.empty() && failed()) return;
  // So does a state that is no longer a number: whatever made it (an input
  // that overflowed, a model that diverged), every later value of the
  // partition would be NaN, silently. One branch-free sweep per step.
  if (const std::size_t i = base::first_nonfinite(x); i < nx) {
    s.nonfinite = i;
    s.nonfinite_value = x[i];
    s.nonfinite_from = t;
    return;
  }
  if (const std::size_t i = base::first_nonfinite(s.xd); i < s.xd.size()) {
    s.nonfinite = nx + i;
    s.nonfinite_value = s.xd[i];
    s.nonfinite_from = t;
    return;
  }
  // A step that landed on events integrated in pieces: k1 is the last
  // piece's, not the step's start, and an event may have reset states; the
  // one-step measure skips it and the next step.
  if (from != t) s.have_prev_f = false;
  if (guard_divergence(t, h, ab2_error_scale)) return;
  if (from != t) s.have_prev_f = false;

  // Outputs at the end of the step, with their time derivatives.
  const double y = h - s.time_error;
  const double end = t + y;
  s.time_error = (end - t) - y;
  s.time = end;
  sample(end, InputPass::kOutput);
  if (!m.eventful.empty()) {
    // Events of the step just taken: the blocks see their inputs and
    // states at its end, may reset their states; the outputs below then
    // follow the reset. Multistep history across an event would
    // extrapolate over the jump.
    if (handle_events(end)) {
      s.history = 0;
      // The derivative before the event says nothing about the next step's.
      s.have_prev_f = false;
    }
  }
  m.evaluate(end, x, m.k4, false);
  // The outputs just evaluated are at the step's end, after its events:
  // where the next step's crossings are measured from.
  if (locating) s.z_known = m.read_indicators(s.z.data());
  m.output_derivatives(m.k4);
  m.mark_jumps(true);
}

// The relative local error of the step just taken, per state
// e_i / (|x_i| + scale_i), scale_i the largest |x_i| so far: ab2 from its
// truncation-error estimate; the one-step methods from the change of the
// derivative at the steps' starts, h/2 |f_n - f_{n-1}| (the local error of
// an Euler step, an upper estimate for rk2 and rk4 where the solution is
// resolved). Then the guard: tolerance exceeded for `steps` steps in a row,
// or a state beyond the bound, stops the partition. True when it stopped.
bool Partition::guard_divergence(double t, double h, double ab2_error_scale) noexcept {
  Impl& m = *impl_;
  Impl::State& s = m.s;
  const std::size_t nx = m.nx;
  const std::vector<double>& x = s.x;
  const bool one_step = integrator_ != IntegratorKind::kAb2;
  const bool have = one_step ? s.have_prev_f && s.prev_f_h > 0.0 : ab2_error_scale >= 0.0;
  double worst = 0.0;
  std::size_t at = kNoState;
  for (std::size_t i = 0; i < nx; ++i) {
    const double mag = std::fabs(x[i]);
    if (mag > s.scale[i]) s.scale[i] = mag;
    if (!have) continue;
    const double e = one_step ? 0.5 * h * h / s.prev_f_h * std::fabs(m.k1[i] - s.prev_f[i]) : ab2_error_scale * m.k3[i];
    const double denominator = mag + s.scale[i];
    // A state that has been exactly 0 all along has no scale yet.
    if (!(denominator > 0.0)) continue;
    const double rel = e / denominator;
    if (rel > worst) {
      worst = rel;
      at = i;
    }
  }
  if (one_step) {
    std::copy(m.k1.begin(), m.k1.end(), s.prev_f.begin());
    s.prev_f_h = h;
    s.have_prev_f = true;
  }
  s.local_error = worst;
  s.local_error_state = at;
  const DivergenceGuard& g = guard_;
  auto stop = [&](std::size_t i, bool bound) noexcept {
    s.diverged = i;
    s.diverged_value = x[i];
    s.diverged_error = worst;
    s.diverged_from = t;
    s.diverged_bound = bound;
    return true;
  };
  if (g.state_bound > 0.0) {
    for (std::size_t i = 0; i < nx; ++i) {
      if (std::fabs(x[i]) > g.state_bound) return stop(i, true);
    }
  }
  if (g.tolerance > 0.0 && worst > g.tolerance) {
    // Each state's scale when the excess began: a divergence grows, a limit
    // cycle under a held input (as large an error, step after step) does not.
    if (s.over_tolerance++ == 0) std::copy(s.scale.begin(), s.scale.end(), s.scale_at_excess.begin());
    if (s.over_tolerance >= g.steps && s.scale[at] >= kDivergenceGrowth * s.scale_at_excess[at]) return stop(at, false);
  } else {
    s.over_tolerance = 0;
  }
  return false;
}

double Partition::local_error() const noexcept { return impl_->s.local_error; }

std::string Partition::state_owner(std::size_t state) const {
  for (const auto& slot : impl_->slots) {
    const Block& b = *slot.block;
    if (state < slot.x_offset || state >= slot.x_offset + b.continuous_states()) continue;
    return "block '" + b.name() + "' (" + b.type() + "): its state " + std::to_string(state - slot.x_offset);
  }
  return "state " + std::to_string(state);
}

std::string Partition::local_error_owner() const {
  return impl_->s.local_error_state == kNoState ? std::string() : state_owner(impl_->s.local_error_state);
}

bool Partition::failed() const noexcept {
  if (impl_->s.nonfinite != kNoState || impl_->s.diverged != kNoState) return true;
  for (std::size_t i : impl_->fallible) {
    if (impl_->slots[i].block->failed()) return true;
  }
  return false;
}

bool Partition::terminated() const noexcept {
  for (std::size_t i : impl_->fallible) {
    if (impl_->slots[i].block->terminated()) return true;
  }
  return false;
}

std::string Partition::termination() const {
  for (std::size_t i : impl_->fallible) {
    const Block& b = *impl_->slots[i].block;
    if (b.terminated()) return "block '" + b.name() + "' (" + b.type() + "): " + b.termination();
  }
  return {};
}

std::string Partition::failure() const {
  for (std::size_t i : impl_->fallible) {
    if (impl_->slots[i].block->failed()) return impl_->slots[i].block->failure();
  }
  const Impl::State& s = impl_->s;
  if (s.diverged != kNoState) {
    char figures[256];
    if (s.diverged_bound) {
      std::snprintf(figures, sizeof figures, "reached %.6g, beyond state_bound %.6g", s.diverged_value,
                    guard_.state_bound);
    } else {
      std::snprintf(figures, sizeof figures,
                    "had a relative local error of %.3g (value %.6g), above the tolerance %.3g for %d step(s) in a row "
                    "while its magnitude grew %.3gx",
                    s.diverged_error, s.diverged_value, guard_.tolerance, s.over_tolerance,
                    s.scale_at_excess[s.diverged] > 0.0 ? s.scale[s.diverged] / s.scale_at_excess[s.diverged]
                                                        : std::numeric_limits<double>::infinity());
    }
    char from[32];
    std::snprintf(from, sizeof from, "%.9g", s.diverged_from);
    return "the simulation diverged: " + state_owner(s.diverged) + " " + figures + ", in the step from t = " + from +
           " s — the task stops (docs/stalls.md: the task's 'divergence' settings)";
  }
  if (s.nonfinite == kNoState) return {};
  if (impl_->lu_singular) {
    char from[32];
    std::snprintf(from, sizeof from, "%.9g", s.nonfinite_from);
    return "partition '" + name_ + "': the " + std::string(integrator_name(integrator_)) +
           " step's matrix I - gamma h J is singular or not finite in the step from t = " + from +
           " s (a Jacobian entry overflowed, or h hit an eigenvalue 1/(gamma h) of J exactly) — the task stops; "
           "another period, or an explicit integrator, avoids it";
  }
  // The block that owns the state, and which of its states it is.
  const bool discrete = s.nonfinite >= impl_->nx;
  const std::size_t at = discrete ? s.nonfinite - impl_->nx : s.nonfinite;
  for (const auto& slot : impl_->slots) {
    const Block& b = *slot.block;
    const std::size_t first = discrete ? slot.xd_offset : slot.x_offset;
    const std::size_t count = discrete ? b.discrete_states() : b.continuous_states();
    if (at < first || at >= first + count) continue;
    char from[32];
    std::snprintf(from, sizeof from, "%.9g", s.nonfinite_from);
    return "block '" + b.name() + "' (" + b.type() + "): its " + (discrete ? "discrete " : "") + "state " +
           std::to_string(at - first) + " became " + (std::isnan(s.nonfinite_value) ? "NaN" : "infinite") +
           " in the step from t = " + from +
           " s (an input or a value it computed overflowed) — the task stops rather than carry it on";
  }
  return "a state became non-finite";
}

std::vector<double> Partition::linearisation() {
  struct Zero final : InputSource {
    void sample(std::size_t, double, std::span<double> out) noexcept override {
      std::fill(out.begin(), out.end(), 0.0);
    }
  } zero;
  Impl& m = *impl_;
  reset(0.0);
  refresh_outputs(zero);
  zero.begin_pass(InputPass::kIntegration);
  if (!externals_.empty()) zero.sample_all(0.0, m.ext, m.ext_offsets);
  std::vector<double> f(m.nx), j(m.nx * m.nx);
  m.evaluate(0.0, m.s.x, f);
  m.jacobian(0.0, m.s.x, f, j.data());
  reset(0.0);
  return j;
}

std::uint64_t Partition::events() const noexcept { return impl_->events; }
const Partition::EventCounts& Partition::event_counts() const noexcept { return impl_->event_counts; }
void Partition::set_locate_events(bool locate) noexcept { impl_->locate_events = locate; }
bool Partition::jacobian_from_block() const noexcept { return impl_->jacobian_block != kNoState; }

void Partition::refresh_outputs(InputSource& inputs) noexcept {
  Impl& m = *impl_;
  const double t = m.s.time;
  inputs.begin_pass(InputPass::kOutput);
  if (!externals_.empty()) inputs.sample_all(t, m.ext, m.ext_offsets);
  m.evaluate(t, m.s.x, m.k4, false);
  // Inputs known now that a block applies in an event (an FMU's discrete
  // inputs at t0): then the outputs again, after it.
  bool handled = false;
  for (std::size_t i : m.eventful) {
    Impl::Slot& slot = m.slots[i];
    handled = slot.block->inputs_event(
                  slot.context, std::span<double>(m.s.x.data() + slot.x_offset, slot.block->continuous_states())) ||
              handled;
  }
  if (handled) m.evaluate(t, m.s.x, m.k4, false);
  if (!m.indicating.empty()) m.s.z_known = m.read_indicators(m.s.z.data());
  m.output_derivatives(m.k4);
  m.mark_jumps(false);
}

void Partition::set_derivative_consumers(std::span<const OutputRef> ports) {
  Impl& m = *impl_;
  m.derivative_wanted.assign(m.ext_base, 0);
  for (const OutputRef& r : ports) {
    std::fill_n(m.derivative_wanted.begin() + static_cast<std::ptrdiff_t>(r.offset), r.width, 1);
  }
  m.compile();
  reset(m.s.time);
}

void Partition::set_compiled(bool compiled) {
  impl_->compiled = compiled;
  impl_->compile();
  reset(impl_->s.time);
}

std::size_t Partition::kernel_count() const noexcept { return impl_->runs.size(); }

bool Partition::snapshot() noexcept {
  impl_->saved = impl_->s;
  bool ok = true;
  for (std::size_t i = 0; i < block_count(); ++i) ok = mutable_block(i).save_state() && ok;
  return ok;
}

bool Partition::restore() noexcept {
  impl_->s = impl_->saved;
  bool ok = true;
  for (std::size_t i = 0; i < block_count(); ++i) ok = mutable_block(i).restore_state() && ok;
  return ok;
}

bool Partition::slots_possible() const noexcept {
  for (std::size_t i = 0; i < block_count(); ++i) {
    if (block(i).keeps_own_state()) return false;
  }
  return true;
}

std::size_t Partition::save_to_slot() {
  Impl& m = *impl_;
  if (m.kept_used == m.kept.size())
    m.kept.push_back(m.s);
  else
    m.kept[m.kept_used] = m.s;
  return m.kept_used++;
}

void Partition::load_slot(std::size_t slot) noexcept { impl_->s = impl_->kept[slot]; }

void Partition::clear_slots() noexcept { impl_->kept_used = 0; }

}  // namespace rtcosim::tasks
