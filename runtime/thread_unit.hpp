#pragma once

#include <cstddef>
#include <cstdint>
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

  // The run ends at until_ns: releases left unserved are missed.
  void finish(std::int64_t until_ns) noexcept;
};

// The threads of a graph, in the order of their first task in the file.
std::vector<ThreadUnit> thread_units(Graph& graph);
inline std::int64_t seconds_to_ns(double s) noexcept {
  return static_cast<std::int64_t>(s * 1e9 + (s >= 0 ? 0.5 : -0.5));
}

}  // namespace rtcosim::runtime
