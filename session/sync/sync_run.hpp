#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "rt_config/graph_spec.hpp"
#include "session/report/svg_plot.hpp"
#include "session/sync/state_sync.hpp"
#include "session/sync/sync_report.hpp"
#include "tasks/block_registry.hpp"

namespace rtcosim::session {

/*
 * A task graph's state synchronisation replayed (docs/sync.md, "From a task
 * graph: rtcosim sync"): the tasks named by `sync.optimise` (or every task
 * that holds no measured signal) become StateSync components at the common
 * macro step h; the other tasks, which must read nothing from the
 * components, are the measurement side: run first over the whole duration
 * and sampled every h. The components then run twice from t = 0: without
 * synchronisation (u at its start values) and with it (the optimiser before
 * every macro step). Set-up and analysis code: it allocates, runs on the
 * caller's thread, and not in real time.
 */
// instants: the t_k with t_k + Delta_o inside the measurement; "with" is
// the run with synchronisation here, not with Delta_o (both use Delta_o).
struct SyncPairSeries : SyncPairResult {
  std::vector<double> measured_values;  // y^(t_k + Delta_o)
  std::vector<double> without, with;    // y_k without and with synchronisation
  // The held-out error (StepFigures::held_out) over the macro steps that had
  // one: the T_P-step-ahead prediction of each measurement before any
  // objective used it.
  std::size_t held_out_instants = 0;
  double mse_held_out = 0.0, max_held_out = 0.0;
};

struct SyncRun {
  double step = 0.0;  // h
  std::size_t macro_steps = 0;
  long delay_steps = 0;  // Delta_o / h, rounded
  int distance = 1;      // T_D
  std::vector<std::string> components, rerun, measurement_tasks;
  std::vector<double> time;  // t_k = k h, k = 1..macro_steps (after each step)
  std::vector<SyncPairSeries> pairs;
  std::vector<std::string> variables;  // "block.parameter"
  std::vector<std::vector<double>> u;  // [variable][k], the u step k ran with
  std::vector<sync::StepFigures> steps;
  std::uint64_t n_ges = 0, n_ges_without = 0;
};

// BlockError / std::invalid_argument with a message naming the task, block
// or signal (and the file:line:column of the `sync.optimise` entry) when the
// graph cannot be synchronised this way. `progress(k, n)` after each step.
SyncRun run_state_sync(const config::GraphSpec& spec, const tasks::BlockRegistry& blocks, double duration,
                       const std::function<void(std::size_t, std::size_t, const SyncRun&)>& progress = {});

class SyncModel;
// A SyncRun with the model's names, step and delay, and no steps yet.
SyncRun sync_run_for(const SyncModel& model, const config::GraphSpec& spec);
// Fills each pair's measured_values and its MSE/MAX figures from the
// model's compared columns, over run.time.
void score_sync_pairs(SyncRun& run, const SyncModel& model);
// The summary `rtcosim sync` prints (pairs, optimiser, u), and its files.
// Partition steps per candidate evaluation, over the run. With `after_first`
// only each macro step's candidates after its first: the quantity of thesis
// table 4.2 ("from the second optimiser iteration"; the first candidate is
// the current u, which the pass before the optimisation ran already and
// costs 0). 0 when there is no such candidate.
double executions_per_evaluation(const SyncRun& run, bool after_first);
std::string sync_run_summary(const SyncRun& run, const config::GraphSpec& spec);
void write_sync_csv(const SyncRun& run, const std::string& path);
// Each pair's measured, without and with, and each u, as panels.
void add_sync_panels(plot::Figure& figure, const SyncRun& run);
void write_sync_plot(const SyncRun& run, const std::string& title, const std::string& path);
std::string sync_run_json(const SyncRun& run);

}  // namespace rtcosim::session
