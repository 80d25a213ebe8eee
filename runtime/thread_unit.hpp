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
  // Off where a replay log takes over the drains (writing or replaying
  // one): a wait or a hold depends on where the other threads are, which
  // the log does not record.
  bool wait_for_data = true;
  // The input links a task may wait or hold for (`data_wait`, `hold`):
  // those with a finite horizon whose producer runs in this process in
  // another thread, of its fixed-step members and of a lone measured task;
  // and how long a wait lasts before the cycle looks again: the shortest
  // period among those producers and the consumers of `full_links`, at most
  // the owner's.
  struct WaitLink {
    TaskRuntime* consumer = nullptr;
    const LinkBundle* bundle = nullptr;
    const TaskRuntime* producer = nullptr;
    double reach = 0.0;                  // seconds past the newest tag a step may end while the producer lags
    bool first = false;                  // the producer runs first: same processor, higher priority
    bool fixed = true;                   // the consumer's step is fixed: it waits; measured: it holds its step
    std::int64_t producer_cycle_ns = 1;  // the producer thread's cycle: a cycle late is behind
  };
  std::vector<WaitLink> wait_links;
  // The output links of its fixed-step members into another thread of
  // this process: a catch-up waits for room in their rings.
  struct FullLink {
    const coupling::Link* link = nullptr;
    const TaskRuntime* consumer = nullptr;
  };
  std::vector<FullLink> full_links;
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

  // Whether the cycle about to start at now_ns waits first, and for how
  // long (0: start now): a fixed step does not run ahead of a producer that
  // lags (docs/stalls.md, "No task runs ahead of a producer that lags"). A
  // member's step would end past the newest tag of a `wait_links` link plus
  // its reach (the consumer's period, less the lead of a producer that runs
  // first on the shared processor: one of its periods, at most half the
  // consumer's) while that producer is behind (`lags`: a cycle or more
  // past its release, owing a period or more, or, where it runs first,
  // sleeping for its own data). Running on would extrapolate
  // that link beyond anything normal operation does; waiting gives the
  // producer the processor for its own catch-up, so the two interleave as
  // they run on time. It also waits while a consumer's ring (`full_links`)
  // has no room, rather than drop its newest blocks. A producer that
  // publishes nothing, or a consumer that drains nothing, is waited for up
  // to kDataPatience since its last progress, then not again until it
  // progresses; a failed one not at all. Drains the members' links (the
  // frames drain again).
  std::int64_t data_wait(std::int64_t now_ns) noexcept;

  // The run ends at until_ns: releases left unserved are missed.
  void finish(std::int64_t until_ns) noexcept;

  // How long a fixed step waits for a producer that publishes nothing
  // (still in a long frame, or hung) before it goes on without it: a
  // measured step holds for up to its max_owed, the same default.
  static constexpr double kDataPatience = StepPolicy::kDefaultMaxOwed;

 private:
  [[nodiscard]] static bool lags(const WaitLink& w, std::int64_t now_ns) noexcept;
  bool keep_waiting(std::int64_t now_ns, double oldest, double patience) noexcept;
  // A lone measured task's step h at `wall`, cut where a lagging
  // producer's data ends (its newest tag plus the reach); the rest is owed
  // (StepPolicy::hold) and repaid once the data is there.
  double hold(TaskRuntime& t, double wall, double h) noexcept;
  std::int64_t deadlines_epoch_ns_ = 0;  // the first release: wall 0
  double end_s_ = 0.0;                   // the run's end in wall seconds (0: none)
  std::int64_t full_since_ns_ = -1;      // a consumer's ring has been full since (-1: none is)
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
