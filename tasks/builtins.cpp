// The registry of every built-in block type: the one place that names the
// areas (core blocks, FMUs, mechanics, plant data), so that the core
// library links none of them (tasks/CMakeLists.txt).
#include "tasks/block_registry.hpp"

namespace rtcosim::tasks {

BlockRegistry BlockRegistry::with_builtins() {
  BlockRegistry r;
  register_source_blocks(r);
  register_math_blocks(r);
  register_continuous_blocks(r);
  register_nonlinear_blocks(r);
  register_controller_blocks(r);
  register_discrete_blocks(r);
  register_utility_blocks(r);
  register_fmu_blocks(r);
  register_mechanics_blocks(r);
  register_plant_blocks(r);
  return r;
}

}  // namespace rtcosim::tasks
