#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rtcosim::runtime {
class Graph;
}

namespace rtcosim::session {

// Whether this build emits tracepoints (it was built with LTTng-UST).
bool tracing_built() noexcept;
// The events a second the graph's frames emit when traced: per frame its
// start and end, and per wire it publishes a link_publish and its
// consumer's link_drain (one bundle carries many wires). Sizes the
// session's sub-buffers.
double trace_event_rate(runtime::Graph& graph);

/*
 * An LTTng tracing session around a run, driven through lttng-tools' `lttng`
 * command: starts lttng-sessiond when none runs (and the user may), creates
 * a session writing to DIR with one user-space channel tuned for real-time
 * tasks (per-UID buffers, discard mode rather than blocking the tasks,
 * sub-buffers sized from the expected event rate, a read timer so that the
 * consumer daemon polls and no task thread ever wakes it with a system
 * call), enables the `rtcosim:*`
 * events of this process only, waits until this process has registered
 * with the daemon (a short run would otherwise be over before lttng-ust's
 * registration retry) and starts it; `stop` stops and destroys it and
 * reports how many events were discarded. Set-up code: spawns processes, never on the
 * real-time path.
 */
class TraceSession {
 public:
  // nullptr and `error` set when tracing cannot start (no lttng-tools, no
  // session daemon, this process never registered with it, a command that
  // failed: the message says which).
  static std::unique_ptr<TraceSession> start(const std::string& directory, double events_per_second,
                                             std::string* error);
  ~TraceSession();

  // Stops and destroys the session; returns the discarded-event count the
  // session daemon reported (0 when it reported none).
  std::uint64_t stop();
  // After stop: why the stop or the destroy failed, or "".
  [[nodiscard]] const std::string& stop_error() const noexcept { return stop_error_; }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] std::uint64_t subbuffer_bytes() const noexcept { return subbuffer_bytes_; }
  // The consumer daemon's polling period (microseconds).
  [[nodiscard]] int read_timer_us() const noexcept { return read_timer_us_; }

 private:
  TraceSession() = default;
  std::string name_;
  bool running_ = false;
  std::string stop_error_;
  std::uint64_t subbuffer_bytes_ = 0;
  int read_timer_us_ = 0;
};

// Stops the per-user lttng-sessiond that TraceSession::start started in this
// process (a non-root user's; a root session daemon serves the whole machine
// and is left alone), and only that one: SIGTERM, then up to `wait_s` for it
// to go. False when it was still there after that. Call on the way out.
bool stop_sessiond_started_here(double wait_s = 5.0);

// Runs a command (argv[0] searched in PATH) and returns its exit status and
// its standard output and error, merged; -1 when it could not be run
// (`output` then says why) or its exit status is unknown (killed by a
// signal, reaped elsewhere).
int run_command(const std::vector<std::string>& argv, std::string* output);

}  // namespace rtcosim::session
