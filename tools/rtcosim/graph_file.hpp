#pragma once

#include <optional>
#include <string>

#include "rt_config/loader.hpp"

namespace rtcosim::tools {

// Loads a task-graph file for a verb that runs it: every diagnostic goes to
// stderr (file:line:column), and with an error the count and "nothing was
// run" follow and nullopt is returned.
std::optional<config::GraphSpec> load_graph_or_report(const std::string& file, const config::LoadOptions& options);

}  // namespace rtcosim::tools
