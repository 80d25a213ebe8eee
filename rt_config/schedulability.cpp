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
  std::map<int, bool> complete;
  for (const auto& t : graph.tasks) {
    if (t.cpu < 0) continue;
    result.cpu_load[t.cpu] += t.execution.declared && t.period > 0.0 ? t.execution.nominal / t.period : 0.0;
    complete.emplace(t.cpu, true).first->second &= t.execution.declared;
  }
  std::erase_if(result.cpu_load, [&](const auto& entry) { return !complete[entry.first]; });

  // Threads: a task, or all the tasks of a rate group, whose cycle is the
  // slowest member's period.
  std::map<std::string, std::size_t> group_thread;
  for (const auto& t : graph.tasks) {
    const bool analysed = t.cpu < 0 ? t.execution.declared : complete[t.cpu];
    if (!analysed || !(t.period > 0.0)) continue;
    if (!t.rate_group.empty()) {
      const auto [it, fresh] = group_thread.emplace(t.rate_group, result.threads.size());
      if (!fresh) {
        result.threads[it->second].tasks.push_back(t.name);
        continue;
      }
    }
    result.threads.push_back({t.rate_group.empty() ? t.name : t.rate_group, {t.name}, t.cpu, t.priority, 0.0, 0.0, 0.0});
  }
  for (auto& th : result.threads) {
    const TaskSpec* slowest = nullptr;
    for (const auto& name : th.tasks) {
      const TaskSpec* t = graph.find_task(name);
      if (!slowest || t->period > slowest->period) slowest = t;
    }
    th.period = slowest->period;
    for (const auto& name : th.tasks) {
      const TaskSpec* t = graph.find_task(name);
      th.execution += std::round(th.period / t->period) * longest_execution(t->execution);
    }
  }

  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  for (auto& th : result.threads) {
    // Iterate R while it may still settle: past a hundred periods the
    // higher-priority load is 1 or more and it grows without bound.
    double r = th.execution;
    for (;;) {
      double next = th.execution;
      for (const auto& other : result.threads) {
        if (&other == &th || th.cpu < 0 || other.cpu != th.cpu || other.priority <= th.priority) continue;
        next += std::ceil(r / other.period * (1.0 - 1e-12)) * other.execution;
      }
      if (next <= r) break;
      r = next;
      if (r > 100.0 * th.period) {
        r = kInfinity;
        break;
      }
    }
    th.response = r;
  }
  return result;
}

}  // namespace rtcosim::config
