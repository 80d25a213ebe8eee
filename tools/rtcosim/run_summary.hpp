#pragma once

#include <string>
#include <vector>

#include "runtime/graph.hpp"
#include "runtime/recorder.hpp"
#include "tasks/diagram.hpp"

namespace rtcosim::tools {

// Per-task and per-link statistics of a finished (or running) graph as a
// table for people.
std::string run_summary(runtime::Graph& graph);

// RMS and max error of one recorded series against the reference solver.
struct ReferenceError {
  std::string signal;
  double rms = 0.0;
  double max = 0.0;
  std::size_t samples = 0;
};

// The error of every recorded series against the reference (the merged
// diagram, RK4), interpolated at the recorded times.
std::vector<ReferenceError> reference_errors(const runtime::Graph& graph, const runtime::Recorder& recorder,
                                             const tasks::ReferenceSolver& reference);

// The summary as JSON: {"tasks":[...],"links":[...],"signals":[...]}; `policy`
// is "fifo", "other" or "virtual"; `recording`, a JSON object, is added as
// "recording" when given (recording_summary.hpp).
std::string summary_json(runtime::Graph& graph, const std::vector<ReferenceError>& errors, const std::string& policy,
                         const std::string& recording = {});

}  // namespace rtcosim::tools
