#pragma once

#include <string>
#include <vector>

namespace rtcosim::tools {

// Sends one request line to a control socket and returns the reply line
// (empty with `error` set when the daemon cannot be reached).
std::string control_request(const std::string& socket_path, const std::string& request, std::string* error,
                            int timeout_ms = 5000);

// `rtcosim ctl [--socket PATH] COMMAND ...`: exit 0 when the daemon said
// ok, 1 when it refused, 2 for a usage error, 3 when it cannot be reached.
int run_ctl_command(const std::vector<std::string>& args);

}  // namespace rtcosim::tools
