// The FMU part left out of this build (RTCOSIM_WITHOUT fmi): a graph that
// names an `fmu` block is refused at the block, saying how to build the part.
#include "tasks/block_registry.hpp"

namespace rtcosim::tasks {

void register_fmu_blocks(BlockRegistry& registry) { registry.add(left_out_block_type("fmu", "fmi")); }

}  // namespace rtcosim::tasks
