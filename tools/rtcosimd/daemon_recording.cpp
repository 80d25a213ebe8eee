#include <algorithm>
#include <array>
#include <bitset>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <system_error>
#include <unordered_set>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/duration.hpp"
#include "base/fd_ostream.hpp"
#include "base/json.hpp"
#include "base/safe_path.hpp"
#include "base/sha256.hpp"
#include "session/record_files.hpp"
#include "session/report/graph_report.hpp"
#include "session/report/graph_svg.hpp"
#include "session/report/recording_summary.hpp"
#include "session/report/redaction.hpp"
#include "session/report/run_summary.hpp"
#include "session/session.hpp"
#include "session/sync/sync_live.hpp"
#include "session/trace_session.hpp"
#include "tools/rtcosimd/control_client.hpp"
#include "tools/rtcosimd/daemon.hpp"
#include "tools/rtcosimd/daemon_internal.hpp"

namespace rtcosim::daemon {

std::string Daemon::record_start(const session::ServiceRecording::Request& request) {
  session::ServiceRecording& recording = graph_.recording();
  if (const std::string why = recording.start(request, graph_.recorded()); !why.empty()) return reply_error(why);
  std::string reply = reply_ok("\"file\":" + base::json_string(recording.path()));
  if (!request.replay_log.empty()) {
    reply.insert(reply.size() - 1, ",\"replay_log\":" + base::json_string(recording.replay_log_path()));
  }
  return reply;
}

std::string Daemon::trace_start(const std::string& dir) {
  std::string reply;
  begin_trace_start(dir, 0, &reply);
  if (!reply.empty()) return reply;
  // Called directly (tests, SIGHUP-less callers): wait for the worker.
  pending_trace_->result.wait();
  return finish_trace_start()->second;
}

void Daemon::begin_trace_start(const std::string& dir, std::uint64_t client, std::string* reply_now) {
  if (trace_) {
    *reply_now = reply_error("already tracing to " + trace_->directory);
    return;
  }
  if (pending_trace_) {
    *reply_now = reply_error("a trace session is being set up");
    return;
  }
  if (dir.empty()) {
    *reply_now = reply_error("trace start needs \"dir\"");
    return;
  }
  // The trace goes to a new directory directly in the recording directory.
  std::string why;
  const auto full = base::make_dir_beneath(options_.recording_dir, dir, 0750, &why);
  if (full.empty()) {
    *reply_now = reply_error("trace: " + why);
    return;
  }
  pending_trace_ = std::make_unique<PendingTrace>();
  pending_trace_->client = client;
  pending_trace_->directory = full;
  pending_trace_->result = std::async(std::launch::async, [full] {
    std::string error;
    auto session = session::TraceSession::start(full, 10000.0, &error);
    return std::make_pair(std::move(session), error);
  });
}

std::optional<std::pair<std::uint64_t, std::string>> Daemon::finish_trace_start() {
  if (!pending_trace_ || pending_trace_->result.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    return std::nullopt;
  }
  auto [session, error] = pending_trace_->result.get();
  const auto client = pending_trace_->client;
  const auto dir = pending_trace_->directory;
  pending_trace_.reset();
  if (!session) return std::make_pair(client, reply_error(error));
  trace_ = std::make_unique<TraceState>();
  trace_->session = std::move(session);
  trace_->directory = dir;
  if (graph_.graph()) graph_.graph()->trace_names();
  return std::make_pair(client, reply_ok("\"dir\":" + base::json_string(dir)));
}

}  // namespace rtcosim::daemon
