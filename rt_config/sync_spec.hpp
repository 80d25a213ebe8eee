#pragma once

#include <optional>
#include <string>
#include <vector>

#include "coupling/sync/delay_model.hpp"
#include "tasks/diagram.hpp"

namespace rtcosim::config {

/*
 * SyncSpec: a task graph's `sync:` section as plain data (docs/sync.md).
 * `delay` is the output delay Delta_o by which measured signals are shifted
 * before they are compared with simulated ones: a number, or `auto`, computed
 * by the delay model from the declared elements (dead time; cycle time given
 * or taken from a task's period) and the measurement and simulation paths.
 * `compare` lists (simulated, measured) pairs, both recorded signals.
 */
struct SyncComparison {
  tasks::Endpoint simulated;
  tasks::Endpoint measured;
  double weight = 1.0;
};

struct SyncSpec {
  bool enabled = false;
  bool automatic = false;          // delay: auto
  double delay = 0.0;              // seconds, when not automatic
  double grid = 1e-4;              // of the delay densities
  double acquisition_cycle = 0.0;  // measured samples held on this grid; 0: as recorded
  std::vector<coupling::sync::Hop> measurement_path;
  std::vector<coupling::sync::Hop> simulation_path;
  std::vector<SyncComparison> compare;
};

}  // namespace rtcosim::config
