#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <boost/lockfree/spsc_queue.hpp>

#include "runtime/column_file.hpp"
#include "runtime/graph.hpp"
#include "runtime/record_file.hpp"

namespace rtcosim::runtime {

/*
 * Recorder: the signals a graph's `record:` names, sampled by the task that
 * computes them after each of its frames. Each task writes into its own
 * lock-free ring (time, the task's drop count so far, then the values of its
 * recorded signals); one non-real-time thread drains the rings into a
 * RecordFile and into the in-memory series. A full ring drops the sample and
 * counts it per task, so a slow disk never stalls a task; the drain writes a
 * `#dropped` marker row where samples are missing (docs/recording.md).
 *
 * Memory is fixed when the graph is built, whatever the run's length: the
 * rings, and in the series only what `Options::keep` asks for (none by
 * default; every sample only for callers that plot or compare a finite run).
 *
 * Probes (`Options::probes` slots, none by default) sample one scalar output
 * of any local task, chosen while the graph runs (the live view): the slot's
 * choice is one atomic word (generation and signal) that `sample` reads, and
 * each slot has its own lock-free ring (generation, time, value), sized at
 * construction; the drain keeps the current choice's samples (as `keep`
 * says) and discards those of an earlier one.
 *
 * RT-safe: `sample` is noexcept, wait-free, allocation-free.
 * CSV: "time_s,task,signal,value", one row per signal and sample; a
 * ColumnFile (HDF5, MAT) gets per task its times and one column per signal.
 */
class Recorder {
 public:
  static constexpr std::size_t kKeepAll = std::numeric_limits<std::size_t>::max();
  struct Options {
    std::size_t samples_per_task = 1u << 16;  // ring capacity, in samples
    // Samples each series keeps in memory: 0 none, kKeepAll every one, N the
    // latest N (at least N and fewer than 2N once N were drained).
    std::size_t keep = 0;
    // Probe slots, and each one's ring capacity in samples.
    std::size_t probes = 0;
    std::size_t probe_samples = 1u << 12;
  };

  explicit Recorder(Graph& graph) : Recorder(graph, Options{}) {}
  Recorder(Graph& graph, Options options);

  [[nodiscard]] bool empty() const noexcept { return channels_.empty(); }
  [[nodiscard]] std::size_t signal_count() const noexcept;

  // Task thread: records the task's signals at its current time; false
  // when its full ring dropped the sample (counted).
  bool sample(const TaskRuntime& task) noexcept;
  // Before a run's first frame, after the graph's reset: every task this
  // process runs recorded at t = 0 with its initial outputs, so that a
  // recording starts at the start time as the FMI tools' references do
  // (docs/recording.md). Called by the executors, on the thread that starts
  // the task threads (which then own the rings).
  void sample_start(Graph& graph) noexcept;
  // Task thread: counts one of the task's samples as dropped without
  // recording it (a replay repeats the run's drops, docs/replay.md).
  void drop(const TaskRuntime& task) noexcept;
  // Task thread: its next sample would fit (a replay waits for this instead
  // of dropping, docs/replay.md).
  [[nodiscard]] bool has_room(const TaskRuntime& task) const noexcept;
  // The draining thread: per task (counts() order), samples drained so far
  // plus those waiting in its ring.
  [[nodiscard]] std::vector<std::uint64_t> reachable() const;

  // Any one non-RT thread: moves what the rings hold into the series (as
  // far as `keep` says) and, with a file, into CSV rows written as one batch.
  void drain(RecordFile* file = nullptr) { drain(file, {}); }
  // The same, each task's samples only up to upto[i] drained in all (its
  // channel's index, counts() order; empty: all): a replay writes its
  // recording in the batches the run wrote (docs/replay.md).
  void drain(RecordFile* file, std::span<const std::uint64_t> upto);
  void drain(ColumnFile& file, std::span<const std::uint64_t> upto);
  // After the tasks stopped: drains, then marks the samples dropped after
  // each task's last one.
  void finish(RecordFile* file);
  // The same into a column file (HDF5, MAT): samples, and gaps where a ring
  // dropped some.
  void drain(ColumnFile& file) { drain(file, {}); }
  void finish(ColumnFile& file);
  // The recorded tasks and their signals in the order `drain` hands them to
  // a column file, with the attributes a column file stores.
  [[nodiscard]] const std::vector<RecordedTask>& layout() const noexcept { return layout_; }
  void write_header(RecordFile& file) const;
  // "0,,#reload,N": the graph was replaced; time_s starts again at 0.
  static void write_reload_marker(RecordFile& file, std::uint64_t reloads);

  struct Series {
    std::string signal;  // "block.port" or "block.port[i]" for vectors
    std::string task;
    std::size_t probe = 0;    // index into the graph's record.signals
    std::size_t element = 0;  // element of a vector output
    std::vector<double> time, value;
  };
  [[nodiscard]] const std::vector<Series>& series() const noexcept { return series_; }
  // The draining thread, while no task samples: forgets the samples the
  // series and probes keep (a new run begins at t = 0).
  void clear_kept() noexcept;
  // Samples held in memory by all series together.
  [[nodiscard]] std::size_t retained_samples() const noexcept;

  // Per task: samples drained from its ring and samples its full ring dropped.
  struct TaskCounts {
    std::string task;
    std::uint64_t samples = 0;
    std::uint64_t dropped = 0;
  };
  [[nodiscard]] std::vector<TaskCounts> counts() const;
  [[nodiscard]] std::uint64_t dropped() const noexcept;

  // A scalar output a probe can sample: every element of every output port
  // of every block of the local tasks, in the graph's task order.
  struct Probeable {
    std::string signal;  // "block.port" or "block.port[i]"
    const TaskRuntime* task = nullptr;
    std::size_t offset = 0;  // into the partition's outputs
  };
  [[nodiscard]] const std::vector<Probeable>& probeable() const noexcept { return probeable_; }
  static constexpr std::size_t kNoProbe = std::numeric_limits<std::size_t>::max();
  // Index into probeable() of a signal name, or kNoProbe.
  [[nodiscard]] std::size_t find_probeable(const std::string& signal) const noexcept;
  // The draining thread: `slot` samples probeable()[index] from the task's
  // next frame on (kNoProbe: nothing); its series starts again. False when
  // slot or index is out of range.
  bool set_probe(std::size_t slot, std::size_t index);
  // Per slot: the probed signal's samples kept (Series::probe = the
  // probeable() index; an empty signal when the slot is free).
  [[nodiscard]] const std::vector<Series>& probes() const noexcept { return probe_series_; }
  // Samples the probes' full rings dropped.
  [[nodiscard]] std::uint64_t probe_dropped() const noexcept;

 private:
  struct ProbeSlot {
    // (generation << 32) | (probeable index + 1); 0: off.
    std::atomic<std::uint64_t> choice{0};
    std::unique_ptr<boost::lockfree::spsc_queue<double>> ring;
    std::atomic<std::uint64_t> dropped{0};
    std::uint32_t generation = 0;  // the draining thread's
    // The ring's one producer at a time. A slot moved from a signal of one
    // task to one of another is, for a frame or two, believed its own by
    // both tasks' threads: the one that finds the flag set drops its sample
    // (counted) instead of pushing beside the other. Never waited on.
    std::atomic_flag pushing;
  };
  std::vector<Probeable> probeable_;
  std::vector<std::unique_ptr<ProbeSlot>> probe_slots_;
  std::vector<Series> probe_series_;
  void drain_probes();
  struct Channel {
    const TaskRuntime* task;
    std::string csv_task;  // the task name as a CSV field
    std::vector<tasks::OutputRef> refs;
    std::vector<std::size_t> series;  // index into series_ per recorded scalar
    std::size_t width = 0;            // scalars per sample
    std::unique_ptr<boost::lockfree::spsc_queue<double>> ring;
    std::atomic<std::uint64_t> dropped{0};  // written by the task only
    std::vector<double> scratch;            // the task's
    // The draining thread's.
    std::vector<double> row;
    std::uint64_t samples = 0, reported = 0;
    double last_time = 0.0;
  };
  void keep(Series& s, double time, double value);
  // Pops every whole sample, keeps it in the series and calls
  // on_sample(channel index, channel, samples missing before it, time, values).
  template <class OnSample>
  void pop_all(std::span<const std::uint64_t> upto, OnSample&& on_sample);
  static void write_drop_marker(RecordFile& file, const Channel& c, std::uint64_t n);

  std::size_t keep_ = 0;
  std::vector<std::unique_ptr<Channel>> channels_;
  std::vector<Series> series_;
  std::vector<std::string> csv_names_;  // ",task,signal," per series
  std::vector<RecordedTask> layout_;    // per channel
};

// The layout of a column file recording `recorder`'s signals of `graph`,
// with the graph file's text (and its SHA-256) and, with `frames`, a frame
// table per task of the graph (the FrameLog's order: the graph's tasks).
RecordLayout record_layout(Graph& graph, const Recorder& recorder, const std::string& graph_text, bool frames);

}  // namespace rtcosim::runtime
