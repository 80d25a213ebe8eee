#pragma once

#include <compare>
#include <map>
#include <string>
#include <vector>

#include "rt_config/graph_spec.hpp"

namespace rtcosim::config {

/*
 * One thread of a graph as the scheduler sees it: a task, or a rate group
 * (its tasks run in one thread, N fast frames then one slow frame per
 * cycle). `execution` is the longest a cycle can take from the scripted
 * times (each task's nominal or its longest spike, times its frames per
 * cycle); `response` its worst-case response time, +infinity when it does
 * not settle within the period.
 */
struct ThreadTiming {
  std::string name;  // the task, or the rate group
  std::vector<std::string> tasks;
  std::string host;  // empty in a one-host graph
  int cpu = -1;
  int priority = 0;
  double period = 0.0;     // seconds per cycle
  double execution = 0.0;  // C, seconds
  double response = 0.0;   // R, seconds
  [[nodiscard]] bool meets_deadline() const noexcept { return response <= period * (1.0 + 1e-12); }
};

/*
 * What the declared execution times say about a graph before it runs: the
 * load of each pinned CPU and, per thread, the worst-case response time under
 * fixed-priority preemptive scheduling (SCHED_FIFO on a pinned CPU), by
 * response-time analysis (Joseph and Pandya 1986; Audsley et al. 1993):
 *   R = C + sum over higher-priority threads j on the CPU of ceil(R / T_j) C_j,
 * iterated from R = C to its fixed point. Exact for periodic threads
 * released together (the critical instant, which is how every run starts)
 * with deadlines equal to their periods; links are lock-free, so no
 * thread blocks another, and the kernel's own overheads are not modelled.
 * Only CPUs on which every task declares its execution times are analysed;
 * an unpinned thread is taken to have a CPU to itself. Set-up code.
 */
/*
 * A processor: CPU numbers are per machine, so CPU 0 of host a and CPU 0 of
 * host b are two processors that do not share load.
 */
struct CpuId {
  std::string host;  // empty in a one-host graph
  int cpu = -1;
  auto operator<=>(const CpuId&) const = default;
  [[nodiscard]] std::string str() const {
    return host.empty() ? "CPU " + std::to_string(cpu) : "CPU " + std::to_string(cpu) + " of host '" + host + "'";
  }
};

struct Schedulability {
  std::map<CpuId, double> cpu_load;   // pinned CPUs whose every task declares execution times
  std::vector<ThreadTiming> threads;  // threads on those CPUs, and unpinned declared ones
};

Schedulability analyse_schedulability(const GraphSpec& graph);

}  // namespace rtcosim::config
