#include "runtime/thread_unit.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "base/counter.hpp"

namespace rtcosim::runtime {

namespace {

// Threads follow the tasks' order, a rate group taking its first member's
// place: the replay log and the reports count threads in this order.
std::vector<ThreadUnit> group_tasks(Graph& graph) {
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
  return units;
}

// Each task's thread cycle (a rate group's: its slowest member's period),
// against which its lateness counts: known for every thread before any
// thread's waits are set.
std::map<const TaskRuntime*, std::int64_t> thread_cycles(const std::vector<ThreadUnit>& units) {
  std::map<const TaskRuntime*, std::int64_t> cycle_of;
  for (auto& u : units) {
    double cycle = 0.0;
    for (const TaskRuntime* m : u.members) cycle = std::max(cycle, m->spec().period);
    for (const TaskRuntime* m : u.members) cycle_of[m] = seconds_to_ns(cycle);
  }
  return cycle_of;
}

// Fastest member first (stable: equal periods keep the file's order), so
// that the owner, whose period is the cycle's, comes last.
void order_by_period(ThreadUnit& u) {
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
}

// The cycle's frames, planned once: the loop walks the plan without
// computing a ratio per cycle.
void plan_frames(ThreadUnit& u, double cycle) {
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

// The links a member waits on for data from another thread; returns the
// longest a fixed-step wait may take (the cycle, or a producer's period).
double add_wait_links(ThreadUnit& u, Graph& graph, const std::map<const TaskRuntime*, std::int64_t>& cycle_of,
                      double cycle) {
  double wait = cycle;
  for (TaskRuntime* m : u.members) {
    if (!m->spec().wait_for_data) continue;
    const bool fixed = m->spec().step == config::StepPolicy::kFixed;
    // A measured task holds its own step (below); a measured rate group
    // divides its owner's, which is not held.
    if (!fixed && u.members.size() > 1) continue;
    for (const LinkBundle* b : m->inputs().bundles()) {
      const TaskRuntime* p = b->members.empty() ? nullptr : graph.find_task(b->members.front()->producer);
      if (!p || !p->local() || !std::isfinite(b->max_extrapolation)) continue;
      if (std::find(u.members.begin(), u.members.end(), p) != u.members.end()) continue;  // its own thread
      // A producer that shares the processor at a higher priority runs
      // first at a common release.
      const bool first =
          p->spec().cpu >= 0 && p->spec().cpu == m->spec().cpu && p->spec().priority > m->spec().priority;
      // On time such a producer is one of its own periods ahead when the
      // consumer's step starts (at most half the consumer's, the
      // tolerance of the tags' rounding); otherwise the consumer's step
      // may extrapolate the newest block by its own period. With these
      // reaches a consumer waits only for data that ends before its own
      // time, so two tasks never wait for each other (docs/stalls.md).
      const double ahead = std::min(p->spec().period, m->spec().period / 2);
      const double reach = first ? m->spec().period - ahead : m->spec().period;
      u.wait_links.push_back({m, b, p, reach, first, fixed, cycle_of.at(p)});
      if (fixed) wait = std::min(wait, p->spec().period);
    }
  }
  return wait;
}

// A fixed step that repays missed frames back to back can publish
// faster than a consumer drains: it waits for room in the ring rather
// than drop its newest blocks. Returns `wait`, shortened to the
// consumers' periods.
double add_full_links(ThreadUnit& u, Graph& graph, double wait) {
  for (TaskRuntime* m : u.members) {
    if (m->spec().step != config::StepPolicy::kFixed || !m->spec().wait_for_data) continue;
    for (const OutputBinding& o : m->outputs_view()) {
      if (!o.bundle || o.bundle->members.empty()) continue;
      const TaskRuntime* c = graph.find_task(o.bundle->members.front()->consumer);
      if (!c || !c->local() || std::find(u.members.begin(), u.members.end(), c) != u.members.end()) continue;
      u.full_links.push_back({o.bundle->link.get(), c});
      wait = std::min(wait, c->spec().period);
    }
  }
  return wait;
}

}  // namespace

std::vector<ThreadUnit> thread_units(Graph& graph) {
  std::vector<ThreadUnit> units = group_tasks(graph);
  const std::map<const TaskRuntime*, std::int64_t> cycle_of = thread_cycles(units);
  for (auto& u : units) {
    order_by_period(u);
    const double cycle = u.owner().spec().period;
    plan_frames(u, cycle);
    double wait = add_wait_links(u, graph, cycle_of, cycle);
    wait = add_full_links(u, graph, wait);
    const bool waits = std::any_of(u.wait_links.begin(), u.wait_links.end(), [](const auto& w) { return w.fixed; });
    u.data_wait_ns = waits || !u.full_links.empty() ? seconds_to_ns(wait) : 0;
  }
  return units;
}

void ThreadUnit::reset(std::int64_t first_release_ns, std::int64_t end_ns) noexcept {
  const TaskRuntime& o = owner();
  deadlines = Deadlines(first_release_ns, seconds_to_ns(o.spec().period), o.spec().overrun);
  deadlines.set_horizon(end_ns);
  deadlines_epoch_ns_ = first_release_ns;
  end_s_ = end_ns != 0 ? static_cast<double>(end_ns - first_release_ns) * 1e-9 : 0.0;
  measured_cycle = o.spec().period;
  waiting_ = false;
  gave_up_at_ = -std::numeric_limits<double>::infinity();
  full_since_ns_ = -1;
  publish_release();
}

double ThreadUnit::step_of(std::size_t member, double wall) noexcept {
  TaskRuntime& t = *members[member];
  const bool measured = t.spec().step == config::StepPolicy::kMeasured;
  double h = 0.0;
  if (is_owner(member)) {
    h = t.policy().next(wall);
    if (measured && wait_for_data && members.size() == 1 && !wait_links.empty()) h = hold(t, wall, h);
    if (measured) measured_cycle = h;
  } else {
    h = measured ? measured_cycle / static_cast<double>(frames_per_cycle[member]) : t.spec().period;
  }
  // A fixed step's last frame of a run ends on the run's end, not a part
  // period past it (a period that does not divide the duration): its step
  // is what is left. A nanosecond's slack keeps rounding from cutting a full
  // step. A measured step is the real time its frame integrates, and keeps
  // the partitions of a rate group on one time (docs/figures.md, "frames").
  if (!measured && end_s_ > 0.0) {
    const double left = end_s_ - t.partition().time();
    if (left > 0.0 && h > left + 1e-9) h = left;
  }
  return h;
}

bool ThreadUnit::lags(const WaitLink& w, std::int64_t now_ns) noexcept {
  const TaskStats& ps = w.producer->stats();
  if (w.producer->failed()) return false;
  // Behind: a cycle or more late, or owing a period or more (a measured
  // step that holds for its own data), or, for a producer that runs first
  // on this processor, waiting for its own data: its release passed and
  // this thread runs only while that one is not ready. (Its lateness alone
  // would not say so where the scheduler is not SCHED_FIFO, or within its
  // wake-up latency.)
  const std::int64_t late = now_ns - ps.next_release_ns.load(std::memory_order_acquire);
  const double period = w.producer->spec().period;
  return late >= w.producer_cycle_ns || ps.owed.load(std::memory_order_relaxed) >= period ||
         (w.first && ps.waiting_for_data.load(std::memory_order_acquire));
}

bool ThreadUnit::keep_waiting(std::int64_t now_ns, double oldest, double patience) noexcept {
  // A producer that published nothing since the last look may still be in
  // a long frame: it is waited for up to `patience` since its last
  // progress, then given up on until it publishes again, so that one that
  // hangs costs that once.
  if (oldest <= gave_up_at_) return false;
  const bool progressed = !waiting_ || oldest > waited_newest_;
  if (progressed) {
    wait_since_ns_ = now_ns;
  } else if (static_cast<double>(now_ns - wait_since_ns_) * 1e-9 >= patience) {
    waiting_ = false;
    gave_up_at_ = oldest;
    return false;
  }
  waiting_ = true;
  waited_newest_ = oldest;
  return true;
}

std::int64_t ThreadUnit::data_wait(std::int64_t now_ns) noexcept {
  // A lone measured task holds its step instead (`hold`, which keeps the
  // waiting state).
  if (data_wait_ns <= 0 || !wait_for_data) return 0;
  // Whether this cycle waits, for the consumers of a producer that runs
  // first (`lags`); while it waits, its members keep draining, so that
  // their producers' rings do not fill.
  auto waits = [this](bool wait) noexcept -> std::int64_t {
    for (TaskRuntime* m : members) m->stats().waiting_for_data.store(wait, std::memory_order_release);
    if (!wait) return 0;
    for (TaskRuntime* m : members) m->drain();
    base::add_single_writer(owner().stats().data_waits);
    return data_wait_ns;
  };
  bool stale = false;
  double oldest = std::numeric_limits<double>::infinity();
  TaskRuntime* drained = nullptr;
  for (const WaitLink& w : wait_links) {
    if (!w.fixed || !lags(w, now_ns)) continue;
    if (drained != w.consumer) w.consumer->drain();
    drained = w.consumer;
    const double newest = w.bundle->link->extrapolator().newest_tag();
    // The tolerance absorbs the tags' rounding: a step that ends exactly
    // at the reach is within it.
    if (newest + w.reach < w.consumer->partition().time() + w.consumer->spec().period - 1e-9) {
      stale = true;
      oldest = std::min(oldest, newest);
    }
  }
  if (stale && keep_waiting(now_ns, oldest, kDataPatience)) return waits(true);
  if (!stale) waiting_ = false;
  // Room for this cycle's blocks in the rings of its consumers (a block
  // per member frame at most, one is enough to look at: a consumer drains
  // all at once). Waited for up to kDataPatience while none drains, then
  // not again until one has drained.
  bool full = false;
  for (const FullLink& f : full_links) full = full || (!f.consumer->failed() && !f.link->has_room());
  if (!full) {
    full_since_ns_ = -1;
    return waits(false);
  }
  if (full_since_ns_ < 0) full_since_ns_ = now_ns;
  if (static_cast<double>(now_ns - full_since_ns_) * 1e-9 >= kDataPatience) return waits(false);
  return waits(true);
}

double ThreadUnit::hold(TaskRuntime& t, double wall, double h) noexcept {
  const std::int64_t now_ns = deadlines_epoch_ns_ + seconds_to_ns(wall);
  double end = std::numeric_limits<double>::infinity();
  double oldest = end;
  for (const WaitLink& w : wait_links) {
    if (w.consumer != &t || !lags(w, now_ns)) continue;
    const double newest = w.bundle->link->extrapolator().newest_tag();
    end = std::min(end, newest + w.reach);
    oldest = std::min(oldest, newest);
  }
  const double room = end - t.partition().time();
  if (!(h > room + 1e-9 * t.spec().period)) {
    waiting_ = false;
    return h;
  }
  const double max_owed = t.spec().max_owed > 0.0 ? t.spec().max_owed : StepPolicy::kDefaultMaxOwed;
  if (!keep_waiting(now_ns, oldest, max_owed)) return h;
  const double take = room > 0.0 ? room : 0.0;
  t.policy().hold(h - take);
  base::add_single_writer(t.stats().data_waits);
  return take;
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
  // The thread runs no more cycles: no consumer waits for it.
  for (TaskRuntime* m : members) {
    m->stats().next_release_ns.store(std::numeric_limits<std::int64_t>::max(), std::memory_order_release);
    m->stats().waiting_for_data.store(false, std::memory_order_release);
  }
  owner().stats().missed_periods.store(deadlines.missed_periods(), std::memory_order_relaxed);
}

}  // namespace rtcosim::runtime
