#pragma once

#include <string>

#include "runtime/frame_log.hpp"
#include "runtime/graph.hpp"
#include "runtime/record_file.hpp"
#include "runtime/recorder.hpp"

namespace rtcosim::session {

// What was recorded and what was lost, per task (docs/recording.md): the
// recorder's samples and ring drops, the frame log's ring drops, and the
// file's state. Any pointer may be null (nothing of that kind in this run).
struct RecordingState {
  const runtime::Recorder* recorder = nullptr;
  const runtime::RecordTarget* file = nullptr;
  const runtime::FrameLog* frame_log = nullptr;
  std::string error;  // why the recording ended early, or empty
};

// The "recording:" block of the run summary (empty when nothing is recorded).
std::string recording_summary(runtime::Graph& graph, const RecordingState& state);

// {"file":…,"error":…,"samples_written":…,"samples_lost":…,"time_reached_s":…,
//  "tasks":[{"name":…,"samples":…,"dropped":…,"frame_log_dropped":…}],
//  "latest":[{"signal":…,"task":…,"time_s":…,"value":…}]}
std::string recording_json(runtime::Graph& graph, const RecordingState& state);

}  // namespace rtcosim::session
