#pragma once

#include <string>
#include <vector>

#include "tasks/fmu/fmu_instance.hpp"

namespace rtcosim::tools {

// The text `rtcosim fmu info` prints for an inspected FMU: version, token,
// interfaces with their capabilities, platform binaries (and whether this
// platform's loads), variables with causality, variability, type, unit and
// start, states, event indicators, and what rtcosim refuses.
std::string format_fmu_info(const std::string& path, const tasks::fmu::FmuInfo& info);

// `rtcosim fmu info FILE`: 0 when the FMU is readable, 1 with the one
// message that says why not, 2 for a usage error.
int run_fmu_command(const std::vector<std::string>& args);

}  // namespace rtcosim::tools
