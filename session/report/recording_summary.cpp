#include "session/report/recording_summary.hpp"

#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>

#include "base/json.hpp"

namespace rtcosim::session {

namespace {

struct TaskRow {
  std::string name;
  std::uint64_t samples = 0, dropped = 0;
  std::optional<std::uint64_t> frame_log_dropped;
};

std::vector<TaskRow> task_rows(runtime::Graph& graph, const RecordingState& state) {
  std::vector<TaskRow> rows;
  const auto counts = state.recorder ? state.recorder->counts() : std::vector<runtime::Recorder::TaskCounts>{};
  const auto frame_drops = state.frame_log ? state.frame_log->dropped_per_task() : std::vector<std::uint64_t>{};
  for (auto& t : graph.tasks()) {
    if (!t->local()) continue;  // another host records it
    TaskRow row{t->spec().name, 0, 0, std::nullopt};
    for (const auto& c : counts) {
      if (c.task == row.name) {
        row.samples = c.samples;
        row.dropped = c.dropped;
      }
    }
    if (state.frame_log) {
      const auto& names = state.frame_log->task_names();
      for (std::size_t i = 0; i < names.size(); ++i) {
        if (names[i] == row.name) row.frame_log_dropped = frame_drops[i];
      }
    }
    rows.push_back(row);
  }
  return rows;
}

std::string number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

std::string recording_summary(runtime::Graph& graph, const RecordingState& state) {
  const bool recording = state.recorder && !state.recorder->empty();
  if (!recording && !state.frame_log) return {};
  std::ostringstream out;
  char line[160];
  out << "recording:\n";
  std::snprintf(line, sizeof line, "  %-14s%12s%12s%20s\n", "name", "samples", "dropped", "frame log dropped");
  out << line;
  for (const auto& r : task_rows(graph, state)) {
    std::snprintf(line, sizeof line, "  %-14s%12llu%12llu%20s\n", r.name.c_str(),
                  static_cast<unsigned long long>(r.samples), static_cast<unsigned long long>(r.dropped),
                  r.frame_log_dropped ? std::to_string(*r.frame_log_dropped).c_str() : "-");
    out << line;
  }
  if (!state.error.empty()) out << "  error: " << state.error << '\n';
  return out.str();
}

std::string recording_json(runtime::Graph& graph, const RecordingState& state) {
  const auto* f = state.file;
  std::string out = "{\"file\":" + (f ? base::json_string(f->path()) : std::string("null")) +
                    ",\"error\":" + (state.error.empty() ? std::string("null") : base::json_string(state.error)) +
                    ",\"samples_written\":" + std::to_string(f ? f->samples_written() : 0) +
                    ",\"samples_lost\":" + std::to_string(f ? f->samples_lost() : 0) +
                    ",\"time_reached_s\":" + number(f ? f->time_reached() : 0.0) + ",\"tasks\":[";
  bool first = true;
  for (const auto& r : task_rows(graph, state)) {
    out += first ? "" : ",";
    first = false;
    out += "{\"name\":" + base::json_string(r.name) + ",\"samples\":" + std::to_string(r.samples) +
           ",\"dropped\":" + std::to_string(r.dropped) + ",\"frame_log_dropped\":" +
           (r.frame_log_dropped ? std::to_string(*r.frame_log_dropped) : std::string("null")) + "}";
  }
  out += "],\"latest\":[";
  first = true;
  if (state.recorder) {
    for (const auto& s : state.recorder->series()) {
      if (s.time.empty()) continue;
      out += first ? "" : ",";
      first = false;
      out += "{\"signal\":" + base::json_string(s.signal) + ",\"task\":" + base::json_string(s.task) +
             ",\"time_s\":" + number(s.time.back()) + ",\"value\":" + number(s.value.back()) + "}";
    }
  }
  return out + "]}";
}

}  // namespace rtcosim::session
