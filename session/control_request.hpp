#pragma once

#include <cstddef>
#include <string>

namespace rtcosim::session {

// The longest reply line control_request takes. rtcosimd drops a client
// whose replies waiting to be read pass its max_pending_output (1 MiB), so
// none of its replies (status, graph, ...) comes near; the bound is there
// for a peer that never ends its line.
inline constexpr std::size_t kMaxControlReplyBytes = 16u << 20;

// Sends one request line to a control socket and returns the reply line;
// empty with `error` set when the daemon cannot be reached, does not answer
// in time, or its reply does not end its line within kMaxControlReplyBytes
// or before the connection ends.
std::string control_request(const std::string& socket_path, const std::string& request, std::string* error,
                            int timeout_ms = 5000);

}  // namespace rtcosim::session
