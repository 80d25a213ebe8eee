#include "runtime/thread_unit.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
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
    double wait = cycle;
    for (TaskRuntime* m : u.members) {
      if (m->spec().step != config::StepPolicy::kFixed) continue;
      for (const LinkBundle* b : m->inputs().bundles()) {
        const TaskRuntime* p = b->members.empty() ? nullptr : graph.find_task(b->members.front()->producer);
        if (!p || !p->local() || !std::isfinite(b->max_extrapolation)) continue;
        // A producer that shares the processor at a higher priority runs
        // first at a common release: the consumer's steps then lie within
        // its data, and a catch-up keeps it so. Otherwise a step may
        // extrapolate the newest block by the consumer's period, as it
        // does on time.
        const bool first =
            p->spec().cpu >= 0 && p->spec().cpu == m->spec().cpu && p->spec().priority > m->spec().priority;
        const double reach = first ? m->spec().period / 2 : std::min(b->max_extrapolation, m->spec().period);
        u.wait_links.push_back({m, b, p, reach, first});
        wait = std::min(wait, p->spec().period);
      }
    }
    u.data_wait_ns = u.wait_links.empty() ? 0 : seconds_to_ns(wait);
  }
  return units;
}

void ThreadUnit::reset(std::int64_t first_release_ns, std::int64_t end_ns) noexcept {
  const TaskRuntime& o = owner();
  deadlines = Deadlines(first_release_ns, seconds_to_ns(o.spec().period), o.spec().overrun);
  deadlines.set_horizon(end_ns);
  measured_cycle = o.spec().period;
  waiting_ = false;
  gave_up_at_ = -std::numeric_limits<double>::infinity();
  publish_release();
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

std::int64_t ThreadUnit::data_wait(std::int64_t now_ns) noexcept {
  bool stale = false;
  double oldest = std::numeric_limits<double>::infinity();
  double patience = std::numeric_limits<double>::infinity();
  TaskRuntime* drained = nullptr;
  for (const WaitLink& w : wait_links) {
    const TaskStats& ps = w.producer->stats();
    // Behind: a period or more late. A producer that runs first on this
    // processor is behind as soon as its release passed: this thread runs
    // only while it is not ready, so it is waiting for its own data.
    const std::int64_t late = now_ns - ps.next_release_ns.load(std::memory_order_acquire);
    if ((w.first ? late <= 0 : late < w.producer->period_ns()) || w.producer->failed()) continue;
    if (drained != w.consumer) w.consumer->drain();
    drained = w.consumer;
    const double newest = w.bundle->link->extrapolator().newest_tag();
    // The tolerance absorbs the tags' rounding: a step that ends exactly
    // at the reach is within it.
    if (newest + w.reach < w.consumer->partition().time() + w.consumer->spec().period - 1e-9) {
      stale = true;
      oldest = std::min(oldest, newest);
      patience = std::min(patience, w.bundle->max_extrapolation);
    }
  }
  if (!stale) {
    waiting_ = false;
    return 0;
  }
  // A producer that published nothing since the last look may still be in
  // a long frame: it is waited for up to the link's horizon (the lateness
  // the link accepts) since its last progress, then given up on until it
  // publishes again, so that one that stopped costs one horizon, once.
  if (oldest <= gave_up_at_) return 0;
  const bool progressed = !waiting_ || oldest > waited_newest_;
  if (progressed) {
    wait_since_ns_ = now_ns;
  } else if (static_cast<double>(now_ns - wait_since_ns_) * 1e-9 >= patience) {
    waiting_ = false;
    gave_up_at_ = oldest;
    return 0;
  }
  waiting_ = true;
  waited_newest_ = oldest;
  base::add_single_writer(owner().stats().data_waits);
  return data_wait_ns;
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
  publish_release();
  s.overruns.store(deadlines.overruns(), std::memory_order_relaxed);
  s.missed_periods.store(deadlines.missed_periods(), std::memory_order_relaxed);
  return overran;
}

void ThreadUnit::publish_release() noexcept {
  for (TaskRuntime* m : members) m->stats().next_release_ns.store(deadlines.release(), std::memory_order_release);
}

void ThreadUnit::finish(std::int64_t until_ns) noexcept {
  deadlines.finish(until_ns);
  publish_release();
  owner().stats().missed_periods.store(deadlines.missed_periods(), std::memory_order_relaxed);
}

}  // namespace rtcosim::runtime
