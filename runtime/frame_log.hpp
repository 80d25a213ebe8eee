#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <boost/lockfree/spsc_queue.hpp>

#include "runtime/column_file.hpp"
#include "runtime/record_file.hpp"

namespace rtcosim::runtime {

/*
 * FrameLog: every frame of every task, each task writing into its own
 * lock-free ring, a non-RT thread draining them to CSV
 * (task,frame,wall_s,sim_s,step_s,latency_ns,exec_ns,start_lateness_ns;
 * docs/figures.md defines the columns). A full ring drops the row and
 * counts it per task; the drain writes a marker row "task,#dropped,N,,,,,"
 * where rows are missing (docs/recording.md).
 * RT-safe: `add` is noexcept and wait-free.
 */
class FrameLog {
 public:
  FrameLog(const std::vector<std::string>& task_names, std::size_t rows_per_task = 1u << 15);
  // False when the full ring dropped the row (counted).
  bool add(std::size_t task, const FrameRow& row) noexcept {
    Channel& c = *channels_[task];
    if (!c.ring.push(Entry{row, c.dropped.load(std::memory_order_relaxed)})) {
      c.dropped.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    return true;
  }
  // Counts one row as dropped without adding it (a replay repeats the run's).
  void drop(std::size_t task) noexcept { channels_[task]->dropped.fetch_add(1, std::memory_order_relaxed); }
  // The task's thread: its next row would fit (a replay waits for this).
  [[nodiscard]] bool has_room(std::size_t task) const noexcept { return channels_[task]->ring.write_available() > 0; }
  static void write_header(RecordFile& file) {
    file.rows() += "task,frame,wall_s,sim_s,step_s,latency_ns,exec_ns,start_lateness_ns\n";
  }
  // One row as the drain writes it (virtual runs write their frame list
  // through it too).
  static void write_row(std::string& rows, const std::string& task, const FrameRow& row);
  // Any one non-RT thread; `finish` once the tasks stopped also marks the
  // rows dropped after each task's last one.
  void drain(RecordFile& file) { drain(&file, nullptr); }
  void finish(RecordFile& file) { finish(&file, nullptr); }
  // Into a CSV file, a column file's frame tables (HDF5, MAT), or both;
  // either may be null.
  void drain(RecordFile* csv, ColumnFile* columns) { drain(csv, columns, {}); }
  // The same, each task's rows only up to upto[i] drained in all (empty:
  // all): a replay writes the batches the run wrote (docs/replay.md).
  void drain(RecordFile* csv, ColumnFile* columns, std::span<const std::uint64_t> upto);
  // Per task: rows drained so far; and those plus the rows waiting.
  [[nodiscard]] std::vector<std::uint64_t> rows_drained() const;
  [[nodiscard]] std::vector<std::uint64_t> rows_reachable() const;
  void finish(RecordFile* csv, ColumnFile* columns);

  // Per task, in the order of the names given: rows dropped by its full ring.
  [[nodiscard]] std::vector<std::uint64_t> dropped_per_task() const;
  [[nodiscard]] const std::vector<std::string>& task_names() const noexcept { return names_; }
  [[nodiscard]] std::uint64_t dropped() const noexcept;

 private:
  struct Entry {
    FrameRow row;
    std::uint64_t dropped_before = 0;  // the task's drop count when it was added
  };
  struct Channel {
    explicit Channel(std::size_t n) : ring(n) {}
    std::string csv_task;
    boost::lockfree::spsc_queue<Entry> ring;
    std::atomic<std::uint64_t> dropped{0};
    std::uint64_t reported = 0;  // the draining thread's
    std::uint64_t drained = 0;   // the draining thread's
  };
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<Channel>> channels_;
};

}  // namespace rtcosim::runtime
