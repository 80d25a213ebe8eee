#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>

#include "base/text.hpp"
#include "tasks/params.hpp"
#include "tasks/partition.hpp"
#include "tasks/partition_impl.hpp"

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
    // Sized once: grown by doubling, the slots of a large partition held up to twice their size for life.
    m.slots.reserve(blocks.size());
    names.reserve(blocks.size());
    by_name.reserve(blocks.size());
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
    // Sized before a block's views are taken: the contexts' spans point into these vectors.
    std::size_t n_in = 0, n_out = 0;
    for (const Impl::Slot& slot : m.slots) {
      n_in += slot.block->inputs().size();
      n_out += slot.block->outputs().size();
    }
    Impl::PortViews& v = m.views;
    v.u.resize(n_in);
    v.du.resize(n_in);
    v.du_valid.resize(n_in);
    v.y.resize(n_out);
    v.dy.resize(n_out);
    v.dy_valid.resize(n_out);
    std::size_t first_in = 0, first_out = 0;
    for (std::size_t i = 0; i < m.slots.size(); ++i) {
      Impl::Slot& slot = m.slots[i];
      const Block& b = *slot.block;
      const std::size_t ins = b.inputs().size(), outs = b.outputs().size();
      m.in_offsets[i].reserve(ins);
      for (std::size_t p = 0; p < ins; ++p) {
        const Source& src = *sources[i][p];
        const std::size_t w = b.inputs()[p].width;
        const std::size_t at = src.held       ? m.ext_base + ext_size + src.offset
                               : src.external ? m.ext_base + src.offset
                                              : src.offset;
        m.in_offsets[i].push_back(at);
        v.u[first_in + p] = {s.signals.data() + at, w};
        v.du[first_in + p] = {s.dsignals.data() + at, w};
        v.du_valid[first_in + p] = {s.dvalid.data() + at, w};
      }
      for (std::size_t p = 0; p < outs; ++p) {
        const std::size_t w = b.outputs()[p].width;
        v.y[first_out + p] = {s.signals.data() + slot.out_offsets[p], w};
        v.dy[first_out + p] = {s.dsignals.data() + slot.out_offsets[p], w};
        v.dy_valid[first_out + p] = {s.dvalid.data() + slot.out_offsets[p], w};
      }
      slot.context.u = std::span(v.u).subspan(first_in, ins);
      slot.context.du = std::span(v.du).subspan(first_in, ins);
      slot.context.du_valid = std::span(v.du_valid).subspan(first_in, ins);
      slot.context.y = std::span(v.y).subspan(first_out, outs);
      slot.context.dy = std::span(v.dy).subspan(first_out, outs);
      slot.context.dy_valid = std::span(v.dy_valid).subspan(first_out, outs);
      first_in += ins;
      first_out += outs;
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

// A run as it is being built: the blocks of a kernel run, or the one
// block of its own code it holds.
struct Partition::Impl::PendingRun {
  const KernelFamily* family;  // null: a block of its own code
  bool stage, deriv, stateful;
  std::vector<KernelSlot> members;
  std::size_t slot = 0;  // the block of its own code
};

void Partition::Impl::compile() {
  const std::vector<const KernelFamily*> family = kernel_families();
  const std::vector<unsigned char> stage = in_stages(family);
  const std::vector<unsigned char> deriv = derivatives_needed(family);
  std::vector<PendingRun> pending = plan_runs(family, stage, deriv);
  make_runs(pending);
  index_runs();
}

namespace {

// Marks, in `set`, every block that a marked block reads through any wire,
// transitively; `through(i)` says whether the marking passes on from block
// i to what it reads. Set-up only.
template <class Through>
void close_upstream(const std::vector<std::vector<std::size_t>>& upstream, std::vector<unsigned char>& set,
                    Through through) {
  std::vector<std::size_t> work;
  for (std::size_t i = 0; i < set.size(); ++i) {
    if (set[i]) work.push_back(i);
  }
  while (!work.empty()) {
    const std::size_t i = work.back();
    work.pop_back();
    if (!through(i)) continue;
    for (std::size_t from : upstream[i]) {
      if (set[from]) continue;
      set[from] = 1;
      work.push_back(from);
    }
  }
}

}  // namespace

// A block joins a kernel of its type when it offers one and needs none of
// what only its own code handles.
std::vector<const KernelFamily*> Partition::Impl::kernel_families() const {
  const std::size_t n = slots.size();
  std::vector<const KernelFamily*> family(n, nullptr);
  for (std::size_t i = 0; i < n; ++i) {
    const Block& b = *slots[i].block;
    bool plain = b.discrete_states() == 0 && b.sample_time() == 0.0 && !b.jumps() && !b.has_events() && !b.can_fail();
    for (std::size_t p = 0; p < b.outputs().size(); ++p) plain = plain && !b.state_only(p);
    if (plain && compiled) family[i] = b.kernel_family();
  }
  return family;
}

// In the stages: every block with states or its own code, and whatever
// they read, through any wire.
std::vector<unsigned char> Partition::Impl::in_stages(const std::vector<const KernelFamily*>& family) const {
  const std::size_t n = slots.size();
  std::vector<unsigned char> stage(n, 0);
  for (std::size_t i = 0; i < n; ++i) stage[i] = !family[i] || slots[i].block->continuous_states() > 0;
  close_upstream(upstream, stage, [](std::size_t) { return true; });
  return stage;
}

// Output derivatives: where consumed outside, where a block of its own
// code may read them, and upstream of a kernel that reads its inputs'.
std::vector<unsigned char> Partition::Impl::derivatives_needed(const std::vector<const KernelFamily*>& family) const {
  const std::size_t n = slots.size();
  std::vector<unsigned char> deriv(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const Slot& slot = slots[i];
    bool wanted = derivative_wanted.empty() || !family[i];
    for (std::size_t p = 0; p < slot.out_offsets.size() && !wanted; ++p) {
      for (std::size_t k = 0; k < slot.block->outputs()[p].width; ++k) {
        wanted = wanted || derivative_wanted[slot.out_offsets[p] + k] != 0;
      }
    }
    deriv[i] = wanted;
  }
  close_upstream(upstream, deriv,
                 [&](std::size_t i) { return !family[i] || family[i]->reads_input_derivatives(*slots[i].block); });
  return deriv;
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
std::vector<Partition::Impl::PendingRun> Partition::Impl::plan_runs(const std::vector<const KernelFamily*>& family,
                                                                    const std::vector<unsigned char>& stage,
                                                                    const std::vector<unsigned char>& deriv) const {
  const std::size_t n = slots.size();
  std::vector<PendingRun> pending;
  std::vector<std::ptrdiff_t> run_of(n, -1);
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
    const Slot& slot = slots[i];
    const bool stateful = slot.block->continuous_states() > 0;
    if (!family[i]) {
      pending.push_back(PendingRun{nullptr, true, true, stateful, {}, i});
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
      const PendingRun& r = pending[p];
      if (r.family == family[i] && r.stage == (stage[i] != 0) && r.deriv == (deriv[i] != 0)) {
        into = static_cast<std::ptrdiff_t>(p);
        break;
      }
    }
    if (into < earliest) {
      pending.push_back(PendingRun{family[i], stage[i] != 0, deriv[i] != 0, false, {}, 0});
      into = static_cast<std::ptrdiff_t>(pending.size() - 1);
    }
    PendingRun& r = pending[static_cast<std::size_t>(into)];
    r.members.push_back(slot_of(i));
    r.stateful = r.stateful || stateful;
    run_of[i] = into;
  }
  return pending;
}

// The planned runs made: a kernel compiled for each kernel run, in order.
void Partition::Impl::make_runs(std::vector<PendingRun>& pending) {
  runs.clear();
  for (PendingRun& p : pending) {
    if (!p.family) {
      Slot& slot = slots[p.slot];
      runs.push_back(Run{nullptr, &slot, true, true, p.stateful});
    } else {
      runs.push_back(Run{p.family->compile(p.members), nullptr, p.stage, p.deriv, p.stateful});
    }
  }
}

// The passes' call lists, rebuilt from the runs (in their order) so that
// each pass walks only the runs it needs.
void Partition::Impl::index_runs() {
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

}  // namespace rtcosim::tasks
