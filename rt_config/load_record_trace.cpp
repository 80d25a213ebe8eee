// Reads 'record' and 'trace'.
#include <algorithm>

#include "base/record_formats.hpp"
#include "rt_config/load_context.hpp"

namespace rtcosim::config::detail {

void GraphLoader::read_record(const yaml::Node& node) {
  if (!node) return;
  if (!in_.mapping(node, "'record'", {"signals", "file", "format", "units"})) return;
  const auto signals = node["signals"];
  if (signals) {
    if (!signals.IsSequence()) {
      in_.error(signals, "'record.signals' is " + Reader::kind(signals) + " — expected a list of \"block.port\"");
    } else {
      for (const auto& s : signals) {
        if (auto e = in_.endpoint(s, "a recorded signal")) {
          graph_.record.signals.push_back(*e);
          record_nodes_.push_back(s);
        }
      }
    }
  }
  if (auto f = in_.text(node, "file", "'record'", !graph_.record.signals.empty())) graph_.record.file = *f;
  std::vector<std::string> formats;
  for (const auto& row : base::kRecordFormats) formats.emplace_back(row.name);
  if (auto f = in_.choice(node, "format", "'record'", formats)) graph_.record.format = *f;
  const auto units = node["units"];
  if (!units) return;
  if (!units.IsMap()) {
    in_.error(units, "'record.units' is " + Reader::kind(units) + " — expected a mapping of \"block.port\": unit");
    return;
  }
  for (const auto& u : units) {
    const std::string key = u.first.IsScalar() ? u.first.Scalar() : std::string();
    const bool recorded = std::any_of(graph_.record.signals.begin(), graph_.record.signals.end(),
                                      [&](const tasks::Endpoint& e) { return e.str() == key; });
    if (!recorded) {
      in_.error(u.first, "'record.units' names '" + key +
                             "', which 'record.signals' does not list — expected one "
                             "of the recorded signals");
    } else if (auto unit = in_.text(units, key, "'record.units'", true)) {
      graph_.record.units[key] = *unit;
    }
  }
}

void GraphLoader::read_trace(const yaml::Node& node) {
  if (!node) return;
  if (!in_.mapping(node, "'trace'", {"enabled", "directory"})) return;
  if (auto e = in_.boolean(node, "enabled", "'trace'")) graph_.trace.enabled = *e;
  if (auto d = in_.text(node, "directory", "'trace'", false)) graph_.trace.directory = *d;
}

}  // namespace rtcosim::config::detail
