#pragma once

#include <string>

#include "rt_config/graph_spec.hpp"

namespace rtcosim::config {

// The graph as a task-graph YAML file that loads back to an equal
// GraphSpec (durations exact to the last bit, every key explicit), for the
// round-trip test. It writes neither `sync:`, `record.format`,
// `record.units` nor `dds.security` yet, and same_graph does not compare
// them: a graph using them does not round-trip through it.
std::string write_graph(const GraphSpec& graph);

// Field-by-field equality of two graphs, ignoring locations and the file
// name; `difference` says the first field that differs.
bool same_graph(const GraphSpec& a, const GraphSpec& b, std::string* difference = nullptr);

}  // namespace rtcosim::config
