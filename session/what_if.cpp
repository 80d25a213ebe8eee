#include "session/what_if.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "base/sha256.hpp"
#include "session/session.hpp"

namespace rtcosim::session {

const runtime::Recorder::Series* baseline_of(const Baseline* baseline, const runtime::Recorder::Series& s) {
  if (!baseline) return nullptr;
  for (const auto& b : *baseline) {
    if (b.signal == s.signal) return &b;
  }
  return nullptr;
}

std::vector<ReferenceError> differences(const runtime::Recorder& recorder, const Baseline& baseline) {
  std::vector<ReferenceError> out;
  for (const auto& s : recorder.series()) {
    const auto* b = baseline_of(&baseline, s);
    if (!b) continue;
    ReferenceError e{s.signal, 0.0, 0.0, 0};
    double sum = 0.0;
    // At the instants both recorded: every sample when the frames are the
    // logged ones; with another period, those the periods share.
    std::size_t j = 0;
    for (std::size_t i = 0; i < s.value.size(); ++i) {
      const double tolerance = 1e-9 * std::max(1.0, std::abs(s.time[i]));
      while (j < b->time.size() && b->time[j] < s.time[i] - tolerance) ++j;
      if (j == b->time.size()) break;
      if (std::abs(b->time[j] - s.time[i]) > tolerance) continue;
      const double d = std::abs(s.value[i] - b->value[j]);
      sum += d * d;
      e.max = std::max(e.max, d);
      ++e.samples;
    }
    e.rms = e.samples > 0 ? std::sqrt(sum / static_cast<double>(e.samples)) : 0.0;
    out.push_back(e);
  }
  return out;
}

std::vector<std::string> changed_data_files(const runtime::ReplayRecord& record, const config::GraphSpec& spec,
                                            const tasks::BlockRegistry& blocks) {
  const auto files = runtime::replay_data_files(spec.diagram, blocks);
  std::vector<std::string> out;
  for (const auto& [name, sha] : record.header.files) {
    const auto now = std::find_if(files.begin(), files.end(), [&](const auto& f) { return f.first == name; });
    if (now != files.end() && now->second == sha) continue;
    out.push_back("the data file of " + name + " is not the one the run read (SHA-256 " + sha.substr(0, 12) +
                  "…, now " + (now == files.end() ? std::string("none") : now->second.substr(0, 12) + "…") + ")");
  }
  return out;
}

std::string logged_graph_refusal(const std::string& file, const runtime::ReplayRecord& record,
                                 std::size_t max_file_bytes) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec) || std::filesystem::file_size(file, ec) > max_file_bytes) {
    return "--what-if compares with the logged run, whose graph '" + file +
           "' is not a task-graph file here — give it with --logged-graph FILE";
  }
  if (base::sha256_hex(file_bytes(file)) != record.header.graph_sha256) {
    return "--what-if compares with the logged run, whose graph " + file + " is no longer as it ran (SHA-256 " +
           record.header.graph_sha256.substr(0, 12) + "…) — put it back or give it with --logged-graph FILE";
  }
  return {};
}

LoggedRun replay_logged(const tasks::BlockRegistry& blocks, const config::GraphSpec& logged,
                        const config::GraphSpec& changed, const std::string& logged_file,
                        const runtime::ReplayRecord& record, const std::string& host,
                        const std::vector<std::string>& plugin_dirs) {
  LoggedRun out;
  // The frames' readings belong to the logged overrun policies and rate
  // groups: others would read them in other roles. Another period runs in
  // virtual time on the log's timing mapped onto it.
  for (const auto& t : changed.tasks) {
    const auto* o = logged.find_task(t.name);
    if (o && (o->overrun != t.overrun || o->rate_group != t.rate_group)) {
      throw Refusal("--what-if: task '" + t.name + "' has another overrun policy or rate group than " +
                    "in the logged run; a replay takes each frame's times from the log, which belong to the " +
                    "logged ones (docs/replay.md, \"What-if\")");
    }
    if (o && o->period != t.period && out.period_changed.empty()) out.period_changed = t.name;
  }
  if (!out.period_changed.empty() && (!record.sources.empty() || !record.header.host.empty())) {
    throw Refusal(
        "--what-if: task '" + out.period_changed + "' has another period, and the logged run took data from outside (" +
        (record.sources.empty() ? "another host" : "live plant source '" + record.sources.front().block + "'") +
        ") that arrived for the logged frames only; keep the periods (docs/replay.md, \"What-if\")");
  }
  SessionOptions options;
  options.graph_file = logged_file;
  options.host = host;
  options.kind = RunKind::kReplay;
  options.keep_series = true;
  options.plugin_dirs = plugin_dirs;
  options.replay = &record;
  options.replay_path = "the logged graph " + logged_file;  // its errors: "the replay of the logged graph ..."
  options.live_sync = false;
  Session session(blocks, logged, options);
  if (!out.period_changed.empty()) session.keep_timings();
  RunObserver quiet;
  (void)session.run(quiet);
  out.series = session.recorder().series();
  out.timing = session.logged_timing();
  return out;
}

}  // namespace rtcosim::session
