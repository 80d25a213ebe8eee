#pragma once

#include <string>
#include <vector>

#include "rt_config/graph_spec.hpp"

namespace rtcosim::runtime {

// What the real-time set-up found: `ok` false means the run must not start
// (realtime: required and something is missing); `warnings` are printed.
struct RealtimeReport {
  bool ok = true;
  bool fifo = false;  // SCHED_FIFO will be used for the task threads
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
};

/*
 * Prepares the process for real time, once, before any task thread starts
 * (cactus-rt's habit: all of it in one place, each step with its reason):
 *  - mlockall(MCL_CURRENT | MCL_FUTURE): no page of ours may be paged out,
 *    or a page fault becomes a disk access in the middle of a frame;
 *  - malloc never trims its heap nor serves large blocks with mmap: freed
 *    memory stays mapped, so a later allocation (outside the real-time path)
 *    cannot unmap pages a task touches;
 *  - holds /dev/cpu_dma_latency at 0, so CPUs stay out of deep idle states;
 *  - checks RLIMIT_RTPRIO and CAP_SYS_NICE for the highest priority asked,
 *    and RLIMIT_MEMLOCK.
 * With `required` a missing permission is an error naming it and how to
 * grant it; with `preferred` a warning and the tasks run SCHED_OTHER; `off`
 * skips all of it (development).
 */
RealtimeReport prepare_process(config::RealtimeMode mode, int highest_priority);

// Moves the calling (non-real-time) thread off the CPUs the tasks are
// pinned to, when any other CPU exists, so that housekeeping (recording,
// progress, the control socket) never shares a CPU with a task. Threads it
// creates afterwards inherit this; task threads re-pin themselves. Returns
// the CPUs chosen, empty when the tasks use every CPU or the kernel refused
// (then `problem`, when given, says why).
std::vector<int> pin_housekeeping(const std::vector<int>& task_cpus, std::string* problem = nullptr);

// How a thread actually runs, read back from the kernel after its set-up.
struct ThreadPlacement {
  std::string policy = "none";  // fifo | rr | other | virtual | replay | none (never started)
  int priority = 0;             // 0 unless fifo/rr
  int cpu = -1;                 // the one CPU it may run on; -1: several (not pinned)
  std::string problem;          // what its set-up could not do
};

// The calling thread's scheduling policy, priority and CPU.
ThreadPlacement current_placement();

// "fifo 90", "rr 10", "other", "virtual": the policy, with its priority
// where it has one.
std::string policy_text(const ThreadPlacement& p);

// Per task thread, called by the thread itself: pins it to `cpu` (if >= 0),
// sets SCHED_FIFO at `priority` when `fifo`, and touches `stack_bytes` of
// stack so that the frames never fault on it. Returns an error text or "".
std::string prepare_thread(int cpu, int priority, bool fifo, std::size_t stack_bytes = 256 * 1024);

}  // namespace rtcosim::runtime
