#pragma once

namespace rtcosim::config {

// How a task sizes its integration step and what it does after an overrun
// (docs/config.md, "Tasks"). One enum per concept: the loader writes them
// into TaskSpec and the runtime's StepPolicy and Deadlines take them as they
// are. Plain data, no dependencies: runtime/step_policy.hpp includes it
// without the rest of the task-graph spec.
enum class StepPolicy { kFixed, kMeasured };
enum class OverrunPolicy { kCatchUp, kSkip, kRephase };

}  // namespace rtcosim::config
