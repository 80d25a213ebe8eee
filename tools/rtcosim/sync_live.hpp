#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rt_config/graph_spec.hpp"
#include "runtime/graph.hpp"
#include "runtime/recorder.hpp"
#include "tools/rtcosim/sync_command.hpp"
#include "tools/rtcosim/sync_model.hpp"

namespace rtcosim::tools {

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
 * first one before any). Owns its copies; the graph and the recorder must
 * outlive it.
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
  [[nodiscard]] std::size_t steps_done() const noexcept { return run_.steps.size(); }
  [[nodiscard]] std::uint64_t posted() const noexcept { return posted_; }
  [[nodiscard]] std::uint64_t refused() const noexcept { return refused_; }
  // The run's figures: pairs' "with" is the running task's recorded signal
  // at k h, "without" the copy without synchronisation; call after poll(true).
  [[nodiscard]] SyncRun result();
  [[nodiscard]] std::string summary();

 private:
  const config::GraphSpec& spec_;
  const runtime::Recorder& recorder_;
  SyncModel with_, without_;
  std::unique_ptr<tasks::sync::StateSync> sync_, shadow_;
  std::vector<std::size_t> column_series_;             // recorder series per measured column
  std::vector<std::size_t> cursor_;                    // next sample of that series to look at
  std::vector<std::size_t> simulated_series_;          // recorder series of each pair's simulated signal
  std::vector<runtime::TaskRuntime*> variable_tasks_;  // the running task of each decision variable
  std::size_t macro_steps_ = 0;
  std::uint64_t posted_ = 0, refused_ = 0;
  SyncRun run_;

  void append_measurements();
};

}  // namespace rtcosim::tools
