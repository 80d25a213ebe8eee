#pragma once

#include <map>
#include <string>
#include <vector>

namespace rtcosim::tools {

// The request line `rtcosim ctl` sends for its positional words and the
// options of `record start` (`format`, `max-file-size`, `rotate-every`,
// `overwrite` with an empty value). UsageError when they do not form a command.
std::string ctl_request_line(const std::vector<std::string>& words, const std::map<std::string, std::string>& options);

// `rtcosim ctl [--socket PATH] COMMAND ...`: exit 0 when the daemon said
// ok, 1 when it refused, 2 for a usage error, 3 when it cannot be reached.
int run_ctl_command(const std::vector<std::string>& args);

}  // namespace rtcosim::tools
