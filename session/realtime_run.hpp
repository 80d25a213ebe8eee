#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/remote_state.hpp"
#include "runtime/frame_log.hpp"
#include "runtime/graph.hpp"
#include "runtime/realtime.hpp"
#include "runtime/recorder.hpp"
#include "runtime/replay_log.hpp"
#include "runtime/rt_executor.hpp"

namespace rtcosim::io {
class DdsBridge;
}

namespace rtcosim::session {

/*
 * RealtimeRun: the threads of one real-time run of a built graph, set up,
 * started on one epoch and stopped in one order. `rtcosim run` and rtcosimd
 * both run a graph through it, so the two cannot drift apart:
 *
 *   prepare()        the process: memory lock, SCHED_FIFO permission (once)
 *   open_bridge()    with other hosts: the DDS bridge
 *   coordinate()     with other hosts: the common epoch
 *                    (blocks up to dds.discovery_timeout; may run on a helper
 *                    thread while the caller serves others; cancel_coordination
 *                    ends it within a round)
 *   start()          the executor's task threads on that epoch, then the
 *                    bridge's threads, whose samples feed them
 *   take_events()    on the drain thread: hosts that fell silent, clock
 *                    warnings, since the last call
 *   stop()           tasks first (at a cycle boundary), joined, then the
 *                    bridge; idempotent, and the destructor's
 *
 * Ownership: it owns the executor, the bridge and what the bridge measures
 * (io::RemoteState, shared so that a summary can read it after the run is
 * gone; it points into the graph, so it must not outlive it). The graph, the recorder,
 * the frame log and the replay log are the caller's and outlive it; the
 * caller drains the recorder (it is the recording's writer).
 * Real-time surface: none of its members runs in a frame; the frames are
 * the executor's (runtime/rt_executor.hpp). `request_stop` alone may be
 * called from a signal handler.
 */
class RealtimeRun {
 public:
  RealtimeRun(runtime::Graph& graph, runtime::Recorder* recorder, runtime::FrameLog* frame_log = nullptr);
  ~RealtimeRun();
  RealtimeRun(const RealtimeRun&) = delete;
  RealtimeRun& operator=(const RealtimeRun&) = delete;

  // The process set-up for the graph's `realtime:` and its highest task
  // priority. With `required` and a missing permission, report().ok is
  // false and nothing may be started.
  const runtime::RealtimeReport& prepare();
  // Moves the calling thread off the CPUs the tasks are pinned to; "" or a
  // warning that says why it could not.
  [[nodiscard]] std::string pin_caller_off_task_cpus() const;

  // Whether the graph runs on several hosts (a DDS bridge joins them).
  [[nodiscard]] bool distributed() const noexcept;
  // With other hosts: makes the DDS bridge (throws std::runtime_error when
  // it cannot: no DDS in this build, a security set-up that failed). On the
  // caller's thread, before coordinate(), so that cancel_coordination and
  // take_events never race with its creation.
  void open_bridge();
  // With other hosts: waits until every host agrees and returns the common
  // epoch on CLOCK_MONOTONIC, and the announced start on CLOCK_REALTIME in
  // `*realtime_ns`. Throws std::runtime_error (nothing started) when the
  // hosts do not agree in time or it was cancelled.
  // Without other hosts: 0 (the executor chooses the epoch).
  std::int64_t coordinate(std::int64_t* realtime_ns = nullptr);
  // Any thread: a coordinate() under way throws within a round (20 ms).
  void cancel_coordination() noexcept;

  // Starts the task threads (frames until `duration`, 0: until stopped)
  // on `epoch_ns` (0: the executor's own), then the bridge. Throws, with
  // nothing running, when `realtime: required` and a thread could not be
  // set up. `replay_log` (not owned) logs the run (docs/replay.md).
  void start(double duration, std::int64_t epoch_ns, runtime::ReplayLog* replay_log = nullptr);
  [[nodiscard]] bool started() const noexcept { return executor_ != nullptr; }
  [[nodiscard]] bool finished() const noexcept;
  // Seconds since the epoch (0 before start).
  [[nodiscard]] double elapsed() const noexcept;
  // Set-up problems the task threads met (pinning, priority), one line each.
  [[nodiscard]] std::vector<std::string> thread_errors() const;

  struct Events {
    std::vector<std::string> lost_hosts;      // fell silent (each once)
    std::vector<std::string> clock_warnings;  // clock offsets beyond the file's bound
  };
  Events take_events();
  // Seconds without an announce after which a host counts as lost.
  [[nodiscard]] static double host_silence() noexcept;

  // Async-signal-safe: the tasks end at their next cycle boundary.
  void request_stop() noexcept;
  // Stops and joins the tasks, then the bridge; "" or how the bridge's
  // thread ran ("fifo 70 cpu 0"), for the summary.
  std::string stop();

  [[nodiscard]] const runtime::RealtimeReport& report() const noexcept { return report_; }
  // The remote links' counters and the other hosts' clocks (zero without a
  // bridge), reset by each start.
  [[nodiscard]] std::shared_ptr<const io::RemoteState> remote() const noexcept { return remote_; }

 private:
  runtime::Graph& graph_;
  runtime::Recorder* recorder_;
  runtime::FrameLog* frame_log_;
  runtime::RealtimeReport report_;
  std::shared_ptr<io::RemoteState> remote_;  // before bridge_: it outlives the bridge
  std::unique_ptr<io::DdsBridge> bridge_;
  std::unique_ptr<runtime::RealtimeExecutor> executor_;
};

}  // namespace rtcosim::session
