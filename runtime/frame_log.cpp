#include "runtime/frame_log.hpp"

#include <cstdio>

namespace rtcosim::runtime {

FrameLog::FrameLog(const std::vector<std::string>& task_names, std::size_t rows_per_task) {
  for (const auto& name : task_names) {
    channels_.push_back(std::make_unique<Channel>(rows_per_task));
    channels_.back()->task = name;
  }
}

void FrameLog::write_row(std::ostream& out, const std::string& task, const FrameRow& row) {
  // A figure a frame does not have (latency without a sleep, lateness on
  // a cycle's later frames) is an empty cell, never a made-up 0.
  auto optional = [](std::int64_t v) { return v < 0 ? std::string() : std::to_string(v); };
  char buf[128];
  std::snprintf(buf, sizeof buf, ",%llu,%.9f,%.9f,%.9g,", static_cast<unsigned long long>(row.frame), row.wall,
                row.sim, row.step);
  out << task << buf << optional(row.latency_ns) << ',' << row.exec_ns << ',' << optional(row.start_lateness_ns)
      << '\n';
}

void FrameLog::drain(std::ostream& out) {
  for (auto& c : channels_) {
    FrameRow row;
    while (c->ring.pop(row)) write_row(out, c->task, row);
  }
}

std::uint64_t FrameLog::dropped() const noexcept {
  std::uint64_t n = 0;
  for (const auto& c : channels_) n += c->dropped.load(std::memory_order_relaxed);
  return n;
}

}  // namespace rtcosim::runtime
