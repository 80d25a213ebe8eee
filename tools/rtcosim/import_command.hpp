#pragma once

#include <string>
#include <vector>

namespace rtcosim::tools {

// `rtcosim import ssp FILE.ssp [--period 1ms] [--tasks per-component|one]
// [-o graph.yaml] [--fmu-dir DIR]`: writes the task graph of an SSP's
// system (rt_config/ssp_import.hpp) to the file or stdout, the FMUs into
// DIR. 0 when imported, 1 with the one message that says why not, 2 for a
// usage error.
int run_import_command(const std::vector<std::string>& args);

}  // namespace rtcosim::tools
