#pragma once

#include <string>
#include <vector>

namespace rtcosim::tools {

// `rtcosim check [--dot] FILE`: exit 0 when valid, 1 when the file has
// errors, 2 for a usage error.
int run_check_command(const std::vector<std::string>& args);

}  // namespace rtcosim::tools
