// The `fmu` block type: an FMU (FMI 2.0 or 3.0, model exchange or
// co-simulation) as a block of a partition, its inputs and outputs as ports
// named after its variables.
#include "tasks/block_registry.hpp"
#include "tasks/fmu/fmu_block_internal.hpp"

namespace rtcosim::tasks {

using fmu_detail::FmuBlock;

void register_fmu_blocks(BlockRegistry& registry) {
  registry.add({"fmu",
                "an FMU (FMI 2.0 or 3.0, model exchange or co-simulation); its inputs and outputs (Real/Float, "
                "Integer/Int/UInt, Boolean, Enumeration, as doubles; an FMI 3.0 array is a port as wide as its "
                "elements) are ports named after its variables",
                {{"file", "path", "", "the .fmu file (relative: to the task-graph file's directory)"},
                 {"interface", "text", "model_exchange if offered", "model_exchange or co_simulation"},
                 {"start", "mapping", "",
                  "start values by variable name, e.g. {m: 2.0, k: [1, 2, 3]} (a list for an array; one number: every "
                  "element); a structural parameter sizes arrays"},
                 {"logging", "boolean", "false", "the FMU's loggingOn; its messages go to stderr"},
                 {"observe", "text", "",
                  "comma-separated variables that are no outputs (locals, parameters) to read after each step as "
                  "extra output ports: recorded, probed, wired like outputs"},
                 {"tolerance", "number", "undefined",
                  "relative tolerance passed to fmi2SetupExperiment / fmi3EnterInitializationMode (the FMU's own "
                  "solver)"},
                 {"stop_time", "number", "undefined",
                  "stop time in seconds passed the same way; the FMU may refuse to step past it"}},
                make_factory<FmuBlock>()});
}

}  // namespace rtcosim::tasks
