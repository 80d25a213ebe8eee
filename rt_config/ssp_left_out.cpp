// SSP import left out of this build (RTCOSIM_WITHOUT ssp): `rtcosim import
// ssp` says so and how to build it.
#include <stdexcept>

#include "base/text.hpp"
#include "rt_config/ssp_import.hpp"

namespace rtcosim::config {

SspImport import_ssp(const std::string& ssp_path, const SspImportOptions&) {
  throw std::runtime_error(ssp_path + ": SSP import is " + base::not_built("ssp"));
}

}  // namespace rtcosim::config
