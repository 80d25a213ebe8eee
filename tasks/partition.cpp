#include "tasks/partition.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <unordered_map>

#include "base/finite.hpp"
#include "base/text.hpp"
#include "tasks/params.hpp"
#include "tasks/partition_impl.hpp"

namespace rtcosim::tasks {

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
