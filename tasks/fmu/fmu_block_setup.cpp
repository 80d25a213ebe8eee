// The `fmu` block's set-up: the steps of FmuBlock's constructor, each of
// which may throw the BlockError that names the parameter at fault.
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
#include "tasks/fmu/fmu_block_internal.hpp"
#include "tasks/fmu/fmu_instance.hpp"

namespace rtcosim::tasks::fmu_detail {

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

// The FMU loaded with the options the block's parameters give, and not
// yet instantiated (its description comes first).
void FmuBlock::load(const std::string& name, const BlockParams& params, const std::string& file) {
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
}

// A clocked partition would never tick here: its variables would hold
// their start values for ever, silently. Refused, before it runs.
void FmuBlock::refuse_clocks(const std::string& name, const std::string& file) const {
  for (const auto& v : fmu_->description().variables) {
    if (v.clocked) {
      throw BlockError("block '" + name + "' (fmu): " + file + " declares the clock or clocked variable '" + v.name +
                           "' — FMI 3.0 clocks are not supported (rtcosim cannot tick them); use an FMU without "
                           "clocks",
                       name, "file");
    }
  }
}

// Every `start.` parameter checked, in the parameters' order, against
// the variable it names, before the FMU is instantiated with them.
FmuBlock::Starts FmuBlock::read_starts(const std::string& name, const BlockParams& params, const std::string& file,
                                       const std::vector<std::string>& names) const {
  Starts starts;
  for (const auto& [key, value] : params.all()) {
    if (key.rfind("start.", 0) != 0) continue;
    const std::string var = key.substr(6);
    const bool list = std::holds_alternative<Vector>(value);
    std::vector<double> values = list ? params.vector(name, key) : std::vector<double>{params.number(name, key)};
    const fmu::Variable& v = settable_variable(name, file, names, key, var);
    check_start_range(name, key, var, v, values);
    if (v.causality == Causality::kStructuralParameter)
      starts.structural.emplace_back(v.value_reference, structural_value(name, key, var, v, list, values));
    starts.values.emplace_back(var, std::move(values));
    starts.keys.push_back(key);
  }
  return starts;
}

// The variable a `start.` parameter names, if it takes a start value.
const fmu::Variable& FmuBlock::settable_variable(const std::string& name, const std::string& file,
                                                 const std::vector<std::string>& names, const std::string& key,
                                                 const std::string& var) const {
  const fmu::Variable* v = fmu_->description().find(var);
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
    throw BlockError("block '" + name + "' (fmu): '" + var + "' is a " + fmu::variability_name(v->variability) + " " +
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
  return *v;
}

// A 64-bit variable's start value must be one a double holds exactly.
void FmuBlock::check_start_range(const std::string& name, const std::string& key, const std::string& var,
                                 const fmu::Variable& v, const std::vector<double>& values) const {
  for (const double number : values) {
    if (fmu::is_64_bit(v.type, fmu_->description().fmi_major) && !(std::fabs(number) <= kTwoTo53)) {
      throw BlockError("block '" + name + "' (fmu): the start value of '" + var + "' (" + v.type_name +
                           ") is beyond 2^53 = 9007199254740992 — a double holds integers exactly only up to "
                           "there",
                       name, key);
    }
  }
}

// FMI 3.0: a structural parameter is set in Configuration Mode, before
// initialisation; it sizes the arrays that name it in a <Dimension>, for
// the whole run, so it must be a count within its declared bounds.
std::uint64_t FmuBlock::structural_value(const std::string& name, const std::string& key, const std::string& var,
                                         const fmu::Variable& v, bool list, const std::vector<double>& values) {
  const double x = values[0];
  std::string why;
  if (list || !(x >= 0.0) || x != std::floor(x)) {
    why = "takes one non-negative integer";
  } else if (const auto lo = unsigned_of(v.min); lo && x < static_cast<double>(*lo)) {
    why = "declares min=\"" + v.min + "\"";
  } else if (const auto hi = unsigned_of(v.max); hi && x > static_cast<double>(*hi)) {
    why = "declares max=\"" + v.max + "\"";
  }
  if (!why.empty()) {
    throw BlockError("block '" + name + "' (fmu): '" + var + "' is a structural parameter (" + v.type_name +
                         ", it sizes arrays) and " + why + " — got " + base::values_text(values),
                     name, key);
  }
  return static_cast<std::uint64_t>(x);
}

// A list for an array, as many values as it has elements (with the
// structural parameters above), or one value that every element takes.
void FmuBlock::check_start_sizes(const std::string& name, const Starts& starts) const {
  const auto& md = fmu_->description();
  for (std::size_t k = 0; k < starts.values.size(); ++k) {
    const auto& [var, values] = starts.values[k];
    const fmu::Variable& v = *md.find(var);
    if (!v.array) {
      if (values.size() != 1) {
        throw BlockError("block '" + name + "' (fmu): 'start." + var + "' is a list of " +
                             std::to_string(values.size()) + " values, but '" + var + "' is a scalar " + v.type_name +
                             " — give one number",
                         name, starts.keys[k]);
      }
      continue;
    }
    std::uint64_t size = 0;
    try {
      size = fmu::element_count(md, v, starts.structural);
    } catch (const fmu::FmuError& e) {
      throw BlockError("block '" + name + "' (fmu): " + e.what(), name, starts.keys[k]);
    }
    if (values.size() != 1 && values.size() != size) {
      throw BlockError("block '" + name + "' (fmu): 'start." + var + "' has " + std::to_string(values.size()) +
                           " values, but '" + var + "' is a " + v.type_name + " array of " + std::to_string(size) +
                           " elements (" + var + fmu::dimensions_text(md, v, starts.structural) + ") — give " +
                           std::to_string(size) + " values, or one for every element",
                       name, starts.keys[k]);
    }
  }
}

// Whether a variable can be a port: of a numeric type the FMU has the
// typed functions for, and (64-bit) with declared values a double holds
// exactly; a numeric one that cannot is refused, not left out.
bool FmuBlock::port_type(const std::string& name, const std::string& file, const fmu::Variable& v) const {
  if (!fmu::is_port_type(v.type)) return false;
  if (fmu::is_64_bit(v.type, fmu_->description().fmi_major)) {
    for (const auto& [attr, text] :
         {std::pair<const char*, const std::string*>{"start", &v.start}, {"min", &v.min}, {"max", &v.max}}) {
      for (const auto& item : fmu::start_items(*text)) {
        if (beyond_2_to_53(item)) {
          throw BlockError("block '" + name + "' (fmu): " + file + ": the " + v.type_name + " " +
                               fmu::causality_name(v.causality) + " '" + v.name + "' declares " + attr + "=\"" + *text +
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
}

// One group per type (and, for inputs, per discreteness), so that each
// is set or read in one typed call.
FmuBlock::Group& FmuBlock::group_of(std::vector<Group>& groups, VarType type, bool discrete) {
  for (auto& g : groups) {
    if (g.type == type && g.discrete == discrete) return g;
  }
  groups.push_back(Group{type, {}, {}, 0, {}, discrete, {}});
  return groups.back();
}

// The input ports' groups and widths; the ports themselves are declared
// last (declare_inputs), once the outputs they feed through to are known.
void FmuBlock::group_inputs(const std::string& name, const std::string& file, Layout& layout) {
  const auto& md = fmu_->description();
  for (std::size_t i = 0; i < md.variables.size(); ++i) {
    const auto& v = md.variables[i];
    if (v.causality != Causality::kInput || !port_type(name, file, v)) continue;
    const std::size_t w = fmu_->size_of(i);
    // Model exchange: a discrete input can be set in Event Mode only (FMI
    // 2.0 3.2.3, FMI 3.0 3.2.2); it gets a group of its own.
    const bool discrete = me_ && (fmu::is_integer_type(v.type) || v.type == VarType::kBoolean ||
                                  v.variability != fmu::Variability::kContinuous);
    Group& g = group_of(in_groups_, v.type, discrete);
    any_discrete_in_ = any_discrete_in_ || discrete;
    g.vr.push_back(v.value_reference);
    g.port.push_back(layout.input_vars.size());
    g.n_values += w;
    in_off_.push_back(layout.in_values);
    in_width_.push_back(w);
    layout.in_values += w;
    layout.input_vars.push_back(i);
  }
}

// The FMU's outputs, in its order, as output ports; before them, where
// each state variable's elements begin in the state vector (an output
// that is a state gets its exact derivative from there).
void FmuBlock::add_output_ports(const std::string& name, const std::string& file, Layout& layout) {
  const auto& md = fmu_->description();
  for (std::size_t st = 0, o = 0; st < md.states.size(); ++st) {
    layout.state_offset.push_back(o);
    o += fmu_->size_of(md.states[st]);
  }
  for (std::size_t k = 0; k < md.outputs.size(); ++k) {
    if (port_type(name, file, md.variables[md.outputs[k]]))
      add_output_port(md.outputs[k], md.output_dependencies[k], false, layout);
  }
}

// One output port (an output, or an observed variable): its group, its
// place in the flat values, whether it is discrete, where its derivative
// comes from.
void FmuBlock::add_output_port(std::size_t index, std::optional<std::vector<std::size_t>> deps, bool observed,
                               Layout& layout) {
  const auto& md = fmu_->description();
  const auto& v = md.variables[index];
  const std::size_t w = fmu_->size_of(index);
  add_output(v.name, w);
  Group& g = group_of(out_groups_, v.type);
  g.vr.push_back(v.value_reference);
  g.port.push_back(layout.n_out);
  g.n_values += w;
  out_off_.push_back(layout.out_values);
  out_width_.push_back(w);
  layout.out_values += w;
  const bool discrete = fmu::is_integer_type(v.type) || v.variability != fmu::Variability::kContinuous;
  out_discrete_.push_back(discrete ? 1 : 0);
  any_discrete_out_ = any_discrete_out_ || discrete;
  // Output derivatives (co-simulation) exist for continuous Real/Float64 outputs only.
  deriv_offset_.push_back(-1);
  if (v.type == VarType::kReal && !discrete && !observed) {
    deriv_offset_.back() = static_cast<std::ptrdiff_t>(layout.deriv_values);
    deriv_vr_.push_back(v.value_reference);
    layout.deriv_values += w;
  }
  // An output that is (an alias of) a state: its derivative is exact.
  std::ptrdiff_t state = -1;
  if (v.type == VarType::kReal) {
    for (std::size_t st = 0; st < md.states.size(); ++st) {
      if (md.variables[md.states[st]].value_reference == v.value_reference)
        state = static_cast<std::ptrdiff_t>(layout.state_offset[st]);
    }
  }
  out_state_.push_back(state);
  out_deps_.push_back(std::move(deps));
  ++layout.n_out;
}

// Variables that are no outputs (locals, parameters), read like outputs
// after each step so that they can be recorded, probed and wired on: a
// user looking into a model. They declare no dependency on the inputs
// (so that looking creates no algebraic loop); read inside a task's
// loop they may lag its inputs by one evaluation.
void FmuBlock::add_observed_ports(const std::string& name, const BlockParams& params, const std::string& file,
                                  const std::vector<std::string>& names, Layout& layout) {
  const auto& md = fmu_->description();
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
    (void)port_type(name, file, *v);
    add_output_port(static_cast<std::size_t>(v - md.variables.data()), std::vector<std::size_t>{}, true, layout);
  }
}

// The groups' buffers and the typed-conversion scratch, sized here so
// that the per-step calls allocate nothing.
void FmuBlock::size_work_memory() {
  std::size_t widest = 1;
  for (auto* groups : {&in_groups_, &out_groups_}) {
    for (auto& g : *groups) {
      g.val.assign(g.n_values, 0.0);
      if (g.discrete) g.set.assign(g.n_values, 0.0);
      widest = std::max(widest, g.n_values);
    }
  }
  scratch_.assign(widest, 0);
}

// The input ports, declared once the outputs' dependencies say which
// feed through, each with the value it holds unconnected.
void FmuBlock::declare_inputs(const Layout& layout,
                              const std::vector<std::pair<std::string, std::vector<double>>>& input_starts) {
  const auto& md = fmu_->description();
  const auto& input_vars = layout.input_vars;
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
}

// Model exchange: the FMU's states are the block's; it declares events
// only when it can have some.
void FmuBlock::set_up_model_exchange() {
  const auto& md = fmu_->description();
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
}

// Co-simulation: a block of every major step whose outputs are known from
// the start (after initialisation), or the set-up fails.
void FmuBlock::set_up_co_simulation(const std::string& name, const Layout& layout) {
  set_sample_time(kEveryMajorStep);
  y_next_.assign(layout.out_values, 0.0);
  y_cur_.assign(layout.out_values, 0.0);
  dy_next_.assign(layout.deriv_values, 0.0);
  derivatives_ = fmu_->has_output_derivatives();
  // The outputs, and their derivatives, at the start (after initialisation).
  if (!read_outputs(y_next_) || !read_output_derivatives()) {
    throw BlockError("block '" + name + "' (fmu): " + fmu_->failure(), name, "file");
  }
  y_cur_ = y_next_;
  if (any_discrete_out_) set_jumps();
  if (!fmu_->description().co_simulation.can_handle_variable_step) {
    fixed_reason_ =
        "its FMU declares canHandleVariableCommunicationStepSize=\"false\" (or not at all), so every doStep must "
        "take the same step";
  }
}

}  // namespace rtcosim::tasks::fmu_detail
