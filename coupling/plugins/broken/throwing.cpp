// Broken on purpose: its entry point throws, which the loader must catch
// and report like any other failure.
#include <stdexcept>

#include "coupling/plugin_api.hpp"

RTCOSIM_COUPLING_PLUGIN(registrar) {
  if (registrar->abi_version() > 0) throw std::runtime_error("the self-test of throwing.so failed");
  return 0;
}
