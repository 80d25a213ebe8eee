#include "runtime/virtual_executor.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <queue>
#include <stdexcept>
#include <utility>

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
  std::size_t pos = 0;  // index into the unit's plan
  bool frame_started = false;
  std::uint64_t frame = 0;  // the current frame's index in its member
  std::int64_t frame_start_ns = 0;
  std::int64_t remaining_ns = 0;                   // execution the current frame still needs
  std::int64_t latency_ns = -1, lateness_ns = -1;  // of the cycle, for its first frame's record
};

}  // namespace

VirtualExecutor::VirtualExecutor(Graph& graph, bool keep_frames) : graph_(graph), keep_frames_(keep_frames) {}

const std::vector<FrameRecord>& VirtualExecutor::frames() const {
  if (!keep_frames_)
    throw std::logic_error("VirtualExecutor::frames(): construct the executor with keep_frames = true");
  return frames_;
}

namespace {

/*
 * One virtual-time run: the threads of a graph as units on simulated
 * processors, scheduled as SCHED_FIFO would (highest priority, then first
 * released), with every frame's execution time and every wake-up delay as
 * the Timing (or the file's `execution:`) says. Event queues, so that an
 * instant costs O(log n) in the number of threads rather than a scan of all
 * of them (10^5 tasks stalled the scan). Ties break exactly as SCHED_FIFO
 * and the file order say: releases at one instant in unit order, frames
 * that end at one instant and frames that start at one instant in release
 * order.
 */
class VirtualSchedule {
 public:
  using Timing = VirtualExecutor::Timing;
  using Observer = VirtualExecutor::Observer;

  VirtualSchedule(Graph& graph, double duration, const Timing& timing, const Observer& observer,
                  std::vector<FrameRecord>* frames)
      : timing_(timing),
        observer_(observer),
        frames_(frames),
        end_ns_(seconds_to_ns(duration)),
        stop_ns_(end_ns_),
        thread_units_(thread_units(graph)),
        units_(thread_units_.size()) {
    place_units(duration);
    ready_.resize(processors_);
    holder_.assign(processors_, nullptr);
    held_since_.assign(processors_, 0);
    version_.assign(processors_, 0);
    is_touched_.assign(processors_, 0);
    for (std::size_t i = 0; i < units_.size(); ++i) {
      if (units_[i].start_ns < end_ns_) releases_due_.emplace(units_[i].start_ns, i);
    }
  }

  void run() {
    std::int64_t now = 0;
    std::vector<Unit*> ending;
    for (;;) {
      // Frames that ran to the end of their execution time end before
      // anything released at this instant can preempt them.
      ending.clear();
      while (valid_end() && ends_.top().at == now) {
        const std::size_t c = ends_.top().cpu;
        ends_.pop();
        ending.push_back(holder_[c]);
        let_go(c, now);
        touch(c);
      }
      std::sort(ending.begin(), ending.end(),
                [](const Unit* a, const Unit* b) { return a->release_order < b->release_order; });
      for (Unit* u : ending) end_and_requeue(*u, now);
      // Cycles that may start now, in unit order; none starts at or after
      // the end.
      while (!releases_due_.empty() && releases_due_.top().first == now) {
        const std::size_t i = releases_due_.top().second;
        releases_due_.pop();
        if (now >= stop_ns_) continue;
        release(i);
        touch(units_[i].cpu);
      }
      dispatch(now);
      // The next instant something happens: a running frame ends or a unit
      // may start a cycle. Cycles in progress finish.
      std::int64_t next = kNever;
      if (valid_end()) next = ends_.top().at;
      if (!releases_due_.empty()) next = std::min(next, releases_due_.top().first);
      if (next == kNever) break;
      now = next;
    }
    for (auto& u : units_) u.unit->finish(stop_ns_);
  }

 private:
  // Tasks pinned to one CPU share one simulated processor; an unpinned task
  // gets a processor of its own, as a machine with enough cores would.
  void place_units(double duration) {
    std::map<int, std::size_t> cpu_slot;
    for (std::size_t i = 0; i < units_.size(); ++i) {
      Unit& u = units_[i];
      u.unit = &thread_units_[i];
      u.unit->reset(0, seconds_to_ns(duration));
      if (timing_.wake_delay) u.start_ns = std::max<std::int64_t>(0, timing_.wake_delay(u.unit->owner(), 0));
      const int cpu = u.unit->owner().spec().cpu;
      if (cpu < 0) {
        u.cpu = processors_++;
      } else {
        auto [it, added] = cpu_slot.emplace(cpu, processors_);
        if (added) ++processors_;
        u.cpu = it->second;
      }
      for (TaskRuntime* m : u.unit->members) {
        u.priority = std::max(u.priority, m->spec().priority);
        m->set_placement(ThreadPlacement{"virtual", m->spec().priority, m->spec().cpu, {}});
      }
    }
  }

  // The first time a frame gets its processor it drains its links: what it
  // reads is what was published before it started, as in a real frame.
  void start_frame(Unit& u, std::int64_t now) {
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
    u.remaining_ns = timing_.execution ? std::max<std::int64_t>(0, timing_.execution(t, u.frame, now))
                                       : seconds_to_ns(execution_time(t.spec(), u.frame));
    u.frame_started = true;
    t.drain();
  }

  // The integration point is the end of the frame's execution.
  void end_frame(Unit& u, std::int64_t now) {
    ThreadUnit& tu = *u.unit;
    const std::size_t member = tu.plan[u.pos];
    TaskRuntime& t = *tu.members[member];
    const double wall = static_cast<double>(now) * 1e-9;
    // As run_unit: a frame that ran longer than its period drains again at
    // its integration point.
    if (now - u.frame_start_ns > t.period_ns()) t.drain();
    const double h = tu.step_of(member, wall);
    t.step(h);
    tu.frame_done(member, u.frame_start_ns, now, wall);
    FrameRecord record{
        t.spec().name, u.frame,      static_cast<double>(u.frame_start_ns) * 1e-9, wall, h, t.partition().time(),
        u.latency_ns,  u.lateness_ns};
    u.latency_ns = u.lateness_ns = -1;
    if (frames_) frames_->push_back(record);
    if (observer_) observer_(t, record);
    t.publish();
    // A model that ended the simulation itself: no cycle starts from now on;
    // those in progress finish (as run_unit's threads do at their next cycle).
    if (t.run_ended()) stop_ns_ = std::min(stop_ns_, now);
    u.frame_started = false;
    // As run_unit: a member of a rate group that stopped (failed, or its
    // model ended the run) takes no more frames in the cycle.
    ++u.pos;
    while (u.pos < tu.plan.size() && tu.members[tu.plan[u.pos]]->stopped()) ++u.pos;
    if (u.pos < tu.plan.size()) return;
    tu.cycle_done(u.cycle_start_ns, now);
    u.active = false;
    u.start_ns = tu.deadlines.start_at(now);
    u.slept = tu.deadlines.release() > now;
    if (u.slept && timing_.wake_delay) {
      u.start_ns += std::max<std::int64_t>(0, timing_.wake_delay(tu.owner(), tu.deadlines.release()));
    }
  }

  // Per processor, its active units; the top (highest priority, then first
  // released) is the one that runs. Only the running unit ends its cycle,
  // so a unit leaves only from the top.
  [[nodiscard]] bool runs_before(std::size_t a, std::size_t b) const {
    return units_[a].priority != units_[b].priority ? units_[a].priority > units_[b].priority
                                                    : units_[a].release_order < units_[b].release_order;
  }
  [[nodiscard]] auto heap_order() const {
    return [this](std::size_t a, std::size_t b) { return runs_before(b, a); };
  }
  Unit* winner(std::size_t cpu) { return ready_[cpu].empty() ? nullptr : &units_[ready_[cpu].front()]; }
  void pop_winner(std::size_t cpu) {
    std::pop_heap(ready_[cpu].begin(), ready_[cpu].end(), heap_order());
    ready_[cpu].pop_back();
  }

  void let_go(std::size_t cpu, std::int64_t now) {
    if (Unit* h = holder_[cpu]) h->remaining_ns -= now - held_since_[cpu];
    holder_[cpu] = nullptr;
    ++version_[cpu];
  }
  void settle(std::size_t cpu, std::int64_t now) {
    Unit* w = winner(cpu);
    if (w == holder_[cpu]) return;
    let_go(cpu, now);
    if (!w) return;
    holder_[cpu] = w;
    held_since_[cpu] = now;
    ends_.push(End{now + w->remaining_ns, cpu, version_[cpu]});
  }
  bool valid_end() {
    while (!ends_.empty() && ends_.top().version != version_[ends_.top().cpu]) ends_.pop();
    return !ends_.empty();
  }

  void release(std::size_t i) {
    Unit& u = units_[i];
    u.active = true;
    u.release_order = released_++;
    u.pos = 0;
    ready_[u.cpu].push_back(i);
    std::push_heap(ready_[u.cpu].begin(), ready_[u.cpu].end(), heap_order());
  }
  // The frame of `u` ended: it leaves the processor's queue when its cycle
  // is over, and it is due for release again unless the run is over.
  void end_and_requeue(Unit& u, std::int64_t now) {
    end_frame(u, now);
    if (u.active) return;
    pop_winner(u.cpu);
    if (u.start_ns < stop_ns_) releases_due_.emplace(u.start_ns, static_cast<std::size_t>(&u - units_.data()));
  }

  // Gives every touched processor to its winner; frames that need no
  // execution time end at once, which may give the processor to another
  // unit. Frames start in release order so that, at one instant, a frame
  // sees what the frames released before it published.
  void offer(std::size_t cpu) {
    const Unit* w = winner(cpu);
    if (w && (!w->frame_started || w->remaining_ns == 0 || w != holder_[cpu]))
      candidates_.emplace(w->release_order, cpu);
  }
  void touch(std::size_t cpu) {
    if (!is_touched_[cpu]) touched_.push_back(cpu);
    is_touched_[cpu] = 1;
  }
  void dispatch(std::int64_t now) {
    for (std::size_t c : touched_) offer(c);
    while (!candidates_.empty()) {
      const auto [order, c] = candidates_.top();
      candidates_.pop();
      Unit* w = winner(c);
      if (!w || w->release_order != order) continue;
      if (w->frame_started && w->remaining_ns != 0) {
        settle(c, now);  // a preempted frame gets its processor back
        continue;
      }
      if (holder_[c] == w) let_go(c, now);
      if (!w->frame_started && w->pos == 0) {
        // As run_unit: a fixed-step cycle whose data lags with its producer
        // sleeps while the producer catches up (ThreadUnit::data_wait).
        if (const std::int64_t wait = w->unit->data_wait(now); wait > 0) {
          pop_winner(c);
          w->active = false;
          w->slept = false;
          w->start_ns = now + wait;
          if (w->start_ns < stop_ns_) releases_due_.emplace(w->start_ns, static_cast<std::size_t>(w - units_.data()));
          offer(c);
          continue;
        }
      }
      if (!w->frame_started) start_frame(*w, now);
      if (w->remaining_ns == 0) end_and_requeue(*w, now);
      offer(c);
    }
    for (std::size_t c : touched_) {
      settle(c, now);
      is_touched_[c] = 0;
    }
    touched_.clear();
  }

  using Release = std::pair<std::int64_t, std::size_t>;     // (start_ns, unit)
  using Candidate = std::pair<std::uint64_t, std::size_t>;  // (release order, cpu)
  // A processor's frame ending; valid while its processor's version is.
  struct End {
    std::int64_t at;
    std::size_t cpu;
    std::uint64_t version;
    bool operator>(const End& o) const noexcept { return at != o.at ? at > o.at : cpu > o.cpu; }
  };

  const Timing& timing_;
  const Observer& observer_;
  std::vector<FrameRecord>* frames_;  // null: not kept
  const std::int64_t end_ns_;
  std::int64_t stop_ns_;  // end_ns_, or earlier when a model ended the run
  std::vector<ThreadUnit> thread_units_;
  std::vector<Unit> units_;
  std::size_t processors_ = 0;
  std::uint64_t released_ = 0;
  std::priority_queue<Release, std::vector<Release>, std::greater<>> releases_due_;
  std::vector<std::vector<std::size_t>> ready_;
  // The unit holding each processor and since when; its remaining_ns is as
  // of that instant.
  std::vector<Unit*> holder_;
  std::vector<std::int64_t> held_since_;
  std::vector<std::uint64_t> version_;
  std::priority_queue<End, std::vector<End>, std::greater<>> ends_;
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> candidates_;
  std::vector<std::size_t> touched_;
  std::vector<char> is_touched_;
};

}  // namespace

void VirtualExecutor::run(double duration, const Observer& observer, const std::function<void(Graph&)>& at_start) {
  frames_.clear();
  graph_.reset();
  if (at_start) at_start(graph_);
  VirtualSchedule(graph_, duration, timing_, observer, keep_frames_ ? &frames_ : nullptr).run();
}

}  // namespace rtcosim::runtime
