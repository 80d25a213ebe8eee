#include "tasks/fmu/model_description.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <limits>
#include <map>

#include <pugixml.hpp>

namespace rtcosim::tasks::fmu {

namespace {

// An FMU is hostile input: a description with more than this many variables
// is refused rather than sized from.
constexpr std::size_t kMaxVariables = 100000;

bool attr_flag(const pugi::xml_node& n, const char* name) {
  const char* v = n.attribute(name).value();
  return std::strcmp(v, "true") == 0 || std::strcmp(v, "1") == 0;
}

std::optional<std::uint64_t> parse_unsigned(const char* text) {
  std::uint64_t v = 0;
  const char* end = text + std::strlen(text);
  const auto [p, ec] = std::from_chars(text, end, v);
  if (ec != std::errc() || p != end || p == text) return std::nullopt;
  return v;
}

std::optional<Causality> parse_causality(const std::string& s) {
  if (s.empty() || s == "local") return Causality::kLocal;
  if (s == "parameter") return Causality::kParameter;
  if (s == "calculatedParameter") return Causality::kCalculatedParameter;
  if (s == "input") return Causality::kInput;
  if (s == "output") return Causality::kOutput;
  if (s == "independent") return Causality::kIndependent;
  if (s == "structuralParameter") return Causality::kStructuralParameter;
  return std::nullopt;
}

std::optional<Variability> parse_variability(const std::string& s, bool real) {
  if (s.empty()) return real ? Variability::kContinuous : Variability::kDiscrete;
  if (s == "constant") return Variability::kConstant;
  if (s == "fixed") return Variability::kFixed;
  if (s == "tunable") return Variability::kTunable;
  if (s == "discrete") return Variability::kDiscrete;
  if (s == "continuous") return Variability::kContinuous;
  return std::nullopt;
}

VarType type_of(const std::string& element) {
  if (element == "Real" || element == "Float64") return VarType::kReal;
  if (element == "Float32") return VarType::kFloat32;
  if (element == "Int8") return VarType::kInt8;
  if (element == "UInt8") return VarType::kUInt8;
  if (element == "Int16") return VarType::kInt16;
  if (element == "UInt16") return VarType::kUInt16;
  if (element == "Integer" || element == "Int32") return VarType::kInteger;
  if (element == "UInt32") return VarType::kUInt32;
  if (element == "Int64") return VarType::kInt64;
  if (element == "UInt64") return VarType::kUInt64;
  if (element == "Boolean") return VarType::kBoolean;
  if (element == "Enumeration") return VarType::kEnumeration;
  if (element == "String") return VarType::kString;
  return VarType::kOther;
}

Interface read_interface(const pugi::xml_node& n, int major) {
  Interface i;
  if (!n) return i;
  i.present = true;
  i.model_identifier = n.attribute("modelIdentifier").value();
  i.can_handle_variable_step = attr_flag(n, "canHandleVariableCommunicationStepSize");
  i.can_get_set_state = attr_flag(n, major == 2 ? "canGetAndSetFMUstate" : "canGetAndSetFMUState");
  i.can_serialize_state = attr_flag(n, major == 2 ? "canSerializeFMUstate" : "canSerializeFMUState");
  i.provides_directional_derivatives =
      attr_flag(n, major == 2 ? "providesDirectionalDerivative" : "providesDirectionalDerivatives");
  i.needs_execution_tool = attr_flag(n, "needsExecutionTool");
  i.completed_integrator_step_not_needed = attr_flag(n, "completedIntegratorStepNotNeeded");
  i.can_be_instantiated_only_once =
      attr_flag(n, major == 2 ? "canBeInstantiatedOnlyOncePerProcess" : "canBeInstantiatedOnlyOncePerProcess");
  if (const auto v = parse_unsigned(n.attribute("maxOutputDerivativeOrder").value())) {
    i.max_output_derivative_order = static_cast<int>(std::min<std::uint64_t>(*v, 16));
  }
  return i;
}

// A model identifier names a file in binaries/: a C identifier, nothing
// that could climb out of the directory.
bool valid_identifier(const std::string& id) {
  if (id.empty() || id.size() > 200) return false;
  for (char c : id) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return !std::isdigit(static_cast<unsigned char>(id[0]));
}

}  // namespace

bool is_port_type(VarType t) noexcept { return t != VarType::kString && t != VarType::kOther; }

bool is_integer_type(VarType t) noexcept { return is_port_type(t) && t != VarType::kReal && t != VarType::kFloat32; }

bool is_64_bit(VarType t, int fmi_major) noexcept {
  return t == VarType::kInt64 || t == VarType::kUInt64 || (t == VarType::kEnumeration && fmi_major == 3);
}

const Variable* ModelDescription::find(const std::string& name) const noexcept {
  for (const auto& v : variables) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

std::vector<std::string> start_items(const std::string& start) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < start.size()) {
    while (pos < start.size() && std::isspace(static_cast<unsigned char>(start[pos]))) ++pos;
    std::size_t end = pos;
    while (end < start.size() && !std::isspace(static_cast<unsigned char>(start[end]))) ++end;
    if (end > pos) out.push_back(start.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

namespace {

// The size of one dimension, and the name of the variable giving it (empty: a fixed size).
std::pair<std::uint64_t, std::string> dimension_size(
    const ModelDescription& md, const Variable& v, const Dimension& d,
    const std::vector<std::pair<std::uint32_t, std::uint64_t>>& values) {
  if (!d.value_reference) return {d.start, {}};
  const Variable* p = nullptr;
  for (const auto& x : md.variables) {
    if (x.value_reference == *d.value_reference) {
      p = &x;
      break;
    }
  }
  const std::string name = p ? p->name : "valueReference " + std::to_string(*d.value_reference);
  for (const auto& [vr, value] : values) {
    if (vr == *d.value_reference) return {value, name};
  }
  const auto declared = p ? parse_unsigned(p->start.c_str()) : std::nullopt;
  if (!declared) {
    throw FmuError("the size of array variable '" + v.name + "' is '" + name +
                   "', which declares no start value (an unsigned integer)");
  }
  return {*declared, name};
}

}  // namespace

std::uint64_t element_count(const ModelDescription& md, const Variable& v,
                            const std::vector<std::pair<std::uint32_t, std::uint64_t>>& values) {
  std::uint64_t n = 1;
  for (const Dimension& d : v.dimensions) {
    const auto [size, name] = dimension_size(md, v, d, values);
    if (size == 0) {
      throw FmuError("array variable '" + v.name + "' has a dimension of size 0" +
                     (name.empty() ? std::string() : " ('" + name + "' = 0)") +
                     " — rtcosim needs at least one element (a port has a width of 1 or more)");
    }
    if (size > kMaxArrayElements || n > kMaxArrayElements / size) {
      throw FmuError("array variable '" + v.name + "' has more than " + std::to_string(kMaxArrayElements) +
                     " elements — refused");
    }
    n *= size;
  }
  return n;
}

std::string dimensions_text(const ModelDescription& md, const Variable& v,
                            const std::vector<std::pair<std::uint32_t, std::uint64_t>>& values) {
  std::string out;
  for (const Dimension& d : v.dimensions) {
    try {
      const auto [size, name] = dimension_size(md, v, d, values);
      out += "[" + (name.empty() ? std::string() : name + "=") + std::to_string(size) + "]";
    } catch (const FmuError&) {
      out += "[?]";
    }
  }
  return out;
}

void check_total_elements(const ModelDescription& md, const std::vector<std::uint64_t>& sizes, const std::string& where,
                          const std::vector<std::pair<std::uint32_t, std::uint64_t>>& values) {
  constexpr std::uint64_t kSaturated = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < md.variables.size() && i < sizes.size(); ++i) {
    total = sizes[i] > kSaturated - total ? kSaturated : total + sizes[i];
    if (total <= kMaxTotalElements) continue;
    const Variable& v = md.variables[i];
    throw FmuError(where + ": variable '" + v.name + "' (" + v.type_name + dimensions_text(md, v, values) +
                   ") brings the elements of the FMU's variables to " + (total == kSaturated ? "more than " : "") +
                   std::to_string(total) + " in all — more than the " + std::to_string(kMaxTotalElements) +
                   " (2^22) an FMU may declare — refused");
  }
}

const char* causality_name(Causality c) noexcept {
  switch (c) {
    case Causality::kParameter:
      return "parameter";
    case Causality::kCalculatedParameter:
      return "calculatedParameter";
    case Causality::kInput:
      return "input";
    case Causality::kOutput:
      return "output";
    case Causality::kLocal:
      return "local";
    case Causality::kIndependent:
      return "independent";
    case Causality::kStructuralParameter:
      return "structuralParameter";
  }
  return "?";
}

const char* variability_name(Variability v) noexcept {
  switch (v) {
    case Variability::kConstant:
      return "constant";
    case Variability::kFixed:
      return "fixed";
    case Variability::kTunable:
      return "tunable";
    case Variability::kDiscrete:
      return "discrete";
    case Variability::kContinuous:
      return "continuous";
  }
  return "?";
}

namespace {

// The parsed document's root element, or the error that says where the
// XML is broken (a line number, not a byte offset).
pugi::xml_node load_root(pugi::xml_document& doc, const std::string& xml, const std::string& where) {
  const pugi::xml_parse_result parsed = doc.load_buffer(xml.data(), xml.size());
  if (!parsed) {
    int line = 1;
    for (std::ptrdiff_t i = 0; i < parsed.offset && i < static_cast<std::ptrdiff_t>(xml.size()); ++i) {
      if (xml[static_cast<std::size_t>(i)] == '\n') ++line;
    }
    throw FmuError(where + ": modelDescription.xml line " + std::to_string(line) + ": " + parsed.description() +
                   " — expected well-formed XML");
  }
  const pugi::xml_node root = doc.child("fmiModelDescription");
  if (!root) throw FmuError(where + ": modelDescription.xml has no <fmiModelDescription> root element");
  return root;
}

// The root's attributes and interfaces: the FMI version first, since it
// decides how everything after it is read.
void read_header(const pugi::xml_node& root, const std::string& where, ModelDescription& md) {
  md.fmi_version = root.attribute("fmiVersion").value();
  if (md.fmi_version == "2.0") {
    md.fmi_major = 2;
  } else if (md.fmi_version.rfind("3.", 0) == 0) {
    md.fmi_major = 3;
  } else {
    throw FmuError(where + ": fmiVersion '" + md.fmi_version + "' is not supported — expected \"2.0\" or \"3.x\"");
  }
  const int major = md.fmi_major;
  md.model_name = root.attribute("modelName").value();
  md.token = root.attribute(major == 2 ? "guid" : "instantiationToken").value();
  if (md.token.empty()) {
    throw FmuError(where + ": <fmiModelDescription> has no " + std::string(major == 2 ? "guid" : "instantiationToken") +
                   " — it is required");
  }
  md.description = root.attribute("description").value();
  md.generation_tool = root.attribute("generationTool").value();
  md.model_exchange = read_interface(root.child("ModelExchange"), major);
  md.co_simulation = read_interface(root.child("CoSimulation"), major);
  if (root.child("ScheduledExecution")) md.unsupported.push_back("ScheduledExecution interface");
  if (!md.model_exchange.present && !md.co_simulation.present) {
    throw FmuError(where + ": the FMU declares neither <ModelExchange> nor <CoSimulation> — rtcosim runs one of them");
  }
  for (const Interface* i : {&md.model_exchange, &md.co_simulation}) {
    if (i->present && !valid_identifier(i->model_identifier)) {
      throw FmuError(where + ": modelIdentifier '" + i->model_identifier +
                     "' is not a C identifier — it names the binary, so only letters, digits and '_' are allowed");
    }
  }
  if (const auto de = root.child("DefaultExperiment")) md.default_step = de.attribute("stepSize").as_double(0.0);
}

// What the variables refer to each other by, kept while they are read so
// that references (forward ones too) are resolved once all are known.
struct References {
  std::map<std::uint32_t, std::size_t> by_vr;  // FMI 3.0 refers to variables by value reference
  std::vector<std::string> derivative_refs;    // the 'derivative' attribute per variable, resolved below
};

// An FMI 3.0 variable's <Dimension>s, each with exactly one of a fixed
// size and a variable's value reference (checked later, once all are read).
std::vector<Dimension> read_dimensions(const pugi::xml_node& n, const std::string& name, const std::string& where) {
  std::vector<Dimension> dimensions;
  for (const pugi::xml_node d : n.children("Dimension")) {
    const pugi::xml_attribute start = d.attribute("start"), ref = d.attribute("valueReference");
    if (static_cast<bool>(start) == static_cast<bool>(ref)) {
      throw FmuError(where + ": variable '" + name + "': a <Dimension> has " + (start ? "both" : "neither") +
                     " start and valueReference — expected exactly one");
    }
    Dimension dim;
    const auto number = parse_unsigned((start ? start : ref).value());
    if (start && (!number || *number == 0)) {
      throw FmuError(where + ": variable '" + name + "': <Dimension start=\"" + start.value() +
                     "\"> — expected a positive integer");
    }
    if (ref && (!number || *number > 0xffffffffu)) {
      throw FmuError(where + ": variable '" + name + "': <Dimension valueReference=\"" + ref.value() +
                     "\"> — expected an unsigned 32-bit integer");
    }
    if (start) {
      dim.start = *number;
    } else {
      dim.value_reference = static_cast<std::uint32_t>(*number);
    }
    dimensions.push_back(dim);
  }
  return dimensions;
}

// One variable from its element `n` and its type element `typed` (FMI 2.0:
// a child; 3.0: the same), every attribute checked as it is read.
Variable read_variable(const pugi::xml_node& n, const pugi::xml_node& typed, int major, const std::string& where) {
  Variable v;
  v.name = n.attribute("name").value();
  if (v.name.empty()) throw FmuError(where + ": a variable has no name");
  v.type_name = typed.name();
  v.type = type_of(v.type_name);
  const auto vr = parse_unsigned(n.attribute("valueReference").value());
  if (!vr || *vr > 0xffffffffu) {
    throw FmuError(where + ": variable '" + v.name + "' has no valid valueReference — expected an unsigned integer");
  }
  v.value_reference = static_cast<std::uint32_t>(*vr);
  const auto c = parse_causality(n.attribute("causality").value());
  if (!c)
    throw FmuError(where + ": variable '" + v.name + "': unknown causality '" + n.attribute("causality").value() + "'");
  v.causality = *c;
  const auto va =
      parse_variability(n.attribute("variability").value(), v.type == VarType::kReal || v.type == VarType::kFloat32);
  if (!va)
    throw FmuError(where + ": variable '" + v.name + "': unknown variability '" + n.attribute("variability").value() +
                   "'");
  v.variability = *va;
  v.unit = typed.attribute("unit").value();
  if (v.unit.empty() && major == 2) v.unit = typed.attribute("declaredType").value();
  v.start = typed.attribute("start").value();
  v.min = typed.attribute("min").value();
  v.max = typed.attribute("max").value();
  v.description = n.attribute("description").value();
  if (major == 3) {
    v.dimensions = read_dimensions(n, v.name, where);
    v.array = !v.dimensions.empty();
  }
  return v;
}

// Every variable of <ModelVariables>, in order (their indices are what
// the rest refers to), bounded in number before they are stored.
References read_variables(const pugi::xml_node& root, const std::string& where, ModelDescription& md) {
  const int major = md.fmi_major;
  const pugi::xml_node vars = root.child("ModelVariables");
  if (!vars) throw FmuError(where + ": modelDescription.xml has no <ModelVariables>");
  References refs;
  for (const pugi::xml_node n : vars.children()) {
    if (n.type() != pugi::node_element) continue;
    if (md.variables.size() >= kMaxVariables) {
      throw FmuError(where + ": more than " + std::to_string(kMaxVariables) + " variables — refused");
    }
    pugi::xml_node typed = n;
    if (major == 2) {
      if (std::strcmp(n.name(), "ScalarVariable") != 0) continue;
      typed = n.first_child();
      while (typed && typed.type() != pugi::node_element) typed = typed.next_sibling();
      if (!typed)
        throw FmuError(where + ": variable '" + std::string(n.attribute("name").value()) + "' has no type element");
    }
    Variable v = read_variable(n, typed, major, where);
    if (major == 3 && (v.type_name == "Clock" || n.attribute("clocks"))) {
      v.clocked = true;
      md.unsupported.push_back("clock or clocked variable '" + v.name + "'");
    }
    refs.derivative_refs.emplace_back(typed.attribute("derivative").value());
    refs.by_vr.emplace(v.value_reference, md.variables.size());
    md.variables.push_back(std::move(v));
  }
  return refs;
}

// Resolves a reference to a variable: FMI 2.0 by 1-based index, 3.0 by value reference.
std::size_t resolve(const ModelDescription& md, const References& refs, const std::string& where, const char* text,
                    const std::string& context) {
  const auto r = parse_unsigned(text);
  if (md.fmi_major == 2) {
    if (!r || *r == 0 || *r > md.variables.size()) {
      throw FmuError(where + ": " + context + " refers to variable index '" + text + "' — expected 1.." +
                     std::to_string(md.variables.size()));
    }
    return static_cast<std::size_t>(*r - 1);
  }
  const auto it = r ? refs.by_vr.find(static_cast<std::uint32_t>(*r)) : refs.by_vr.end();
  if (it == refs.by_vr.end())
    throw FmuError(where + ": " + context + " refers to unknown valueReference '" + text + "'");
  return it->second;
}

// A dimension's size comes from a UInt64 structural parameter or constant.
void check_dimension_references(const ModelDescription& md, const References& refs, const std::string& where) {
  for (const Variable& v : md.variables) {
    for (const Dimension& d : v.dimensions) {
      if (!d.value_reference) continue;
      const auto it = refs.by_vr.find(*d.value_reference);
      if (it == refs.by_vr.end()) {
        throw FmuError(where + ": a <Dimension> of '" + v.name + "' refers to unknown valueReference '" +
                       std::to_string(*d.value_reference) + "'");
      }
      const Variable& p = md.variables[it->second];
      if (p.type_name != "UInt64" ||
          (p.causality != Causality::kStructuralParameter && p.variability != Variability::kConstant)) {
        throw FmuError(where + ": a <Dimension> of '" + v.name + "' refers to '" + p.name + "', a " +
                       variability_name(p.variability) + " " + causality_name(p.causality) + " " + p.type_name +
                       " — a dimension's size is a UInt64 structural parameter or constant");
      }
    }
  }
}

// The elements of all variables at their declared sizes, bounded before
// anything is sized from them. A size that only a structural parameter
// set by the block gives (no declared start) counts when it is set
// (FmuInstance::resolve_sizes). Saturating: dimensions whose product
// leaves 64 bits must not wrap to a small total.
void check_declared_elements(const ModelDescription& md, const References& refs, const std::string& where) {
  constexpr std::uint64_t kSaturated = std::numeric_limits<std::uint64_t>::max();
  std::vector<std::uint64_t> sizes(md.variables.size(), 1);
  for (std::size_t i = 0; i < md.variables.size(); ++i) {
    for (const Dimension& d : md.variables[i].dimensions) {
      std::optional<std::uint64_t> size = d.start;
      if (d.value_reference) size = parse_unsigned(md.variables[refs.by_vr.at(*d.value_reference)].start.c_str());
      if (!size) {
        sizes[i] = 0;
        break;
      }
      sizes[i] = *size != 0 && sizes[i] > kSaturated / *size ? kSaturated : sizes[i] * *size;
    }
  }
  check_total_elements(md, sizes, where);
}

// A <ModelStructure> element's 'dependencies', resolved; none declared
// (no attribute) is not the same as an empty list.
std::optional<std::vector<std::size_t>> read_dependencies(const ModelDescription& md, const References& refs,
                                                          const std::string& where, const pugi::xml_node& n,
                                                          const std::string& context) {
  const pugi::xml_attribute deps = n.attribute("dependencies");
  if (!deps) return std::optional<std::vector<std::size_t>>{};
  std::vector<std::size_t> out;
  std::string list = deps.value();
  std::size_t pos = 0;
  while (pos < list.size()) {
    while (pos < list.size() && std::isspace(static_cast<unsigned char>(list[pos]))) ++pos;
    std::size_t end = pos;
    while (end < list.size() && !std::isspace(static_cast<unsigned char>(list[end]))) ++end;
    if (end > pos) out.push_back(resolve(md, refs, where, list.substr(pos, end - pos).c_str(), context));
    pos = end;
  }
  return std::optional<std::vector<std::size_t>>{std::move(out)};
}

// <ModelStructure>: the outputs with their dependencies, the state
// derivatives (each naming its state), the event indicators; read after
// the variables, which they all refer to.
void read_model_structure(const pugi::xml_node& root, const References& refs, const std::string& where,
                          ModelDescription& md) {
  const int major = md.fmi_major;
  const pugi::xml_node ms = root.child("ModelStructure");
  const char* output_tag = major == 2 ? "Unknown" : "Output";
  const char* attr = major == 2 ? "index" : "valueReference";
  const pugi::xml_node outs = major == 2 ? ms.child("Outputs") : ms;
  for (const pugi::xml_node n : outs.children(output_tag)) {
    const std::size_t i = resolve(md, refs, where, n.attribute(attr).value(), "ModelStructure output");
    md.outputs.push_back(i);
    md.output_dependencies.push_back(
        read_dependencies(md, refs, where, n, "the dependencies of output '" + md.variables[i].name + "'"));
  }
  const pugi::xml_node ders = major == 2 ? ms.child("Derivatives") : ms;
  for (const pugi::xml_node n : ders.children(major == 2 ? "Unknown" : "ContinuousStateDerivative")) {
    const std::size_t d = resolve(md, refs, where, n.attribute(attr).value(), "ModelStructure derivative");
    const auto& of = md.variables[d].derivative_of;
    if (!of) {
      throw FmuError(where + ": '" + md.variables[d].name +
                     "' is listed as a state derivative but has no 'derivative' attribute");
    }
    md.derivatives.push_back(d);
    md.states.push_back(*of);
  }
  if (major == 2) {
    md.event_indicators = root.attribute("numberOfEventIndicators").as_uint(0);
  } else {
    for (const pugi::xml_node n : ms.children("EventIndicator")) {
      md.event_indicator_variables.push_back(
          resolve(md, refs, where, n.attribute("valueReference").value(), "ModelStructure event indicator"));
      ++md.event_indicators;
    }
  }
  if (md.event_indicators > kMaxVariables) throw FmuError(where + ": numberOfEventIndicators is implausible — refused");
}

// Outputs declared by causality but missing from ModelStructure still are
// outputs. Marked, not searched for: a search per variable made 10^5
// outputs 10^10 comparisons.
void add_unlisted_outputs(ModelDescription& md) {
  std::vector<bool> listed(md.variables.size(), false);
  for (const std::size_t i : md.outputs) listed[i] = true;
  for (std::size_t i = 0; i < md.variables.size(); ++i) {
    if (md.variables[i].causality != Causality::kOutput || listed[i]) continue;
    listed[i] = true;
    md.outputs.push_back(i);
    md.output_dependencies.emplace_back();
  }
}

}  // namespace

ModelDescription parse_model_description(const std::string& xml, const std::string& where) {
  pugi::xml_document doc;
  const pugi::xml_node root = load_root(doc, xml, where);
  ModelDescription md;
  read_header(root, where, md);
  const References refs = read_variables(root, where, md);
  check_dimension_references(md, refs, where);
  check_declared_elements(md, refs, where);
  for (std::size_t i = 0; i < md.variables.size(); ++i) {
    if (!refs.derivative_refs[i].empty())
      md.variables[i].derivative_of = resolve(md, refs, where, refs.derivative_refs[i].c_str(),
                                              "variable '" + md.variables[i].name + "' derivative");
  }
  read_model_structure(root, refs, where, md);
  add_unlisted_outputs(md);
  return md;
}

}  // namespace rtcosim::tasks::fmu
