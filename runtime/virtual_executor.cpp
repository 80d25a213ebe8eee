#include "runtime/virtual_executor.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <limits>
#include <stdexcept>

namespace rtcosim::runtime {

double execution_time(const config::TaskSpec& task, std::uint64_t frame) noexcept {
  for (const auto& s : task.execution.spikes) {
    if (s.frame == frame) return s.time;
  }
  return task.execution.declared ? task.execution.nominal : 0.0;
}

namespace {

std::int64_t to_ns(double s) { return static_cast<std::int64_t>(std::llround(s * 1e9)); }

constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

// One thread: a task, or a rate group (fast members first, the slowest last).
// A cycle is one frame of a task, or N frames of each fast member then one
// of the slowest for a group; `plan` lists the member of each frame.
struct Unit {
  std::vector<TaskRuntime*> members;
  std::vector<std::uint64_t> frame_index;
  std::vector<std::size_t> plan;
  std::size_t ratio = 1;        // fast frames per slow frame
  double measured_cycle = 0.0;  // last slow step, for the fast steps of a measured group
  Deadlines deadlines{0, 1, Deadlines::Overrun::kCatchUp};
  std::size_t cpu = 0;  // simulated processor
  int priority = 0;

  // The cycle in progress.
  bool active = false;
  std::int64_t release_ns = 0;
  std::uint64_t release_order = 0;  // ties between equal priorities: first released runs first
  std::size_t pos = 0;              // index into plan
  bool frame_started = false;
  std::uint64_t frame = 0;  // the current frame's index in its member
  std::int64_t frame_start_ns = 0;
  std::int64_t remaining_ns = 0;  // execution the current frame still needs
  std::int64_t next_release_ns = 0;
};

}  // namespace

VirtualExecutor::VirtualExecutor(Graph& graph, bool keep_frames) : graph_(graph), keep_frames_(keep_frames) {}

const std::vector<FrameRecord>& VirtualExecutor::frames() const {
  if (!keep_frames_) throw std::logic_error("VirtualExecutor::frames(): construct the executor with keep_frames = true");
  return frames_;
}

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
    units.emplace_back();
    units.back().members.push_back(t.get());
  }
  // Tasks pinned to one CPU share one simulated processor; an unpinned task
  // gets a processor of its own, as a machine with enough cores would.
  std::map<int, std::size_t> cpu_slot;
  std::size_t processors = 0;
  for (auto& u : units) {
    std::stable_sort(u.members.begin(), u.members.end(),
                     [](const TaskRuntime* a, const TaskRuntime* b) { return a->spec().period < b->spec().period; });
    u.frame_index.assign(u.members.size(), 0);
    const TaskRuntime& slow = *u.members.back();
    if (u.members.size() > 1) {
      u.ratio = static_cast<std::size_t>(std::llround(slow.spec().period / u.members.front()->spec().period));
    }
    for (std::size_t m = 0; m + 1 < u.members.size(); ++m) u.plan.insert(u.plan.end(), u.ratio, m);
    u.plan.push_back(u.members.size() - 1);
    u.measured_cycle = slow.spec().period;
    u.deadlines = Deadlines(0, to_ns(slow.spec().period),
                            slow.spec().overrun == config::OverrunPolicy::kSkip ? Deadlines::Overrun::kSkip
                                                                                : Deadlines::Overrun::kCatchUp);
    const int cpu = slow.spec().cpu;
    if (cpu < 0) {
      u.cpu = processors++;
    } else {
      auto [it, added] = cpu_slot.emplace(cpu, processors);
      if (added) ++processors;
      u.cpu = it->second;
    }
    for (const TaskRuntime* m : u.members) u.priority = std::max(u.priority, m->spec().priority);
  }

  const std::int64_t end_ns = to_ns(duration);
  std::uint64_t releases = 0;
  std::vector<Unit*> running(processors, nullptr);

  // The first time a frame gets its processor it drains its links: what it
  // reads is what was published before it started, as in a real frame.
  auto start_frame = [&](Unit& u, std::int64_t now) {
    TaskRuntime& t = *u.members[u.plan[u.pos]];
    u.frame = u.frame_index[u.plan[u.pos]]++;
    u.frame_start_ns = now;
    u.remaining_ns = to_ns(execution_time(t.spec(), u.frame));
    u.frame_started = true;
    t.drain();
    // Time from release to first execution: the wake-up latency a
    // higher-priority task on the same processor causes.
    t.stats().wakeup_latency_ns.add(u.pos == 0 ? now - u.release_ns : 0);
  };
  // The integration point is the end of the frame's execution.
  auto end_frame = [&](Unit& u, std::int64_t now) {
    const std::size_t member = u.plan[u.pos];
    TaskRuntime& t = *u.members[member];
    const double wall = static_cast<double>(now) * 1e-9;
    const double sim = t.partition().time();
    double h = 0.0;
    const bool is_slow = member + 1 == u.members.size();
    if (!is_slow) {
      h = t.spec().step == config::StepPolicy::kMeasured ? u.measured_cycle / static_cast<double>(u.ratio)
                                                         : t.spec().period;
    } else {
      h = t.policy().next(sim, wall);
    }
    t.step(h);
    auto& s = t.stats();
    s.frames.fetch_add(1, std::memory_order_relaxed);
    s.execution_ns.add(now - u.frame_start_ns);
    s.lag.add(wall - t.partition().time());
    s.lost_real_time.store(t.policy().lost(), std::memory_order_relaxed);
    FrameRecord record{t.spec().name, u.frame, static_cast<double>(u.frame_start_ns) * 1e-9, wall, h,
                       t.partition().time()};
    if (keep_frames_) frames_.push_back(record);
    if (observer) observer(t, record);
    t.publish();
    u.frame_started = false;
    if (++u.pos < u.plan.size()) return;
    // The cycle is over. The fast steps of the next cycle split this
    // measured slow step.
    if (u.members.size() > 1 && t.spec().step == config::StepPolicy::kMeasured) u.measured_cycle = h;
    u.active = false;
    u.next_release_ns = std::max(u.deadlines.advance(now), now);
    t.stats().overruns.store(u.deadlines.overruns(), std::memory_order_relaxed);
    t.stats().missed_periods.store(u.deadlines.missed_periods(), std::memory_order_relaxed);
  };
  auto release = [&](Unit& u, std::int64_t now) {
    u.active = true;
    u.release_ns = now;
    u.release_order = releases++;
    u.pos = 0;
  };
  // Fixed-priority preemptive scheduling per processor, as SCHED_FIFO does:
  // the highest-priority active unit runs; equal priorities run in release
  // order and never preempt each other.
  auto winner = [&](std::size_t cpu) {
    Unit* best = nullptr;
    for (auto& u : units) {
      if (!u.active || u.cpu != cpu) continue;
      if (!best || u.priority > best->priority ||
          (u.priority == best->priority && u.release_order < best->release_order)) {
        best = &u;
      }
    }
    return best;
  };
  // Gives every processor to its winner; frames that need no execution time
  // end at once, which may release the processor to another unit. Frames
  // start in release order so that, at one instant, a frame sees what the
  // frames released before it published.
  auto dispatch = [&](std::int64_t now) {
    for (bool changed = true; changed;) {
      changed = false;
      Unit* next = nullptr;
      for (std::size_t c = 0; c < processors; ++c) {
        Unit* w = winner(c);
        running[c] = w;
        if (w && (!w->frame_started || w->remaining_ns == 0) &&
            (!next || w->release_order < next->release_order)) {
          next = w;
        }
      }
      if (!next) break;
      if (!next->frame_started) start_frame(*next, now);
      if (next->remaining_ns == 0) end_frame(*next, now);
      changed = true;
    }
  };

  std::int64_t now = 0;
  std::vector<Unit*> ending;
  for (;;) {
    // Frames that ran to the end of their execution time end before anything
    // released at this instant can preempt them.
    ending.clear();
    for (Unit* r : running) {
      if (r && r->frame_started && r->remaining_ns == 0) ending.push_back(r);
    }
    std::sort(ending.begin(), ending.end(),
              [](const Unit* a, const Unit* b) { return a->release_order < b->release_order; });
    for (Unit* u : ending) end_frame(*u, now);
    // Releases due now, in unit order at equal times.
    for (auto& u : units) {
      if (!u.active && u.next_release_ns == now && now < end_ns) release(u, now);
    }
    dispatch(now);
    // The next instant something happens: a running frame ends or a unit is
    // released. Cycles in progress finish; none is released at or after
    // the end.
    std::int64_t next = kNever;
    for (std::size_t c = 0; c < processors; ++c) {
      if (running[c]) next = std::min(next, now + running[c]->remaining_ns);
    }
    for (auto& u : units) {
      if (!u.active && u.next_release_ns < end_ns) next = std::min(next, u.next_release_ns);
    }
    if (next == kNever) break;
    for (std::size_t c = 0; c < processors; ++c) {
      if (running[c]) running[c]->remaining_ns -= next - now;
    }
    now = next;
  }
}

}  // namespace rtcosim::runtime
