// The SSP importer's parameters (ssp_import_internal.hpp): the parameter bindings of the components and of the
// system, their parameter sets (inline or a .ssv of the archive) and the start values they give.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "rt_config/ssp_import_internal.hpp"

namespace rtcosim::config::ssp_detail {

// One ParameterBinding: a parameter set from a file of the archive or
// inline, applied to one component (`comp`) or to the system (names
// "component.variable").
void Importer::apply_binding(const pugi::xml_node& b, const std::optional<std::size_t>& comp_index) {
  if (++binding_count_ > opt_.limits.max_bindings) {
    ssd_.fail(b, "more than " + std::to_string(opt_.limits.max_bindings) + " parameter bindings — refused");
  }
  const std::string type = b.attribute("type") ? b.attribute("type").value() : "application/x-ssp-parameter-set";
  if (type != "application/x-ssp-parameter-set") {
    ssd_.fail(b, "parameter binding of type '" + type +
                     "' — only SSP parameter sets (application/x-ssp-parameter-set) are supported");
  }
  if (std::string(b.attribute("sourceBase").value()) == "component") {
    ssd_.fail(b, "parameter binding with sourceBase=\"component\" (a parameter set inside the FMU) — not supported");
  }
  pugi::xml_node inline_values;
  for (auto c : b.children()) {
    const auto n = local(c.name());
    if (n == "ParameterMapping") {
      ssd_.fail(c,
                "parameter mappings (<ssd:ParameterMapping>, .ssm) are not supported — give the parameter set the "
                "FMU's names");
    }
    if (n == "ParameterValues") inline_values = c;
  }
  const std::string prefix = b.attribute("prefix").value();
  check_utf8(ssd_, b, "the parameter binding's prefix", prefix);  // it begins the names written as start values
  const std::string source = b.attribute("source").value();
  if (!source.empty() && inline_values)
    ssd_.fail(b, "the parameter binding has both a source and inline ParameterValues");
  if (source.empty()) {
    if (!inline_values) ssd_.fail(b, "the parameter binding has neither a source nor ParameterValues");
    pugi::xml_node set;
    for (auto c : inline_values.children())
      if (local(c.name()) == "ParameterSet") set = c;
    if (!set) ssd_.fail(inline_values, "ParameterValues holds no <ssv:ParameterSet>");
    apply_set(ssd_, set, prefix, comp_index);
    return;
  }
  std::string why;
  const auto path = archive_path(source, &why);
  if (!path) ssd_.fail(b, "parameter binding source '" + source + "' " + why);
  if (!plain_file_inside(dir_, fs::path(dir_) / *path))
    ssd_.fail(b, "parameter binding source '" + source + "' is not a file in the archive");
  auto file = std::make_unique<XmlFile>();
  file->label = ssp_ + "/" + *path;
  read_xml(*file, fs::path(dir_) / *path, opt_.limits);
  const auto root = file->doc.document_element();
  if (local(root.name()) != "ParameterSet")
    file->fail(root, "the root element is <" + std::string(root.name()) + "> — expected <ssv:ParameterSet>");
  apply_set(*file, root, prefix, comp_index);
  parameter_files_.push_back(std::move(file));
}

void Importer::apply_set(const XmlFile& f, const pugi::xml_node& set, const std::string& prefix,
                         const std::optional<std::size_t>& comp_index) {
  for (auto group : set.children()) {
    if (local(group.name()) != "Parameters") continue;
    for (auto p : group.children()) {
      if (local(p.name()) != "Parameter") continue;
      check_stop();
      if (++parameter_count_ > opt_.limits.max_parameters) {
        f.fail(p, "more than " + std::to_string(opt_.limits.max_parameters) + " parameters — refused");
      }
      const std::string raw = p.attribute("name").value();
      check_name(f, p, "a parameter", raw);
      apply_parameter(f, p, prefix + raw, comp_index);
    }
  }
}

void Importer::apply_parameter(const XmlFile& f, const pugi::xml_node& p, const std::string& name,
                               const std::optional<std::size_t>& comp_index) {
  const ParameterValue value = read_parameter_value(f, p, name);
  for (const auto& [index, var] : parameter_targets(f, p, name, comp_index)) set_start_value(f, p, value, index, var);
}

// The value is read and checked once, before any variable takes it, so
// that a bad value is reported once and not per target.
ParameterValue Importer::read_parameter_value(const XmlFile& f, const pugi::xml_node& p, const std::string& name) {
  ParameterValue out;
  out.name = name;
  for (auto c : p.children()) {
    const SspType t = type_of(local(c.name()));
    if (t != SspType::kNone) out.node = c, out.type = t;
  }
  if (!out.node) f.fail(p, "parameter '" + name + "' has no value (<ssv:Real>, <ssv:Integer>, <ssv:Boolean>, ...)");
  if (out.type == SspType::kString || out.type == SspType::kEnumeration || out.type == SspType::kBinary) {
    f.fail(out.node, "parameter '" + name + "' is " + type_name(out.type) +
                         " — rtcosim's start values are numbers (Real, Integer, Boolean)");
  }
  const std::string text = out.node.attribute("value").value();
  bool ok = false;
  if (out.type == SspType::kBoolean) {
    ok = text == "true" || text == "false" || text == "1" || text == "0";
    out.value = (text == "true" || text == "1") ? 1.0 : 0.0;
  } else if (out.type == SspType::kInteger) {
    std::int32_t i = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), i);
    ok = r.ec == std::errc() && r.ptr == text.data() + text.size();
    out.value = i;
  } else {
    const auto r = std::from_chars(text.data(), text.data() + text.size(), out.value);
    ok = !text.empty() && r.ec == std::errc() && r.ptr == text.data() + text.size() && std::isfinite(out.value);
  }
  if (!ok) {
    f.fail(out.node, "parameter '" + name + "' has value '" + text + "' — expected " +
                         (out.type == SspType::kBoolean   ? "true or false"
                          : out.type == SspType::kInteger ? "a 32-bit integer"
                                                          : "a finite number"));
  }
  out.unit = out.node.attribute("unit").value();
  return out;
}

// Which component variables the name sets: the bound component's own
// variable, or, for the system, "element.variable" for every element
// whose name (with its dot) begins the name (SSP's punning applies
// the value to each). None when a system parameter names no component
// variable: such a parameter is ignored with a warning, not refused.
std::vector<std::pair<std::size_t, std::string>> Importer::parameter_targets(
    const XmlFile& f, const pugi::xml_node& p, const std::string& name, const std::optional<std::size_t>& comp_index) {
  std::vector<std::pair<std::size_t, std::string>> targets;
  if (comp_index) {
    targets.emplace_back(*comp_index, name);
  } else {
    // Looked up at each dot of the name, not compared with every
    // component; in the components' order, as before.
    for (std::size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1)) {
      const auto it = component_index_.find(std::string_view(name).substr(0, dot));
      if (it == component_index_.end() || dot + 1 == name.size()) continue;
      if (components_[it->second].variable(name.substr(dot + 1)))
        targets.emplace_back(it->second, name.substr(dot + 1));
    }
    std::sort(targets.begin(), targets.end());
    if (targets.empty()) {
      warnings_.push_back(f.at(p) + ": parameter '" + name +
                          "' names no variable of any component (\"component.variable\") — ignored");
    }
  }
  return targets;
}

// Each target is checked against its FMU on its own: one name may set
// variables of several components, and each must take the value as given.
void Importer::set_start_value(const XmlFile& f, const pugi::xml_node& p, const ParameterValue& value,
                               std::size_t index, const std::string& var) {
  const std::string& name = value.name;
  Component& c = components_[index];
  const fmu::Variable* v = c.variable(var);
  if (!v) no_variable(f, p, c, "parameter '" + name + "'", var);
  const bool settable = v->variability != fmu::Variability::kConstant &&
                        (v->causality == fmu::Causality::kParameter || v->causality == fmu::Causality::kInput ||
                         v->causality == fmu::Causality::kStructuralParameter || !v->start.empty()) &&
                        v->causality != fmu::Causality::kCalculatedParameter &&
                        v->causality != fmu::Causality::kIndependent;
  if (!settable) {
    f.fail(p, "parameter '" + name + "' sets '" + var + "' of component '" + c.name + "', a " +
                  fmu::variability_name(v->variability) + " " + fmu::causality_name(v->causality) +
                  " that takes no start value");
  }
  if (type_of(*v) != value.type) {
    f.fail(value.node, "parameter '" + name + "' is " + type_name(value.type) + ", but " + c.source + " declares '" +
                           var + "' as " + v->type_name);
  }
  if (!same_unit(value.unit, v->unit)) {
    f.fail(value.node, "parameter '" + name + "' has unit '" + value.unit + "', but " + c.source + " gives '" + var +
                           "' unit '" + v->unit + "' — rtcosim converts no units");
  }
  if (auto it = c.start_index.find(var); it != c.start_index.end()) {
    c.start[it->second].second = value.value;
  } else {
    c.start_index[var] = c.start.size();
    c.start.emplace_back(var, value.value);
  }
}

}  // namespace rtcosim::config::ssp_detail
