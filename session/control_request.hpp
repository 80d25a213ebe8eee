#pragma once

#include <string>

namespace rtcosim::session {

// Sends one request line to a control socket and returns the reply line
// (empty with `error` set when the daemon cannot be reached).
std::string control_request(const std::string& socket_path, const std::string& request, std::string* error,
                            int timeout_ms = 5000);

}  // namespace rtcosim::session
