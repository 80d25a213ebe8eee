#include "runtime/virtual_executor.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <queue>

namespace rtcosim::runtime {

double execution_time(const config::TaskSpec& task, std::uint64_t frame) noexcept {
  for (const auto& s : task.execution.spikes) {
    if (s.frame == frame) return s.time;
  }
  return task.execution.declared ? task.execution.nominal : 0.0;
}

namespace {

std::int64_t to_ns(double s) { return static_cast<std::int64_t>(std::llround(s * 1e9)); }

// One thread: a task, or a rate group (fast members first, the slowest last).
struct Unit {
  std::vector<TaskRuntime*> members;
  std::vector<std::uint64_t> frame_index;
  std::size_t ratio = 1;        // fast frames per slow frame
  double measured_cycle = 0.0;  // last slow step, for the fast steps of a measured group
  Deadlines deadlines{0, 1, Deadlines::Overrun::kCatchUp};
};

struct Event {
  std::int64_t time_ns;
  int kind;  // 0: publish (first at equal times), 1: frame start
  std::uint64_t order;
  std::size_t index;  // publish: task index; start: unit index
  bool operator>(const Event& o) const {
    if (time_ns != o.time_ns) return time_ns > o.time_ns;
    if (kind != o.kind) return kind > o.kind;
    return order > o.order;
  }
};

}  // namespace

VirtualExecutor::VirtualExecutor(Graph& graph) : graph_(graph) {}

void VirtualExecutor::run(double duration, const Observer& observer) {
  frames_.clear();
  graph_.reset();
  auto& tasks = graph_.tasks();

  std::vector<Unit> units;
  std::map<std::string, std::size_t> group_unit;
  for (auto& t : tasks) {
    const std::string& group = t->spec().rate_group;
    if (!group.empty() && group_unit.count(group)) {
      units[group_unit[group]].members.push_back(t.get());
      continue;
    }
    if (!group.empty()) group_unit[group] = units.size();
    units.push_back(Unit{{t.get()}, {}, 1, 0.0, {0, 1, Deadlines::Overrun::kCatchUp}});
  }
  for (auto& u : units) {
    std::stable_sort(u.members.begin(), u.members.end(),
                     [](const TaskRuntime* a, const TaskRuntime* b) { return a->spec().period < b->spec().period; });
    u.frame_index.assign(u.members.size(), 0);
    const TaskRuntime& slow = *u.members.back();
    if (u.members.size() > 1) {
      u.ratio = static_cast<std::size_t>(std::llround(slow.spec().period / u.members.front()->spec().period));
    }
    u.measured_cycle = slow.spec().period;
    u.deadlines = Deadlines(0, to_ns(slow.spec().period),
                            slow.spec().overrun == config::OverrunPolicy::kSkip ? Deadlines::Overrun::kSkip
                                                                                : Deadlines::Overrun::kCatchUp);
  }
  auto task_index = [&](const TaskRuntime* t) {
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (tasks[i].get() == t) return i;
    }
    return std::size_t{0};
  };

  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  std::uint64_t order = 0;
  const std::int64_t end_ns = to_ns(duration);
  for (std::size_t u = 0; u < units.size(); ++u) events.push({0, 1, order++, u});

  // Runs one frame of `t` starting at `start`; returns its end.
  auto run_frame = [&](Unit& unit, std::size_t member, std::int64_t start_ns, double fast_step) {
    TaskRuntime& t = *unit.members[member];
    const std::uint64_t k = unit.frame_index[member]++;
    const std::int64_t end = start_ns + to_ns(execution_time(t.spec(), k));
    const double wall = static_cast<double>(end) * 1e-9;
    t.drain();
    const double sim = t.partition().time();
    double h = 0.0;
    const bool is_slow = member + 1 == unit.members.size();
    if (!is_slow) {
      h = t.spec().step == config::StepPolicy::kMeasured ? fast_step : t.spec().period;
    } else {
      h = t.policy().next(sim, wall);
      if (unit.members.size() > 1 && t.spec().step == config::StepPolicy::kMeasured) unit.measured_cycle = h;
    }
    t.step(h);
    auto& s = t.stats();
    s.frames.fetch_add(1, std::memory_order_relaxed);
    s.execution_ns.add(end - start_ns);
    s.wakeup_latency_ns.add(0);
    s.lag.add(wall - t.partition().time());
    s.lost_real_time.store(t.policy().lost(), std::memory_order_relaxed);
    FrameRecord record{t.spec().name, k, static_cast<double>(start_ns) * 1e-9, wall, h, t.partition().time()};
    frames_.push_back(record);
    if (observer) observer(t, record);
    events.push({end, 0, order++, task_index(&t)});
    return end;
  };

  while (!events.empty()) {
    const Event e = events.top();
    events.pop();
    if (e.kind == 0) {
      tasks[e.index]->publish();
      continue;
    }
    if (e.time_ns >= end_ns) continue;
    Unit& unit = units[e.index];
    std::int64_t now = e.time_ns;
    // Fast members: `ratio` frames each, back to back, with the group's
    // measured cycle split evenly.
    const double fast_step = unit.measured_cycle / static_cast<double>(unit.ratio);
    for (std::size_t m = 0; m + 1 < unit.members.size(); ++m) {
      for (std::size_t j = 0; j < unit.ratio; ++j) now = run_frame(unit, m, now, fast_step);
    }
    now = run_frame(unit, unit.members.size() - 1, now, fast_step);
    const std::int64_t next = unit.deadlines.advance(now);
    TaskRuntime& slow = *unit.members.back();
    slow.stats().overruns.store(unit.deadlines.overruns(), std::memory_order_relaxed);
    slow.stats().missed_periods.store(unit.deadlines.missed_periods(), std::memory_order_relaxed);
    events.push({std::max(next, now), 1, order++, e.index});
  }
}

}  // namespace rtcosim::runtime
