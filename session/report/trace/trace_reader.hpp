#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace rtcosim::trace_report {

// One frame of one task as the trace recorded it.
struct TracedFrame {
  std::uint64_t frame = 0;
  std::int64_t start_ns = 0;  // trace clock, ns from its origin
  std::int64_t latency_ns = 0;
  std::int64_t exec_ns = 0;
  double step_s = 0.0;
  double sim_s = 0.0;
  bool ended = false;
};

struct TracedOverrun {
  std::int64_t time_ns = 0;
  std::uint64_t frame = 0;
  std::uint64_t missed_periods = 0;
};

struct TracedTask {
  std::string name;
  int cpu = -1;
  int priority = 0;
  double period_s = 0.0;
  std::vector<TracedFrame> frames;
  std::vector<TracedOverrun> overruns;
};

struct TracedLink {
  std::string source, consumer, method;
  std::uint64_t published = 0, dropped = 0, drains = 0;
  std::vector<double> age_s;  // at each drain with data
  // A remote link (DDS), as this host's bridge thread saw it.
  struct Remote {
    std::uint64_t sent = 0, send_errors = 0, received = 0, ring_full = 0, lost = 0, resets = 0;
  } remote;
  [[nodiscard]] bool is_remote() const noexcept {
    return remote.sent + remote.send_errors + remote.received + remote.resets > 0;
  }
};

// What `rtcosim trace report` needs from an rtcosim trace.
struct TraceData {
  std::map<std::uint32_t, TracedTask> tasks;
  std::map<std::uint32_t, TracedLink> links;
  std::uint64_t events = 0;
  std::uint64_t discarded_events = 0;
  std::int64_t first_ns = 0;
};

// Reads the CTF trace under `directory` (an LTTng output directory) with
// babeltrace2's C library. False, with `error` set, when it cannot.
bool read_trace(const std::string& directory, TraceData& out, std::string* error);

}  // namespace rtcosim::trace_report
