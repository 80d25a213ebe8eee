#include "runtime/rt_executor.hpp"

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <map>

#include "runtime/trace.hpp"

namespace rtcosim::runtime {

namespace {

std::int64_t monotonic_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void sleep_until(std::int64_t deadline_ns) noexcept {
  timespec ts{};
  ts.tv_sec = deadline_ns / 1'000'000'000;
  ts.tv_nsec = deadline_ns % 1'000'000'000;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

std::int64_t to_ns(double s) noexcept { return static_cast<std::int64_t>(std::llround(s * 1e9)); }

}  // namespace

RealtimeExecutor::RealtimeExecutor(Graph& graph, Recorder* recorder, RealtimeReport report, FrameLog* frame_log)
    : graph_(graph), recorder_(recorder), frame_log_(frame_log), report_(std::move(report)) {
  std::map<std::string, std::size_t> group_unit;
  for (auto& t : graph_.tasks()) {
    const std::string& group = t->spec().rate_group;
    if (!group.empty() && group_unit.count(group)) {
      units_[group_unit[group]].members.push_back(t.get());
      continue;
    }
    if (!group.empty()) group_unit[group] = units_.size();
    units_.push_back(Unit{{t.get()}, {}, 1});
  }
  for (auto& u : units_) {
    std::stable_sort(u.members.begin(), u.members.end(),
                     [](const TaskRuntime* a, const TaskRuntime* b) { return a->spec().period < b->spec().period; });
    for (const TaskRuntime* m : u.members) {
      for (std::size_t i = 0; i < graph_.tasks().size(); ++i) {
        if (graph_.tasks()[i].get() == m) u.index.push_back(i);
      }
    }
    if (u.members.size() > 1) {
      u.ratio = static_cast<std::size_t>(std::llround(u.members.back()->spec().period / u.members.front()->spec().period));
    }
  }
}

RealtimeExecutor::~RealtimeExecutor() {
  stop();
  join();
}

std::int64_t RealtimeExecutor::now_ns() const noexcept { return monotonic_ns(); }

double RealtimeExecutor::elapsed() const noexcept { return static_cast<double>(monotonic_ns() - epoch_ns_) * 1e-9; }

std::vector<std::string> RealtimeExecutor::thread_errors() const {
  std::lock_guard lock(errors_mutex_);
  return errors_;
}

void RealtimeExecutor::start(double duration, double start_delay) {
  graph_.reset();
  graph_.trace_names();
  epoch_ns_ = monotonic_ns() + to_ns(start_delay);
  end_ns_ = duration > 0.0 ? epoch_ns_ + to_ns(duration) : 0;
  running_.store(true, std::memory_order_relaxed);
  active_.store(static_cast<int>(units_.size()), std::memory_order_release);
  for (const auto& unit : units_) threads_.emplace_back([this, &unit] { thread_main(unit); });
}

void RealtimeExecutor::join() {
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void RealtimeExecutor::thread_main(const Unit& unit) noexcept {
  TaskRuntime& slow = *unit.members.back();
  const config::TaskSpec& spec = slow.spec();
  try {
    const std::string problem = prepare_thread(spec.cpu, spec.priority, report_.fifo);
    if (!problem.empty()) {
      std::lock_guard lock(errors_mutex_);
      errors_.push_back("task '" + spec.name + "': " + problem);
    }
  } catch (...) {
    // Set-up only: a failed message must not stop the task.
  }

  // ---- real-time section: no allocation, no lock, no blocking call but the sleep ----
  Deadlines deadlines(epoch_ns_, to_ns(spec.period),
                      spec.overrun == config::OverrunPolicy::kSkip ? Deadlines::Overrun::kSkip
                                                                   : Deadlines::Overrun::kCatchUp);
  double cycle = spec.period;  // the group's last measured slow step
  std::int64_t deadline_of_cycle = 0;
  bool first_in_cycle = false;
  std::int64_t wake = 0;
  auto frame = [&](std::size_t member, bool is_slow) noexcept {
    TaskRuntime& t = *unit.members[member];
    const std::int64_t start = monotonic_ns();
    const std::uint64_t k = t.stats().frames.load(std::memory_order_relaxed);
    trace::frame_start(t.id(), k, first_in_cycle ? wake - deadline_of_cycle : 0);
    t.drain();
    const double wall = static_cast<double>(monotonic_ns() - epoch_ns_) * 1e-9;
    double h = 0.0;
    if (is_slow) {
      h = t.policy().next(t.partition().time(), wall);
      if (unit.members.size() > 1 && t.spec().step == config::StepPolicy::kMeasured) cycle = h;
    } else {
      h = t.spec().step == config::StepPolicy::kMeasured ? cycle / static_cast<double>(unit.ratio) : t.spec().period;
    }
    t.step(h);
    t.publish();
    if (recorder_) recorder_->sample(t);
    auto& s = t.stats();
    s.frames.fetch_add(1, std::memory_order_relaxed);
    s.lag.add(wall - t.partition().time());
    s.lost_real_time.store(t.policy().lost(), std::memory_order_relaxed);
    if (frame_log_) {
      const std::int64_t end = monotonic_ns();
      // The wake-up latency belongs to the first frame after the sleep.
      frame_log_->add(unit.index[member], FrameRow{k, wall, t.partition().time(), h,
                                                   first_in_cycle ? wake - deadline_of_cycle : 0,
                                                   end - start});
    }
    trace::frame_end(t.id(), k, monotonic_ns() - start, h, t.partition().time());
    first_in_cycle = false;
  };
  for (const TaskRuntime* m : unit.members) trace::task_state(m->id(), 0);
  while (running_.load(std::memory_order_relaxed)) {
    const std::int64_t deadline = deadlines.next();
    if (end_ns_ != 0 && deadline >= end_ns_) break;
    sleep_until(deadline);
    wake = monotonic_ns();
    deadline_of_cycle = deadline;
    first_in_cycle = true;
    if (!running_.load(std::memory_order_relaxed)) break;
    for (std::size_t m = 0; m + 1 < unit.members.size(); ++m) {
      for (std::size_t j = 0; j < unit.ratio; ++j) frame(m, false);
    }
    frame(unit.members.size() - 1, true);
    const std::int64_t end = monotonic_ns();
    auto& s = slow.stats();
    s.wakeup_latency_ns.add(wake - deadline);
    s.execution_ns.add(end - wake);
    const std::uint64_t overruns_before = deadlines.overruns();
    const std::uint64_t missed_before = deadlines.missed_periods();
    deadlines.advance(end);
    if (deadlines.overruns() != overruns_before) {
      trace::overrun(slow.id(), s.frames.load(std::memory_order_relaxed) - 1, deadlines.missed_periods() - missed_before);
    }
    s.overruns.store(deadlines.overruns(), std::memory_order_relaxed);
    s.missed_periods.store(deadlines.missed_periods(), std::memory_order_relaxed);
  }
  // ---- end of the real-time section ----
  for (const TaskRuntime* m : unit.members) trace::task_state(m->id(), 1);
  active_.fetch_sub(1, std::memory_order_release);
}

}  // namespace rtcosim::runtime
