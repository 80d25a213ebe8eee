// `rtcosim fmu` when the build left out the part fmi (RTCOSIM_WITHOUT): it
// says so and how to build it.
#include <iostream>

#include "base/text.hpp"
#include "tools/rtcosim/fmu_command.hpp"

namespace rtcosim::tools {

int run_fmu_command(const std::vector<std::string>&) {
  std::cerr << "rtcosim fmu: FMUs are " << base::not_built("fmi") << '\n';
  return 1;
}

}  // namespace rtcosim::tools
