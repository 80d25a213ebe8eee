#pragma once

#include <string>
#include <vector>

namespace rtcosim::tools {

// `rtcosim sync ARGS...`: returns the exit code; prints to stdout/stderr.
int run_sync_command(const std::vector<std::string>& args);

}  // namespace rtcosim::tools
