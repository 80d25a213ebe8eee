#pragma once

#include <boost/lockfree/spsc_queue.hpp>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "runtime/graph.hpp"

namespace rtcosim::runtime {

/*
 * Recorder: the signals a graph's `record:` names, sampled by the task that
 * computes them after each of its frames. Each task writes into its own
 * lock-free ring (time, then the values of its recorded signals); a
 * non-real-time thread drains the rings into a CSV file. A full ring drops
 * the sample and counts it, so a slow disk never stalls a task; `flush`
 * after the tasks stop writes everything that was produced.
 *
 * RT-safe: `sample` is noexcept, wait-free, allocation-free.
 * CSV: "time_s,task,signal,value", one row per signal and sample.
 */
class Recorder {
 public:
  Recorder(Graph& graph, std::size_t samples_per_task = 1u << 16);

  [[nodiscard]] bool empty() const noexcept { return channels_.empty(); }
  [[nodiscard]] std::size_t signal_count() const noexcept;

  // Task thread: records the task's signals at its current time.
  void sample(const TaskRuntime& task) noexcept;

  // Any one non-RT thread: moves what the rings hold into `out` (CSV rows)
  // and into the in-memory series (for plots and error reports).
  void drain(std::ostream& out);
  void write_header(std::ostream& out) const;

  struct Series {
    std::string signal;  // "block.port" or "block.port[i]" for vectors
    std::string task;
    std::size_t probe = 0;    // index into the graph's record.signals
    std::size_t element = 0;  // element of a vector output
    std::vector<double> time, value;
  };
  [[nodiscard]] const std::vector<Series>& series() const noexcept { return series_; }
  [[nodiscard]] std::uint64_t dropped() const noexcept;

 private:
  struct Channel {
    const TaskRuntime* task;
    std::vector<tasks::OutputRef> refs;
    std::vector<std::size_t> series;  // index into series_ per recorded scalar
    std::size_t width = 0;            // scalars per sample
    std::unique_ptr<boost::lockfree::spsc_queue<double>> ring;
    std::atomic<std::uint64_t> dropped{0};
    std::vector<double> scratch;
  };
  std::vector<std::unique_ptr<Channel>> channels_;
  std::vector<Series> series_;
};

}  // namespace rtcosim::runtime
