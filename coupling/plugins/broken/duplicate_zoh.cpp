// Broken on purpose: a new id, then "zoh", which every registry has already.
// The loader must refuse both (a plugin is registered whole or not at all).
#include <memory>

#include "coupling/methods/zoh.hpp"
#include "coupling/plugin_api.hpp"

namespace {

rtcosim::coupling::MethodInfo zoh_named(const char* id) {
  return {id, "a second zoh", false, {}, [](const rtcosim::coupling::ParamValues&) {
            return std::make_unique<rtcosim::coupling::methods::Zoh>(false);
          }};
}

}  // namespace

RTCOSIM_COUPLING_PLUGIN(registrar) {
  if (registrar->abi_version() != rtcosim::coupling::kPluginAbiVersion) return 1;
  registrar->add(zoh_named("zoh_twin"));
  registrar->add(zoh_named("zoh"));
  return 0;
}
