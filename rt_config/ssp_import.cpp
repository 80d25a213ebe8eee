// SSP 1.0 import (docs/ssp.md): SystemStructure.ssd, its FMUs and
// parameter sets -> a task graph of fmu blocks. This file: the entry point
// and its signals, the SSD's system, components and connections; the
// parameters, the writing and the text helpers have files of their own
// (ssp_import_internal.hpp).
#include "rt_config/ssp_import.hpp"

#include <array>
#include <cmath>
#include <csignal>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>
#include <unordered_map>

#include "base/duration.hpp"
#include "base/text.hpp"
#include "rt_config/ssp_import_internal.hpp"

namespace rtcosim::config {

namespace {

// SIGTERM and SIGINT during an import. The default action would end the
// process at once and leave the unpacked archive in $TMPDIR. While an
// import runs, a signal whose action is the default is only noted here; the
// importer looks between its steps (Importer::check_stop) and unwinds, its
// destructors remove what it unpacked, and import_ssp then raises the
// signal again under the default action. A process that handles or ignores
// the signal keeps its own way of doing so.
volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void note_stop_signal(int sig) { g_stop_signal = sig; }

struct Interrupted {};  // not a std::exception: nothing on the way may take it for an error

class StopSignals {
 public:
  StopSignals() {
    const std::lock_guard lock(mutex_);
    if (users_++ > 0) return;  // imports in several threads share one installation
    g_stop_signal = 0;
    for (std::size_t i = 0; i < kSignals.size(); ++i) {
      struct sigaction old {};
      installed_[i] = false;
      if (sigaction(kSignals[i], nullptr, &old) != 0) continue;
      if ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL) continue;
      struct sigaction note {};
      note.sa_handler = note_stop_signal;
      sigemptyset(&note.sa_mask);
      note.sa_flags = SA_RESTART;  // the unpacking's reads and writes go on undisturbed
      installed_[i] = sigaction(kSignals[i], &note, nullptr) == 0;
    }
  }
  ~StopSignals() {
    const std::lock_guard lock(mutex_);
    if (--users_ > 0) return;
    for (std::size_t i = 0; i < kSignals.size(); ++i) {
      if (!installed_[i]) continue;
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      sigemptyset(&dfl.sa_mask);
      sigaction(kSignals[i], &dfl, nullptr);
    }
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  static constexpr std::array<int, 2> kSignals = {SIGTERM, SIGINT};
  static inline std::mutex mutex_;
  static inline int users_ = 0;
  static inline std::array<bool, 2> installed_ = {false, false};
};

}  // namespace

namespace ssp_detail {

SspImport Importer::run() {
  std::string why;
  if (!base::parse_duration(opt_.period, &why) || *base::parse_duration(opt_.period) <= 0.0)
    throw SspError("--period '" + opt_.period + "': " + (why.empty() ? "must be positive" : why));
  unpack();
  check_stop();
  ssd_.label = ssp_ + "/SystemStructure.ssd";
  read_xml(ssd_, fs::path(dir_) / "SystemStructure.ssd", opt_.limits);
  check_stop();
  const auto root = ssd_.doc.document_element();
  if (local(root.name()) != "SystemStructureDescription")
    ssd_.fail(root,
              "the root element is <" + std::string(root.name()) + "> — expected <ssd:SystemStructureDescription>");
  const std::string version = root.attribute("version").value();
  if (!version.starts_with("1.")) {
    ssd_.fail(root, "SSP version '" + version + "' is not supported — rtcosim imports SSP 1.0 (version=\"1.0\")");
  }
  name_ = root.attribute("name").value();
  if (!name_.empty()) check_name(ssd_, root, "the SSD", name_);
  pugi::xml_node system;
  for (auto c : root.children()) {
    const auto n = local(c.name());
    if (n == "System") {
      if (system) ssd_.fail(c, "a second <System> — an SSD has one root system");
      system = c;
    } else if (n == "Units") {
      read_units(c);
    } else if (n == "DefaultExperiment") {
      read_experiment(c);
    }
  }
  if (!system) ssd_.fail(root, "no <ssd:System> — the SSD describes no system");
  if (name_.empty()) {
    name_ = system.attribute("name").value();
    if (!name_.empty()) check_name(ssd_, system, "the system", name_);
  }
  read_system(system);
  return write();
}

// Between steps: a SIGTERM or SIGINT noted meanwhile stops the import
// (StopSignals).
void Importer::check_stop() {
  if (g_stop_signal != 0) throw Interrupted{};
}

void Importer::unpack() {
  try {
    archive_ = std::make_unique<fmu::ExtractedArchive>(ssp_);
  } catch (const fmu::FmuError& e) {
    // The archive helper speaks of FMUs; the rules are the same for an SSP.
    std::string m = e.what();
    for (const auto& [from, to] :
         std::vector<std::pair<std::string, std::string>>{{"as an FMU", "as an SSP"},
                                                          {"the FMU's directory", "the SSP's directory"},
                                                          {"an FMU may hold", "an SSP may hold"}}) {
      if (const auto p = m.find(from); p != std::string::npos) m.replace(p, from.size(), to);
    }
    throw SspError(m);
  }
  dir_ = archive_->directory();
  if (!plain_file_inside(dir_, fs::path(dir_) / "SystemStructure.ssd"))
    throw SspError(ssp_ + ": the archive has no SystemStructure.ssd at its root — not an SSP");
}

void Importer::read_units(const pugi::xml_node& units) {
  for (auto u : units.children()) {
    if (local(u.name()) != "Unit") continue;
    UnitDef d;
    for (auto b : u.children()) {
      if (local(b.name()) != "BaseUnit") continue;
      const char* keys[] = {"kg", "m", "s", "A", "K", "mol", "cd", "rad"};
      for (std::size_t i = 0; i < 8; ++i) d.exponents[i] = b.attribute(keys[i]).as_int(0);
      d.factor = b.attribute("factor").as_double(1.0);
      d.offset = b.attribute("offset").as_double(0.0);
    }
    units_[u.attribute("name").value()] = d;
  }
}

void Importer::read_experiment(const pugi::xml_node& e) {
  const double start = e.attribute("startTime").as_double(0.0);
  if (e.attribute("stopTime")) {
    const double stop = e.attribute("stopTime").as_double(0.0);
    if (!std::isfinite(stop) || !std::isfinite(start) || stop <= start)
      ssd_.fail(e, "DefaultExperiment stopTime must be a number after startTime");
    duration_ = stop - start;
  }
  if (start != 0.0) {
    warnings_.push_back(ssd_.at(e) + ": DefaultExperiment startTime " + number_text(start) +
                        " s ignored — rtcosim's simulation time starts at 0 (duration: stopTime - startTime)");
  }
}

// Units are the same when their names are, or when <ssd:Units> defines
// both with the same base units, factor and offset.
bool Importer::same_unit(const std::string& a, const std::string& b) const {
  if (a.empty() || b.empty() || a == b) return true;
  const auto ia = units_.find(a), ib = units_.find(b);
  return ia != units_.end() && ib != units_.end() && ia->second == ib->second;
}

void Importer::check_name(const XmlFile& f, const pugi::xml_node& n, const std::string& what, const std::string& name) {
  if (name.empty()) f.fail(n, what + " has no name");
  if (name.size() > opt_.limits.max_name_bytes) {
    f.fail(n, what + " name of " + std::to_string(name.size()) + " bytes — more than the " +
                  std::to_string(opt_.limits.max_name_bytes) + " allowed");
  }
  check_utf8(f, n, what + " name", name);
}

// What reaches the graph must read back as it was: the graph is UTF-8
// text, and yaml_quote can keep a stray byte in its place but not make
// it read back the same.
void Importer::check_utf8(const XmlFile& f, const pugi::xml_node& n, const std::string& what, std::string_view text) {
  if (const std::size_t at = not_utf8_at(text))
    f.fail(n, what + " is not valid UTF-8 (byte " + std::to_string(at) + ") — refused");
}

std::vector<Connector> Importer::read_connectors(const pugi::xml_node& connectors, const std::string& owner) {
  std::vector<Connector> out;
  std::set<std::string> seen;
  for (auto c : connectors.children()) {
    if (local(c.name()) != "Connector") continue;
    check_stop();
    if (++connector_count_ > opt_.limits.max_connectors) {
      ssd_.fail(c, "more than " + std::to_string(opt_.limits.max_connectors) + " connectors — refused");
    }
    Connector k;
    k.name = c.attribute("name").value();
    check_name(ssd_, c, "a connector of " + owner, k.name);
    if (!seen.insert(k.name).second) ssd_.fail(c, owner + " declares connector '" + k.name + "' twice");
    k.kind = c.attribute("kind").value();
    k.line = ssd_.line(c);
    static const std::set<std::string> kinds = {"input", "output", "parameter", "calculatedParameter", "inout"};
    if (!kinds.count(k.kind)) {
      ssd_.fail(c, "connector '" + k.name + "' of " + owner + " has kind '" + k.kind +
                       "' — expected input, output, parameter, calculatedParameter or inout");
    }
    for (auto t : c.children()) {
      const SspType type = type_of(local(t.name()));
      if (type == SspType::kNone) continue;  // geometry, annotations
      k.type = type;
      k.unit = t.attribute("unit").value();
    }
    out.push_back(std::move(k));
  }
  return out;
}

void Importer::read_system(const pugi::xml_node& system) {
  std::vector<pugi::xml_node> system_bindings, connections;
  for (auto c : system.children()) {
    const auto n = local(c.name());
    if (n == "Connectors") {
      system_connectors_ = read_connectors(c, "the system");
      system_connector_index_.clear();
      for (std::size_t i = 0; i < system_connectors_.size(); ++i)
        system_connector_index_.emplace(system_connectors_[i].name, i);
    } else if (n == "ParameterBindings") {
      for (auto b : c.children())
        if (local(b.name()) == "ParameterBinding") system_bindings.push_back(b);
    } else if (n == "Elements") {
      for (auto e : c.children()) read_element(e);
    } else if (n == "Connections") {
      for (auto k : c.children()) {
        if (local(k.name()) != "Connection") continue;
        if (connections.size() >= opt_.limits.max_connections) {
          ssd_.fail(k, "more than " + std::to_string(opt_.limits.max_connections) + " connections — refused");
        }
        connections.push_back(k);
      }
    } else if (n == "SignalDictionaries") {
      if (c.first_child())
        ssd_.fail(c, "signal dictionaries (<ssd:SignalDictionaries>) are not supported by rtcosim's import");
    }
  }
  if (components_.empty())
    ssd_.fail(system, "system '" + std::string(system.attribute("name").value()) + "' has no components");
  // Parameters: the components' own bindings first, the system's after
  // (a higher level takes precedence; a later binding over an earlier).
  for (auto& [comp, binding] : component_bindings_) apply_binding(binding, comp);
  for (const auto& b : system_bindings) apply_binding(b, std::nullopt);
  for (const auto& k : connections) {
    check_stop();
    read_connection(k);
  }
}

void Importer::read_element(const pugi::xml_node& e) {
  const auto n = local(e.name());
  if (n == "System") {
    ssd_.fail(e, "nested system '" + std::string(e.attribute("name").value()) +
                     "' — rtcosim imports one flat system of components (nested systems are not supported)");
  }
  if (n == "SignalDictionaryReference") {
    ssd_.fail(e, "signal dictionary reference '" + std::string(e.attribute("name").value()) +
                     "' — signal dictionaries are not supported by rtcosim's import");
  }
  if (n != "Component") return;
  if (components_.size() >= opt_.limits.max_components) {
    ssd_.fail(e, "more than " + std::to_string(opt_.limits.max_components) + " components — refused");
  }
  check_stop();  // each component unpacks its FMU
  Component c;
  c.name = e.attribute("name").value();
  check_name(ssd_, e, "a component", c.name);
  c.line = ssd_.line(e);
  if (component_index_.count(c.name)) ssd_.fail(e, "a second component is named '" + c.name + "'");
  const std::string type =
      e.attribute("type") ? e.attribute("type").value() : std::string("application/x-fmu-sharedlibrary");
  if (type != "application/x-fmu-sharedlibrary") {
    ssd_.fail(e, "component '" + c.name + "' has type '" + type +
                     "' — only FMUs (application/x-fmu-sharedlibrary) are supported; referenced SSDs and SSPs are not");
  }
  const std::string impl = e.attribute("implementation").value();
  if (impl == "ModelExchange") {
    c.interface = "model_exchange";
  } else if (impl == "CoSimulation") {
    c.interface = "co_simulation";
  } else if (impl == "ScheduledExecution") {
    ssd_.fail(e, "component '" + c.name + "' asks for implementation ScheduledExecution — not supported by rtcosim");
  } else if (!impl.empty() && impl != "any") {
    ssd_.fail(e, "component '" + c.name + "' has implementation '" + impl +
                     "' — expected any, ModelExchange or CoSimulation");
  }
  const std::string source = e.attribute("source").value();
  check_name(ssd_, e, "component '" + c.name + "' source", source);
  std::string why;
  const auto path = archive_path(source, &why);
  if (!path) ssd_.fail(e, "component '" + c.name + "': source '" + source + "' " + why);
  c.source = *path;
  c.md = description_of(e, c);
  c.variables = variable_indexes_.at(c.source);
  for (auto k : e.children()) {
    const auto kn = local(k.name());
    if (kn == "Connectors") {
      c.connectors = read_connectors(k, "component '" + c.name + "'");
    } else if (kn == "ParameterBindings") {
      for (auto b : k.children())
        if (local(b.name()) == "ParameterBinding") component_bindings_.emplace_back(components_.size(), b);
    }
  }
  for (std::size_t i = 0; i < c.connectors.size(); ++i) c.connector_index.emplace(c.connectors[i].name, i);
  for (const auto& k : c.connectors) check_connector(c, k);
  // The block's (and task's) name: unique, from the component's.
  std::string b = block_name(c.name);
  for (int i = 2; block_names_.count(b); ++i) b = block_name(c.name) + "_" + std::to_string(i);
  block_names_.insert(b);
  c.block = b;
  component_index_.emplace(c.name, components_.size());
  components_.push_back(std::move(c));
}

// The FMU's modelDescription.xml (unpacked with the same limits and
// refusals as any FMU; nothing of it is loaded or run).
std::shared_ptr<const fmu::ModelDescription> Importer::description_of(const pugi::xml_node& e, const Component& c) {
  if (auto it = descriptions_.find(c.source); it != descriptions_.end()) return it->second;
  const fs::path p = fs::path(dir_) / c.source;
  if (!plain_file_inside(dir_, p)) {
    ssd_.fail(e, "component '" + c.name + "': source '" + c.source + "' is not a file in the archive");
  }
  try {
    fmu::ExtractedArchive fmu_files(p.string());
    XmlFile md_file;
    md_file.label = ssp_ + "/" + c.source + "/modelDescription.xml";
    const fs::path md_path = fs::path(fmu_files.directory()) / "modelDescription.xml";
    std::error_code ec;
    if (!fs::is_regular_file(fs::symlink_status(md_path, ec))) {
      ssd_.fail(e, "component '" + c.name + "': " + c.source + " has no modelDescription.xml at its root — not an FMU");
    }
    const auto size = fs::file_size(md_path, ec);
    if (ec || size > opt_.limits.max_xml_bytes) {
      ssd_.fail(e, "component '" + c.name + "': " + c.source + "'s modelDescription.xml is larger than " +
                       std::to_string(opt_.limits.max_xml_bytes) + " bytes — refused");
    }
    std::ifstream in(md_path, std::ios::binary);
    const std::string xml{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    auto md = std::make_shared<const fmu::ModelDescription>(fmu::parse_model_description(xml, ssp_ + "/" + c.source));
    auto index = std::make_shared<std::unordered_map<std::string_view, const fmu::Variable*>>();
    for (const auto& v : md->variables) index->emplace(v.name, &v);
    descriptions_[c.source] = md;
    variable_indexes_[c.source] = std::move(index);
    return md;
  } catch (const fmu::FmuError& err) {
    ssd_.fail(e, "component '" + c.name + "': " + err.what());
  }
}

void Importer::no_variable(const XmlFile& f, const pugi::xml_node& n, const Component& c, const std::string& what,
                           const std::string& var) const {
  std::vector<std::string> names;
  for (const auto& v : c.md->variables) names.push_back(v.name);
  std::string m = what + " names '" + var + "', which " + c.source + " (component '" + c.name + "') does not declare";
  if (const auto guess = base::closest_match(var, names); !guess.empty()) m += " (did you mean '" + guess + "'?)";
  f.fail(n, m);
}

std::string Importer::kind_of(const fmu::Variable& v) {
  switch (v.causality) {
    case fmu::Causality::kInput:
      return "input";
    case fmu::Causality::kOutput:
      return "output";
    case fmu::Causality::kParameter:
    case fmu::Causality::kStructuralParameter:
      return "parameter";
    case fmu::Causality::kCalculatedParameter:
      return "calculatedParameter";
    default:
      return fmu::causality_name(v.causality);
  }
}

// A component's connector against its FMU: the variable exists, kind
// and causality agree, type and unit agree.
void Importer::check_connector(const Component& c, const Connector& k) {
  const std::string at = ssd_.label + ":" + std::to_string(k.line) + ": ";
  const fmu::Variable* v = c.variable(k.name);
  if (!v) {
    std::vector<std::string> names;
    for (const auto& var : c.md->variables) names.push_back(var.name);
    std::string m =
        at + "connector '" + k.name + "' of component '" + c.name + "': " + c.source + " has no variable of that name";
    if (const auto guess = base::closest_match(k.name, names); !guess.empty()) m += " (did you mean '" + guess + "'?)";
    throw SspError(m);
  }
  if (k.kind == "inout") {
    throw SspError(at + "connector '" + k.name + "' of component '" + c.name +
                   "' has kind inout — FMU variables are inputs or outputs (inout is not supported)");
  }
  if (kind_of(*v) != k.kind) {
    throw SspError(at + "connector '" + k.name + "' of component '" + c.name + "' is declared " + k.kind + ", but " +
                   c.source + " declares '" + k.name + "' as " + fmu::causality_name(v->causality));
  }
  if (k.type != SspType::kNone && type_of(*v) != k.type) {
    throw SspError(at + "connector '" + k.name + "' of component '" + c.name + "' is declared " + type_name(k.type) +
                   ", but " + c.source + " declares '" + k.name + "' as " + v->type_name);
  }
  if (!same_unit(k.unit, v->unit)) {
    throw SspError(at + "connector '" + k.name + "' of component '" + c.name + "' has unit '" + k.unit + "', but " +
                   c.source + " gives '" + k.name + "' unit '" + v->unit + "'");
  }
}

// A connector of a component as the SSD declares it, or, when it does
// not, as the FMU's variable of that name.
Connector Importer::endpoint_connector(const Component& c, const std::string& name, const pugi::xml_node& k) const {
  if (const Connector* declared = c.connector(name)) {
    Connector out = *declared;
    if (out.type == SspType::kNone) out.type = type_of(*c.variable(name));
    if (out.unit.empty()) out.unit = c.variable(name)->unit;
    return out;
  }
  const fmu::Variable* v = c.variable(name);
  if (!v) no_variable(ssd_, k, c, "the connection", name);
  return Connector{name, kind_of(*v), type_of(*v), v->unit, ssd_.line(k)};
}

void Importer::read_connection(const pugi::xml_node& k) {
  refuse_transformations(k);
  const ConnectionEnd a = connection_end(k, "startElement", "startConnector");
  const ConnectionEnd b = connection_end(k, "endElement", "endConnector");
  // Data flows from an element's output (or a system's input) to an
  // element's input (or a system's output); start and end say nothing
  // about it.
  const bool a_to_b = connection_runs_a_to_b(k, a, b);
  const ConnectionEnd& from = a_to_b ? a : b;
  const ConnectionEnd& to = a_to_b ? b : a;
  check_connection_values(k, from, to);
  add_connection(k, from, to);
}

// Refused first, before the ends: a transformation would change what the
// wire carries, and rtcosim's wires carry values unchanged.
void Importer::refuse_transformations(const pugi::xml_node& k) const {
  for (auto t : k.children()) {
    const auto n = local(t.name());
    if (n.ends_with("Transformation")) {
      ssd_.fail(t, "connection transformations (<ssc:" + std::string(n) +
                       ">) are not supported — rtcosim's wires carry values unchanged");
    }
  }
}

// One end, resolved to the system's connector or a component's, so that
// both ends are checked alike whichever way the data flows.
ConnectionEnd Importer::connection_end(const pugi::xml_node& k, const char* element_attr,
                                       const char* connector_attr) const {
  ConnectionEnd end;
  const std::string element = k.attribute(element_attr).value();
  const std::string connector = k.attribute(connector_attr).value();
  if (connector.empty()) ssd_.fail(k, std::string("the connection has no ") + connector_attr);
  // A connector the component does not declare is taken from its FMU
  // and written into the graph as named here.
  check_utf8(ssd_, k, std::string("the connection's ") + connector_attr, connector);
  if (!k.attribute(element_attr)) {
    const auto sc = system_connector_index_.find(connector);
    if (sc == system_connector_index_.end())
      ssd_.fail(k, "the connection names the system's connector '" + connector + "', which it does not declare");
    end.conn = system_connectors_[sc->second];
    end.text = "the system's connector '" + connector + "'";
    return end;
  }
  if (const auto it = component_index_.find(element); it != component_index_.end()) end.comp = &components_[it->second];
  if (!end.comp) {
    std::vector<std::string> names;
    for (const auto& c : components_) names.push_back(c.name);
    std::string m = "the connection names element '" + element + "', which the system does not contain";
    if (const auto guess = base::closest_match(element, names); !guess.empty()) m += " (did you mean '" + guess + "'?)";
    ssd_.fail(k, m);
  }
  end.conn = endpoint_connector(*end.comp, connector, k);
  end.text = element + "." + connector;
  return end;
}

// Which way the data flows, once both ends are known to carry signals:
// true from a to b, false from b to a.
bool Importer::connection_runs_a_to_b(const pugi::xml_node& k, const ConnectionEnd& a, const ConnectionEnd& b) const {
  auto is_source = [](const ConnectionEnd& e) { return e.comp ? e.conn.kind == "output" : e.conn.kind == "input"; };
  auto is_sink = [](const ConnectionEnd& e) { return e.comp ? e.conn.kind == "input" : e.conn.kind == "output"; };
  for (const ConnectionEnd* e : {&a, &b}) {
    if (e->conn.kind == "parameter" || e->conn.kind == "calculatedParameter") {
      ssd_.fail(k, "the connection ends at " + e->text + ", a " + e->conn.kind +
                       " — connections of parameters are not supported (give start values in a parameter set)");
    }
    if (e->conn.kind == "inout")
      ssd_.fail(k, "the connection ends at " + e->text + ", an inout connector — not supported");
  }
  if (!(is_source(a) && is_sink(b)) && !(is_source(b) && is_sink(a))) {
    ssd_.fail(k, "the connection joins " + a.text + " (" + a.conn.kind + ") and " + b.text + " (" + b.conn.kind +
                     ") — a connection goes from an output to an input");
  }
  return is_source(a) && is_sink(b);
}

// A wire hands a number over unchanged: both ends must hold the same
// numeric type in the same unit.
void Importer::check_connection_values(const pugi::xml_node& k, const ConnectionEnd& from,
                                       const ConnectionEnd& to) const {
  if (from.conn.type != SspType::kNone && to.conn.type != SspType::kNone && from.conn.type != to.conn.type) {
    ssd_.fail(k, "the connection from " + from.text + " (" + type_name(from.conn.type) + ") to " + to.text + " (" +
                     type_name(to.conn.type) + ") joins different types");
  }
  for (const ConnectionEnd* e : {&from, &to}) {
    if (e->conn.type == SspType::kString || e->conn.type == SspType::kBinary) {
      ssd_.fail(k, "the connection carries " + std::string(type_name(e->conn.type)) + " (" + e->text +
                       ") — rtcosim's wires carry numbers (Real, Integer, Boolean, Enumeration)");
    }
  }
  if (!same_unit(from.conn.unit, to.conn.unit)) {
    ssd_.fail(k, "the connection from " + from.text + " (unit '" + from.conn.unit + "') to " + to.text + " (unit '" +
                     to.conn.unit + "') joins different units — rtcosim converts no units");
  }
}

// What the checked connection becomes in the graph: a wire, or, for a
// system output, a recorded signal (the system is closed: nothing drives
// its inputs).
void Importer::add_connection(const pugi::xml_node& k, const ConnectionEnd& from, const ConnectionEnd& to) {
  if (!from.comp) {
    ssd_.fail(k, "the connection is driven by the system's input connector '" + from.conn.name +
                     "' — rtcosim imports a closed system: nothing outside drives its inputs");
  }
  if (!to.comp) {  // a system output: recorded
    const std::string signal = from.comp->block + "." + from.conn.name;
    if (extra_record_set_.insert(signal).second) extra_records_.push_back(signal);
    system_outputs_.push_back("# system output " + yaml_quote(to.conn.name) + " = " + yaml_quote(signal));
    return;
  }
  const std::string key = to.comp->block + "." + to.conn.name;
  if (auto it = driven_.find(key); it != driven_.end()) {
    ssd_.fail(k, to.text + " is driven by a second connection (the first is at line " + std::to_string(it->second) +
                     ") — an input has one source");
  }
  driven_[key] = ssd_.line(k);
  wires_.push_back(Wire{from.comp->block, from.conn.name, to.comp->block, to.conn.name, ssd_.line(k)});
}

}  // namespace ssp_detail

SspImport import_ssp(const std::string& ssp_path, const SspImportOptions& options) {
  std::optional<SspImport> out;
  std::exception_ptr error;
  int stop = 0;
  {
    const StopSignals signals;
    try {
      out = ssp_detail::Importer(ssp_path, options).run();
    } catch (const Interrupted&) {
      // The importer is gone, and with it the unpacked archive.
    } catch (...) {
      error = std::current_exception();  // a signal noted before it still ends the process
    }
    stop = g_stop_signal;
  }
  if (stop != 0) {
    // Under the default action again: the process ends as the signal asked,
    // also when it came after the last step (the graph is not written).
    std::raise(stop);
    throw SspError(ssp_path + ": the import was stopped by " + std::string(strsignal(stop)));
  }
  if (error) std::rethrow_exception(error);
  return std::move(*out);
}

}  // namespace rtcosim::config
