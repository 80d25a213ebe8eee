#pragma once

#include <string>
#include <vector>

#include "rt_config/diagnostics.hpp"

namespace rtcosim::session {

// A file's diagnostics as a client of rtcosimd's socket sees them
// (docs/daemon.md): where, and the message with every quoted part that
// could be the file's own content replaced by '…', as is every token that
// could be data of which the file holds a piece of 8 characters. A file
// that is not a task graph (a key, a token) never hands its content out
// through the socket. One pass over the file; not real-time.
std::vector<std::string> redacted(const std::vector<config::Diagnostic>& diagnostics, const std::string& file_text);

}  // namespace rtcosim::session
