#include "session/sync/sync_model.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "base/duration.hpp"
#include "base/text.hpp"
#include "tasks/diagram.hpp"

namespace rtcosim::session {

namespace {

using sync::InputFeed;

std::string where(const config::GraphSpec& spec, const config::Location& at) {
  return spec.file + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) + ": ";
}

const tasks::BlockSpec& block_spec(const config::GraphSpec& spec, const std::string& name) {
  for (const auto& b : spec.diagram.blocks) {
    if (b.name == name) return b;
  }
  throw std::invalid_argument("no block named '" + name + "'");
}

std::size_t block_index(const tasks::Partition& p, const std::string& name) {
  for (std::size_t i = 0; i < p.block_count(); ++i) {
    if (p.block(i).name() == name) return i;
  }
  throw std::invalid_argument("block '" + name + "' is not in task '" + p.name() + "'");
}

// Inputs of a partition stepped on its own: a measurement task reads nothing.
struct NoInputs final : tasks::InputSource {
  void sample(std::size_t, double, std::span<double>) noexcept override {}
};

// The synchronised tasks: those named, or every task without a measured
// signal; a task cannot be both measured and synchronised.
std::vector<std::string> component_names(const config::GraphSpec& spec,
                                         const std::vector<tasks::TaskPartitionSpec>& split, const std::string& at) {
  const auto& o = spec.sync.optimise;
  std::set<std::string> measured_tasks;
  for (const auto& c : spec.sync.compare) measured_tasks.insert(block_spec(spec, c.measured.block).task);
  std::vector<std::string> names = o.tasks;
  if (names.empty()) {
    for (const auto& p : split) {
      if (!measured_tasks.count(p.task)) names.push_back(p.task);
    }
  }
  for (const auto& n : names) {
    if (measured_tasks.count(n)) {
      throw std::invalid_argument(at + "task '" + n +
                                  "' holds a measured signal of 'sync.compare' and cannot also "
                                  "be synchronised — expected the measurement in a task of its own");
    }
  }
  return names;
}

// h: given, or the components' common period (one macro step steps them all).
double macro_step(const config::GraphSpec& spec, const std::vector<std::string>& names, const std::string& at) {
  double h = spec.sync.optimise.step;
  if (h <= 0.0) {
    for (const auto& n : names) {
      const double period = spec.find_task(n)->period;
      if (h > 0.0 && std::abs(period - h) > 1e-12 * h) {
        throw std::invalid_argument(at + "the synchronised tasks run at " + base::format_duration(h) + " and " +
                                    base::format_duration(period) + " ('" + n +
                                    "') — give the common macro step as 'sync.optimise.step'");
      }
      h = period;
    }
  }
  return h;
}

}  // namespace

SyncModel::SyncModel(const config::GraphSpec& spec, const tasks::BlockRegistry& blocks) : spec_(spec), blocks_(blocks) {
  const auto& o = spec.sync.optimise;
  if (!o.enabled) throw std::invalid_argument(spec.file + " has no 'sync.optimise' section (docs/sync.md)");
  const std::string at = where(spec, o.where);
  const auto split = tasks::split_by_task(blocks, spec.diagram);
  names_ = component_names(spec, split, at);
  const double h = macro_step(spec, names_, at);
  build_components(split, at);
  feed_components(at);
  add_variables();
  add_compared(at);
  settings_.step = h;
  settings_.horizon = o.horizon;
  settings_.dynamic = o.dynamic;
  settings_.solver = o.solver == "nelder_mead" ? sync::Solver::kNelderMead
                     : o.solver == "sbplx"     ? sync::Solver::kSbplx
                                               : sync::Solver::kBobyqa;
  settings_.max_evaluations = o.max_evaluations;
  settings_.max_seconds = o.max_time;
  settings_.delay_steps = std::lround(spec.sync.delay / h);
  settings_.reduce = o.reduce;
}

// Components are numbered in the order of names_, whatever the file's order
// of tasks: the index of a task there, or -1 for a measurement task.
long SyncModel::component_of(const std::string& task) const {
  const auto it = std::find(names_.begin(), names_.end(), task);
  return it == names_.end() ? -1 : it - names_.begin();
}

// One measured column per signal, however many feeds and pairs read it.
std::size_t SyncModel::column(const std::string& signal) {
  const auto it = std::find(column_signals_.begin(), column_signals_.end(), signal);
  if (it != column_signals_.end()) return static_cast<std::size_t>(it - column_signals_.begin());
  column_signals_.push_back(signal);
  measured_.columns.emplace_back();
  return column_signals_.size() - 1;
}

// The components' partitions in names_'s order; every other task is a
// measurement task, replayed on its own later.
void SyncModel::build_components(const std::vector<tasks::TaskPartitionSpec>& split, const std::string& at) {
  std::vector<const tasks::TaskPartitionSpec*> ordered(names_.size(), nullptr);
  for (const auto& p : split) {
    const long c = component_of(p.task);
    if (c >= 0) {
      ordered[static_cast<std::size_t>(c)] = &p;
    } else {
      measurement_tasks_.push_back(p.task);
    }
  }
  for (std::size_t c = 0; c < names_.size(); ++c) {
    if (!ordered[c]) throw std::invalid_argument(at + "task '" + names_[c] + "' runs no block");
    const auto* p = ordered[c];
    parts_.push_back(tasks::build_partition(blocks_, p->task, p->blocks, p->wires, p->externals,
                                            spec_.find_task(p->task)->integrator));
  }
}

// A component's input comes from another component's output, or else from
// the measurement: the synchronisation couples scalar signals only.
void SyncModel::feed_components(const std::string& at) {
  for (std::size_t c = 0; c < names_.size(); ++c) {
    sync::Component comp{parts_[c].get(), {}};
    for (const auto& x : parts_[c]->externals()) {
      const auto dot = x.name.find('.');
      const tasks::Endpoint source{x.name.substr(0, dot), x.name.substr(dot + 1)};
      if (x.width != 1) {
        throw std::invalid_argument(at + "task '" + names_[c] + "' reads '" + x.name + "' of width " +
                                    std::to_string(x.width) + " — the synchronisation couples scalar signals only");
      }
      const long from = component_of(block_spec(spec_, source.block).task);
      if (from >= 0) {
        comp.inputs.push_back({InputFeed::Kind::kComponent, static_cast<std::size_t>(from),
                               parts_[static_cast<std::size_t>(from)]->find_output(source), 0.0});
      } else {
        comp.inputs.push_back({InputFeed::Kind::kMeasured, column(x.name), {}, 0.0});
      }
    }
    components_.push_back(std::move(comp));
  }
}

// A decision variable tunes a parameter of a synchronised block: one in a
// measurement task could change nothing the optimiser sees.
void SyncModel::add_variables() {
  for (const auto& v : spec_.sync.optimise.variables) {
    const std::string& task = block_spec(spec_, v.block).task;
    const long c = component_of(task);
    if (c < 0) {
      throw std::invalid_argument(
          where(spec_, v.where) + "decision variable '" + v.block + "." + v.parameter + "' is in task '" + task +
          "', which is not synchronised — expected a parameter of a block in one of: " + base::join(names_));
    }
    const auto& part = *parts_[static_cast<std::size_t>(c)];
    const std::size_t bi = block_index(part, v.block);
    const auto tunables = part.block(bi).tunable_parameters();
    std::size_t pi = 0;
    while (pi < tunables.size() && v.parameter != tunables[pi]) ++pi;
    variables_.push_back({static_cast<std::size_t>(c), bi, pi, v.lower, v.upper, v.start});
    variable_places_.push_back({v.block + "." + v.parameter, task, bi, pi});
  }
}

// Each compared pair's simulated side must be a component's output, its
// measured side a column.
void SyncModel::add_compared(const std::string& at) {
  for (const auto& p : spec_.sync.compare) {
    const long c = component_of(block_spec(spec_, p.simulated.block).task);
    if (c < 0) {
      throw std::invalid_argument(at + "'sync.compare' simulates '" + p.simulated.str() + "' in task '" +
                                  block_spec(spec_, p.simulated.block).task + "', which is not synchronised");
    }
    compared_.push_back({static_cast<std::size_t>(c), parts_[static_cast<std::size_t>(c)]->find_output(p.simulated),
                         column(p.measured.str()), p.weight});
  }
}

void SyncModel::replay_measurements(std::size_t samples) {
  const std::string at = where(spec_, spec_.sync.optimise.where);
  const double h = settings_.step;
  for (const auto& task : measurement_tasks_) {
    std::vector<tasks::BlockSpec> own;
    std::vector<tasks::WireSpec> wires;
    for (const auto& b : spec_.diagram.blocks) {
      if (b.task == task) own.push_back(b);
    }
    auto in_task = [&](const tasks::Endpoint& e) { return block_spec(spec_, e.block).task == task; };
    for (const auto& w : spec_.diagram.wires) {
      const bool from = in_task(w.from), to = in_task(w.to);
      if (to && !from) {
        throw std::invalid_argument(at + "task '" + task + "' is on the measurement side but reads '" + w.from.str() +
                                    "' from another task — expected measurement tasks that only produce (a plant "
                                    "block replaying a recording)");
      }
      if (from && to) wires.push_back(w);
    }
    auto part = tasks::build_partition(blocks_, task, own, wires, {}, spec_.find_task(task)->integrator);
    const int sub = std::max(1, static_cast<int>(std::lround(h / spec_.find_task(task)->period)));
    std::vector<std::pair<std::size_t, tasks::OutputRef>> probes;
    for (std::size_t c = 0; c < column_signals_.size(); ++c) {
      const auto dot = column_signals_[c].find('.');
      const tasks::Endpoint e{column_signals_[c].substr(0, dot), column_signals_[c].substr(dot + 1)};
      if (!in_task(e)) continue;
      const auto ref = part->find_output(e);
      if (ref.width != 1) {
        throw std::invalid_argument(at + "'" + e.str() + "' has " + std::to_string(ref.width) +
                                    " elements — the synchronisation compares scalar signals only");
      }
      probes.emplace_back(c, ref);
      measured_.columns[c].clear();
    }
    NoInputs none;
    part->reset(0.0);
    part->refresh_outputs(none);
    for (std::size_t k = 0; k < samples; ++k) {
      for (const auto& [col, ref] : probes) measured_.columns[col].push_back(part->output(ref)[0]);
      for (int i = 0; i < sub; ++i) part->step(static_cast<double>(k) * h + i * (h / sub), h / sub, none);
      if (part->failed()) throw std::invalid_argument("task '" + task + "': " + part->failure());
    }
  }
}

std::unique_ptr<sync::StateSync> SyncModel::make_sync() const {
  try {
    return std::make_unique<sync::StateSync>(components_, variables_, compared_, measured_, settings_);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(where(spec_, spec_.sync.optimise.where) + e.what());
  }
}

}  // namespace rtcosim::session
