#include "rt_config/schedulability.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rtcosim::config {

namespace {

double longest_execution(const ExecutionTimes& e) noexcept {
  double c = e.nominal;
  for (const auto& s : e.spikes) c = std::max(c, s.time);
  return c;
}

}  // namespace

Schedulability analyse_schedulability(const GraphSpec& graph) {
  Schedulability result;
  std::map<CpuId, bool> complete;
  for (const auto& t : graph.tasks) {
    if (t.cpu < 0) continue;
    const CpuId id{t.host, t.cpu};
    result.cpu_load[id] += t.execution.declared && t.period > 0.0 ? t.execution.nominal / t.period : 0.0;
    complete.emplace(id, true).first->second &= t.execution.declared;
  }
  std::erase_if(result.cpu_load, [&](const auto& entry) { return !complete[entry.first]; });

  // Threads: a task, or all the tasks of a rate group, whose cycle is the
  // slowest member's period. Tasks are taken by position: a file with two
  // tasks of one name (an error reported elsewhere) must not confuse this.
  std::vector<std::vector<const TaskSpec*>> members;
  std::map<std::string, std::size_t> group_thread;
  for (const auto& t : graph.tasks) {
    const bool analysed = t.cpu < 0 ? t.execution.declared : complete[CpuId{t.host, t.cpu}];
    if (!analysed || !(t.period > 0.0) || !std::isfinite(t.period)) continue;
    if (!t.rate_group.empty()) {
      const auto [it, fresh] = group_thread.emplace(t.rate_group, result.threads.size());
      if (!fresh) {
        result.threads[it->second].tasks.push_back(t.name);
        members[it->second].push_back(&t);
        continue;
      }
    }
    result.threads.push_back(
        {t.rate_group.empty() ? t.name : t.rate_group, {t.name}, t.host, t.cpu, t.priority, 0.0, 0.0, 0.0});
    members.push_back({&t});
  }
  for (std::size_t i = 0; i < result.threads.size(); ++i) {
    ThreadTiming& th = result.threads[i];
    for (const TaskSpec* t : members[i]) th.period = std::max(th.period, t->period);
    for (const TaskSpec* t : members[i]) {
      th.execution += std::round(th.period / t->period) * longest_execution(t->execution);
    }
  }

  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  constexpr int kMaxIterations = 10000;
  for (auto& th : result.threads) {
    // R grows monotonically to its fixed point. Past a hundred periods the
    // higher-priority load is 1 or more and it grows without bound; a load
    // just below 1 may creep for ever: both count as unbounded.
    double r = th.execution;
    for (int iteration = 0;; ++iteration) {
      double next = th.execution;
      for (const auto& other : result.threads) {
        if (&other == &th || th.cpu < 0 || other.cpu != th.cpu || other.host != th.host || other.priority <= th.priority) {
          continue;
        }
        next += std::ceil(r / other.period * (1.0 - 1e-12)) * other.execution;
      }
      if (!(next > r)) break;  // settled (or not a number: nothing to iterate)
      r = next;
      if (r > 100.0 * th.period || iteration == kMaxIterations) {
        r = kInfinity;
        break;
      }
    }
    th.response = r;
  }
  return result;
}

}  // namespace rtcosim::config
