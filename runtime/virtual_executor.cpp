#include "runtime/virtual_executor.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include "runtime/thread_unit.hpp"

namespace rtcosim::runtime {

double execution_time(const config::TaskSpec& task, std::uint64_t frame) noexcept {
  for (const auto& s : task.execution.spikes) {
    if (s.frame == frame) return s.time;
  }
  return task.execution.declared ? task.execution.nominal : 0.0;
}

namespace {

constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

// One thread in virtual time: its ThreadUnit and where its cycle stands.
struct Unit {
  ThreadUnit* unit = nullptr;
  std::size_t cpu = 0;  // simulated processor
  int priority = 0;

  bool active = false;              // a cycle is in progress
  std::int64_t start_ns = 0;        // when the next cycle may start (its release, or later)
  bool slept = true;                // the thread waited for that release
  std::uint64_t release_order = 0;  // ties between equal priorities: first released runs first
  std::int64_t cycle_start_ns = 0;
  std::size_t pos = 0;              // index into the unit's plan
  bool frame_started = false;
  std::uint64_t frame = 0;  // the current frame's index in its member
  std::int64_t frame_start_ns = 0;
  std::int64_t remaining_ns = 0;  // execution the current frame still needs
  std::int64_t latency_ns = -1, lateness_ns = -1;  // of the cycle, for its first frame's record
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
  std::vector<ThreadUnit> thread_units_of_graph = thread_units(graph_);
  std::vector<Unit> units(thread_units_of_graph.size());
  // Tasks pinned to one CPU share one simulated processor; an unpinned task
  // gets a processor of its own, as a machine with enough cores would.
  const std::int64_t end_ns = seconds_to_ns(duration);
  std::map<int, std::size_t> cpu_slot;
  std::size_t processors = 0;
  for (std::size_t i = 0; i < units.size(); ++i) {
    Unit& u = units[i];
    u.unit = &thread_units_of_graph[i];
    u.unit->reset(0, seconds_to_ns(duration));
    const int cpu = u.unit->owner().spec().cpu;
    if (cpu < 0) {
      u.cpu = processors++;
    } else {
      auto [it, added] = cpu_slot.emplace(cpu, processors);
      if (added) ++processors;
      u.cpu = it->second;
    }
    for (TaskRuntime* m : u.unit->members) {
      u.priority = std::max(u.priority, m->spec().priority);
      m->set_placement(ThreadPlacement{"virtual", m->spec().priority, m->spec().cpu, {}});
    }
  }

  std::uint64_t releases = 0;
  std::vector<Unit*> running(processors, nullptr);

  // The first time a frame gets its processor it drains its links: what it
  // reads is what was published before it started, as in a real frame.
  auto start_frame = [&](Unit& u, std::int64_t now) {
    ThreadUnit& tu = *u.unit;
    if (u.pos == 0) {
      u.cycle_start_ns = now;
      tu.cycle_started(now, u.slept, now);
      u.latency_ns = u.slept ? now - tu.deadlines.release() : -1;
      u.lateness_ns = now - tu.deadlines.release();
    }
    TaskRuntime& t = *tu.members[tu.plan[u.pos]];
    u.frame = t.stats().frames.load(std::memory_order_relaxed);
    u.frame_start_ns = now;
    u.remaining_ns = seconds_to_ns(execution_time(t.spec(), u.frame));
    u.frame_started = true;
    t.drain();
  };
  // The integration point is the end of the frame's execution.
  auto end_frame = [&](Unit& u, std::int64_t now) {
    ThreadUnit& tu = *u.unit;
    const std::size_t member = tu.plan[u.pos];
    TaskRuntime& t = *tu.members[member];
    const double wall = static_cast<double>(now) * 1e-9;
    const double h = tu.step_of(member, wall);
    t.step(h);
    tu.frame_done(member, u.frame_start_ns, now, wall);
    FrameRecord record{t.spec().name, u.frame, static_cast<double>(u.frame_start_ns) * 1e-9, wall, h,
                       t.partition().time(), u.latency_ns, u.lateness_ns};
    u.latency_ns = u.lateness_ns = -1;
    if (keep_frames_) frames_.push_back(record);
    if (observer) observer(t, record);
    t.publish();
    u.frame_started = false;
    if (++u.pos < tu.plan.size()) return;
    tu.cycle_done(u.cycle_start_ns, now);
    u.active = false;
    u.start_ns = tu.deadlines.start_at(now);
    u.slept = tu.deadlines.release() > now;
  };
  auto release = [&](Unit& u) {
    u.active = true;
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
    // Cycles that may start now, in unit order at equal times; none starts
    // at or after the end.
    for (auto& u : units) {
      if (!u.active && u.start_ns == now && now < end_ns) release(u);
    }
    dispatch(now);
    // The next instant something happens: a running frame ends or a unit
    // may start a cycle. Cycles in progress finish.
    std::int64_t next = kNever;
    for (std::size_t c = 0; c < processors; ++c) {
      if (running[c]) next = std::min(next, now + running[c]->remaining_ns);
    }
    for (auto& u : units) {
      if (!u.active && u.start_ns < end_ns) next = std::min(next, u.start_ns);
    }
    if (next == kNever) break;
    for (std::size_t c = 0; c < processors; ++c) {
      if (running[c]) running[c]->remaining_ns -= next - now;
    }
    now = next;
  }
  for (auto& u : units) u.unit->finish(end_ns);
}

}  // namespace rtcosim::runtime
