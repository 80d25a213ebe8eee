#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "coupling/registry.hpp"
#include "rt_config/graph_spec.hpp"
#include "session/report/run_summary.hpp"
#include "session/report/text_table.hpp"
#include "tasks/block_registry.hpp"

namespace rtcosim::session {

/*
 * The stall sweep (docs/stalls.md): a graph run in virtual
 * time once as the file scripts it, then once per (task, k, single/double)
 * with the task's frame F (and with `doubled` also F + 1) made to execute k
 * periods of that task, exactly as an `execution: {spikes: [{frame: F,
 * time: k periods}]}` written into the file would. Every run's recorded
 * signals are compared with the one merged RK4 reference
 * (`reference_errors`, the figures `rtcosim run --compare-reference`
 * prints), so that a stall that makes the co-simulation diverge without any
 * task noticing — a silent blow-up — is found before a real PC finds it.
 *
 * Set-up code: builds one Graph per case, allocates freely.
 */

struct StallSweepOptions {
  // k: each stalled frame executes k periods of its task (fractions allowed).
  std::vector<double> periods{1.0, 2.0, 4.0, 8.0, 16.0};
  std::vector<std::string> tasks;  // the tasks to stall; empty: every task
  bool doubled = false;            // also two stalled frames in a row
  double duration = 0.0;           // 0: the file's `duration`
  // The first stalled frame (each task's own frame index); unset: the frame
  // released at a quarter of the run (stall_frame), so that every task
  // stalls at about the same wall time with three quarters left to show
  // what the stall did.
  std::optional<std::uint64_t> frame;
  // A silent blow-up: no task failed, and over the run's last quarter some
  // signal's error is more than `factor` times the unstalled run's and
  // more than `tube` of its range in the reference.
  double factor = 3.0;
  double tube = 0.01;
  double reference_step = 0.0005;  // the RK4 reference's step, as --reference-step
};

// What the runtime reports for one task after one run: the figures of
// `rtcosim run`'s task table that say how a stall was absorbed, plus the
// task's longest frame (the scripted stall, when there is one).
struct StallTaskFigures {
  std::string name;
  std::uint64_t frames = 0;
  double step_min = 0.0, step_max = 0.0;  // seconds
  std::uint64_t overruns = 0, missed = 0;
  double lag_min = 0.0, lag_max = 0.0;                            // seconds
  double lost = 0.0;                                              // lost real time, seconds
  double ab2_lte_max = std::numeric_limits<double>::quiet_NaN();  // NaN unless the task integrates with ab2
  // The frame whose execution (start to end, preemptions included) was the
  // longest; the first of equals.
  std::uint64_t longest_frame = 0;
  double longest_execution = 0.0;   // seconds
  double longest_frame_step = 0.0;  // the step that frame took, seconds
  // Measured steps through a stall (docs/stalls.md; runtime::TaskStats):
  // stalls (frames whose interval exceeded max_step) and those whose debt
  // was repaid in full, frames that repaid owed time and the longest run of
  // them, sub-steps beyond one per frame, real time still owed at the end
  // and the most owed at once. A new figure: one member here, one line in
  // task_figures() and one Field in stall_sweep_columns().
  std::uint64_t stalls = 0, stalls_absorbed = 0;
  std::uint64_t catch_up_frames = 0, longest_catch_up = 0;
  std::uint64_t extra_substeps = 0;
  double owed = 0.0, owed_max = 0.0;  // seconds
  // Fixed steps: cycles that waited for a lagging producer's data.
  std::uint64_t data_waits = 0;
};

struct StallCase {
  std::string task;                    // the stalled task; empty: the unstalled run
  double periods = 0.0;                // k
  int stalled_frames = 0;              // 0: unstalled, 1: single, 2: double
  std::uint64_t frame = 0;             // the first stalled frame
  double spike = 0.0;                  // each stalled frame's scripted execution: k periods, seconds
  std::vector<ReferenceError> errors;  // per recorded signal, as --compare-reference
  // Per signal: its RMS over the unstalled run's (1 when both are 0,
  // infinite when only the unstalled one is); `ratio` the largest,
  // `worst_signal` whose it is.
  std::vector<double> ratios;
  double ratio = 1.0;
  std::string worst_signal;
  // The same over the last quarter of the run only (RMS from 3/4 of the
  // duration on): what the stall left behind once the task had time to
  // recover. A blow-up is judged on it: an error that grew and stayed.
  std::vector<double> after_ratios;
  double after_ratio = 1.0;
  std::string after_signal;
  // The largest last-quarter RMS error over its signal's range in the
  // reference: below the tube (StallSweepOptions::tube) the run is still
  // right by the FMI Cross-Check's measure, whatever the ratio.
  double after_of_range = 0.0;
  bool failed = false;
  std::string failure;  // every failed task's message, "; " between them
  // after_ratio beyond the factor and after_of_range beyond the tube (or
  // either not a number), and no task failed.
  bool silent_blow_up = false;
  bool recovered = false;               // ratio beyond the factor, after_ratio within it, no task failed
  std::vector<StallTaskFigures> tasks;  // every task of the graph, in the file's order

  // The stalled task's figures (the first task's for the unstalled run).
  [[nodiscard]] const StallTaskFigures& stalled() const;
  // Every task's data waits: a stall makes its partners wait too.
  [[nodiscard]] std::uint64_t data_waits() const noexcept;
};

struct StallSweep {
  std::string graph;  // the file's `name`, or its path
  double duration = 0.0;
  double reference_step = 0.0;
  double factor = 0.0;
  double tube = 0.0;
  StallCase unstalled;           // the file's own script (`task` empty); the tables repeat it before each task's cases
  std::vector<StallCase> cases;  // task by task, k by k, single before double

  [[nodiscard]] std::vector<const StallCase*> silent_blow_ups() const;
};

// The frame a task releases at a quarter of `duration`: the sweep's default.
std::uint64_t stall_frame(const config::TaskSpec& task, double duration) noexcept;

// Runs the sweep; `progress` (may be empty) sees each case as it ends.
// Throws std::invalid_argument, saying what would be right, for a graph or
// options it cannot sweep: no recorded signals, no finite duration, a live
// synchronisation (`sync.optimise`: its parameters follow the measurement,
// which a stall does not replay), an unknown task, a stalled frame that
// does not run before the end.
StallSweep run_stall_sweep(const config::GraphSpec& spec, const tasks::BlockRegistry& blocks,
                           const coupling::MethodRegistry& methods, const StallSweepOptions& options,
                           const std::function<void(const StallCase&)>& progress = {});

// The sweep's table: one Field per column (adding a figure is adding one
// line). `signals` adds one RMS column per recorded signal.
std::vector<Field<StallCase>> stall_sweep_columns(const StallSweep& sweep, bool signals);

enum class StallSweepFormat { kText, kTsv, kMarkdown, kJson };

// The unstalled run and every case: a table (text, TSV with every signal's
// RMS, Markdown) or JSON with every figure of every task.
std::string render_stall_sweep(const StallSweep& sweep, StallSweepFormat format);

}  // namespace rtcosim::session
