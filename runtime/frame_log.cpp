#include "runtime/frame_log.hpp"

#include <cstdio>

namespace rtcosim::runtime {

FrameLog::FrameLog(const std::vector<std::string>& task_names, std::size_t rows_per_task) {
  for (const auto& name : task_names) {
    channels_.push_back(std::make_unique<Channel>(rows_per_task));
    channels_.back()->task = name;
  }
}

void FrameLog::drain(std::ostream& out) {
  char buf[192];
  for (auto& c : channels_) {
    FrameRow row;
    while (c->ring.pop(row)) {
      std::snprintf(buf, sizeof buf, ",%llu,%.9f,%.9f,%.9g,%lld,%lld\n", static_cast<unsigned long long>(row.frame),
                    row.wall, row.sim, row.step, static_cast<long long>(row.latency_ns),
                    static_cast<long long>(row.exec_ns));
      out << c->task << buf;
    }
  }
}

std::uint64_t FrameLog::dropped() const noexcept {
  std::uint64_t n = 0;
  for (const auto& c : channels_) n += c->dropped.load(std::memory_order_relaxed);
  return n;
}

}  // namespace rtcosim::runtime
