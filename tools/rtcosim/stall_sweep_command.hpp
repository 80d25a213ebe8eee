#pragma once

#include <string>
#include <vector>

namespace rtcosim::tools {

// `rtcosim stall-sweep GRAPH`: 0 when no case is a silent blow-up, 1 when
// one is (or the unstalled run failed, or the file has errors), 2 for a
// usage error. docs/stalls.md.
int run_stall_sweep_command(const std::vector<std::string>& args);

}  // namespace rtcosim::tools
