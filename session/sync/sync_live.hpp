#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rt_config/graph_spec.hpp"
#include "runtime/graph.hpp"
#include "runtime/recorder.hpp"
#include "session/sync/sync_model.hpp"
#include "session/sync/sync_run.hpp"

namespace rtcosim::session {

// One running task's measured load, for live_time_budget.
struct TaskLoad {
  int cpu = -1;            // -1: not pinned
  double period = 0.0;     // seconds
  double exec_p99 = 0.0;   // seconds, the task's frames' measured p99 execution time
  bool component = false;  // a synchronised task (its copy is what the optimiser re-runs)
};

// The optimiser's default time budget per macro step of a live run
// (docs/sync.md): h of wall time less the share that real-time frames take
// of the busiest CPU a component task runs on (sum of p99 execution time /
// period there; an unpinned task counts on every CPU), so that the
// synchronisation keeps pace with the plant on the CPU time the tasks leave
// it. At least h/10: a saturated CPU still gets a (late) step.
[[nodiscard]] double live_time_budget(double h, std::span<const TaskLoad> tasks) noexcept;

/*
 * LiveSync: the state synchronisation beside a running graph (docs/sync.md,
 * "Live: rtcosim run"). The graph's tasks run as always; this object, on the
 * thread that drains the recorder (never a task's), reads the measured
 * signals from the recorder's series as they arrive, and as soon as the
 * measurement covers the horizon of the next macro step k (up to
 * (k + T_P + d) h), runs StateSync::synchronise on its own copies of the
 * synchronised tasks and posts the chosen u to the running tasks
 * (TaskRuntime::post_parameter: applied at their next frame, allocation-
 * free). A second copy runs without synchronisation, for comparison.
 * Measured values at k h are the last recorded sample at or before k h (the
 * first one before any). The optimiser's time budget per macro step is
 * live_time_budget of the tasks' measured frames, renewed at every step,
 * unless `max_time` says otherwise: the copy must keep pace with the plant.
 * A finite run keeps every step's figures for the summary and the plot; an
 * endless one (the daemon) keeps running totals only and drops the measured
 * values no macro step reads any more, so its memory stays bounded. Owns its
 * copies; the graph and the recorder must outlive it.
 */
class LiveSync {
 public:
  LiveSync(const config::GraphSpec& spec, const tasks::BlockRegistry& blocks, runtime::Graph& graph,
           const runtime::Recorder& recorder, double duration);
  ~LiveSync();

  // After each drain of the recorder, on the same thread: every macro step
  // that became ready. `final`: the run ended, the rest of the measurement
  // is all there will be (steps whose horizon it does not cover stay undone).
  void poll(bool final = false);
  [[nodiscard]] std::size_t steps_done() const noexcept { return totals_.steps; }
  [[nodiscard]] std::uint64_t posted() const noexcept { return posted_; }
  [[nodiscard]] std::uint64_t refused() const noexcept { return refused_; }
  // The run's figures: pairs' "with" is the running task's recorded signal
  // at k h, "without" the copy without synchronisation; call after poll(true).
  [[nodiscard]] SyncRun result();
  [[nodiscard]] std::string summary();
  // Running totals since the start (docs/sync.md, "Live"), for a status.
  struct Totals {
    std::uint64_t steps = 0, evaluations = 0, exhausted = 0;
    int max_evaluations = 0;
    double seconds = 0.0, max_seconds = 0.0, before_last = 0.0, after_last = 0.0;
    double budget_last = 0.0;  // seconds: the time budget of the last macro step (0: none)
  };
  [[nodiscard]] const Totals& totals() const noexcept { return totals_; }
  // Measured values held per column now (bounded in an endless run).
  [[nodiscard]] std::size_t retained_measurements() const noexcept {
    return with_.measured().columns.empty() ? 0 : with_.measured().columns.front().size();
  }
  // {"steps":..,"evaluations":..,...,"u":{"block.parameter":value}} for the daemon's status.
  [[nodiscard]] std::string status_json() const;

 private:
  const config::GraphSpec& spec_;
  const runtime::Recorder& recorder_;
  SyncModel with_, without_;
  std::unique_ptr<sync::StateSync> sync_, shadow_;
  std::vector<std::size_t> column_series_;             // recorder series per measured column
  std::vector<std::size_t> simulated_series_;          // recorder series of each pair's simulated signal
  std::vector<runtime::TaskRuntime*> variable_tasks_;  // the running task of each decision variable
  runtime::Graph& graph_;
  std::vector<unsigned char> is_component_;  // per graph task
  bool auto_budget_ = false;                 // max_time 0: live_time_budget at each step
  std::vector<TaskLoad> loads_;
  std::size_t macro_steps_ = 0;
  bool endless_ = false;
  Totals totals_;
  std::uint64_t posted_ = 0, refused_ = 0;
  SyncRun run_;

  void append_measurements();
  static constexpr std::uint64_t kMeasuredRows = 50;  // `delay: measured` waits for as many
};

}  // namespace rtcosim::session
