#include "runtime/frame_log.hpp"

#include <cstdio>
#include <limits>

namespace rtcosim::runtime {

namespace {

void write_marker(RecordFile& file, const std::string& csv_task, std::uint64_t n) {
  file.rows() += csv_task + ",#dropped," + std::to_string(n) + ",,,,,\n";
}

}  // namespace

FrameLog::FrameLog(const std::vector<std::string>& task_names, std::size_t rows_per_task) : names_(task_names) {
  for (const auto& name : task_names) {
    channels_.push_back(std::make_unique<Channel>(rows_per_task));
    append_csv_field(channels_.back()->csv_task, name);
  }
}

void FrameLog::write_row(std::string& rows, const std::string& task, const FrameRow& row) {
  // A figure a frame does not have (latency without a sleep, lateness on
  // a cycle's later frames) is an empty cell, never a made-up 0.
  auto optional = [](std::int64_t v) { return v < 0 ? std::string() : std::to_string(v); };
  char buf[128];
  std::snprintf(buf, sizeof buf, ",%llu,%.9f,%.9f,%.9g,", static_cast<unsigned long long>(row.frame), row.wall, row.sim,
                row.step);
  rows += task;
  rows += buf;
  rows += optional(row.latency_ns) + ',' + std::to_string(row.exec_ns) + ',' + optional(row.start_lateness_ns) + '\n';
}

void FrameLog::drain(RecordFile* csv, ColumnFile* columns, std::span<const std::uint64_t> upto) {
  for (std::size_t task = 0; task < channels_.size(); ++task) {
    auto& c = *channels_[task];
    const std::uint64_t limit = task < upto.size() ? upto[task] : std::numeric_limits<std::uint64_t>::max();
    Entry entry;
    while (c.drained < limit && c.ring.pop(entry)) {
      ++c.drained;
      const FrameRow& row = entry.row;
      if (columns) columns->frame(task, row);
      if (!csv) continue;
      if (!csv->failed()) {
        if (entry.dropped_before != c.reported) write_marker(*csv, c.csv_task, entry.dropped_before - c.reported);
        write_row(csv->rows(), c.csv_task, row);
      }
      csv->sample(row.sim);
      c.reported = entry.dropped_before;
    }
  }
  if (csv) (void)csv->flush();
}

void FrameLog::finish(RecordFile* csv, ColumnFile* columns) {
  drain(csv, columns);
  if (!csv || csv->failed()) return;
  for (auto& c : channels_) {
    const std::uint64_t dropped = c->dropped.load(std::memory_order_relaxed);
    if (dropped != c->reported) write_marker(*csv, c->csv_task, dropped - c->reported);
    c->reported = dropped;
  }
  (void)csv->flush();
}

std::vector<std::uint64_t> FrameLog::rows_drained() const {
  std::vector<std::uint64_t> out;
  for (const auto& c : channels_) out.push_back(c->drained);
  return out;
}

std::vector<std::uint64_t> FrameLog::rows_reachable() const {
  std::vector<std::uint64_t> out;
  for (const auto& c : channels_) out.push_back(c->drained + c->ring.read_available());
  return out;
}

std::vector<std::uint64_t> FrameLog::dropped_per_task() const {
  std::vector<std::uint64_t> out;
  for (const auto& c : channels_) out.push_back(c->dropped.load(std::memory_order_relaxed));
  return out;
}

std::uint64_t FrameLog::dropped() const noexcept {
  std::uint64_t n = 0;
  for (const auto& c : channels_) n += c->dropped.load(std::memory_order_relaxed);
  return n;
}

}  // namespace rtcosim::runtime
