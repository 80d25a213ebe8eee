#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "runtime/frame_log.hpp"
#include "runtime/graph.hpp"
#include "runtime/recorder.hpp"
#include "runtime/replay_log.hpp"
#include "runtime/thread_unit.hpp"
#include "runtime/virtual_executor.hpp"

namespace rtcosim::runtime {

/*
 * ReplayExecutor: runs a Graph through the frames a replay log holds
 * (docs/replay.md). Each thread of the graph runs the real-time loop
 * (run_unit) on a clock that reads the logged times back, sleeps not at
 * all, and makes every frame drain exactly the blocks the logged frame
 * drained (waiting, when it gets there first, for the producer's replay to
 * publish them) and drop exactly the blocks the run dropped; each live
 * plant source's takes get the rows the run's took. The outputs,
 * steps, statistics and recordings are then the run's, bit for bit.
 *
 * Not real-time: its threads run unpinned at normal priority and wait by
 * yielding; a log that does not fit the graph (a frame waits for a block no
 * frame will publish, or the loop asks for a reading where the log has
 * another word) stops every thread and is reported by `run`.
 */
class ReplayExecutor {
 public:
  // Throws std::runtime_error when the log's threads and tasks are not the
  // graph's (names the first difference).
  ReplayExecutor(Graph& graph, const ReplayRecord& record);

  // Resets the graph and replays every thread to the end of its log.
  // Throws std::runtime_error, before anything runs, when the log's
  // readings claim a longer run than its frames justify (claim_refusal).
  // Returns false (and `why`) when the log did not fit the graph. A frame
  // whose recorder or frame-log ring is full waits (a replay drops nothing
  // the run did not); `drain`, called on this thread every millisecond while
  // the threads run, empties them (the run's batches, docs/replay.md).
  bool run(Recorder* recorder, FrameLog* frame_log, std::string* why, const std::function<void()>& drain = {});

  // Why the run the log's readings claim (its last reading) is longer than
  // its cycles justify at this graph's periods, or empty: each thread's
  // words hold at most ceil((readings - 1) / (3 frames per cycle + 1))
  // cycles, and a cycle may stand for kReplayPeriodsPerCycle periods of its
  // thread; the claim may reach the largest such span of any thread
  // (docs/replay.md, "What a log may claim"). Names the log's file, the
  // claim, the frames, the bound and the thread that sets it.
  [[nodiscard]] std::string claim_refusal() const;

  // The logged timing, kept by the next `run` when asked for: per task its
  // frames (start, and integration point - start), per thread (its owner
  // task) the cycles it slept before (release, and wake-up - release); in
  // time order. 16 bytes a frame.
  struct Span {
    std::int64_t at_ns = 0, ns = 0;
  };
  struct Timings {
    std::map<std::string, std::vector<Span>> frames, cycles;
  };
  void keep_timings(bool keep) noexcept { keep_timings_ = keep; }
  [[nodiscard]] const Timings& timings() const noexcept { return timings_; }
  // The kept timing mapped onto a virtual run (docs/replay.md, "What-if"):
  // a frame that starts at t works as long as the task's logged frame that
  // started last at or before t worked until its integration point; a
  // thread released at r after a sleep wakes as late as its logged cycle
  // released last at or before r woke.
  [[nodiscard]] VirtualExecutor::Timing logged_timing() const;

  // Per task: for each of its input (output) bundles, the index the log
  // gave the bundle from (to) the same task.
  struct BundleMap {
    std::vector<std::size_t> inputs, outputs;
    std::size_t logged_inputs = 0, logged_outputs = 0;  // the logged task's bundles
  };

 private:
  Graph& graph_;
  const ReplayRecord& record_;
  std::vector<ThreadUnit> units_;
  std::vector<std::vector<BundleMap>> maps_;  // per thread, per task
  std::vector<ReplaySource> sources_;         // this graph's live plant sources
  std::vector<std::size_t> source_index_;     // each one's index in the log
  bool keep_timings_ = false;
  Timings timings_;
};

}  // namespace rtcosim::runtime
