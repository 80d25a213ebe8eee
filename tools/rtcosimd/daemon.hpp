#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "coupling/registry.hpp"
#include "runtime/graph.hpp"
#include "runtime/record_file.hpp"
#include "runtime/recorder.hpp"
#include "runtime/rt_executor.hpp"
#include "tasks/block_registry.hpp"

namespace rtcosim::daemon {

struct Options {
  std::string config;                                   // the task-graph file
  std::string socket_path = "/run/rtcosim/control.sock";
  std::size_t max_request_bytes = 1u << 20;             // 1 MiB
  double status_interval = 1.0;                         // seconds between STATUS= updates
};

/*
 * Daemon: rtcosimd's main loop. Loads and validates the graph, prepares the
 * process for real time, runs the tasks, and then serves, in one
 * non-real-time thread, everything else through poll(2): the control socket
 * (line-delimited JSON requests, each client with its own bounded buffer, so
 * a silent or slow client blocks nobody), signals through a signalfd
 * (SIGTERM/SIGINT stop, SIGHUP reloads), the recorder's rings, and systemd's
 * notification socket: READY=1 once every task runs, STATUS= every second,
 * WATCHDOG=1 only while every task makes progress, STOPPING=1 on the way
 * out. Requests never touch a task: they read statistics (atomics) or stop
 * and restart the whole graph.
 */
class Daemon {
 public:
  explicit Daemon(Options options);
  ~Daemon();
  // Runs until SIGTERM/SIGINT; the exit code (0 after a clean stop).
  int run();
  // One request line in, one reply line out (no newline). Public for tests.
  std::string handle(const std::string& line);

 private:
  bool load(const std::string& file, std::string* errors);
  bool start_graph(std::string* error);
  void stop_graph();
  void drain_recorder();
  void notify_status();
  std::string status_json();

  Options options_;
  tasks::BlockRegistry blocks_;
  coupling::MethodRegistry methods_;
  std::string config_file_;
  std::unique_ptr<runtime::Graph> graph_;
  std::unique_ptr<runtime::Recorder> recorder_;
  std::unique_ptr<runtime::RealtimeExecutor> executor_;
  runtime::RealtimeReport report_;
  bool running_ = false;
  std::unique_ptr<runtime::RecordFile> record_file_;
  std::string record_path_;
  std::string record_error_;  // why the last recording ended early
  std::uint64_t reloads_recorded_ = 0;
  struct TraceState;
  std::unique_ptr<TraceState> trace_;
  std::vector<std::uint64_t> last_frames_;
  bool quit_ = false;
};

}  // namespace rtcosim::daemon
