#pragma once

#include <string>

namespace rtcosim::session {

// The live plant sources' counters (docs/plant.md, "Counters"): a table for
// `rtcosim run`'s summary (empty when the graph has none) and a JSON array
// for the daemon's status and `--json`.
std::string plant_lines();
std::string plant_json();

}  // namespace rtcosim::session
