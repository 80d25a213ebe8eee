#include "session/realtime_run.hpp"

#include <algorithm>
#include <stdexcept>

#ifdef RTCOSIM_HAVE_DDS
#include "io/dds_bridge.hpp"
#endif

namespace rtcosim::io {
#ifndef RTCOSIM_HAVE_DDS
// Built without Cyclone DDS: a graph of several hosts is refused by coordinate().
class DdsBridge {};
#endif
}  // namespace rtcosim::io

namespace rtcosim::session {

RealtimeRun::RealtimeRun(runtime::Graph& graph, runtime::Recorder* recorder, runtime::FrameLog* frame_log)
    : graph_(graph), recorder_(recorder), frame_log_(frame_log), remote_(std::make_shared<io::RemoteState>(graph)) {}

RealtimeRun::~RealtimeRun() { (void)stop(); }

const runtime::RealtimeReport& RealtimeRun::prepare() {
  int priority = 0;
  for (const auto& t : graph_.tasks()) priority = std::max(priority, t->spec().priority);
  report_ = runtime::prepare_process(graph_.spec().realtime, priority);
  return report_;
}

std::string RealtimeRun::pin_caller_off_task_cpus() const {
  std::vector<int> task_cpus;
  for (const auto& t : graph_.tasks()) {
    if (t->spec().cpu >= 0) task_cpus.push_back(t->spec().cpu);
  }
  std::string problem;
  (void)runtime::pin_housekeeping(task_cpus, &problem);
  return problem.empty() ? problem
                         : "cannot move this thread off the tasks' CPUs (" + problem +
                               "): recording and progress may share a CPU with a task";
}

bool RealtimeRun::distributed() const noexcept { return !graph_.host().empty(); }

void RealtimeRun::open_bridge() {
  if (!distributed() || bridge_) return;
#ifdef RTCOSIM_HAVE_DDS
  bridge_ = std::make_unique<io::DdsBridge>(graph_, *remote_);
#else
  throw std::runtime_error("this rtcosim was built without Cyclone DDS: host '" + graph_.host() +
                           "' cannot reach the others (install cyclonedds-dev and rebuild)");
#endif
}

std::int64_t RealtimeRun::coordinate(std::int64_t* realtime_ns) {
  if (!distributed()) return 0;
  if (!bridge_) throw std::logic_error("RealtimeRun::coordinate before open_bridge");
#ifdef RTCOSIM_HAVE_DDS
  const std::int64_t start_rt =
      bridge_->coordinate_start(graph_.spec().dds.discovery_timeout, graph_.spec().dds.start_delay);
  if (realtime_ns) *realtime_ns = start_rt;
  return io::monotonic_from_realtime(start_rt);
#else
  (void)realtime_ns;
  return 0;
#endif
}

void RealtimeRun::cancel_coordination() noexcept {
#ifdef RTCOSIM_HAVE_DDS
  if (bridge_) bridge_->cancel_start();
#endif
}

void RealtimeRun::start(double duration, std::int64_t epoch_ns, runtime::ReplayLog* replay_log) {
  auto executor = std::make_unique<runtime::RealtimeExecutor>(graph_, recorder_, report_, frame_log_);
  // With the executor's Graph::reset, which empties the rings these counted.
  remote_->reset();
  executor->set_replay_log(replay_log);
  executor->start(duration, 0.05, epoch_ns);
  executor_ = std::move(executor);
#ifdef RTCOSIM_HAVE_DDS
  if (bridge_) bridge_->start(report_.fifo);
#endif
}

bool RealtimeRun::finished() const noexcept { return !executor_ || executor_->finished(); }

double RealtimeRun::elapsed() const noexcept { return executor_ ? executor_->elapsed() : 0.0; }

std::vector<std::string> RealtimeRun::thread_errors() const {
  return executor_ ? executor_->thread_errors() : std::vector<std::string>{};
}

RealtimeRun::Events RealtimeRun::take_events() {
  Events events;
#ifdef RTCOSIM_HAVE_DDS
  if (bridge_) {
    events.lost_hosts = bridge_->take_lost_hosts();
    events.clock_warnings = bridge_->take_clock_warnings();
  }
#endif
  return events;
}

double RealtimeRun::host_silence() noexcept {
#ifdef RTCOSIM_HAVE_DDS
  return io::DdsBridge::kSilence;
#else
  return 0.0;
#endif
}

void RealtimeRun::request_stop() noexcept {
  if (executor_) executor_->stop();
}

std::string RealtimeRun::stop() {
  if (executor_) {
    executor_->stop();
    executor_->join();
    executor_.reset();
  }
  std::string placement;
#ifdef RTCOSIM_HAVE_DDS
  if (bridge_) {
    bridge_->stop();
    placement = bridge_->placement();
  }
#endif
  bridge_.reset();
  return placement;
}

}  // namespace rtcosim::session
