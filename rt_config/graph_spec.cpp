#include "rt_config/graph_spec.hpp"

#include <filesystem>

#include "base/duration.hpp"

namespace rtcosim::config {

const TaskSpec* GraphSpec::find_task(const std::string& task_name) const {
  for (const auto& t : tasks) {
    if (t.name == task_name) return &t;
  }
  return nullptr;
}

const HostSpec* GraphSpec::find_host(const std::string& host_name) const {
  for (const auto& h : hosts) {
    if (h.name == host_name) return &h;
  }
  return nullptr;
}

std::string to_string(StepPolicy p) { return p == StepPolicy::kFixed ? "fixed" : "measured"; }
std::string to_string(OverrunPolicy p) {
  switch (p) {
    case OverrunPolicy::kSkip:
      return "skip";
    case OverrunPolicy::kRephase:
      return "rephase";
    case OverrunPolicy::kCatchUp:
      break;
  }
  return "catch_up";
}
std::string to_string(RealtimeMode m) {
  switch (m) {
    case RealtimeMode::kRequired:
      return "required";
    case RealtimeMode::kPreferred:
      return "preferred";
    case RealtimeMode::kOff:
      return "off";
  }
  return "?";
}

std::string GraphSpec::realtime_refusal() const {
  for (const auto& t : tasks) {
    if (t.period < kMinPeriod * (1.0 - 1e-9)) {
      return "task '" + t.name + "' runs every " + base::format_duration(t.period) +
             ", below the real-time floor of 1us — such a period runs only in virtual time (rtcosim run --virtual)";
    }
  }
  return {};
}

}  // namespace rtcosim::config
