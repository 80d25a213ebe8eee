#include "session/sync/state_sync.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>
#include <stdexcept>
#include <utility>

#include <nlopt.hpp>

namespace rtcosim::session::sync {

using namespace rtcosim::tasks;

// Held external inputs of one component for the current macro step.
class HeldInputs final : public InputSource {
 public:
  std::vector<double> values;
  void sample(std::size_t input, double, std::span<double> out) noexcept override {
    for (auto& v : out) v = values[input];
  }
};

// The executions of one component in the current macro step, as a tree of
// their input prefixes (thesis Ansatz 2): node 0 is the snapshot; a child is
// one step from its parent with the inputs and parameter values `key`, and
// `slot` the partition's saved state after it.
struct ExecutionTree {
  struct Node {
    std::vector<double> key;
    std::size_t slot = 0;
    std::vector<std::size_t> children;
  };
  std::vector<Node> nodes;
  std::size_t at = 0;       // the node the component's state is at, in this evaluation
  bool diverged = false;    // this evaluation's prefix left the tree
  std::vector<double> key;  // scratch
};

struct StateSync::Impl {
  std::vector<HeldInputs> held;
  std::vector<ExecutionTree> trees;
  std::vector<std::vector<std::size_t>> own_variables;  // per component, indices into variables_
  std::uint32_t executions = 0;                         // of the current evaluation
  std::vector<std::uint32_t> step_executions;           // of each candidate of this macro step
  std::vector<double> step_candidates;
  std::vector<double> held_out;  // per pair, of the pass before the optimisation
  // cache[c][i][j]: input i of component c at horizon step j, from the pass
  // with the current u (the values a component that is not re-run supplies).
  std::vector<std::vector<std::vector<double>>> cache;
  // compared[q][j]: pair q's output at horizon step j of that pass, which a
  // component that is not re-run (u cannot reach it) supplies to every
  // candidate; failed_at[c]: the step at which component c failed in it.
  std::vector<std::vector<double>> compared;
  std::vector<int> failed_at;
  std::vector<double> best_x;
  double best_f = std::numeric_limits<double>::infinity();
  int evaluations = 0;
  std::size_t width = 0;  // variables per horizon step
  std::size_t slots = 1;  // horizon steps with their own u (dynamic: T_P - T_D + 1)
};

namespace {

nlopt::algorithm algorithm_of(Solver s) {
  switch (s) {
    case Solver::kNelderMead:
      return nlopt::LN_NELDERMEAD;
    case Solver::kSbplx:
      return nlopt::LN_SBPLX;
    case Solver::kBobyqa:
      break;
  }
  return nlopt::LN_BOBYQA;
}

// A variable must name a tunable parameter of one of the components, with a
// start inside its bounds: the optimiser is given nothing else to check.
void check_variables(const std::vector<Component>& components, const std::vector<DecisionVariable>& variables) {
  const std::size_t n = components.size();
  for (const auto& v : variables) {
    if (v.component >= n)
      throw std::invalid_argument("state synchronisation: a decision variable's component is out of range");
    const auto& block = components[v.component].partition->block(v.block);
    if (v.parameter >= block.tunable_parameters().size()) {
      throw std::invalid_argument("state synchronisation: block '" + block.name() + "' (" + block.type() +
                                  ") has no tunable parameter number " + std::to_string(v.parameter));
    }
    if (!(v.lower < v.upper) || v.start < v.lower || v.start > v.upper) {
      throw std::invalid_argument("state synchronisation: '" + block.name() + "': bounds [" + std::to_string(v.lower) +
                                  ", " + std::to_string(v.upper) + "] must be increasing and hold the start value " +
                                  std::to_string(v.start));
    }
  }
}

using Edges = std::vector<std::vector<std::size_t>>;

// Edges source -> consumer (next) and back (prev), from the component
// feeds, each of which must match one of the partition's external inputs.
std::pair<Edges, Edges> edges_of(const std::vector<Component>& components) {
  const std::size_t n = components.size();
  Edges next(n), prev(n);
  for (std::size_t c = 0; c < n; ++c) {
    if (components[c].inputs.size() != components[c].partition->externals().size()) {
      throw std::invalid_argument("state synchronisation: component '" + components[c].partition->name() + "' has " +
                                  std::to_string(components[c].partition->externals().size()) +
                                  " external inputs and " + std::to_string(components[c].inputs.size()) + " feeds");
    }
    for (const auto& f : components[c].inputs) {
      if (f.kind == InputFeed::Kind::kComponent) {
        next[f.source].push_back(c);
        prev[c].push_back(f.source);
      }
    }
  }
  return {std::move(next), std::move(prev)};
}

// Hop distances by breadth-first search: -1 where `from` cannot reach.
std::vector<int> reach(const Edges& edges, const std::vector<std::size_t>& from) {
  std::vector<int> hops(edges.size(), -1);
  std::deque<std::size_t> queue;
  for (auto f : from) {
    hops[f] = 0;
    queue.push_back(f);
  }
  while (!queue.empty()) {
    const auto c = queue.front();
    queue.pop_front();
    for (auto d : edges[c]) {
      if (hops[d] < 0) {
        hops[d] = hops[c] + 1;
        queue.push_back(d);
      }
    }
  }
  return hops;
}

// A component's snapshot must be one: a block that keeps its own state
// (an FMU) has to be able to save and restore it.
void check_snapshots(const std::vector<Component>& components) {
  for (const auto& c : components) {
    for (std::size_t b = 0; b < c.partition->block_count(); ++b) {
      if (!c.partition->mutable_block(b).save_state()) {
        throw std::invalid_argument("state synchronisation: block '" + c.partition->block(b).name() + "' (" +
                                    c.partition->block(b).type() + ") of component '" + c.partition->name() +
                                    "' cannot save its state (an FMU must declare canGetAndSetFMUstate) — it cannot "
                                    "be re-run from a snapshot");
      }
    }
  }
}

}  // namespace

double objective_trampoline(unsigned, const double* x, double*, void* data) {
  return static_cast<StateSync*>(data)->horizon_objective(x);
}

StateSync::StateSync(std::vector<Component> components, std::vector<DecisionVariable> variables,
                     std::vector<ComparedPair> compared, const Measurements& measured, SyncSettings settings)
    : impl_(std::make_unique<Impl>()),
      components_(std::move(components)),
      variables_(std::move(variables)),
      compared_(std::move(compared)),
      measured_(measured),
      settings_(settings) {
  if (variables_.empty()) throw std::invalid_argument("state synchronisation: no decision variables");
  if (compared_.empty()) throw std::invalid_argument("state synchronisation: no compared pairs");
  if (settings_.horizon < 1) throw std::invalid_argument("state synchronisation: the horizon T_P must be >= 1 step");
  check_variables(components_, variables_);
  const auto [next, prev] = edges_of(components_);
  std::vector<std::size_t> u_components, y_components;
  for (const auto& v : variables_) u_components.push_back(v.component);
  for (const auto& p : compared_) y_components.push_back(p.component);
  const auto from_u = reach(next, u_components);
  const auto to_y = reach(prev, y_components);
  int shortest = -1;
  for (auto c : y_components) {
    if (from_u[c] >= 0 && (shortest < 0 || from_u[c] < shortest)) shortest = from_u[c];
  }
  if (shortest < 0)
    throw std::invalid_argument("state synchronisation: no decision variable can influence a compared output");
  distance_ = shortest + 1;  // thesis eq. 4.2: T_D
  if (settings_.horizon < distance_) {
    throw std::invalid_argument("state synchronisation: the horizon T_P = " + std::to_string(settings_.horizon) +
                                " is shorter than the distance T_D = " + std::to_string(distance_) +
                                " from u to the compared output");
  }
  check_snapshots(components_);
  size_state(from_u, to_y);
  reset();
}

// Which components re-run, for how many steps, and the per-component
// buffers: fixed once here so that no macro step allocates.
void StateSync::size_state(const std::vector<int>& from_u, const std::vector<int>& to_y) {
  const std::size_t n = components_.size();
  rerun_.resize(n);
  gamma_.resize(n);
  reuse_.resize(n);
  impl_->trees.resize(n);
  impl_->own_variables.resize(n);
  for (std::size_t i = 0; i < variables_.size(); ++i) impl_->own_variables[variables_[i].component].push_back(i);
  for (std::size_t c = 0; c < n; ++c) {
    rerun_[c] = !settings_.reduce || (from_u[c] >= 0 && to_y[c] >= 0);
    // Eq. 4.5: its step j reaches a compared output at step j + hops, which
    // counts only up to T_P - 1.
    gamma_[c] = !settings_.reduce ? settings_.horizon : rerun_[c] ? settings_.horizon - to_y[c] : 0;
    reuse_[c] = settings_.reduce && rerun_[c] && components_[c].partition->slots_possible();
  }
  impl_->held.resize(n);
  impl_->cache.resize(n);
  for (std::size_t c = 0; c < n; ++c) {
    impl_->held[c].values.assign(components_[c].inputs.size(), 0.0);
    impl_->cache[c].assign(components_[c].inputs.size(), std::vector<double>(settings_.horizon, 0.0));
  }
  impl_->compared.assign(compared_.size(), std::vector<double>(settings_.horizon, 0.0));
  impl_->failed_at.assign(n, settings_.horizon);
  impl_->width = variables_.size();
  impl_->slots = settings_.dynamic ? static_cast<std::size_t>(settings_.horizon - distance_ + 1) : 1;
}

StateSync::~StateSync() = default;

void StateSync::reset() {
  u_.clear();
  for (const auto& v : variables_) u_.push_back(v.start);
  apply_u(u_.data());
  for (auto& c : components_) {
    c.partition->reset(0.0);
  }
  // Outputs at t0 from the inputs at t0.
  for (std::size_t c = 0; c < components_.size(); ++c) {
    for (std::size_t i = 0; i < components_[c].inputs.size(); ++i) {
      const auto& f = components_[c].inputs[i];
      impl_->held[c].values[i] = f.kind == InputFeed::Kind::kMeasured   ? measured_.held(f.source, 0)
                                 : f.kind == InputFeed::Kind::kConstant ? f.value
                                                                        : 0.0;
    }
    components_[c].partition->refresh_outputs(impl_->held[c]);
  }
  k_ = 0;
  n_ges_ = 0;
}

void StateSync::apply_u(const double* u) noexcept {
  for (std::size_t i = 0; i < variables_.size(); ++i) {
    const auto& v = variables_[i];
    (void)components_[v.component].partition->mutable_block(v.block).set_tunable(v.parameter, u[i]);
  }
}

// Jacobi: every input is read before any component steps. `j` >= 0 is the
// horizon step (a component that does not run supplies its cached value).
void StateSync::step_components(const std::vector<bool>& which, std::size_t k, bool reuse, bool limit) {
  const auto j = static_cast<long>(k) - static_cast<long>(k_);
  for (std::size_t c = 0; c < components_.size(); ++c) {
    if (!which[c]) continue;
    for (std::size_t i = 0; i < components_[c].inputs.size(); ++i) {
      const auto& f = components_[c].inputs[i];
      double v = f.value;
      if (f.kind == InputFeed::Kind::kMeasured) {
        v = measured_.held(f.source, k);
      } else if (f.kind == InputFeed::Kind::kComponent) {
        v = which[f.source] ? components_[f.source].partition->output(f.ref)[0]
                            : impl_->cache[c][i][static_cast<std::size_t>(j)];
      }
      impl_->held[c].values[i] = v;
    }
  }
  const double h = settings_.step;
  for (std::size_t c = 0; c < components_.size(); ++c) {
    if (!which[c] || (limit && j >= gamma_[c])) continue;
    Partition& part = *components_[c].partition;
    ExecutionTree* tree = reuse && reuse_[c] ? &impl_->trees[c] : nullptr;
    if (tree) {
      // The key: this step's inputs and the values of u set in this component.
      tree->key = impl_->held[c].values;
      for (std::size_t v : impl_->own_variables[c])
        tree->key.push_back(part.block(variables_[v].block).tunable(variables_[v].parameter));
      if (!tree->diverged) {
        const auto& children = tree->nodes[tree->at].children;
        const auto same = std::find_if(children.begin(), children.end(),
                                       [&](std::size_t n) { return tree->nodes[n].key == tree->key; });
        if (same != children.end()) {
          tree->at = *same;
          part.load_slot(tree->nodes[*same].slot);
          continue;
        }
        tree->diverged = true;
      }
    }
    part.step(static_cast<double>(k) * h, h, impl_->held[c]);
    ++n_ges_;
    ++impl_->executions;
    if (tree) {
      tree->nodes.push_back({tree->key, part.save_to_slot(), {}});
      tree->nodes[tree->at].children.push_back(tree->nodes.size() - 1);
      tree->at = tree->nodes.size() - 1;
    }
  }
}

double StateSync::horizon_objective(const double* x) {
  const bool nominal = x == nullptr;
  const std::vector<bool> all(components_.size(), true);
  const auto& which = nominal ? all : rerun_;
  for (std::size_t c = 0; c < components_.size(); ++c) {
    if (which[c]) components_[c].partition->restore();
    impl_->trees[c].at = 0;
    impl_->trees[c].diverged = false;
  }
  impl_->executions = 0;
  double J = 0.0;
  for (int j = 0; j < settings_.horizon; ++j) {
    const std::size_t slot = std::min<std::size_t>(static_cast<std::size_t>(j), impl_->slots - 1);
    apply_u(nominal ? u_.data() : x + slot * impl_->width);
    step_components(which, k_ + static_cast<std::size_t>(j), true, !nominal);
    // A candidate that drove a component's state to NaN or infinity (the
    // partition stops there, its outputs frozen at the last finite step)
    // is never the best: its objective is infinite.
    // A component that is not re-run failed in this candidate where it
    // failed in the pass before the optimisation, as a full run would see.
    bool blew_up = false;
    for (std::size_t c = 0; c < components_.size(); ++c) {
      const bool failed =
          which[c] ? (nominal || j < gamma_[c]) && components_[c].partition->failed() : j >= impl_->failed_at[c];
      if (nominal && failed) impl_->failed_at[c] = std::min(impl_->failed_at[c], j);
      blew_up = blew_up || failed;
    }
    if (blew_up) {
      J = std::numeric_limits<double>::infinity();
      break;
    }
    const auto js = static_cast<std::size_t>(j);
    if (nominal) {
      for (std::size_t c = 0; c < components_.size(); ++c) {
        for (std::size_t i = 0; i < components_[c].inputs.size(); ++i) {
          impl_->cache[c][i][js] = impl_->held[c].values[i];
        }
      }
      for (std::size_t q = 0; q < compared_.size(); ++q)
        impl_->compared[q][js] = components_[compared_[q].component].partition->output(compared_[q].ref)[0];
    }
    if (j + 1 < distance_) continue;
    const long at = static_cast<long>(k_) + j + 1 + settings_.delay_steps;
    for (std::size_t q = 0; q < compared_.size(); ++q) {
      const auto& p = compared_[q];
      if (at < 0 || !measured_.has(p.column, static_cast<std::size_t>(at))) continue;
      const double y =
          which[p.component] ? components_[p.component].partition->output(p.ref)[0] : impl_->compared[q][js];
      const double e = y - measured_.columns[p.column][static_cast<std::size_t>(at) - measured_.first];
      J += p.weight * e * e;
      if (nominal && j + 1 == settings_.horizon) impl_->held_out[q] = e;
    }
  }
  if (!nominal) {
    ++impl_->evaluations;
    impl_->step_executions.push_back(impl_->executions);
    impl_->step_candidates.insert(impl_->step_candidates.end(), x, x + impl_->width * impl_->slots);
    if (J < impl_->best_f) {
      impl_->best_f = J;
      impl_->best_x.assign(x, x + impl_->width * impl_->slots);
    }
  }
  return J;
}

void StateSync::advance() {
  step_components(std::vector<bool>(components_.size(), true), k_);
  ++k_;
}

StepFigures StateSync::synchronise() {
  StepFigures fig;
  const auto start = std::chrono::steady_clock::now();
  for (auto& c : components_) c.partition->snapshot();
  for (std::size_t c = 0; c < components_.size(); ++c) {
    impl_->trees[c].nodes.assign(1, {});
    if (reuse_[c]) components_[c].partition->clear_slots();
  }
  impl_->step_executions.clear();
  impl_->held_out.assign(compared_.size(), std::numeric_limits<double>::quiet_NaN());
  impl_->step_candidates.clear();
  impl_->failed_at.assign(components_.size(), settings_.horizon);
  fig.objective_before = horizon_objective(nullptr);  // also fills the cache and the execution trees
  const std::size_t n = impl_->width * impl_->slots;
  std::vector<double> x(n), lower(n), upper(n);
  for (std::size_t s = 0; s < impl_->slots; ++s) {
    for (std::size_t i = 0; i < impl_->width; ++i) {
      const auto& v = variables_[i];
      x[s * impl_->width + i] = std::clamp(settings_.warm_start ? u_[i] : v.start, v.lower, v.upper);
      lower[s * impl_->width + i] = v.lower;
      upper[s * impl_->width + i] = v.upper;
    }
  }
  impl_->best_f = fig.objective_before;
  impl_->best_x = x;
  impl_->evaluations = 0;
  if (fig.objective_before > settings_.tolerance) {
    nlopt::opt opt(algorithm_of(settings_.solver), static_cast<unsigned>(n));
    opt.set_lower_bounds(lower);
    opt.set_upper_bounds(upper);
    opt.set_min_objective(objective_trampoline, this);
    opt.set_maxeval(settings_.max_evaluations);
    if (settings_.max_seconds > 0.0) opt.set_maxtime(settings_.max_seconds);
    opt.set_stopval(settings_.tolerance);
    opt.set_xtol_rel(1e-10);
    double f = 0.0;
    try {
      const auto result = opt.optimize(x, f);
      fig.budget_exhausted = result == nlopt::MAXEVAL_REACHED || result == nlopt::MAXTIME_REACHED;
    } catch (const std::exception&) {
      // Round-off limits and the like: keep the best point seen.
    }
  }
  fig.evaluations = impl_->evaluations;
  fig.executions = impl_->step_executions;
  fig.candidates = impl_->step_candidates;
  fig.held_out = impl_->held_out;
  fig.objective_after = impl_->best_f;
  std::copy_n(impl_->best_x.begin(), impl_->width, u_.begin());
  for (std::size_t i = 0; i < variables_.size(); ++i) {
    const auto& v = variables_[i];
    const double margin = 1e-9 * (v.upper - v.lower);
    fig.on_bound = fig.on_bound || u_[i] <= v.lower + margin || u_[i] >= v.upper - margin;
  }
  // Commit: from the snapshot, one macro step with the chosen u.
  for (auto& c : components_) c.partition->restore();
  apply_u(u_.data());
  advance();
  fig.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return fig;
}

double StateSync::output(std::size_t pair) const {
  const auto& p = compared_.at(pair);
  return components_[p.component].partition->output(p.ref)[0];
}

}  // namespace rtcosim::session::sync
