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

namespace rtcosim::runtime {

/*
 * RealtimeExecutor: runs a Graph on the wall clock, one thread per task (or
 * per rate group), each pinned to its CPU at its SCHED_FIFO priority when
 * permitted. All tasks share one epoch (CLOCK_MONOTONIC at start plus a
 * start delay, so that every thread is set up before the first deadline);
 * simulation time 0 is the epoch.
 *
 * The frame loop is the framework's, noexcept: sleep to the absolute
 * deadline (clock_nanosleep, TIMER_ABSTIME), measure the wake-up latency,
 * drain the input links, take the step from the step policy just before
 * the integration, step, publish, record, measure the execution time,
 * advance the deadline (overruns and missed periods counted). Nothing in it
 * allocates, locks or blocks except the sleep itself.
 *
 * `stop` may be called from any thread or a signal handler; tasks stop at
 * a frame boundary.
 */
class RealtimeExecutor {
 public:
  RealtimeExecutor(Graph& graph, Recorder* recorder, RealtimeReport report, FrameLog* frame_log = nullptr);
  ~RealtimeExecutor();

  // Resets the graph and starts the threads; frames run until `duration`
  // (0: until stop()) has passed since the epoch.
  void start(double duration, double start_delay = 0.05);
  void stop() noexcept { running_.store(false, std::memory_order_relaxed); }
  void join();
  [[nodiscard]] bool finished() const noexcept { return active_.load(std::memory_order_acquire) == 0; }
  // Seconds since the epoch (negative before it).
  [[nodiscard]] double elapsed() const noexcept;
  // Set-up problems the threads met (pinning, priority).
  [[nodiscard]] std::vector<std::string> thread_errors() const;

 private:
  struct Unit {
    std::vector<TaskRuntime*> members;  // fast first, the slowest last
    std::vector<std::size_t> index;     // each member's index in the graph
    std::size_t ratio = 1;
  };
  void thread_main(const Unit& unit) noexcept;
  std::int64_t now_ns() const noexcept;

  Graph& graph_;
  Recorder* recorder_;
  FrameLog* frame_log_;
  RealtimeReport report_;
  std::vector<Unit> units_;
  std::vector<std::thread> threads_;
  std::atomic<bool> running_{false};
  std::atomic<int> active_{0};
  std::int64_t epoch_ns_ = 0;
  std::int64_t end_ns_ = 0;  // 0: no end
  mutable std::mutex errors_mutex_;  // set-up phase only, never in a frame
  std::vector<std::string> errors_;
};

}  // namespace rtcosim::runtime
