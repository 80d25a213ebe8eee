#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/frame_log.hpp"
#include "runtime/graph.hpp"
#include "runtime/realtime.hpp"
#include "runtime/recorder.hpp"
#include "runtime/replay_log.hpp"
#include "runtime/thread_unit.hpp"

namespace rtcosim::runtime {

/*
 * RealtimeExecutor: runs a Graph on the wall clock, one thread per task (or
 * per rate group), each pinned to its CPU at its SCHED_FIFO priority when
 * permitted. Every thread is set up (pinned, prioritised, stack touched)
 * and its actual policy, priority and CPU read back before the epoch; with
 * `realtime: required` a thread that could not be set up fails `start`
 * before any frame runs. All tasks share one epoch (CLOCK_MONOTONIC after
 * the set-up plus a start delay); simulation time 0 is the epoch.
 *
 * The frame loop is run_unit (unit_loop.hpp), noexcept: nothing in it
 * allocates, locks or blocks except the sleep itself.
 *
 * `stop` may be called from any thread or a signal handler; tasks stop at
 * a cycle boundary.
 */
class RealtimeExecutor {
 public:
  RealtimeExecutor(Graph& graph, Recorder* recorder, RealtimeReport report, FrameLog* frame_log = nullptr);
  ~RealtimeExecutor();

  // Resets the graph (a fresh run), sets up the threads and starts them;
  // frames run until `duration` (0: until stop()) has passed since the
  // epoch. Throws std::runtime_error, with nothing run, when the graph asks
  // for `realtime: required` and a thread could not be set up.
  // `epoch_ns` (CLOCK_MONOTONIC), when not 0, is the epoch itself: hosts of
  // one graph start on the same instant (io/dds_bridge.hpp).
  void start(double duration, double start_delay = 0.05, std::int64_t epoch_ns = 0);
  void stop() noexcept { running_.store(false, std::memory_order_relaxed); }
  // Before start: every frame's readings, drains and drops go to `log`
  // (not owned; nullptr: none), for `rtcosim replay` (docs/replay.md).
  void set_replay_log(ReplayLog* log) noexcept { replay_log_ = log; }
  void join();
  [[nodiscard]] bool finished() const noexcept { return active_.load(std::memory_order_acquire) == 0; }
  // Seconds since the epoch (negative before it).
  [[nodiscard]] double elapsed() const noexcept;
  // Set-up problems the threads met (pinning, priority), one line each.
  [[nodiscard]] std::vector<std::string> thread_errors() const;

 private:
  enum Go : int { kWait = 0, kRun = 1, kAbort = 2 };
  void thread_main(std::size_t unit) noexcept;

  Graph& graph_;
  Recorder* recorder_;
  FrameLog* frame_log_;
  ReplayLog* replay_log_ = nullptr;
  RealtimeReport report_;
  std::vector<ThreadUnit> units_;
  std::vector<std::thread> threads_;
  std::atomic<bool> running_{false};
  std::atomic<int> active_{0};
  std::atomic<int> set_up_{0};  // threads done with their set-up
  std::atomic<int> go_{kWait};
  std::int64_t epoch_ns_ = 0;
  std::int64_t end_ns_ = 0;          // 0: no end
  mutable std::mutex errors_mutex_;  // set-up phase only, never in a frame
  std::vector<std::string> errors_;
};

}  // namespace rtcosim::runtime
