#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tasks/partition.hpp"

namespace rtcosim::session::sync {

// The partitions and blocks it drives are the block layer's.
using tasks::OutputRef;
using tasks::Partition;

/*
 * The state synchronisation of thesis 4.1-4.5 (docs/sync.md): simulation
 * components (partitions) coupled at a common macro step h (Jacobi: every
 * external input holds the value its source had at the step's start) run
 * beside measured data; before each macro step an optimiser (NLopt) chooses
 * decision variables u (tunable block parameters) so that the compared
 * outputs match the measurements over the horizon T_P:
 *   J(u) = sum over pairs w * sum_{j = T_D..T_P} (y_{k+j} - y^_{k+j+d})^2   (eq. 4.3)
 * T_D is the graph distance from u to the compared output (1 + the number of
 * component hops), d = Delta_o in macro steps. Static: one u over the
 * horizon; dynamic: one u per step of it (eq. 4.4). Each candidate restores
 * the partitions' snapshot and re-runs the horizon; with `reduce` (thesis
 * 4.4.1-4.4.3), a candidate steps only components that u can influence and
 * that can influence a compared output, each only its first
 * Gamma_k = T_P - (hops from k to a compared component) steps (Ansatz 1,
 * eq. 4.5), and a step whose component's inputs and parameters so far equal
 * those of an execution already made in this macro step loads that
 * execution's saved state instead (Ansatz 2). N_ges counts
 * Partition::step calls (thesis eq. 5.1); a loaded state is not one.
 *
 * Threads and memory: NLopt allocates on every optimisation, so StateSync
 * is not for a real-time frame; it owns nothing but its bookkeeping, the
 * partitions belong to the caller, and one thread uses it.
 */
struct InputFeed {
  enum class Kind { kComponent, kMeasured, kConstant } kind = Kind::kConstant;
  std::size_t source = 0;  // component index, or measurement column
  OutputRef ref;           // of the source component's output (element 0 used)
  double value = 0.0;      // kConstant
};

struct Component {
  Partition* partition = nullptr;
  std::vector<InputFeed> inputs;  // one per external input of the partition (scalar)
};

struct DecisionVariable {
  std::size_t component = 0;
  std::size_t block = 0;      // index in the partition
  std::size_t parameter = 0;  // index into Block::tunable_parameters()
  double lower = 0.0, upper = 1.0, start = 0.5;
};

struct ComparedPair {
  std::size_t component = 0;
  OutputRef ref;
  std::size_t column = 0;  // measured column
  double weight = 1.0;
};

// Sampled measurements: columns[c][k - first] is the value at t0 + k h. A
// live run appends at the back and drops from the front what no macro step
// reads any more (first counts the dropped values).
struct Measurements {
  std::vector<std::vector<double>> columns;
  std::size_t first = 0;
  // The value at index k (held at the ends: the first or the last known).
  [[nodiscard]] double held(std::size_t c, std::size_t k) const {
    const auto& col = columns[c];
    return col[k < first ? 0 : std::min(k - first, col.size() - 1)];
  }
  // Whether index k is known.
  [[nodiscard]] bool has(std::size_t c, std::size_t k) const { return k >= first && k - first < columns[c].size(); }
};

enum class Solver { kNelderMead, kBobyqa, kSbplx };

struct SyncSettings {
  double step = 0.01;  // h, seconds
  int horizon = 1;     // T_P, macro steps
  bool dynamic = false;
  Solver solver = Solver::kBobyqa;
  int max_evaluations = 60;  // per macro step
  double max_seconds = 0.0;  // per macro step; 0: no limit
  double tolerance = 1e-12;  // stop when J < tolerance (the thesis's epsilon)
  long delay_steps = 0;      // Delta_o in macro steps
  bool reduce = true;
  bool warm_start = true;  // start from the last macro step's u
};

// Per-macro-step figures of the optimiser (docs/sync.md defines them).
struct StepFigures {
  int evaluations = 0;
  double seconds = 0.0;  // wall clock, steady_clock, around the optimisation
  double objective_before = 0.0;
  double objective_after = 0.0;
  bool budget_exhausted = false;
  // Partition::step calls of each candidate evaluation, in order (the
  // thesis's executions per optimiser iteration, table 4.2).
  std::vector<std::uint32_t> executions;
  // Each candidate's decision variables, one after the other (width: the
  // variables, times T_P - T_D + 1 when dynamic).
  std::vector<double> candidates;
  // Per compared pair, the held-out error: y_{k+T_P} - y^_{k+T_P+d} as the
  // pass before the optimisation predicted it (the u and state from before
  // this macro step), a measurement no earlier objective used; NaN where the
  // measurement is not known.
  std::vector<double> held_out;
  // Whether a chosen u lies on its lower or upper bound (within 1e-9 of the
  // range).
  bool on_bound = false;
};

class StateSync {
 public:
  StateSync(std::vector<Component> components, std::vector<DecisionVariable> variables,
            std::vector<ComparedPair> compared, const Measurements& measured, SyncSettings settings);
  ~StateSync();

  // Resets every partition to t0 = 0 and u to its start values.
  void reset();
  // One macro step without synchronisation (u as it is).
  void advance();
  // One macro step with synchronisation: optimise, apply, advance.
  StepFigures synchronise();

  [[nodiscard]] std::size_t step_index() const noexcept { return k_; }
  [[nodiscard]] double output(std::size_t pair) const;                             // the compared output now
  [[nodiscard]] std::uint64_t partition_steps() const noexcept { return n_ges_; }  // N_ges
  [[nodiscard]] int distance() const noexcept { return distance_; }                // T_D
  [[nodiscard]] const std::vector<bool>& rerun() const noexcept { return rerun_; }
  // Per component: Gamma_k, the horizon steps a candidate runs it (eq. 4.5;
  // T_P for every one without `reduce`), and whether its executions are
  // reused (Ansatz 2: `reduce`, and no block keeps its own state).
  [[nodiscard]] const std::vector<int>& gamma() const noexcept { return gamma_; }
  [[nodiscard]] const std::vector<bool>& reused() const noexcept { return reuse_; }
  [[nodiscard]] const std::vector<double>& u() const noexcept { return u_; }  // current, per variable
  // The optimiser's wall-clock budget for the next macro steps (0: none).
  void set_time_budget(double seconds) noexcept { settings_.max_seconds = seconds; }
  [[nodiscard]] double time_budget() const noexcept { return settings_.max_seconds; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<Component> components_;
  std::vector<DecisionVariable> variables_;
  std::vector<ComparedPair> compared_;
  const Measurements& measured_;
  SyncSettings settings_;
  std::vector<bool> rerun_;
  std::vector<int> gamma_;
  std::vector<bool> reuse_;
  std::vector<double> u_;
  int distance_ = 1;
  std::size_t k_ = 0;
  std::uint64_t n_ges_ = 0;

  // In a pass over the horizon, `reuse` lets a component load the state of
  // an identical earlier execution (Ansatz 2) and `limit` stops each after
  // its first Gamma_k steps (eq. 4.5); otherwise every component in `which`
  // steps.
  void step_components(const std::vector<bool>& which, std::size_t k, bool reuse = false, bool limit = false);
  // The constructor's last step, once everything is checked.
  void size_state(const std::vector<int>& from_u, const std::vector<int>& to_y);
  void apply_u(const double* u) noexcept;
  double horizon_objective(const double* x);
  friend double objective_trampoline(unsigned n, const double* x, double* grad, void* data);
};

}  // namespace rtcosim::session::sync
