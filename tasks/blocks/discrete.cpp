#include "tasks/block_registry.hpp"

namespace rtcosim::tasks {

// TODO(block library): the block types of this family are not written yet.
void register_discrete_blocks(BlockRegistry&) {}

}  // namespace rtcosim::tasks
