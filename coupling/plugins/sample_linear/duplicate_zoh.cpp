// A deliberately broken plugin for the loader's tests: it registers "zoh",
// which every registry has already.
#include <memory>

#include "coupling/methods/zoh.hpp"
#include "coupling/plugin_api.hpp"

RTCOSIM_COUPLING_PLUGIN(registrar) {
  registrar->add({"zoh", "a second zoh", false, {}, [](const rtcosim::coupling::ParamValues&) {
                    return std::make_unique<rtcosim::coupling::methods::Zoh>(false);
                  }});
  return 0;
}
