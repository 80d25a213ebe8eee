#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rt_config/graph_spec.hpp"
#include "runtime/recorder.hpp"
#include "runtime/replay_log.hpp"
#include "runtime/virtual_executor.hpp"
#include "session/report/run_summary.hpp"
#include "tasks/block_registry.hpp"

namespace rtcosim::session {

// The recorded series of a what-if replay's logged run (docs/replay.md).
using Baseline = std::vector<runtime::Recorder::Series>;

// The series of `baseline` that records the same signal as `s`, or nullptr.
const runtime::Recorder::Series* baseline_of(const Baseline* baseline, const runtime::Recorder::Series& s);

// Per recorded signal: the what-if's difference to the logged run, at the
// instants both recorded (every sample when the frames are the logged ones).
std::vector<ReferenceError> differences(const runtime::Recorder& recorder, const Baseline& baseline);

// The data files the logged run read (a plant's table, an FMU) that are no
// longer the ones the blocks of `spec` read now: one sentence each. Another file makes
// another run: a replay refuses it, a what-if says so and goes on.
std::vector<std::string> changed_data_files(const runtime::ReplayRecord& record, const config::GraphSpec& spec,
                                            const tasks::BlockRegistry& blocks);

// Why the logged graph's file cannot be the what-if's comparison ("" when
// it can): not a task-graph file here, or no longer as it ran.
std::string logged_graph_refusal(const std::string& file, const runtime::ReplayRecord& record,
                                 std::size_t max_file_bytes);

/*
 * LoggedRun: a what-if's logged run, replayed first for its series; with
 * another period, also the logged timing that the changed graph runs on.
 * `replay_logged` throws Refusal when the changed graph cannot be compared
 * (another overrun policy or rate group; another period where data came
 * from outside), std::runtime_error when the replay stops.
 */
struct LoggedRun {
  Baseline series;
  std::string period_changed;  // the first task whose period the what-if changes
  std::optional<runtime::VirtualExecutor::Timing> timing;
};
LoggedRun replay_logged(const tasks::BlockRegistry& blocks, const config::GraphSpec& logged,
                        const config::GraphSpec& changed, const std::string& logged_file,
                        const runtime::ReplayRecord& record, const std::string& host,
                        const std::vector<std::string>& plugin_dirs);

}  // namespace rtcosim::session
