#pragma once

#include <string>
#include <vector>

namespace rtcosim::tools {

// `rtcosim run [--virtual] FILE ...`: exit 0 after a run, 1 when the file
// has errors or the run could not start, 2 for a usage error.
int run_run_command(const std::vector<std::string>& args);
// `rtcosim replay LOG GRAPH`: a logged real-time run again (docs/replay.md).
int run_replay_command(const std::vector<std::string>& args);

}  // namespace rtcosim::tools
