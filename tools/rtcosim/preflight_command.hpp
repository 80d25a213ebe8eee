#pragma once

#include <string>
#include <vector>

namespace rtcosim::tools {

// One finding of `rtcosim preflight`: ok, or a warning with its fix.
struct PreflightCheck {
  bool ok = true;
  std::string what;
  std::string fix;  // empty when ok
};

// What a real-time PC should have, for the CPUs the tasks use. Reads /proc,
// /sys and the process limits; never changes anything.
std::vector<PreflightCheck> preflight(const std::vector<int>& task_cpus);

// `rtcosim preflight [FILE]`: exit 0 when everything is ok, 1 with warnings,
// 2 for a usage error.
int run_preflight_command(const std::vector<std::string>& args);

}  // namespace rtcosim::tools
