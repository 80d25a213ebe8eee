// Private to the SSP importer (ssp_import*.cpp): not installed, include it from nowhere else. What the importer's
// files share: the Importer, whose members are defined one file per concern (named at each declaration), and the
// XML, UTF-8 and YAML helpers of ssp_import_text.cpp. Everything is in a named namespace, not an anonymous one,
// because the Importer's fields have these types in every file that includes this header.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <pugixml.hpp>

#include "rt_config/ssp_import.hpp"
#include "tasks/fmu/fmu_archive.hpp"
#include "tasks/fmu/model_description.hpp"

namespace rtcosim::config::ssp_detail {

namespace fs = std::filesystem;
namespace fmu = tasks::fmu;

// The local name of an element or attribute: "ssd:System" -> "System".
// Prefixes are whatever the file declares; SSP names are unique without
// them.
std::string_view local(const char* name);

// One XML file of the archive, parsed, with its lines for messages.
struct XmlFile {
  std::string label;  // "loop.ssp/SystemStructure.ssd"
  std::string text;
  LineIndex lines;  // of `text`
  pugi::xml_document doc;

  [[nodiscard]] std::size_t line(const pugi::xml_node& n) const { return lines.line_at(n.offset_debug()); }
  [[nodiscard]] std::string at(const pugi::xml_node& n) const { return label + ":" + std::to_string(line(n)); }
  [[noreturn]] void fail(const pugi::xml_node& n, const std::string& message) const {
    throw SspError(at(n) + ": " + message);
  }
};

void read_xml(XmlFile& f, const fs::path& path, const SspLimits& limits);

// A relative URI of the SSD (a component's or a parameter set's source)
// as a path inside the unpacked archive: no scheme, no authority, no
// query or fragment, no absolute path, no '..', percent-decoded.
std::optional<std::string> archive_path(const std::string& uri, std::string* why);

// A path in the unpacked archive that is a plain file under `root`: the
// unpacking refused symbolic links already; this holds the line anyway.
bool plain_file_inside(const fs::path& root, const fs::path& p);

enum class SspType { kReal, kInteger, kBoolean, kString, kEnumeration, kBinary, kNone };

const char* type_name(SspType t);
SspType type_of(std::string_view element);
// The SSP type an FMU variable has (FMI 2.0 and 3.0 type names).
SspType type_of(const fmu::Variable& v);

// A unit of <ssd:Units>: SI base-unit exponents, factor and offset.
struct UnitDef {
  std::array<int, 8> exponents{};  // kg m s A K mol cd rad
  double factor = 1.0, offset = 0.0;
  bool operator==(const UnitDef&) const = default;
};

struct Connector {
  std::string name;
  std::string kind;  // input, output, parameter, calculatedParameter, inout
  SspType type = SspType::kNone;
  std::string unit;
  std::size_t line = 0;
};

struct Component {
  std::string name;       // as in the SSD
  std::string block;      // the block's (and task's) name in the graph
  std::string source;     // path inside the archive
  std::string fmu_file;   // the file written (absolute)
  std::string interface;  // "", "model_exchange", "co_simulation"
  std::size_t line = 0;
  std::shared_ptr<const fmu::ModelDescription> md;
  // md's variables by name (the first of a name, as ModelDescription::find):
  // found by a look-up, not a search per connector and connection.
  std::shared_ptr<const std::unordered_map<std::string_view, const fmu::Variable*>> variables;
  std::vector<Connector> connectors;
  std::map<std::string, std::size_t, std::less<>> connector_index;  // into connectors
  std::vector<std::pair<std::string, double>> start;                // in the order first set
  std::map<std::string, std::size_t> start_index;

  [[nodiscard]] const Connector* connector(const std::string& n) const {
    const auto it = connector_index.find(n);
    return it == connector_index.end() ? nullptr : &connectors[it->second];
  }
  [[nodiscard]] const fmu::Variable* variable(const std::string& n) const {
    const auto it = variables->find(n);
    return it == variables->end() ? nullptr : it->second;
  }
};

struct Wire {
  std::string from_block, from_port, to_block, to_port;
  std::size_t line = 0;
};

// One end of a connection: a component's connector or the system's.
struct ConnectionEnd {
  const Component* comp = nullptr;
  Connector conn;
  std::string text;  // "plant.x" or "system connector 'position'"
};

// One <ssv:Parameter>'s value as read, before it is set on its variables.
struct ParameterValue {
  std::string name;     // with the binding's prefix
  pugi::xml_node node;  // <ssv:Real>, <ssv:Integer> or <ssv:Boolean>
  SspType type = SspType::kNone;
  double value = 0.0;
  std::string unit;
};

// The 1-based byte at which `s` stops being UTF-8; 0 when it is UTF-8.
std::size_t not_utf8_at(std::string_view s);

// `s` as a double-quoted YAML scalar that holds it and nothing else, in a
// value and in a `#` comment alike (ssp_import_text.cpp says how).
std::string yaml_quote(std::string_view s);

std::string number_text(double v);

// A block name from a component name: letters, digits, '_' and '-'; any
// other character becomes '_'.
std::string block_name(const std::string& component);

class Importer {
 public:
  Importer(const std::string& ssp, const SspImportOptions& options) : ssp_(ssp), opt_(options) {}

  // ssp_import.cpp
  SspImport run();

 private:
  // ssp_import.cpp: unpacking and reading the SSD's system, its components and connections.
  static void check_stop();
  void unpack();
  void read_units(const pugi::xml_node& units);
  void read_experiment(const pugi::xml_node& e);
  [[nodiscard]] bool same_unit(const std::string& a, const std::string& b) const;
  void check_name(const XmlFile& f, const pugi::xml_node& n, const std::string& what, const std::string& name);
  static void check_utf8(const XmlFile& f, const pugi::xml_node& n, const std::string& what, std::string_view text);
  std::vector<Connector> read_connectors(const pugi::xml_node& connectors, const std::string& owner);
  void read_system(const pugi::xml_node& system);
  void read_element(const pugi::xml_node& e);
  std::shared_ptr<const fmu::ModelDescription> description_of(const pugi::xml_node& e, const Component& c);
  [[noreturn]] void no_variable(const XmlFile& f, const pugi::xml_node& n, const Component& c, const std::string& what,
                                const std::string& var) const;
  static std::string kind_of(const fmu::Variable& v);
  void check_connector(const Component& c, const Connector& k);
  Connector endpoint_connector(const Component& c, const std::string& name, const pugi::xml_node& k) const;
  void read_connection(const pugi::xml_node& k);
  void refuse_transformations(const pugi::xml_node& k) const;
  ConnectionEnd connection_end(const pugi::xml_node& k, const char* element_attr, const char* connector_attr) const;
  bool connection_runs_a_to_b(const pugi::xml_node& k, const ConnectionEnd& a, const ConnectionEnd& b) const;
  void check_connection_values(const pugi::xml_node& k, const ConnectionEnd& from, const ConnectionEnd& to) const;
  void add_connection(const pugi::xml_node& k, const ConnectionEnd& from, const ConnectionEnd& to);

  // ssp_import_parameters.cpp: parameter bindings and their values.
  void apply_binding(const pugi::xml_node& b, const std::optional<std::size_t>& comp_index);
  void apply_set(const XmlFile& f, const pugi::xml_node& set, const std::string& prefix,
                 const std::optional<std::size_t>& comp_index);
  void apply_parameter(const XmlFile& f, const pugi::xml_node& p, const std::string& name,
                       const std::optional<std::size_t>& comp_index);
  static ParameterValue read_parameter_value(const XmlFile& f, const pugi::xml_node& p, const std::string& name);
  std::vector<std::pair<std::size_t, std::string>> parameter_targets(const XmlFile& f, const pugi::xml_node& p,
                                                                     const std::string& name,
                                                                     const std::optional<std::size_t>& comp_index);
  void set_start_value(const XmlFile& f, const pugi::xml_node& p, const ParameterValue& value, std::size_t index,
                       const std::string& var);

  // ssp_import_write.cpp: the FMUs and the task graph.
  void write_fmus(SspImport& out);
  SspImport write();
  static void utf8_path(const std::string& path);

  std::string ssp_;
  SspImportOptions opt_;
  std::unique_ptr<fmu::ExtractedArchive> archive_;
  std::string dir_;
  XmlFile ssd_;
  std::vector<std::unique_ptr<XmlFile>> parameter_files_;
  std::string name_;
  std::optional<double> duration_;
  std::map<std::string, UnitDef> units_;
  std::vector<Connector> system_connectors_;
  std::map<std::string, std::size_t, std::less<>> system_connector_index_;  // into system_connectors_
  std::vector<Component> components_;
  std::map<std::string, std::size_t, std::less<>> component_index_;  // by name, into components_
  std::set<std::string> block_names_;
  std::vector<std::pair<std::size_t, pugi::xml_node>> component_bindings_;
  std::map<std::string, std::shared_ptr<const fmu::ModelDescription>> descriptions_;
  std::map<std::string, std::shared_ptr<const std::unordered_map<std::string_view, const fmu::Variable*>>>
      variable_indexes_;  // by source, as descriptions_
  std::vector<Wire> wires_;
  std::map<std::string, std::size_t> driven_;
  std::vector<std::string> extra_records_, system_outputs_, warnings_;
  std::set<std::string> extra_record_set_;
  std::size_t connector_count_ = 0, parameter_count_ = 0, binding_count_ = 0;
};

}  // namespace rtcosim::config::ssp_detail
