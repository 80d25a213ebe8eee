#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/record_formats.hpp"
#include "io/remote_state.hpp"
#include "rt_config/graph_spec.hpp"
#include "runtime/frame_log.hpp"
#include "runtime/graph.hpp"
#include "runtime/record_file.hpp"
#include "runtime/recorder.hpp"
#include "runtime/replay_log.hpp"
#include "runtime/virtual_executor.hpp"
#include "session/recording.hpp"
#include "session/sync/sync_live.hpp"
#include "tasks/block_registry.hpp"

namespace rtcosim::session {

// What was asked cannot be done with this graph (a host it does not declare,
// a recording format its file name contradicts, a replay of data that arrive
// on their own schedule): the front end reports it as a usage error.
class Refusal : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "" when a process may run `host` of `spec` (or every task, `host` empty);
// otherwise why not, naming `label` (the file) and, without Cyclone DDS in
// this build, `program`. Both front ends refuse with this text.
std::string host_refusal(const config::GraphSpec& spec, const std::string& host, const std::string& label,
                         const std::string& program);

// A file's bytes ("" when it cannot be read): a graph file for its SHA-256
// and for a column file's copy. Set-up only.
std::string file_bytes(const std::string& path);

// A replay's log read and checked (runtime::ReplayRecord::load), with this
// process's live plant sources taken offline: a replay takes their rows from
// the log, and opens no socket, starts no thread, follows no file.
runtime::ReplayRecord load_replay_log(const std::string& path);

// A graph built from its spec: its coupling methods resolved once (the
// file's plugins loaded from `plugin_dirs`), and `host`'s part of it chosen
// ("" for every task). Both front ends build through it. The methods outlive
// the graph, which refers to them: members are destroyed graph first.
struct BuiltGraph {
  std::unique_ptr<coupling::MethodRegistry> methods;
  std::unique_ptr<runtime::Graph> graph;
};
// The graph takes `spec` over (runtime::Graph::build): pass an rvalue where the caller needs no copy.
BuiltGraph build_graph(config::GraphSpec spec, const tasks::BlockRegistry& blocks,
                       const std::vector<std::string>& plugin_dirs, const std::string& host);

/*
 * Sinks: where a run's observations go, drained off the tasks' CPUs by the
 * thread that runs the session: the recorded signals in their format
 * (session::Recording; without a file the recorder only keeps its series in
 * memory), the frame log and its --frames CSV, and the replay log's batch
 * ends. One drain for all, so that a new sink is added here and nowhere
 * else.
 *
 * Ownership: owns the files; the recorder and the replay log are the
 * session's. Not real-time: every member runs on the draining thread.
 */
struct Sinks {
  runtime::Recorder& recorder;
  std::unique_ptr<Recording> signals;
  std::unique_ptr<runtime::FrameLog> frame_log;
  std::unique_ptr<runtime::RecordFile> frames_csv;
  runtime::ReplayLog* replay_log = nullptr;

  [[nodiscard]] runtime::ColumnFile* columns() const { return signals ? signals->columns() : nullptr; }
  [[nodiscard]] runtime::RecordTarget* target() const { return signals ? &signals->target() : nullptr; }
  void drain();
  // A replay: the run's batches, each task up to the counts it had drained.
  void drain(const runtime::ReplayRecord::Batch& batch);
  void finish();
};

enum class RunKind { kRealtime, kVirtual, kReplay };

// What a session is asked to run; the front ends fill it from their options.
struct SessionOptions {
  std::string graph_file;  // where the spec was read (the replay log's header, a column file's copy)
  std::string host;        // the host this process runs; "" for every task
  RunKind kind = RunKind::kRealtime;
  double duration = 0.0;                   // seconds; 0: until stopped (real time only)
  bool keep_series = false;                // every sample in memory: plots, reference errors, what-if, sync
  std::string record_path;                 // "" for no recording file
  bool record_format_from_path = false;    // given on the command line: its extension wins over the file's `format:`
  std::optional<std::string> frames_path;  // --frames
  std::optional<std::string> replay_log_path;  // --replay-log: log this real-time run
  std::string graph_sha256;                    // of the file's bytes, for the replay log
  std::vector<std::string> plugin_dirs;
  const runtime::ReplayRecord* replay = nullptr;  // a replay's log, which outlives the session
  std::string replay_path;                        // where that log was read, for its errors
  bool live_sync = true;  // the file's `sync.optimise` beside the run (not for a what-if's logged run)
};

/*
 * RunObserver: what a run tells whoever drives it, as it happens: the front
 * ends print it (rtcosim to the terminal), the session never does.
 * Every member is called on the thread that called Session::run.
 */
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void warning(const std::string& /*text*/) {}
  virtual void error(const std::string& /*text*/) {}
  // With other hosts: before the wait for them, and when they agreed.
  virtual void waiting_for_hosts(const runtime::Graph& /*graph*/) {}
  virtual void hosts_agree(std::int64_t /*start_realtime_ns*/) {}
  virtual void host_lost(const std::string& /*host*/, double /*elapsed_s*/) {}
  // A real-time run, once per second of it.
  virtual void progress(double /*elapsed_s*/, std::uint64_t /*frames*/, std::uint64_t /*overruns*/,
                        std::int64_t /*worst_wakeup_ns*/) {}
  // The real-time run's tasks started (request_stop reaches them from now
  // on), and its loop is over, the tasks about to be stopped.
  virtual void started() {}
  virtual void stopping() {}
  // The real-time run stopped: where the DDS bridge's thread ran ("" alone).
  virtual void stopped(const std::string& /*bridge_placement*/) {}
  // Polled in a virtual run every few thousand frames: true stops it there
  // (what it ran is kept and written).
  virtual bool interrupted() { return false; }
};

/*
 * Session: one run of one task graph, from its spec to its files. It
 * resolves the graph's coupling methods once, builds the graph (this
 * host's part of it), its recorder (rings sized for a replay's batches),
 * the live synchronisation and the sinks, and runs it on the executor its
 * kind picks: real time (session::RealtimeRun), virtual time, a replay of a
 * log, or a what-if on a logged run's timing mapped onto other periods.
 *
 *   Session s(blocks, spec, options);   builds; throws Refusal or
 *                                        std::runtime_error, nothing run
 *   s.run(observer);                     the run; the sinks drained
 *   s.commit() ...                       the files replace their targets
 *
 * Ownership: the spec is copied in; the block registry and a replay's log
 * are the caller's and outlive it. Members are declared so that each
 * outlives those built from it (methods → graph → recorder → sinks).
 * Real-time surface: none; the frames are the executors'. request_stop()
 * alone may be called from a signal handler.
 */
class Session {
 public:
  Session(const tasks::BlockRegistry& blocks, config::GraphSpec spec, SessionOptions options);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // The graph's spec: the session keeps no copy of its own.
  [[nodiscard]] const config::GraphSpec& spec() const noexcept { return graph_->spec(); }
  [[nodiscard]] runtime::Graph& graph() noexcept { return *graph_; }
  [[nodiscard]] runtime::Recorder& recorder() noexcept { return *recorder_; }
  [[nodiscard]] Sinks& sinks() noexcept { return *sinks_; }
  [[nodiscard]] LiveSync* live() noexcept { return live_.get(); }
  [[nodiscard]] runtime::RecordFormat record_format() const noexcept { return format_; }
  [[nodiscard]] const SessionOptions& options() const noexcept { return options_; }

  // Opens the replay log (options().replay_log_path) for a real-time run;
  // Refusal when the graph cannot be replayed exactly.
  void open_replay_log();
  // A virtual run on a logged run's timing mapped onto this graph's
  // periods (a what-if with another period, docs/replay.md).
  void set_timing(runtime::VirtualExecutor::Timing timing) { timing_ = std::move(timing); }

  // The run on the executor options().kind picks; the sinks are drained as
  // it goes and finished at its end. True unless the observer interrupted a
  // virtual run (what it ran is drained and finished all the same).
  bool run(RunObserver& observer);
  // Async-signal-safe: a real-time run's tasks end at their next cycle.
  void request_stop() noexcept;

  // A real-time run: whether its tasks ran SCHED_FIFO, and what the DDS
  // bridge measured (points into the graph).
  [[nodiscard]] bool fifo() const noexcept { return fifo_; }
  [[nodiscard]] std::shared_ptr<const io::RemoteState> remote() const { return remote_; }
  [[nodiscard]] runtime::ReplayLog* replay_log() noexcept { return replay_log_.get(); }
  // A replay's logged timing, kept when asked before run() (a what-if's
  // logged run, whose timing the changed graph then runs on).
  void keep_timings() { keep_timings_ = true; }
  [[nodiscard]] std::optional<runtime::VirtualExecutor::Timing> logged_timing() const { return logged_timing_; }

 private:
  void build_recorder();
  void open_sinks();
  void run_realtime(RunObserver& observer);
  void run_replay();
  bool run_virtual(RunObserver& observer, bool interruptible);

  const tasks::BlockRegistry& blocks_;
  const SessionOptions options_;
  runtime::RecordFormat format_ = runtime::RecordFormat::kCsv;
  std::size_t frame_rows_ = 1u << 15;
  std::unique_ptr<coupling::MethodRegistry> methods_;
  std::unique_ptr<runtime::Graph> graph_;
  std::unique_ptr<runtime::Recorder> recorder_;
  std::unique_ptr<LiveSync> live_;
  std::unique_ptr<Sinks> sinks_;
  std::unique_ptr<runtime::ReplayLog> replay_log_;
  std::optional<runtime::VirtualExecutor::Timing> timing_;
  bool keep_timings_ = false;
  std::optional<runtime::VirtualExecutor::Timing> logged_timing_;
  bool fifo_ = false;
  std::shared_ptr<const io::RemoteState> remote_;
  std::atomic<class RealtimeRun*> running_{nullptr};
};

}  // namespace rtcosim::session
