#pragma once

// Private to rtcosimd's Daemon: what its four files (daemon.cpp: the graph
// and its reloads; daemon_control.cpp: the socket's requests;
// daemon_recording.cpp: the record request's answer and traces; daemon_loop.cpp:
// the serving loop) share. Not installed, not for other code.

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <utility>

#include "base/json.hpp"
#include "session/report/redaction.hpp"
#include "session/trace_session.hpp"
#include "tools/rtcosimd/daemon.hpp"

namespace rtcosim::daemon {

// What a client sees of a file's diagnostics is the session layer's.
using session::redacted;

struct Daemon::TraceState {
  std::unique_ptr<session::TraceSession> session;
  std::string directory;
};

struct Daemon::PendingTrace {
  std::uint64_t client = 0;
  std::string directory;
  std::future<std::pair<std::unique_ptr<session::TraceSession>, std::string>> result;
};

// A reload whose graph is being built on a worker (docs/daemon.md): the
// client (0: SIGHUP) is answered when it is done.
struct Daemon::PendingReload {
  std::uint64_t client = 0;
  std::future<Prepared> result;
};

// A start waiting for the other hosts' agreement on a worker.
struct Daemon::PendingStart {
  std::uint64_t client = 0;  // 0: answered in the log
  bool at_launch = false;    // the daemon's own start: failing ends it (exit 1)
  std::string ok_reply;
  std::future<std::int64_t> epoch;  // CLOCK_MONOTONIC ns
};

inline std::string reply_ok(const std::string& extra = {}) {
  return "{\"ok\":true" + (extra.empty() ? "" : "," + extra) + "}";
}
inline std::string reply_error(const std::string& why) {
  return "{\"ok\":false,\"error\":" + base::json_string(why) + "}";
}

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Requests of one client served per pass of the loop (docs/daemon.md).
inline constexpr int kRequestsPerPass = 16;

}  // namespace rtcosim::daemon
