#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "coupling/registry.hpp"
#include "io/remote_state.hpp"
#include "rt_config/loader.hpp"
#include "runtime/graph.hpp"
#include "runtime/realtime.hpp"
#include "runtime/recorder.hpp"
#include "session/realtime_run.hpp"
#include "session/service_recording.hpp"
#include "session/sync/sync_live.hpp"
#include "tasks/block_registry.hpp"

namespace rtcosim::session {

// A graph built from a loaded file, not yet running: what a reload builds
// beside a service's loop before the loop swaps it in (ServiceGraph::install).
struct PreparedGraph {
  std::string text, label;  // what it was built from, and the file's name
  std::string error;        // refused: why, one line per problem
  std::string warnings;     // the loader's diagnostics of a file that loads
  std::unique_ptr<coupling::MethodRegistry> methods;
  std::unique_ptr<runtime::Graph> graph;
  std::vector<std::pair<std::string, std::string>> data_files;  // runtime::replay_data_files
};

struct ServiceGraphOptions {
  std::string host;  // this host's part of a graph across hosts; "" for every task
  std::vector<std::string> plugin_dirs;
  std::string program = "rtcosimd";  // named in the host refusal
  // The live view: the recorder keeps 4096 samples per signal for its
  // charts, with `probes` probe slots (a state synchronisation keeps 4096 too).
  bool live_view = false;
  std::size_t probes = 0;
};

// One look at a running graph's tasks, for a service's status and watchdog.
struct ServiceProgress {
  std::uint64_t frames = 0, overruns = 0;
  std::int64_t worst_wakeup_ns = 0;
  bool advancing = true;  // every local, live task framed since the last look
  std::string failed;     // the first task that stopped on a failure, or ""
  std::string ended;      // the first task whose model ended the run, or ""
};

/*
 * ServiceGraph: the graph a service keeps loaded for months (rtcosimd):
 * built from a file (prepare, const, so that it may run on a worker beside
 * the service's loop), swapped in (install), started, stopped and started
 * again, with its recorder, its live synchronisation and its recording
 * (session::ServiceRecording), which goes on across reloads.
 *
 *   prepare(loaded)          a graph built, or why not; nothing changes
 *   install(prepared)        the running graph stopped and replaced
 *   set_up_start()           the run's threads set up, not started
 *   open_bridge/coordinate   with other hosts: their common epoch
 *                            (coordinate may run on a worker)
 *   launch(epoch)            the tasks run; abandon_start() instead gives up
 *   stop()                   the tasks stopped, the recorder drained
 *
 * Ownership: owns the methods, the graph, its recorder, the live
 * synchronisation, the run and the recording; the block registry is the
 * caller's and outlives it. Not real-time: every member runs on the
 * service's loop (coordinate and prepare excepted, as said); the frames are
 * the executor's.
 */
class ServiceGraph {
 public:
  // The recording's files go beneath `recording_dir`; `log` takes what the
  // service should log, one line each.
  ServiceGraph(const tasks::BlockRegistry& blocks, ServiceGraphOptions options, std::string recording_dir,
               std::function<void(const std::string&)> log);
  ~ServiceGraph();
  ServiceGraph(const ServiceGraph&) = delete;
  ServiceGraph& operator=(const ServiceGraph&) = delete;

  // Builds a graph from a loaded file: refused (error set) when it has
  // errors, cannot run in real time, lacks this host, or cannot be built.
  [[nodiscard]] PreparedGraph prepare(const config::LoadResult& loaded, const std::string& text,
                                      const std::string& label) const;
  // Stops the running graph and puts `prepared` (built, not refused) in its
  // place, with a fresh recorder; the recording goes on. Throws
  // std::runtime_error with the old graph stopped when the recorder cannot
  // be made.
  void install(PreparedGraph&& prepared);

  // The first step of a start: "" when the run's threads are set up (its
  // warnings appended), else why not (nothing runs).
  std::string set_up_start(std::vector<std::string>* warnings);
  [[nodiscard]] bool distributed() const noexcept { return run_ && run_->distributed(); }
  // With other hosts, after set_up_start: the bridge (throws, the start
  // abandoned), then the epoch they agree on (throws; may run on a worker
  // while the loop goes on; cancel_coordination ends it within a round).
  void open_bridge();
  [[nodiscard]] RealtimeRun& run() noexcept { return *run_; }
  // The last step: the tasks run from `epoch_ns` (0: now); "" or why not.
  std::string launch(std::int64_t epoch_ns, std::vector<std::string>* warnings);
  // A start that will not launch (the hosts did not agree, it was cancelled).
  void abandon_start() noexcept;
  // Stops the tasks and drains the recorder; nothing when nothing runs.
  void stop();
  // On the service's loop: the recorder's rings into the recording.
  void drain();
  // A real-time run's news since the last call, and its tasks' progress.
  [[nodiscard]] RealtimeRun::Events take_events();
  [[nodiscard]] ServiceProgress progress();
  // The tasks that stopped on a failure, as a JSON array's members.
  [[nodiscard]] std::string failed_json() const;

  [[nodiscard]] runtime::Graph* graph() noexcept { return graph_.get(); }
  [[nodiscard]] runtime::Recorder* recorder() noexcept { return recorder_.get(); }
  [[nodiscard]] LiveSync* live_sync() noexcept { return live_sync_.get(); }
  [[nodiscard]] const io::RemoteState* remote() const noexcept { return remote_.get(); }
  [[nodiscard]] bool running() const noexcept { return running_; }
  [[nodiscard]] bool fifo() const noexcept { return report_.fifo; }
  [[nodiscard]] const std::string& file() const noexcept { return file_; }
  [[nodiscard]] const std::string& text() const noexcept { return text_; }

  [[nodiscard]] ServiceRecording& recording() noexcept { return recording_; }
  // What the recording records: the installed graph.
  [[nodiscard]] ServiceRecording::Target recorded();
  // The recording completed into its file: "" or why it failed.
  std::string end_recording() { return recording_.end(recorded()); }

 private:
  const tasks::BlockRegistry& blocks_;
  const ServiceGraphOptions options_;
  std::unique_ptr<coupling::MethodRegistry> methods_;
  std::string file_;  // the graph's file as loaded
  std::string text_;  // what the installed graph was built from
  std::vector<std::pair<std::string, std::string>> data_files_;
  std::unique_ptr<runtime::Graph> graph_;
  std::unique_ptr<runtime::Recorder> recorder_;
  // Made fresh at each start; it reads the recorder and posts to the
  // graph's tasks, so it is declared after them (and goes first).
  std::unique_ptr<LiveSync> live_sync_;
  std::unique_ptr<RealtimeRun> run_;
  // The last run's DDS counters and clocks, kept after run_ goes so that
  // status and the final summary show them; points into graph_.
  std::shared_ptr<const io::RemoteState> remote_;
  runtime::RealtimeReport report_;
  bool running_ = false;
  std::vector<std::uint64_t> last_frames_;
  ServiceRecording recording_;
};

}  // namespace rtcosim::session
