#pragma once

#include <optional>
#include <string>
#include <vector>

#include "rt_config/delay_model.hpp"
#include "rt_config/location.hpp"
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

// A decision variable: a tunable parameter of a block (Block::tunable_parameters).
struct SyncVariable {
  std::string block, parameter;
  double lower = 0.0, upper = 0.0, start = 0.0;
  Location where;
};

/*
 * The state synchronisation's settings (`sync.optimise`, docs/sync.md):
 * which tasks are the synchronised components, the decision variables, the
 * common macro step h, the horizon T_P in macro steps, static or dynamic u,
 * the NLopt solver and its budget per macro step.
 */
struct SyncOptimiseSpec {
  bool enabled = false;
  std::vector<std::string> tasks;  // empty: every task without a measured signal
  std::vector<SyncVariable> variables;
  double step = 0.0;  // h; 0: the components' common period
  int horizon = 1;
  bool dynamic = false;
  std::string solver = "bobyqa";  // bobyqa, nelder_mead, sbplx
  int max_evaluations = 60;
  double max_time = 0.0;  // seconds per macro step; 0: no limit
  bool reduce = true;
  Location where;
};

struct SyncSpec {
  bool enabled = false;
  bool automatic = false;          // delay: auto
  bool measured = false;           // delay: measured — from the live plant rows' time tags (docs/sync.md)
  double delay = 0.0;              // seconds, when not automatic
  double grid = 1e-4;              // of the delay densities
  double acquisition_cycle = 0.0;  // measured samples held on this grid; 0: as recorded
  std::vector<config::Hop> measurement_path;
  std::vector<config::Hop> simulation_path;
  std::vector<SyncComparison> compare;
  SyncOptimiseSpec optimise;
};

}  // namespace rtcosim::config
