#pragma once

// Private to the `fmu` block type (tasks/fmu/fmu_block.cpp): the FmuBlock
// class, whose constructor's set-up steps are in fmu_block_setup.cpp. Not
// installed, not for other code.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <variant>

#include "base/text.hpp"
#include "tasks/block_registry.hpp"
#include "tasks/fmu/fmu_instance.hpp"

namespace rtcosim::tasks::fmu_detail {

using fmu::Causality;
using fmu::FmuInstance;
using fmu::FmuInterface;
using fmu::VarType;

constexpr double kTwoTo53 = 9007199254740992.0;

// The start values of an input given as a `start.` parameter, and the
// checks of 64-bit values a double must hold (fmu_block_setup.cpp).
bool beyond_2_to_53(const std::string& text);
std::optional<std::uint64_t> unsigned_of(const std::string& text);
std::vector<double> start_of_input(const fmu::Variable& v, std::size_t width);

/*
 * FmuBlock. Model exchange: the FMU's continuous states are the block's,
 * integrated by the partition's integrator; `output` sets time, states and
 * inputs and reads the outputs, `derivatives` reads the state derivatives;
 * outputs that are states get their exact derivative. Time events are
 * landed on and state events located inside the step by the partition
 * (Block::next_time_event, Block::indicators; with ab2 at the step's end);
 * `event` handles what is due at the instant it is called (a sign change
 * of an event indicator, a time event, CompletedIntegratorStep asking).
 * Co-simulation: a block updated at every major step: `update` sets the
 * inputs at t, calls doStep(t, h) and reads the outputs at t + h, which the
 * block shows from the end of that step on (until then the values at t);
 * output derivatives from GetRealOutputDerivatives where the FMU has them.
 * Ports: every input and output of a numeric type (Real/Float64, Float32,
 * Integer/Int8 ... UInt64, Boolean, Enumeration), as doubles, set and read
 * in one call per type with the FMU's typed functions; an FMI 3.0 array is
 * a port as wide as its elements (row-major), its size fixed at set-up by
 * its <Dimension>s and the structural parameters (start values). A discrete
 * output's derivative is known and zero; a change of one (an event, in
 * model exchange) is a jump (Block::branch) that links restart at.
 * RT: every per-step function calls the FMU on buffers sized here; a
 * failed call leaves the outputs as they were and `failed()` true.
 */
class FmuBlock final : public Block {
 public:
  FmuBlock(const std::string& name, const BlockParams& params) : Block(name, "fmu") {
    const std::string file = params.text(name, "file", "");
    load(name, params, file);
    refuse_clocks(name, file);
    std::vector<std::string> names;
    for (const auto& v : fmu_->description().variables) names.push_back(v.name);
    Starts starts = read_starts(name, params, file, names);
    check_start_sizes(name, starts);
    // The inputs among them are also what those inputs hold unconnected.
    std::vector<std::pair<std::string, std::vector<double>>> input_starts;
    for (const auto& [var, values] : starts.values) {
      if (const fmu::Variable* v = fmu_->description().find(var); v && v->causality == Causality::kInput)
        input_starts.emplace_back(var, values);
    }
    try {
      fmu_->start(std::move(starts.values));
    } catch (const fmu::FmuError& e) {
      throw BlockError("block '" + name + "' (fmu): " + e.what(), name, "file");
    }
    me_ = fmu_->interface() == FmuInterface::kModelExchange;

    // Ports: the inputs and outputs of every numeric type, scalars and
    // arrays (a port as wide as the array's elements, row-major), grouped
    // by type for one typed call each.
    Layout layout;
    group_inputs(name, file, layout);
    add_output_ports(name, file, layout);
    add_observed_ports(name, params, file, names, layout);
    size_work_memory();
    declare_inputs(layout, input_starts);
    in_val_.assign(layout.in_values, 0.0);
    out_val_.assign(layout.out_values, 0.0);
    if (me_) {
      set_up_model_exchange();
    } else {
      set_up_co_simulation(name, layout);
    }
    set_can_fail();
  }

  bool can_observe(const std::string& name) const override {
    const fmu::Variable* v = fmu_->description().find(name);
    if (!v || !fmu::is_port_type(v->type) || v->causality == Causality::kInput || v->causality == Causality::kOutput)
      return false;
    for (const auto& o : outputs()) {
      if (o.name == name) return false;
    }
    return true;
  }

  std::string why_not_a_port(const std::string& name) const override {
    const fmu::Variable* v = fmu_->description().find(name);
    if (!v) return {};
    const std::string what = "'" + name + "' is a " + fmu::variability_name(v->variability) + " " +
                             fmu::causality_name(v->causality) + " " + v->type_name + " variable of the FMU";
    if (v->causality != Causality::kInput && v->causality != Causality::kOutput)
      return what + " — only its inputs and outputs are ports; to record, probe or wire it, name it in the block's " +
             "'observe' (params: {observe: \"" + name + "\"}); a parameter takes a start value: start." + name;
    if (v->type == VarType::kString) return what + " — String variables are not ports (a port carries numbers)";
    if (!fmu::is_port_type(v->type))
      return what + " — only numeric scalars (Real/Float, Integer/Int/UInt, Boolean, Enumeration) are ports";
    return {};
  }

  void initialize(std::span<double> x, std::span<double> xd) const noexcept override {
    (void)xd;
    // A second run starts from the FMU's initial state again (set-up
    // time: Partition::reset runs before the frames).
    if (dirty_) {
      dirty_ = false;
      if (fmu_->reinitialize() && me_) {
        initial_indicators();
        read_discrete_inputs();
      }
    }
    if (me_) std::copy(fmu_->initial_states().begin(), fmu_->initial_states().end(), x.begin());
    next_event_ = fmu_->initial_next_event();
    t_next_ = 0.0;
    events_ = 0;
    if (!me_ && !fmu_->failed()) {
      (void)(read_outputs(y_next_) && read_output_derivatives());
      y_cur_ = y_next_;
    }
  }

  void output(const BlockContext& c) const noexcept override {
    if (me_) {
      dirty_ = true;
      // A model that ended itself is in event mode: its outputs there can
      // still be read (FMI: getters are allowed), nothing can be set.
      if (fmu_->terminated()) {
        if (read_outputs(out_val_)) show(c, out_val_);
        return;
      }
      gather_inputs(c);
      if (fmu_->set_time(c.t) && fmu_->set_states(c.x.data(), nx_) && write_inputs() && read_outputs(out_val_)) {
        show(c, out_val_);
      }
      return;
    }
    show(c, at_end(c.t) ? y_next_ : y_cur_);
  }

  void derivatives(const BlockContext& c, std::span<double> dx) const noexcept override {
    (void)c;
    if (fmu_->terminated() || !fmu_->get_derivatives(dx.data(), nx_)) std::fill(dx.begin(), dx.end(), 0.0);
  }

  void output_derivatives(const BlockContext& c, std::span<const double> dx) const noexcept override {
    for (std::size_t p = 0; p < out_width_.size(); ++p) {
      const std::size_t w = out_width_[p];
      if (out_discrete_[p]) {
        for (std::size_t i = 0; i < w; ++i) c.out_derivative(p, i, 0.0);  // piecewise constant: zero between events
      } else if (me_ && out_state_[p] >= 0) {
        const auto o = static_cast<std::size_t>(out_state_[p]);
        for (std::size_t i = 0; i < w; ++i) c.out_derivative(p, i, dx[o + i]);
      } else if (!me_ && derivatives_ && deriv_offset_[p] >= 0 && at_end(c.t)) {
        const auto o = static_cast<std::size_t>(deriv_offset_[p]);
        for (std::size_t i = 0; i < w; ++i) c.out_derivative(p, i, dy_next_[o + i]);
      } else {
        c.unknown_derivative(p);
      }
    }
  }

  void update(const BlockContext& c) const noexcept override {
    if (me_ || !(c.h > 0.0)) return;
    dirty_ = true;
    y_cur_ = y_next_;  // same sizes: no allocation
    gather_inputs(c);
    if (!write_inputs() || !fmu_->do_step(c.t, c.h) || !read_outputs(y_next_)) return;
    if (!read_output_derivatives()) return;
    // The FMU handled its own events inside the step: a discrete output
    // that changed is a jump at the step's end.
    for (std::size_t p = 0; p < out_width_.size(); ++p) {
      if (out_discrete_[p] &&
          std::memcmp(&y_next_[out_off_[p]], &y_cur_[out_off_[p]], out_width_[p] * sizeof(double)) != 0) {
        ++events_;
        break;
      }
    }
    // A model that ended inside the step reached only its last successful time.
    t_next_ = fmu_->terminated() ? fmu_->terminated_time() : c.t + c.h;
  }

  bool event(const BlockContext& c, std::span<double> x) const noexcept override {
    if (!fmu_->set_time(c.t) || !fmu_->set_states(x.data(), nx_)) return false;
    gather_inputs(c);
    bool enter = false;
    if (!write_inputs() || !fmu_->completed_integrator_step(&enter)) return false;
    // A model that asked to end here is asked nothing more (FMI: only
    // Terminate follows).
    if (fmu_->terminated()) return false;
    if (!fmu_->get_event_indicators(z_.data(), z_.size())) return false;
    bool crossed = false;
    for (std::size_t i = 0; i < z_.size(); ++i) crossed = crossed || ((z_[i] > 0.0) != (z_prev_[i] > 0.0));
    const bool timed = c.t >= next_event_ - 1e-12 * std::max(1.0, std::fabs(c.t));
    // A wired discrete input that changed is set in Event Mode: an event.
    const bool inputs = any_discrete_in_ && discrete_inputs_changed();
    if (!(enter || crossed || timed || inputs)) {
      std::copy(z_.begin(), z_.end(), z_prev_.begin());
      return false;
    }
    bool changed = false;
    if (!fmu_->enter_event_mode(c.t) || (inputs && !write_discrete_inputs()) ||
        !fmu_->event_iteration(&changed, &next_event_)) {
      return false;
    }
    ++events_;
    // A model that ended itself stays in event mode, where its states
    // cannot be set: the frame ends here (terminated()).
    if (fmu_->terminated()) return true;
    if (changed && !fmu_->get_states(x.data(), nx_)) return false;
    if (!fmu_->set_states(x.data(), nx_) || !fmu_->get_event_indicators(z_prev_.data(), z_prev_.size())) return false;
    return true;
  }

  // After `output` at the same instant: the FMU's directional derivatives.
  bool state_jacobian(const BlockContext& c, std::span<double> j) const noexcept override {
    (void)c;
    return !fmu_->terminated() && fmu_->state_jacobian(j.data());
  }

  // After `output` at the same instant, which set its time, states and
  // continuous inputs: the partition's trials while it locates an event.
  bool indicators(const BlockContext& c, std::span<double> z) const noexcept override {
    (void)c;
    return !fmu_->terminated() && fmu_->get_event_indicators(z.data(), z.size());
  }

  bool inputs_event(const BlockContext& c, std::span<double> x) const noexcept override {
    if (!me_ || !any_discrete_in_ || fmu_->failed() || fmu_->terminated()) return false;
    gather_inputs(c);
    if (!discrete_inputs_changed()) return false;
    bool changed = false;
    if (!fmu_->set_time(c.t) || !fmu_->set_states(x.data(), nx_) || !write_inputs() || !fmu_->enter_event_mode(c.t) ||
        !write_discrete_inputs() || !fmu_->event_iteration(&changed, &next_event_)) {
      return false;
    }
    if (fmu_->terminated()) return true;
    if (changed && !fmu_->get_states(x.data(), nx_)) return false;
    return fmu_->get_event_indicators(z_prev_.data(), z_prev_.size());
  }

  // Model exchange: the events handled; co-simulation: the steps after
  // which a discrete output differed.
  [[nodiscard]] double branch(const BlockContext& c) const noexcept override {
    (void)c;
    return static_cast<double>(events_);
  }
  [[nodiscard]] double next_time_event() const noexcept override {
    return me_ ? next_event_ : std::numeric_limits<double>::infinity();
  }
  [[nodiscard]] bool failed() const noexcept override { return fmu_->failed(); }
  [[nodiscard]] std::string failure() const override { return fmu_->failure(); }
  [[nodiscard]] bool terminated() const noexcept override { return fmu_->terminated(); }
  [[nodiscard]] std::string termination() const override { return fmu_->termination(); }
  [[nodiscard]] double termination_time() const noexcept override { return fmu_->terminated_time(); }
  [[nodiscard]] std::uint64_t foreign_allocations() const noexcept override { return fmu_->allocations(); }
  [[nodiscard]] std::string run_notice() const override {
    const std::uint64_t n = fmu_->inexact_reads();
    if (n == 0) return {};
    return std::to_string(n) +
           " value(s) of its 64-bit integer outputs lay beyond 2^53 and were read as the nearest "
           "double (docs/fmi.md, \"Types\")";
  }
  [[nodiscard]] std::string fixed_step_reason() const override { return fixed_reason_; }

  // The FMU's own state (GetFMUstate/SetFMUstate) with the partition's
  // snapshot: the state synchronisation re-runs an FMU from it.
  bool save_state() noexcept override { return fmu_->save_state(); }
  bool restore_state() noexcept override { return fmu_->restore_state(); }
  [[nodiscard]] bool keeps_own_state() const noexcept override { return true; }

 private:
  bool at_end(double t) const noexcept { return t >= t_next_ - 1e-12 * std::max(1.0, std::fabs(t_next_)); }
  void gather_inputs(const BlockContext& c) const noexcept {
    for (std::size_t j = 0; j < in_width_.size(); ++j) {
      for (std::size_t i = 0; i < in_width_[j]; ++i) in_val_[in_off_[j] + i] = c.u[j][i];
    }
  }
  // Co-simulation: the output derivatives at the end of the last step (at
  // the start: after initialisation) into dy_next_, where the FMU has them.
  bool read_output_derivatives() const noexcept {
    return !derivatives_ ||
           fmu_->get_output_derivatives(deriv_vr_.data(), deriv_vr_.size(), dy_next_.data(), dy_next_.size());
  }
  // Output values (flat, by port) onto the ports.
  void show(const BlockContext& c, const std::vector<double>& y) const noexcept {
    for (std::size_t p = 0; p < out_width_.size(); ++p) {
      for (std::size_t i = 0; i < out_width_[p]; ++i) c.out(p, i, y[out_off_[p] + i]);
    }
  }
  // The inputs (in_val_, flat by port) through one typed setter per type.
  // Every input (co-simulation), or the continuous ones (model exchange:
  // the discrete ones only at events, write_discrete_inputs).
  bool write_inputs() const noexcept { return write_groups(false); }
  // Model exchange, in Event Mode: the discrete inputs, remembered as what
  // the FMU now holds.
  bool write_discrete_inputs() const noexcept { return write_groups(true); }
  bool write_groups(bool discrete) const noexcept {
    for (const Group& g : in_groups_) {
      if (g.discrete != discrete) continue;
      std::size_t k = 0;
      for (const std::size_t p : g.port) {
        for (std::size_t i = 0; i < in_width_[p]; ++i) g.val[k++] = in_val_[in_off_[p] + i];
      }
      if (!fmu_->set_values(g.type, g.vr.data(), g.vr.size(), g.val.data(), g.n_values, scratch_.data())) return false;
      if (discrete) std::copy(g.val.begin(), g.val.end(), g.set.begin());
    }
    return true;
  }
  // Model exchange: true when a wired discrete input differs from what the
  // FMU holds (an event).
  bool discrete_inputs_changed() const noexcept {
    for (const Group& g : in_groups_) {
      if (!g.discrete) continue;
      std::size_t k = 0;
      for (const std::size_t p : g.port) {
        for (std::size_t i = 0; i < in_width_[p]; ++i, ++k) {
          if (std::memcmp(&in_val_[in_off_[p] + i], &g.set[k], sizeof(double)) != 0) return true;
        }
      }
    }
    return false;
  }
  // What the FMU holds in its discrete inputs (after (re)initialisation).
  void read_discrete_inputs() const noexcept {
    for (const Group& g : in_groups_) {
      if (!g.discrete) continue;
      if (!fmu_->get_values(g.type, g.vr.data(), g.vr.size(), g.set.data(), g.n_values, scratch_.data()))
        std::fill(g.set.begin(), g.set.end(), std::numeric_limits<double>::quiet_NaN());
    }
  }
  // The outputs, flat by port, into `to` through one typed getter per type.
  bool read_outputs(std::vector<double>& to) const noexcept {
    for (const Group& g : out_groups_) {
      if (!fmu_->get_values(g.type, g.vr.data(), g.vr.size(), g.val.data(), g.n_values, scratch_.data())) return false;
      std::size_t k = 0;
      for (const std::size_t p : g.port) {
        for (std::size_t i = 0; i < out_width_[p]; ++i) to[out_off_[p] + i] = g.val[k++];
      }
    }
    return true;
  }
  void initial_indicators() const noexcept {
    if (z_prev_.empty()) return;
    (void)(fmu_->set_time(0.0) && fmu_->set_states(fmu_->initial_states().data(), nx_) &&
           fmu_->get_event_indicators(z_prev_.data(), z_prev_.size()));
  }

  std::unique_ptr<FmuInstance> fmu_;
  bool me_ = true;
  bool derivatives_ = false;
  std::size_t nx_ = 0;
  // The variables of one type among the inputs or outputs: value
  // references, their ports, and their values (every element, n_values in
  // all) in the FMU's order.
  struct Group {
    VarType type;
    std::vector<std::uint32_t> vr;
    std::vector<std::size_t> port;
    std::size_t n_values = 0;
    mutable std::vector<double> val;
    // Model exchange: discrete inputs, set at events only; `set` holds what
    // the FMU has (read back after initialisation), so that a change of
    // the wired value is an event.
    bool discrete = false;
    mutable std::vector<double> set;
  };
  std::vector<Group> in_groups_, out_groups_;
  // Per port: width (an array's elements, else 1) and where its values
  // begin in the flat in_val_ / out_val_, y_cur_, y_next_.
  std::vector<std::size_t> in_off_, in_width_, out_off_, out_width_;
  std::vector<unsigned char> out_discrete_;  // per output port: discrete (its derivative is zero)
  bool any_discrete_out_ = false;
  bool any_discrete_in_ = false;              // model exchange: inputs set at events only
  std::vector<std::uint32_t> deriv_vr_;       // continuous Real outputs, for Get(Real)OutputDerivatives
  std::vector<std::ptrdiff_t> deriv_offset_;  // per output port: where its derivatives begin in dy_next_, or -1
  std::vector<std::ptrdiff_t> out_state_;     // per output port: where its state begins in x, or -1
  std::vector<std::optional<std::vector<std::size_t>>> out_deps_;
  std::string fixed_reason_;
  // Work memory of the const RT functions (the block is the partition's,
  // one thread calls it).
  mutable std::vector<double> in_val_, out_val_, z_, z_prev_;
  mutable std::vector<double> y_cur_, y_next_, dy_next_;
  mutable std::vector<std::uint64_t> scratch_;  // typed conversions, one word per value of the widest group
  mutable double t_next_ = 0.0;
  mutable double next_event_ = std::numeric_limits<double>::infinity();
  mutable std::uint64_t events_ = 0;
  mutable bool dirty_ = false;

  // Set-up steps of the constructor, in its order (each may throw the
  // BlockError that names the parameter at fault).

  // The start values of the block's `start.` parameters, the parameter of
  // each, and the structural parameters among them (which size arrays).
  struct Starts {
    std::vector<std::pair<std::string, std::vector<double>>> values;
    std::vector<std::string> keys;
    std::vector<std::pair<std::uint32_t, std::uint64_t>> structural;
  };
  // Where the ports' values go, collected while the ports are declared.
  struct Layout {
    std::vector<std::size_t> input_vars;    // the variable of each input port
    std::vector<std::size_t> state_offset;  // where each state variable's elements begin in x
    std::size_t in_values = 0, n_out = 0, out_values = 0, deriv_values = 0;
  };

  // The FMU loaded with the options the block's parameters give, and not
  // yet instantiated (its description comes first).
  void load(const std::string& name, const BlockParams& params, const std::string& file);

  // A clocked partition would never tick here: its variables would hold
  // their start values for ever, silently. Refused, before it runs.
  void refuse_clocks(const std::string& name, const std::string& file) const;

  // Every `start.` parameter checked, in the parameters' order, against
  // the variable it names, before the FMU is instantiated with them.
  Starts read_starts(const std::string& name, const BlockParams& params, const std::string& file,
                     const std::vector<std::string>& names) const;

  // The variable a `start.` parameter names, if it takes a start value.
  const fmu::Variable& settable_variable(const std::string& name, const std::string& file,
                                         const std::vector<std::string>& names, const std::string& key,
                                         const std::string& var) const;

  // A 64-bit variable's start value must be one a double holds exactly.
  void check_start_range(const std::string& name, const std::string& key, const std::string& var,
                         const fmu::Variable& v, const std::vector<double>& values) const;

  // FMI 3.0: a structural parameter is set in Configuration Mode, before
  // initialisation; it sizes the arrays that name it in a <Dimension>, for
  // the whole run, so it must be a count within its declared bounds.
  static std::uint64_t structural_value(const std::string& name, const std::string& key, const std::string& var,
                                        const fmu::Variable& v, bool list, const std::vector<double>& values);

  // A list for an array, as many values as it has elements (with the
  // structural parameters above), or one value that every element takes.
  void check_start_sizes(const std::string& name, const Starts& starts) const;

  // Whether a variable can be a port: of a numeric type the FMU has the
  // typed functions for, and (64-bit) with declared values a double holds
  // exactly; a numeric one that cannot is refused, not left out.
  bool port_type(const std::string& name, const std::string& file, const fmu::Variable& v) const;

  // One group per type (and, for inputs, per discreteness), so that each
  // is set or read in one typed call.
  static Group& group_of(std::vector<Group>& groups, VarType type, bool discrete = false);

  // The input ports' groups and widths; the ports themselves are declared
  // last (declare_inputs), once the outputs they feed through to are known.
  void group_inputs(const std::string& name, const std::string& file, Layout& layout);

  // The FMU's outputs, in its order, as output ports; before them, where
  // each state variable's elements begin in the state vector (an output
  // that is a state gets its exact derivative from there).
  void add_output_ports(const std::string& name, const std::string& file, Layout& layout);

  // One output port (an output, or an observed variable): its group, its
  // place in the flat values, whether it is discrete, where its derivative
  // comes from.
  void add_output_port(std::size_t index, std::optional<std::vector<std::size_t>> deps, bool observed, Layout& layout);

  // Variables that are no outputs (locals, parameters), read like outputs
  // after each step so that they can be recorded, probed and wired on: a
  // user looking into a model. They declare no dependency on the inputs
  // (so that looking creates no algebraic loop); read inside a task's
  // loop they may lag its inputs by one evaluation.
  void add_observed_ports(const std::string& name, const BlockParams& params, const std::string& file,
                          const std::vector<std::string>& names, Layout& layout);

  // The groups' buffers and the typed-conversion scratch, sized here so
  // that the per-step calls allocate nothing.
  void size_work_memory();

  // The input ports, declared once the outputs' dependencies say which
  // feed through, each with the value it holds unconnected.
  void declare_inputs(const Layout& layout,
                      const std::vector<std::pair<std::string, std::vector<double>>>& input_starts);

  // Model exchange: the FMU's states are the block's; it declares events
  // only when it can have some.
  void set_up_model_exchange();

  // Co-simulation: a block of every major step whose outputs are known from
  // the start (after initialisation), or the set-up fails.
  void set_up_co_simulation(const std::string& name, const Layout& layout);
};

}  // namespace rtcosim::tasks::fmu_detail
