#pragma once

#include <string>
#include <vector>

namespace rtcosim::tools {

// `rtcosim trace report DIR`: a recorded LTTng trace read and reported
// (session/report/trace/, docs/tracing.md). Built only with libbabeltrace2.
int run_trace_command(const std::vector<std::string>& args);

}  // namespace rtcosim::tools
