#pragma once

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "rt_config/graph_spec.hpp"
#include "session/sync/state_sync.hpp"
#include "tasks/block_registry.hpp"

namespace rtcosim::tasks {
struct TaskPartitionSpec;  // tasks/diagram.hpp
}  // namespace rtcosim::tasks

namespace rtcosim::session {

/*
 * SyncModel: a task graph's `sync.optimise` as StateSync's parts (docs/sync.md,
 * "From a task graph"): the synchronised tasks' partitions (components, in
 * the order of `sync.optimise.tasks` or of the file), their feeds, the
 * decision variables and compared pairs, and the measured columns, one per
 * scalar signal of the measurement side that a component reads or a pair
 * compares. The columns start empty: `replay_measurements` fills them by
 * stepping the measurement tasks, a live run appends what it receives.
 * Set-up code: throws std::invalid_argument naming the task, block or signal
 * (with the file:line:column of `sync.optimise`); owns its partitions; one
 * thread uses it.
 */
class SyncModel {
 public:
  SyncModel(const config::GraphSpec& spec, const tasks::BlockRegistry& blocks);
  SyncModel(const SyncModel&) = delete;
  SyncModel& operator=(const SyncModel&) = delete;

  // Steps every measurement task alone (it must read nothing) and samples
  // each column every h, `samples` values from t = 0.
  void replay_measurements(std::size_t samples);
  // The optimiser's wall-clock budget per macro step (live runs: one macro
  // step h unless `sync.optimise.max_time` is given).
  void set_time_budget(double seconds) noexcept { settings_.max_seconds = seconds; }
  // Delta_o when it is known only once measurements came (`delay: measured`).
  void set_delay(double seconds) noexcept { settings_.delay_steps = std::lround(seconds / settings_.step); }
  [[nodiscard]] double time_budget() const noexcept { return settings_.max_seconds; }
  [[nodiscard]] int max_evaluations() const noexcept { return settings_.max_evaluations; }
  // A StateSync over this model; the model must outlive it.
  [[nodiscard]] std::unique_ptr<sync::StateSync> make_sync() const;

  [[nodiscard]] double step() const noexcept { return settings_.step; }
  [[nodiscard]] long delay_steps() const noexcept { return settings_.delay_steps; }
  [[nodiscard]] int horizon() const noexcept { return settings_.horizon; }
  [[nodiscard]] const std::vector<std::string>& components() const noexcept { return names_; }
  [[nodiscard]] const std::vector<std::string>& measurement_tasks() const noexcept { return measurement_tasks_; }
  // "block.port" of each measured column, and the column of compared pair i.
  [[nodiscard]] const std::vector<std::string>& column_signals() const noexcept { return column_signals_; }
  [[nodiscard]] std::size_t compared_column(std::size_t pair) const { return compared_.at(pair).column; }
  [[nodiscard]] sync::Measurements& measured() noexcept { return measured_; }
  [[nodiscard]] const sync::Measurements& measured() const noexcept { return measured_; }
  // Per decision variable: "block.parameter", its task, and its block and
  // parameter index in that task's partition (the same in the graph's).
  struct Variable {
    std::string name, task;
    std::size_t block = 0, parameter = 0;
  };
  [[nodiscard]] const std::vector<Variable>& variables() const noexcept { return variable_places_; }

 private:
  // The constructor's steps, in its order: each throws with the file's place.
  [[nodiscard]] long component_of(const std::string& task) const;
  std::size_t column(const std::string& signal);
  void build_components(const std::vector<tasks::TaskPartitionSpec>& split, const std::string& at);
  void feed_components(const std::string& at);
  void add_variables();
  void add_compared(const std::string& at);

  const config::GraphSpec& spec_;
  const tasks::BlockRegistry& blocks_;
  std::vector<std::string> names_, measurement_tasks_, column_signals_;
  std::vector<std::unique_ptr<tasks::Partition>> parts_;  // components
  std::vector<sync::Component> components_;
  std::vector<sync::DecisionVariable> variables_;
  std::vector<Variable> variable_places_;
  std::vector<sync::ComparedPair> compared_;
  sync::Measurements measured_;
  sync::SyncSettings settings_;
};

}  // namespace rtcosim::session
