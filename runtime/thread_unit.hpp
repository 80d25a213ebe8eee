#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "runtime/graph.hpp"
#include "runtime/step_policy.hpp"

namespace rtcosim::runtime {

/*
 * ThreadUnit: one thread of a graph, a task or a rate group, and the
 * bookkeeping both executors share, so that a frame's step, a cycle's
 * overrun and every statistic mean the same in real and in virtual time.
 *
 * A cycle is one release of the thread: for a lone task one frame; for a
 * rate group, period_slowest / period_member frames of each member, the
 * fastest first, then one frame of the slowest member, which owns the
 * cycle (its overruns, missed periods, wake-up latency, start lateness and
 * cycle time). Every member counts its own frames, execution time, steps
 * and lag.
 *
 * Steps: a frame's integration point is the instant just before its
 * integration formulas run. The slowest (or only) member takes its step
 * from its StepPolicy at that instant; a fast member of a group takes its
 * period, or, with measured steps, the group's last measured cycle divided
 * by its frames per cycle (reference section 10.2: the N actuator steps
 * after airframe step n share T_n).
 *
 * Set-up (`thread_units`) allocates; everything else is noexcept and
 * allocation-free: the real-time path.
 */
struct ThreadUnit {
  std::vector<TaskRuntime*> members;          // fastest first, the cycle's owner last
  std::vector<std::size_t> index;             // each member's index in the graph
  std::vector<std::size_t> frames_per_cycle;  // per member: period_owner / period_member
  std::vector<std::size_t> plan;              // the member of each frame of a cycle, in order
  Deadlines deadlines{0, 1, Deadlines::Overrun::kCatchUp};
  double measured_cycle = 0.0;  // the owner's last step, for the fast steps of a measured group
  // The input links a cycle may wait for (`data_wait`): those of its
  // fixed-step members with a finite horizon whose producer runs in this
  // process, and how long a wait lasts before the cycle looks again: the
  // shortest of those producers' periods, at most the owner's.
  struct WaitLink {
    TaskRuntime* consumer = nullptr;
    const LinkBundle* bundle = nullptr;
    const TaskRuntime* producer = nullptr;
    double reach = 0.0;  // seconds past the newest tag a step may end while the producer lags
    bool first = false;  // the producer runs first: same processor, higher priority
  };
  std::vector<WaitLink> wait_links;
  std::int64_t data_wait_ns = 0;

  [[nodiscard]] TaskRuntime& owner() const noexcept { return *members.back(); }
  [[nodiscard]] bool is_owner(std::size_t member) const noexcept { return member + 1 == members.size(); }

  // A fresh run whose first release is at `first_release_ns` and which ends
  // at `end_ns` (0: when stopped).
  void reset(std::int64_t first_release_ns, std::int64_t end_ns = 0) noexcept;

  // The step of a frame of `member` whose integration point is at `wall`
  // (seconds since the epoch).
  double step_of(std::size_t member, double wall) noexcept;

  // A frame of `member` ran from start_ns to end_ns with step h (after
  // TaskRuntime::step): frames, execution time, lag, lost real time.
  void frame_done(std::size_t member, std::int64_t start_ns, std::int64_t end_ns, double wall) noexcept;

  // A cycle released at deadlines.release() started at start_ns; `slept`
  // when the thread blocked until its release and woke at wake_ns.
  void cycle_started(std::int64_t start_ns, bool slept, std::int64_t wake_ns) noexcept;

  // The cycle that started at start_ns ended at end_ns: cycle time, overrun
  // and missed periods, next release. Returns whether it overran.
  bool cycle_done(std::int64_t start_ns, std::int64_t end_ns) noexcept;

  // Whether the cycle about to start at now_ns waits for data first, and
  // for how long (0: start now): a fixed step does not run ahead of a
  // producer that lags (docs/stalls.md, "A fixed step waits for its
  // data"). A member's step would end past the newest tag of a `wait_links`
  // link plus its reach (the consumer's period; half of it where the
  // producer runs first on the shared processor, as its data then always
  // lies ahead) while that producer is behind its releases (a period or
  // more; where it runs first, at all, since this thread runs only while
  // that one is not ready). Running on would extrapolate that link beyond
  // anything normal operation does; waiting gives the producer the
  // processor for its own catch-up, so the two interleave as they run on
  // time. A producer that publishes nothing is waited for up to the link's
  // horizon since its last progress, then not again until it publishes;
  // a failed one not at all. Drains the members' links (the frames drain
  // again).
  std::int64_t data_wait(std::int64_t now_ns) noexcept;

  // The run ends at until_ns: releases left unserved are missed.
  void finish(std::int64_t until_ns) noexcept;

 private:
  // Every member's TaskStats::next_release_ns, for its consumers' data_wait.
  void publish_release() noexcept;
  bool waiting_ = false;                                          // the last cycle check waited
  double waited_newest_ = 0.0;                                    // the oldest stale newest tag at that wait
  std::int64_t wait_since_ns_ = 0;                                // the producers' last progress while waiting
  double gave_up_at_ = -std::numeric_limits<double>::infinity();  // newest tag of a producer given up on
};

// The threads of a graph, in the order of their first task in the file.
std::vector<ThreadUnit> thread_units(Graph& graph);
inline std::int64_t seconds_to_ns(double s) noexcept {
  return static_cast<std::int64_t>(s * 1e9 + (s >= 0 ? 0.5 : -0.5));
}

}  // namespace rtcosim::runtime
