#pragma once

#include <string>

#include "rt_config/graph_spec.hpp"

namespace rtcosim::session {

// Human summary of a valid graph: tasks (cpu, priority, period,
// integrator, step, overrun), links (method, ring size), CPU load.
std::string graph_summary(const config::GraphSpec& graph);

// The graph as Graphviz DOT, one cluster per task, links labelled with
// their coupling method.
std::string graph_dot(const config::GraphSpec& graph);

}  // namespace rtcosim::session
