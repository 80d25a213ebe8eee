#pragma once

#include <string>
#include <vector>

#include "rt_config/graph_spec.hpp"

namespace rtcosim::tools {

// Human summary of a valid graph: tasks (cpu, priority, period,
// integrator, step, overrun), links (method, ring size), CPU load.
std::string graph_summary(const config::GraphSpec& graph);

// The graph as Graphviz DOT, one cluster per task, links labelled with
// their coupling method.
std::string graph_dot(const config::GraphSpec& graph);

// `rtcosim check [--dot] FILE`: exit 0 when valid, 1 when the file has
// errors, 2 for a usage error.
int run_check_command(const std::vector<std::string>& args);

}  // namespace rtcosim::tools
