#pragma once

#include <boost/lockfree/spsc_queue.hpp>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace rtcosim::runtime {

// One frame of one task, for `rtcosim run --frames`.
struct FrameRow {
  std::uint64_t frame = 0;
  double wall = 0.0;  // seconds since the epoch, at the integration point
  double sim = 0.0;   // simulation time after the step
  double step = 0.0;
  std::int64_t latency_ns = -1;        // first frame of a cycle whose thread slept: wake-up - release; else -1
  std::int64_t exec_ns = 0;
  std::int64_t start_lateness_ns = -1;  // first frame of a cycle: its start - release; else -1
};

/*
 * FrameLog: every frame of every task, each task writing into its own
 * lock-free ring, a non-RT thread draining them to CSV
 * (task,frame,wall_s,sim_s,step_s,latency_ns,exec_ns,start_lateness_ns;
 * docs/figures.md defines the columns). A full ring drops
 * the row and counts it. RT-safe: `add` is noexcept and wait-free.
 */
class FrameLog {
 public:
  FrameLog(const std::vector<std::string>& task_names, std::size_t rows_per_task = 1u << 15);
  void add(std::size_t task, const FrameRow& row) noexcept {
    Channel& c = *channels_[task];
    if (!c.ring.push(row)) c.dropped.fetch_add(1, std::memory_order_relaxed);
  }
  static void write_header(std::ostream& out) { out << "task,frame,wall_s,sim_s,step_s,latency_ns,exec_ns,start_lateness_ns\n"; }
  void drain(std::ostream& out);
  static void write_row(std::ostream& out, const std::string& task, const FrameRow& row);
  [[nodiscard]] std::uint64_t dropped() const noexcept;

 private:
  struct Channel {
    explicit Channel(std::size_t n) : ring(n) {}
    std::string task;
    boost::lockfree::spsc_queue<FrameRow> ring;
    std::atomic<std::uint64_t> dropped{0};
  };
  std::vector<std::unique_ptr<Channel>> channels_;
};

}  // namespace rtcosim::runtime
