#include "runtime/thread_unit.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "base/counter.hpp"

namespace rtcosim::runtime {

std::vector<ThreadUnit> thread_units(Graph& graph) {
  std::vector<ThreadUnit> units;
  std::map<std::string, std::size_t> group_unit;
  auto& tasks = graph.tasks();
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (!tasks[i]->local()) continue;  // another host's
    const std::string& group = tasks[i]->spec().rate_group;
    if (!group.empty()) {
      const auto [it, fresh] = group_unit.emplace(group, units.size());
      if (!fresh) {
        units[it->second].members.push_back(tasks[i].get());
        units[it->second].index.push_back(i);
        continue;
      }
    }
    units.emplace_back();
    units.back().members.push_back(tasks[i].get());
    units.back().index.push_back(i);
  }
  for (auto& u : units) {
    std::vector<std::size_t> order(u.members.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return u.members[a]->spec().period < u.members[b]->spec().period;
    });
    std::vector<TaskRuntime*> members;
    std::vector<std::size_t> index;
    for (std::size_t k : order) {
      members.push_back(u.members[k]);
      index.push_back(u.index[k]);
    }
    u.members = std::move(members);
    u.index = std::move(index);
    const double cycle = u.owner().spec().period;
    for (std::size_t m = 0; m < u.members.size(); ++m) {
      // The loader guarantees integer ratios; rounding only absorbs the
      // decimal periods' representation error.
      const auto n = static_cast<std::size_t>(std::llround(cycle / u.members[m]->spec().period));
      u.frames_per_cycle.push_back(std::max<std::size_t>(n, 1));
      u.plan.insert(u.plan.end(), u.frames_per_cycle.back(), m);
    }
    u.deadlines = Deadlines(0, seconds_to_ns(cycle), u.owner().spec().overrun);
    u.measured_cycle = cycle;
  }
  return units;
}

void ThreadUnit::reset(std::int64_t first_release_ns, std::int64_t end_ns) noexcept {
  const TaskRuntime& o = owner();
  deadlines = Deadlines(first_release_ns, seconds_to_ns(o.spec().period), o.spec().overrun);
  deadlines.set_horizon(end_ns);
  measured_cycle = o.spec().period;
}

double ThreadUnit::step_of(std::size_t member, double wall) noexcept {
  TaskRuntime& t = *members[member];
  const bool measured = t.spec().step == config::StepPolicy::kMeasured;
  if (is_owner(member)) {
    const double h = t.policy().next(wall);
    if (measured) measured_cycle = h;
    return h;
  }
  return measured ? measured_cycle / static_cast<double>(frames_per_cycle[member]) : t.spec().period;
}

void ThreadUnit::frame_done(std::size_t member, std::int64_t start_ns, std::int64_t end_ns, double wall) noexcept {
  TaskRuntime& t = *members[member];
  TaskStats& s = t.stats();
  base::add_single_writer(s.frames);
  s.execution_ns.add(end_ns - start_ns);
  // Zero when the integration formulas run exactly one period before the
  // simulation time the step reaches, as a fixed step released on its grid
  // does; a measured task keeps it constant.
  s.lag.add(wall - (t.partition().time() - t.spec().period));
  const StepPolicy& p = t.policy();
  s.lost_real_time.store(p.lost(), std::memory_order_relaxed);
  s.owed.store(p.owed(), std::memory_order_relaxed);
  s.owed_max.store(p.owed_max(), std::memory_order_relaxed);
  s.stalls.store(p.stalls(), std::memory_order_relaxed);
  s.stalls_absorbed.store(p.stalls_absorbed(), std::memory_order_relaxed);
  s.catch_up_frames.store(p.catch_up_frames(), std::memory_order_relaxed);
  s.longest_catch_up.store(p.longest_catch_up(), std::memory_order_relaxed);
}

void ThreadUnit::cycle_started(std::int64_t start_ns, bool slept, std::int64_t wake_ns) noexcept {
  TaskStats& s = owner().stats();
  if (slept) s.wakeup_latency_ns.add(wake_ns - deadlines.release());
  s.start_lateness_ns.add(start_ns - deadlines.release());
}

bool ThreadUnit::cycle_done(std::int64_t start_ns, std::int64_t end_ns) noexcept {
  TaskStats& s = owner().stats();
  s.cycle_ns.add(end_ns - start_ns);
  base::add_single_writer(s.cycles);
  const bool overran = deadlines.advance(end_ns, start_ns);
  s.overruns.store(deadlines.overruns(), std::memory_order_relaxed);
  s.missed_periods.store(deadlines.missed_periods(), std::memory_order_relaxed);
  return overran;
}

void ThreadUnit::finish(std::int64_t until_ns) noexcept {
  deadlines.finish(until_ns);
  owner().stats().missed_periods.store(deadlines.missed_periods(), std::memory_order_relaxed);
}

}  // namespace rtcosim::runtime
