#include "tools/rtcosim/fmu_command.hpp"

#include <iostream>
#include <sstream>

#include "session/report/text_table.hpp"

namespace rtcosim::tools {

namespace {

constexpr const char* kFmuUsage = R"(usage: rtcosim fmu info FILE

Prints what an FMU (FMI 2.0 or 3.0) declares and whether this platform can
run it: version, GUID or instantiation token, interfaces and capabilities,
the platform binaries it carries, every variable (causality, variability,
type, unit, start), which are ports (every numeric input and output:
Real/Float, Integer/Int/UInt, Boolean, Enumeration, carried as doubles; an
FMI 3.0 array is a port as wide as its elements) and their types and
widths, the continuous states and event indicators.
)";

const char* yes(bool b) { return b ? "yes" : "no"; }

// One interface, present or not: a binary that does not load is said next
// to it, since that is what decides whether the FMU runs here.
void write_interface(std::ostringstream& out, const char* label, const tasks::fmu::Interface& in,
                     const std::string& problem, bool cs) {
  out << "  " << label;
  if (!in.present) {
    out << "no\n";
    return;
  }
  out << "yes, modelIdentifier " << in.model_identifier << '\n';
  out << "      binary " << (problem.empty() ? "loads" : "DOES NOT LOAD: " + problem) << '\n';
  if (cs) {
    out << "      variable communication step   " << yes(in.can_handle_variable_step) << '\n';
    out << "      max output derivative order   " << in.max_output_derivative_order << '\n';
  }
  out << "      get/set FMU state             " << yes(in.can_get_set_state) << '\n';
  out << "      serialize FMU state           " << yes(in.can_serialize_state) << '\n';
  out << "      directional derivatives       " << yes(in.provides_directional_derivatives) << '\n';
  if (in.needs_execution_tool) out << "      needs its execution tool (refused by rtcosim)\n";
}

// Arrays count their elements (as declared); one whose size cannot be
// known counts none rather than failing the whole listing.
void write_states(std::ostringstream& out, const tasks::fmu::ModelDescription& md) {
  using namespace tasks::fmu;
  std::uint64_t states = 0;
  for (const std::size_t st : md.states) {
    try {
      states += element_count(md, md.variables[st]);
    } catch (const FmuError&) {
    }
  }
  out << "  continuous states " << states;
  for (std::size_t i = 0; i < md.states.size(); ++i)
    out << (i ? ", " : " (") << md.variables[md.states[i]].name << dimensions_text(md, md.variables[md.states[i]]);
  out << (md.states.empty() ? "" : ")") << '\n';
}

// Ports: the numeric inputs and outputs, carried as doubles; an array is
// a port as wide as its elements (the sizes as declared: a structural
// parameter's start value).
void write_ports(std::ostringstream& out, const tasks::fmu::ModelDescription& md) {
  using namespace tasks::fmu;
  std::string inputs, outputs;
  for (const auto& v : md.variables) {
    if (!is_port_type(v.type)) continue;
    std::string item = v.name + " (" + v.type_name + dimensions_text(md, v) + ")";
    if (v.array) {
      try {
        item += " width " + std::to_string(element_count(md, v));
      } catch (const FmuError& e) {
        item += " width unknown: " + std::string(e.what());
      }
    }
    if (v.causality == Causality::kInput) inputs += (inputs.empty() ? "" : ", ") + item;
    if (v.causality == Causality::kOutput) outputs += (outputs.empty() ? "" : ", ") + item;
  }
  out << "  input ports       " << (inputs.empty() ? "none" : inputs) << '\n';
  out << "  output ports      " << (outputs.empty() ? "none" : outputs) << '\n';
}

// How a port is named in a graph: structured names ('Input.value',
// 'x[1].y', 'der(x)') are split from the block at the first dot; YAML's
// flow collections need the ones with [ ] { } , or a space in quotes.
void write_naming(std::ostringstream& out, const tasks::fmu::ModelDescription& md) {
  using namespace tasks::fmu;
  std::string example, quoted;
  for (const auto& v : md.variables) {
    if (!is_port_type(v.type) || (v.causality != Causality::kInput && v.causality != Causality::kOutput)) continue;
    if (example.empty()) example = v.name;
    if (quoted.empty() && v.name.find_first_of("[]{},#: '") != std::string::npos) quoted = v.name;
  }
  if (!example.empty()) {
    out << "  naming            BLOCK.<name> in wires, record and probes, split at the first dot: e.g. fmu." << example
        << '\n';
    if (!quoted.empty())
      out << "                    in a YAML {...} or [...] quote a name with [ ] { } , # : ' or a space: \"fmu."
          << quoted << "\"\n";
  }
}

// Every variable, ports or not: an input or output that is no port says why,
// so a wire to it can be understood before the graph refuses it.
void write_variables(std::ostringstream& out, const tasks::fmu::ModelDescription& md) {
  using namespace tasks::fmu;
  session::TextTable table({{"name", session::Align::kLeft},
                            {"vr"},
                            {"causality", session::Align::kLeft},
                            {"variability", session::Align::kLeft},
                            {"type", session::Align::kLeft},
                            {"unit", session::Align::kLeft},
                            {"start"},
                            {"port", session::Align::kLeft}});
  for (const auto& v : md.variables) {
    std::string port = "-";
    if (is_port_type(v.type)) {
      if (v.causality == Causality::kInput) port = "input";
      if (v.causality == Causality::kOutput) port = "output";
    } else if (v.causality == Causality::kInput || v.causality == Causality::kOutput) {
      port = v.type == VarType::kString ? "no (String)" : "no (" + v.type_name + (v.array ? " array" : "") + ")";
    }
    table.add_row({v.name, std::to_string(v.value_reference), causality_name(v.causality),
                   variability_name(v.variability), v.type_name + dimensions_text(md, v), v.unit.empty() ? "-" : v.unit,
                   v.start.empty() ? "-" : v.start, port});
  }
  out << table.render("    ");
}

}  // namespace

std::string format_fmu_info(const std::string& path, const tasks::fmu::FmuInfo& info) {
  using namespace tasks::fmu;
  const ModelDescription& md = info.description;
  std::ostringstream out;
  out << path << '\n';
  out << "  FMI version       " << md.fmi_version << '\n';
  out << "  model name        " << md.model_name << '\n';
  out << "  " << (md.fmi_major == 2 ? "GUID              " : "token             ") << md.token << '\n';
  if (!md.generation_tool.empty()) out << "  generated by      " << md.generation_tool << '\n';
  if (!md.description.empty()) out << "  description       " << md.description << '\n';
  std::string platforms;
  for (const auto& p : info.platforms) platforms += (platforms.empty() ? "" : ", ") + p;
  out << "  platforms         " << (platforms.empty() ? "none" : platforms) << '\n';
  write_interface(out, "model exchange    ", md.model_exchange, info.me_binary_problem, false);
  write_interface(out, "co-simulation     ", md.co_simulation, info.cs_binary_problem, true);
  write_states(out, md);
  out << "  event indicators  " << md.event_indicators << '\n';
  if (md.default_step > 0.0) out << "  default step      " << md.default_step << " s\n";
  out << "  variables         " << md.variables.size() << '\n';
  write_ports(out, md);
  write_naming(out, md);
  write_variables(out, md);
  if (!md.unsupported.empty()) {
    out << "  not supported by rtcosim (never a port):\n";
    for (const auto& u : md.unsupported) out << "    " << u << '\n';
  }
  return out.str();
}

int run_fmu_command(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << kFmuUsage;
    return args.empty() ? 2 : 0;
  }
  if (args[0] != "info" || args.size() != 2) {
    std::cerr << "rtcosim fmu: expected 'info FILE'\n" << kFmuUsage;
    return 2;
  }
  try {
    const auto info = tasks::fmu::inspect(args[1]);
    std::cout << format_fmu_info(args[1], info);
    return info.me_binary_problem.empty() && info.cs_binary_problem.empty() ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "rtcosim fmu info: " << e.what() << '\n';
    return 1;
  }
}

}  // namespace rtcosim::tools
