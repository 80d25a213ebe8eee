#pragma once

#include <limits>
#include <string>
#include <vector>

#include "io/remote_state.hpp"
#include "runtime/graph.hpp"
#include "runtime/recorder.hpp"
#include "session/report/text_table.hpp"
#include "tasks/diagram.hpp"

namespace rtcosim::session {

// Per-task and per-link statistics of a finished (or running) graph as a
// table for people.
// `remote`: the run's DDS counters and clocks (session::RealtimeRun::remote);
// null for a run without a bridge (its tables show a fresh state's zeroes).
std::string run_summary(runtime::Graph& graph, const io::RemoteState* remote = nullptr);

// "link health:" and one line per degraded link (stale, rejected, fallback
// and beyond-horizon counts, the horizon, the longest gap), or "no link
// degraded". Part of run_summary; docs/config.md defines each figure.
std::string link_health_lines(runtime::Graph& graph);

// RMS and max error of one recorded series against the reference solver.
struct ReferenceError {
  std::string signal;
  double rms = 0.0;
  double max = 0.0;
  std::size_t samples = 0;
  // The RMS over the samples at or after `after` (reference_errors), and
  // how many they were: what a disturbance early in the run left behind.
  double rms_after = 0.0;
  std::size_t samples_after = 0;
  // The reference's range (max - min) over the recorded times: the scale
  // an error is judged against (the FMI Cross-Check's tube is 1 % of it).
  double range = 0.0;
};

// The columns of the table of ReferenceErrors `rtcosim run` prints.
std::vector<Field<ReferenceError>> reference_error_columns();

// The error of every recorded series against the reference (the merged
// diagram, RK4), interpolated at the recorded times.
std::vector<ReferenceError> reference_errors(const runtime::Graph& graph, const runtime::Recorder& recorder,
                                             const tasks::ReferenceSolver& reference,
                                             double after = std::numeric_limits<double>::infinity());

// The summary as JSON: {"tasks":[...],"links":[...],"signals":[...]}
// (docs/figures.md defines each field). A task's policy, priority and CPU
// are what its thread got; `policy` stands in for a task whose thread never
// started. `recording`, a JSON object, is added as "recording" when given
// (recording_summary.hpp).
std::string summary_json(runtime::Graph& graph, const std::vector<ReferenceError>& errors, const std::string& policy,
                         const std::string& recording = {}, const io::RemoteState* remote = nullptr);

}  // namespace rtcosim::session
