#pragma once

#include <string>

#include "rt_config/graph_spec.hpp"

namespace rtcosim::config {

// The graph as a task-graph YAML file that loads back to an equal
// GraphSpec (durations exact to the last bit, every key explicit). For
// `rtcosim check --normalize`, reloads and the round-trip test.
std::string write_graph(const GraphSpec& graph);

// Field-by-field equality of two graphs, ignoring locations and the file
// name; `difference` says the first field that differs.
bool same_graph(const GraphSpec& a, const GraphSpec& b, std::string* difference = nullptr);

}  // namespace rtcosim::config
