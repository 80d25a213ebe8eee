// The mechanics part left out of this build (RTCOSIM_WITHOUT mechanics): its
// block types are refused at the block, saying how to build them.
#include "tasks/block_registry.hpp"

namespace rtcosim::tasks {

void register_mechanics_blocks(BlockRegistry& registry) {
  for (const char* type : {"mass_chain", "planar_arm", "flexible_arm", "point_mass"}) {
    registry.add(left_out_block_type(type, "mechanics"));
  }
}

}  // namespace rtcosim::tasks
