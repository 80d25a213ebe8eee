#include "runtime/rt_executor.hpp"

#include <cerrno>
#include <stdexcept>

#include <time.h>

#include "runtime/unit_loop.hpp"

namespace rtcosim::runtime {

std::int64_t MonotonicClock::now() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void MonotonicClock::sleep_until(std::int64_t deadline_ns) noexcept {
  timespec ts{};
  ts.tv_sec = deadline_ns / 1'000'000'000;
  ts.tv_nsec = deadline_ns % 1'000'000'000;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

RealtimeExecutor::RealtimeExecutor(Graph& graph, Recorder* recorder, RealtimeReport report, FrameLog* frame_log)
    : graph_(graph),
      recorder_(recorder),
      frame_log_(frame_log),
      report_(std::move(report)),
      units_(thread_units(graph)) {}

RealtimeExecutor::~RealtimeExecutor() {
  stop();
  go_.store(kAbort);
  go_.notify_all();
  join();
}

double RealtimeExecutor::elapsed() const noexcept {
  MonotonicClock clock;
  return static_cast<double>(clock.now() - epoch_ns_) * 1e-9;
}

std::vector<std::string> RealtimeExecutor::thread_errors() const {
  std::lock_guard lock(errors_mutex_);
  return errors_;
}

void RealtimeExecutor::start(double duration, double start_delay, std::int64_t epoch_ns) {
  if (replay_log_ != nullptr) replay_log_->tap_sources();
  graph_.reset();
  // The reset's drains took what this process published initially (a task
  // of another host included), which a replay computes again: the log's
  // blocks from other hosts start with the first frame.
  if (replay_log_ != nullptr) replay_log_->tap_links();
  graph_.trace_names();
  {
    std::lock_guard lock(errors_mutex_);
    errors_.clear();
  }
  running_.store(true, std::memory_order_relaxed);
  set_up_.store(0);
  go_.store(kWait);
  active_.store(static_cast<int>(units_.size()), std::memory_order_release);
  for (std::size_t i = 0; i < units_.size(); ++i) threads_.emplace_back([this, i] { thread_main(i); });
  // Every thread reports its set-up before anything is released.
  for (int n = set_up_.load(); n < static_cast<int>(units_.size()); n = set_up_.load()) set_up_.wait(n);
  const auto problems = thread_errors();
  if (!problems.empty() && graph_.spec().realtime == config::RealtimeMode::kRequired) {
    running_.store(false);
    go_.store(kAbort);
    go_.notify_all();
    join();
    std::string text = "the real-time set-up of the task threads failed (realtime: required); nothing was run:";
    for (const auto& p : problems) text += "\n  " + p;
    throw std::runtime_error(text);
  }
  MonotonicClock clock;
  epoch_ns_ = epoch_ns != 0 ? epoch_ns : clock.now() + seconds_to_ns(start_delay);
  end_ns_ = duration > 0.0 ? epoch_ns_ + seconds_to_ns(duration) : 0;
  for (auto& u : units_) u.reset(epoch_ns_, end_ns_);
  // The t = 0 sample once the start can no longer be refused (a refused
  // one would leave it in the rings for the next start); the threads wait
  // for go_ and touch no ring before it.
  if (recorder_ != nullptr) recorder_->sample_start(graph_);
  go_.store(kRun);
  go_.notify_all();
}

void RealtimeExecutor::join() {
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void RealtimeExecutor::thread_main(std::size_t index) noexcept {
  ThreadUnit& unit = units_[index];
  const config::TaskSpec& spec = unit.owner().spec();
  try {
    const std::string problem = prepare_thread(spec.cpu, spec.priority, report_.fifo);
    ThreadPlacement placement = current_placement();
    placement.problem = problem;
    for (TaskRuntime* m : unit.members) m->set_placement(placement);
    if (!problem.empty()) {
      std::lock_guard lock(errors_mutex_);
      errors_.push_back(
          (unit.members.size() > 1 ? "rate group '" + spec.rate_group + "'" : "task '" + spec.name + "'") + ": " +
          problem);
    }
  } catch (...) {
    // Set-up only: a failed message must not stop the task.
  }
  set_up_.fetch_add(1);
  set_up_.notify_all();
  for (int go = go_.load(); go == kWait; go = go_.load()) go_.wait(go);
  if (go_.load() == kRun) {
    MonotonicClock clock;
    if (replay_log_ != nullptr) {
      LoggedClock<MonotonicClock> logged{clock, *replay_log_, index, epoch_ns_};
      run_unit(unit, logged, epoch_ns_, end_ns_, running_, UnitSinks{recorder_, frame_log_});
    } else {
      run_unit(unit, clock, epoch_ns_, end_ns_, running_, UnitSinks{recorder_, frame_log_});
    }
  }
  active_.fetch_sub(1, std::memory_order_release);
}

}  // namespace rtcosim::runtime
