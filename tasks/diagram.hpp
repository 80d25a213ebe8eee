#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "tasks/block_registry.hpp"
#include "tasks/partition.hpp"

namespace rtcosim::tasks {

// One block of a diagram as a configuration describes it.
struct BlockSpec {
  std::string name;
  std::string type;
  BlockParams params;
  std::string task;  // the partition that runs it (empty: not assigned)
};

// A whole block diagram: blocks and the wires between their ports.
struct DiagramSpec {
  std::vector<BlockSpec> blocks;
  std::vector<WireSpec> wires;
};

// The part of a diagram one task runs: its blocks, the wires among them,
// one external input per output of another task that it reads (named
// "block.port" of the source), and its outputs that other tasks read.
struct TaskPartitionSpec {
  std::string task;
  std::vector<BlockSpec> blocks;
  std::vector<WireSpec> wires;
  std::vector<ExternalInputSpec> externals;
  std::vector<Endpoint> exported;
};

// Splits a diagram by the blocks' `task`, in order of first appearance.
// Widths come from the block types (the registry builds each block once to
// learn its ports). BlockError when a block has no task.
std::vector<TaskPartitionSpec> split_by_task(const BlockRegistry& registry, const DiagramSpec& diagram);

// Builds a partition from block specs (BlockError on any problem).
std::unique_ptr<Partition> build_partition(const BlockRegistry& registry, std::string name,
                                           const std::vector<BlockSpec>& blocks, const std::vector<WireSpec>& wires,
                                           std::vector<ExternalInputSpec> externals, IntegratorKind integrator);

/*
 * ReferenceSolver: the whole diagram, every partition merged and wired
 * directly, integrated with RK4 at a small fixed step. It records the
 * probed outputs with their derivatives at every step and answers
 * `value(probe, t)` by cubic Hermite interpolation, which keeps RK4's
 * fourth order between steps; the runtime compares any co-simulation run
 * against it. Set-up and analysis code, not for the real-time path.
 */
class ReferenceSolver {
 public:
  ReferenceSolver(const BlockRegistry& registry, const DiagramSpec& diagram, double step);

  // Integrates from 0 to `duration`, recording `probes` ("block.port").
  // `stop` (optional; a signal handler may raise it) is looked at before
  // every step: raised, the integration ends there, keeping the steps made
  // so far (times() ends where it stopped; stopped() says so).
  void run(double duration, const std::vector<Endpoint>& probes, const std::atomic<bool>* stop = nullptr);

  [[nodiscard]] bool stopped() const noexcept { return stopped_; }
  [[nodiscard]] double step() const noexcept { return step_; }
  [[nodiscard]] const std::vector<double>& times() const noexcept { return times_; }
  // Recorded samples of probe p, signal i, at times().
  [[nodiscard]] const std::vector<double>& samples(std::size_t probe, std::size_t signal = 0) const;
  // Interpolated value of probe p, signal i at time t within the run.
  [[nodiscard]] double value(std::size_t probe, double t, std::size_t signal = 0) const;
  [[nodiscard]] const Partition& partition() const noexcept { return *partition_; }

 private:
  struct Track {
    std::vector<double> value, slope;
    bool slope_known = true;
  };
  double step_;
  bool stopped_ = false;
  std::unique_ptr<Partition> partition_;
  std::vector<double> times_;
  std::vector<std::vector<Track>> tracks_;  // [probe][signal]
};

}  // namespace rtcosim::tasks
