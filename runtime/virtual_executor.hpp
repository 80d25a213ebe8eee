#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/graph.hpp"

namespace rtcosim::runtime {

// One executed frame, as virtual time saw it.
struct FrameRecord {
  std::string task;
  std::uint64_t frame = 0;              // the task's own frame index, from 0
  double start = 0.0;                   // wall seconds since the epoch
  double end = 0.0;                     // = the integration point
  double step = 0.0;                    // h of this frame
  double sim_time = 0.0;                // the partition's time after the step
  std::int64_t latency_ns = -1;         // first frame of a cycle whose thread slept: first execution - release
  std::int64_t start_lateness_ns = -1;  // first frame of a cycle: first execution - release
};

/*
 * VirtualExecutor: runs a Graph on a fake clock with the execution times
 * the file scripts (nominal per task, spikes at given frames; 0 when not
 * declared), deterministic and as fast as the machine allows.
 *
 * Each task, or each rate group, is one thread. Threads pinned to the same
 * CPU share one simulated processor under fixed-priority preemptive
 * scheduling, as SCHED_FIFO runs them: a frame released while a
 * lower-priority frame runs preempts it, and the preempted frame ends that
 * much later. An unpinned thread has a processor to itself. A frame reads
 * its links when it first gets its processor; its scripted execution is the
 * work before its integration formulas (the reference's assumption: the
 * derivative evaluation costs, the formulas themselves do not), so its
 * integration point is the end of its execution, where its output blocks
 * become visible to other frames. The execution span (preemptions
 * included) is its execution time.
 *
 * Cycles, steps, overruns, missed periods, wake-up latency (first
 * execution - release, for a thread that had to wait for its release) and
 * start lateness follow the same rules as in real time: ThreadUnit does the
 * bookkeeping for both executors.
 */
class VirtualExecutor {
 public:
  using Observer = std::function<void(TaskRuntime& task, const FrameRecord& frame)>;

  // `keep_frames`: frames() lists every frame of the run (memory grows with
  // the run; for tests and short analyses). Otherwise the observer sees each
  // frame and the executor's memory stays fixed however long the run.
  explicit VirtualExecutor(Graph& graph, bool keep_frames = false);

  // Resets the graph and runs frames that start before `duration`;
  // `at_start` (optional) sees the graph after the reset, before the first
  // frame (a recording's t = 0 sample: Recorder::sample_start).
  void run(double duration, const Observer& observer = {}, const std::function<void(Graph&)>& at_start = {});

  // Timing other than the file's script (a replay's what-if with another
  // period, docs/replay.md): `execution` gives frame `frame` of a task that
  // starts at `start_ns` its execution time (ns); `wake_delay` gives a
  // thread (its owner task) that slept until `release_ns` how much later it
  // wakes (ns). Either may be empty: the file's script, no delay.
  struct Timing {
    std::function<std::int64_t(const TaskRuntime& task, std::uint64_t frame, std::int64_t start_ns)> execution;
    std::function<std::int64_t(const TaskRuntime& owner, std::int64_t release_ns)> wake_delay;
  };
  void set_timing(Timing timing) { timing_ = std::move(timing); }

  // Every frame of the last run; throws std::logic_error unless the executor
  // was made with keep_frames (an empty list would pass for "no frames").
  [[nodiscard]] const std::vector<FrameRecord>& frames() const;

 private:
  Graph& graph_;
  bool keep_frames_;
  Timing timing_;
  std::vector<FrameRecord> frames_;
};

// The scripted execution time of frame k of a task (seconds).
double execution_time(const config::TaskSpec& task, std::uint64_t frame) noexcept;

}  // namespace rtcosim::runtime
