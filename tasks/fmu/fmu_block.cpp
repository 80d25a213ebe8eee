// The `fmu` block type: an FMU (FMI 2.0 or 3.0, model exchange or
// co-simulation) as a block of a partition, its inputs and outputs as ports
// named after its variables.
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

namespace rtcosim::tasks {

namespace {

using fmu::Causality;
using fmu::FmuInstance;
using fmu::FmuInterface;
using fmu::VarType;

constexpr double kTwoTo53 = 9007199254740992.0;

// A declared start, min or max of a 64-bit variable that a double cannot
// hold exactly (beyond +-2^53): the text, else empty.
bool beyond_2_to_53(const std::string& text) {
  if (text.empty()) return false;
  const char* b = text.data();
  const char* e = b + text.size();
  if (text[0] == '-') {
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(b, e, v);
    if (ec == std::errc::result_out_of_range) return true;
    return ec == std::errc() && v < -(std::int64_t{1} << 53);
  }
  std::uint64_t v = 0;
  const auto [p, ec] = std::from_chars(b + (text[0] == '+' ? 1 : 0), e, v);
  if (ec == std::errc::result_out_of_range) return true;
  return ec == std::errc() && v > (std::uint64_t{1} << 53);
}

// An unsigned integer attribute (min, max), if it is one.
std::optional<std::uint64_t> unsigned_of(const std::string& text) {
  std::uint64_t v = 0;
  const char* b = text.data();
  const char* e = b + text.size();
  const auto [p, ec] = std::from_chars(b, e, v);
  if (text.empty() || ec != std::errc() || p != e) return std::nullopt;
  return v;
}

// An input's declared start as one double per signal of its port: one item
// per element, or one for all; Booleans as 1 and 0. Empty when it has none
// or one that does not read so (the input must then be wired).
std::vector<double> start_of_input(const fmu::Variable& v, std::size_t width) {
  std::vector<double> values;
  for (const auto& item : fmu::start_items(v.start)) {
    if (v.type == VarType::kBoolean && (item == "true" || item == "false")) {
      values.push_back(item == "true" ? 1.0 : 0.0);
      continue;
    }
    double x = 0.0;
    const char* b = item.data() + (!item.empty() && item[0] == '+' ? 1 : 0);
    const char* e = item.data() + item.size();
    const auto [p, ec] = std::from_chars(b, e, x);
    if (ec != std::errc() || p != e) return {};
    values.push_back(x);
  }
  if (values.size() == 1 && width > 1) values.assign(width, values[0]);
  if (values.size() != width) values.clear();
  return values;
}

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
    if (file.empty())
      throw BlockError("block '" + name + "' (fmu): 'file' is required — the path of the .fmu file", name, "file");
    const std::string iface = params.text(name, "interface", "");
    if (!iface.empty() && iface != "model_exchange" && iface != "co_simulation") {
      throw BlockError(
          "block '" + name + "' (fmu): 'interface' = '" + iface + "' — expected model_exchange or co_simulation", name,
          "interface");
    }
    fmu::FmuOptions options;
    options.instance_name = name;
    options.logging = params.flag(name, "logging", false);
    // The experiment the FMU is told of (a co-simulated FMU's own solver
    // takes the tolerance; stop time: the end it may prepare for).
    if (params.has("tolerance")) options.tolerance = params.positive(name, "tolerance");
    if (params.has("stop_time")) options.stop_time = params.positive(name, "stop_time");
    if (!iface.empty()) {
      options.interface = iface == "model_exchange" ? FmuInterface::kModelExchange : FmuInterface::kCoSimulation;
    }
    // Loaded first, instantiated once the start values are checked against
    // its description, with messages that point at the right parameter.
    options.defer_start = true;
    try {
      fmu_ = std::make_unique<FmuInstance>(file, options);
    } catch (const fmu::FmuError& e) {
      throw BlockError("block '" + name + "' (fmu): " + e.what(), name, e.option().empty() ? "file" : e.option());
    }
    const auto& md = fmu_->description();
    // A clocked partition would never tick here: its variables would hold
    // their start values for ever, silently. Refused, before it runs.
    for (const auto& v : md.variables) {
      if (v.clocked) {
        throw BlockError("block '" + name + "' (fmu): " + file + " declares the clock or clocked variable '" + v.name +
                             "' — FMI 3.0 clocks are not supported (rtcosim cannot tick them); use an FMU without "
                             "clocks",
                         name, "file");
      }
    }
    std::vector<std::string> names;
    for (const auto& v : md.variables) names.push_back(v.name);
    std::vector<std::pair<std::string, std::vector<double>>> start;
    std::vector<std::string> start_keys;  // the parameter of each start value
    std::vector<std::pair<std::uint32_t, std::uint64_t>> structural;
    for (const auto& [key, value] : params.all()) {
      if (key.rfind("start.", 0) != 0) continue;
      const std::string var = key.substr(6);
      const bool list = std::holds_alternative<Vector>(value);
      std::vector<double> values = list ? params.vector(name, key) : std::vector<double>{params.number(name, key)};
      const fmu::Variable* v = md.find(var);
      if (!v) {
        std::string message =
            "block '" + name + "' (fmu): 'start' names '" + var + "', which " + file + " does not declare";
        if (const auto guess = base::closest_match(var, names); !guess.empty())
          message += " (did you mean '" + guess + "'?)";
        throw BlockError(message, name, key);
      }
      const bool settable = v->variability != fmu::Variability::kConstant &&
                            (v->causality == Causality::kParameter || v->causality == Causality::kInput ||
                             v->causality == Causality::kStructuralParameter || !v->start.empty()) &&
                            v->causality != Causality::kCalculatedParameter && v->causality != Causality::kIndependent;
      if (!settable) {
        throw BlockError(
            "block '" + name + "' (fmu): '" + var + "' is a " + fmu::variability_name(v->variability) + " " +
                fmu::causality_name(v->causality) +
                " without a start value — only parameters, inputs and variables with a start value take one",
            name, key);
      }
      if (!fmu::is_port_type(v->type)) {
        throw BlockError("block '" + name + "' (fmu): '" + var + "' is of type " + v->type_name +
                             " — start values are for numeric variables (Real/Float, Integer/Int/UInt, Boolean, "
                             "Enumeration)",
                         name, key);
      }
      for (const double number : values) {
        if (fmu::is_64_bit(v->type, md.fmi_major) && !(std::fabs(number) <= kTwoTo53)) {
          throw BlockError("block '" + name + "' (fmu): the start value of '" + var + "' (" + v->type_name +
                               ") is beyond 2^53 = 9007199254740992 — a double holds integers exactly only up to "
                               "there",
                           name, key);
        }
      }
      if (v->causality == Causality::kStructuralParameter) {
        // FMI 3.0: set in Configuration Mode, before initialisation; it
        // sizes the arrays that name it in a <Dimension>, for the whole run.
        const double x = values[0];
        std::string why;
        if (list || !(x >= 0.0) || x != std::floor(x)) {
          why = "takes one non-negative integer";
        } else if (const auto lo = unsigned_of(v->min); lo && x < static_cast<double>(*lo)) {
          why = "declares min=\"" + v->min + "\"";
        } else if (const auto hi = unsigned_of(v->max); hi && x > static_cast<double>(*hi)) {
          why = "declares max=\"" + v->max + "\"";
        }
        if (!why.empty()) {
          throw BlockError("block '" + name + "' (fmu): '" + var + "' is a structural parameter (" + v->type_name +
                               ", it sizes arrays) and " + why + " — got " + base::values_text(values),
                           name, key);
        }
        structural.emplace_back(v->value_reference, static_cast<std::uint64_t>(x));
      }
      start.emplace_back(var, std::move(values));
      start_keys.push_back(key);
    }
    // A list for an array, as many values as it has elements (with the
    // structural parameters above), or one value that every element takes.
    for (std::size_t k = 0; k < start.size(); ++k) {
      const auto& [var, values] = start[k];
      const fmu::Variable& v = *md.find(var);
      if (!v.array) {
        if (values.size() != 1) {
          throw BlockError("block '" + name + "' (fmu): 'start." + var + "' is a list of " +
                               std::to_string(values.size()) + " values, but '" + var + "' is a scalar " + v.type_name +
                               " — give one number",
                           name, start_keys[k]);
        }
        continue;
      }
      std::uint64_t size = 0;
      try {
        size = fmu::element_count(md, v, structural);
      } catch (const fmu::FmuError& e) {
        throw BlockError("block '" + name + "' (fmu): " + e.what(), name, start_keys[k]);
      }
      if (values.size() != 1 && values.size() != size) {
        throw BlockError("block '" + name + "' (fmu): 'start." + var + "' has " + std::to_string(values.size()) +
                             " values, but '" + var + "' is a " + v.type_name + " array of " + std::to_string(size) +
                             " elements (" + var + fmu::dimensions_text(md, v, structural) + ") — give " +
                             std::to_string(size) + " values, or one for every element",
                         name, start_keys[k]);
      }
    }
    // The inputs among them are also what those inputs hold unconnected.
    std::vector<std::pair<std::string, std::vector<double>>> input_starts;
    for (const auto& [var, values] : start) {
      if (const fmu::Variable* v = md.find(var); v && v->causality == Causality::kInput)
        input_starts.emplace_back(var, values);
    }
    try {
      fmu_->start(std::move(start));
    } catch (const fmu::FmuError& e) {
      throw BlockError("block '" + name + "' (fmu): " + e.what(), name, "file");
    }
    me_ = fmu_->interface() == FmuInterface::kModelExchange;

    // Ports: the inputs and outputs of every numeric type, scalars and
    // arrays (a port as wide as the array's elements, row-major), grouped
    // by type for one typed call each.
    std::vector<std::size_t> input_vars;
    auto port_type = [&](const fmu::Variable& v) {
      if (!fmu::is_port_type(v.type)) return false;
      if (fmu::is_64_bit(v.type, md.fmi_major)) {
        for (const auto& [attr, text] :
             {std::pair<const char*, const std::string*>{"start", &v.start}, {"min", &v.min}, {"max", &v.max}}) {
          for (const auto& item : fmu::start_items(*text)) {
            if (beyond_2_to_53(item)) {
              throw BlockError("block '" + name + "' (fmu): " + file + ": the " + v.type_name + " " +
                                   fmu::causality_name(v.causality) + " '" + v.name + "' declares " + attr + "=\"" +
                                   *text +
                                   "\", beyond 2^53 = 9007199254740992 — a port carries doubles, which hold integers "
                                   "exactly only up to there",
                               name, "file");
            }
          }
        }
      }
      try {
        fmu_->require_type(v.type, v.name);
      } catch (const fmu::FmuError& e) {
        throw BlockError("block '" + name + "' (fmu): " + e.what(), name, "file");
      }
      return true;
    };
    auto group_of = [](std::vector<Group>& groups, VarType type, bool discrete = false) -> Group& {
      for (auto& g : groups) {
        if (g.type == type && g.discrete == discrete) return g;
      }
      groups.push_back(Group{type, {}, {}, 0, {}, discrete, {}});
      return groups.back();
    };
    std::size_t in_values = 0;
    for (std::size_t i = 0; i < md.variables.size(); ++i) {
      const auto& v = md.variables[i];
      if (v.causality != Causality::kInput || !port_type(v)) continue;
      const std::size_t w = fmu_->size_of(i);
      // Model exchange: a discrete input can be set in Event Mode only (FMI
      // 2.0 3.2.3, FMI 3.0 3.2.2); it gets a group of its own.
      const bool discrete = me_ && (fmu::is_integer_type(v.type) || v.type == VarType::kBoolean ||
                                    v.variability != fmu::Variability::kContinuous);
      Group& g = group_of(in_groups_, v.type, discrete);
      any_discrete_in_ = any_discrete_in_ || discrete;
      g.vr.push_back(v.value_reference);
      g.port.push_back(input_vars.size());
      g.n_values += w;
      in_off_.push_back(in_values);
      in_width_.push_back(w);
      in_values += w;
      input_vars.push_back(i);
    }
    // Where each state variable's elements begin in the state vector.
    std::vector<std::size_t> state_offset;
    for (std::size_t st = 0, o = 0; st < md.states.size(); ++st) {
      state_offset.push_back(o);
      o += fmu_->size_of(md.states[st]);
    }
    std::size_t n_out = 0, out_values = 0, deriv_values = 0;
    auto add_output_port = [&](std::size_t index, std::optional<std::vector<std::size_t>> deps, bool observed) {
      const auto& v = md.variables[index];
      const std::size_t w = fmu_->size_of(index);
      add_output(v.name, w);
      Group& g = group_of(out_groups_, v.type);
      g.vr.push_back(v.value_reference);
      g.port.push_back(n_out);
      g.n_values += w;
      out_off_.push_back(out_values);
      out_width_.push_back(w);
      out_values += w;
      const bool discrete = fmu::is_integer_type(v.type) || v.variability != fmu::Variability::kContinuous;
      out_discrete_.push_back(discrete ? 1 : 0);
      any_discrete_out_ = any_discrete_out_ || discrete;
      // Output derivatives (co-simulation) exist for continuous Real/Float64 outputs only.
      deriv_offset_.push_back(-1);
      if (v.type == VarType::kReal && !discrete && !observed) {
        deriv_offset_.back() = static_cast<std::ptrdiff_t>(deriv_values);
        deriv_vr_.push_back(v.value_reference);
        deriv_values += w;
      }
      // An output that is (an alias of) a state: its derivative is exact.
      std::ptrdiff_t state = -1;
      if (v.type == VarType::kReal) {
        for (std::size_t st = 0; st < md.states.size(); ++st) {
          if (md.variables[md.states[st]].value_reference == v.value_reference)
            state = static_cast<std::ptrdiff_t>(state_offset[st]);
        }
      }
      out_state_.push_back(state);
      out_deps_.push_back(std::move(deps));
      ++n_out;
    };
    for (std::size_t k = 0; k < md.outputs.size(); ++k) {
      if (port_type(md.variables[md.outputs[k]])) add_output_port(md.outputs[k], md.output_dependencies[k], false);
    }
    // Variables that are no outputs (locals, parameters), read like outputs
    // after each step so that they can be recorded, probed and wired on: a
    // user looking into a model. They declare no dependency on the inputs
    // (so that looking creates no algebraic loop); read inside a task's
    // loop they may lag its inputs by one evaluation.
    for (const std::string& var : split_names(params.text(name, "observe", ""))) {
      const fmu::Variable* v = md.find(var);
      if (!v) {
        std::string message =
            "block '" + name + "' (fmu): 'observe' names '" + var + "', which " + file + " does not declare";
        if (const auto guess = base::closest_match(var, names); !guess.empty())
          message += " (did you mean '" + guess + "'?)";
        throw BlockError(message, name, "observe");
      }
      if (!fmu::is_port_type(v->type)) {
        throw BlockError("block '" + name + "' (fmu): 'observe' names '" + var + "', of type " + v->type_name +
                             " — only numeric variables (Real/Float, Integer/Int/UInt, Boolean, Enumeration) can be "
                             "observed",
                         name, "observe");
      }
      if (v->causality == Causality::kInput || v->causality == Causality::kOutput) {
        throw BlockError("block '" + name + "' (fmu): 'observe' names '" + var + "', which is already a port (" +
                             fmu::causality_name(v->causality) + ") — record or wire it as " + name + "." + var,
                         name, "observe");
      }
      for (std::size_t o = 0; o < outputs().size(); ++o) {
        if (outputs()[o].name == var)
          throw BlockError("block '" + name + "' (fmu): 'observe' names '" + var + "' twice", name, "observe");
      }
      (void)port_type(*v);
      add_output_port(static_cast<std::size_t>(v - md.variables.data()), std::vector<std::size_t>{}, true);
    }
    std::size_t widest = 1;
    for (auto* groups : {&in_groups_, &out_groups_}) {
      for (auto& g : *groups) {
        g.val.assign(g.n_values, 0.0);
        if (g.discrete) g.set.assign(g.n_values, 0.0);
        widest = std::max(widest, g.n_values);
      }
    }
    scratch_.assign(widest, 0);
    for (std::size_t j = 0; j < input_vars.size(); ++j) {
      bool through = false;
      if (me_) {
        for (const auto& deps : out_deps_) {
          if (!deps || std::find(deps->begin(), deps->end(), input_vars[j]) != deps->end()) through = true;
        }
      }
      // A co-simulated FMU's outputs at t + h come from its inputs at t.
      // Left unconnected, an input keeps its start value (FMI, SSP): the
      // block's `start:` for it, else the FMU's.
      const fmu::Variable& in = md.variables[input_vars[j]];
      std::vector<double> held = start_of_input(in, in_width_[j]);
      for (const auto& [var, values] : input_starts) {
        if (var != in.name) continue;
        held = values.size() == 1 ? std::vector<double>(in_width_[j], values[0]) : values;
        if (held.size() != in_width_[j]) held.clear();
      }
      add_input(in.name, in_width_[j], through, std::move(held));
    }
    in_val_.assign(in_values, 0.0);
    out_val_.assign(out_values, 0.0);
    if (me_) {
      nx_ = fmu_->state_count();
      set_continuous_states(nx_);
      z_.assign(fmu_->indicator_count(), 0.0);
      z_prev_.assign(fmu_->indicator_count(), 0.0);
      // Every completed step is reported (CompletedIntegratorStep), unless
      // the FMU says it needs no such call and has neither state nor time
      // events: then it can have none.
      if (!z_.empty() || std::isfinite(fmu_->initial_next_event()) ||
          !md.model_exchange.completed_integrator_step_not_needed || any_discrete_in_) {
        set_events();
        set_jumps();
        set_event_indicators(z_.size());
      }
      if (fmu_->has_state_jacobian()) set_state_jacobian();
      initial_indicators();
      read_discrete_inputs();
    } else {
      set_sample_time(kEveryMajorStep);
      y_next_.assign(out_values, 0.0);
      y_cur_.assign(out_values, 0.0);
      dy_next_.assign(deriv_values, 0.0);
      derivatives_ = fmu_->has_output_derivatives();
      // The outputs, and their derivatives, at the start (after initialisation).
      if (!read_outputs(y_next_) || !read_output_derivatives()) {
        throw BlockError("block '" + name + "' (fmu): " + fmu_->failure(), name, "file");
      }
      y_cur_ = y_next_;
      if (any_discrete_out_) set_jumps();
      if (!md.co_simulation.can_handle_variable_step) {
        fixed_reason_ =
            "its FMU declares canHandleVariableCommunicationStepSize=\"false\" (or not at all), so every doStep must "
            "take the same step";
      }
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
};

}  // namespace

void register_fmu_blocks(BlockRegistry& registry) {
  registry.add({"fmu",
                "an FMU (FMI 2.0 or 3.0, model exchange or co-simulation); its inputs and outputs (Real/Float, "
                "Integer/Int/UInt, Boolean, Enumeration, as doubles; an FMI 3.0 array is a port as wide as its "
                "elements) are ports named after its variables",
                {{"file", "path", "", "the .fmu file (relative: to the task-graph file's directory)"},
                 {"interface", "text", "model_exchange if offered", "model_exchange or co_simulation"},
                 {"start", "mapping", "",
                  "start values by variable name, e.g. {m: 2.0, k: [1, 2, 3]} (a list for an array; one number: every "
                  "element); a structural parameter sizes arrays"},
                 {"logging", "boolean", "false", "the FMU's loggingOn; its messages go to stderr"},
                 {"observe", "text", "",
                  "comma-separated variables that are no outputs (locals, parameters) to read after each step as "
                  "extra output ports: recorded, probed, wired like outputs"},
                 {"tolerance", "number", "undefined",
                  "relative tolerance passed to fmi2SetupExperiment / fmi3EnterInitializationMode (the FMU's own "
                  "solver)"},
                 {"stop_time", "number", "undefined",
                  "stop time in seconds passed the same way; the FMU may refuse to step past it"}},
                make_factory<FmuBlock>()});
}

}  // namespace rtcosim::tasks
