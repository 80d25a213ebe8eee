#pragma once

#include <string>

#include "runtime/graph.hpp"
#include "runtime/recorder.hpp"
#include "tasks/diagram.hpp"

namespace rtcosim::tools {

// Per-task and per-link statistics of a finished (or running) graph as a
// table for people.
std::string run_summary(runtime::Graph& graph);

// RMS and max error of every recorded series against the reference solver
// (the merged diagram, RK4 at `step`), as a table; empty when nothing is
// recorded.
struct ReferenceError {
  std::string signal;
  double rms = 0.0;
  double max = 0.0;
  std::size_t samples = 0;
};
std::vector<ReferenceError> reference_errors(const runtime::Graph& graph, const runtime::Recorder& recorder,
                                             const tasks::ReferenceSolver& reference);

}  // namespace rtcosim::tools
