// Broken on purpose: it records a method and then returns non-zero. The
// loader must drop the recorded factory (whose code is in this library)
// before it closes the library.
#include <memory>

#include "coupling/methods/zoh.hpp"
#include "coupling/plugin_api.hpp"

RTCOSIM_COUPLING_PLUGIN(registrar) {
  registrar->add({"refused", "never registered", false, {}, [](const rtcosim::coupling::ParamValues&) {
                    return std::make_unique<rtcosim::coupling::methods::Zoh>(false);
                  }});
  return 7;
}
