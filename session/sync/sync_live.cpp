#include "session/sync/sync_live.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "base/duration.hpp"
#include "base/json.hpp"
#include "session/sync/sync_report.hpp"

namespace rtcosim::session {

namespace {

std::size_t series_of(const runtime::Recorder& recorder, const config::GraphSpec& spec, const std::string& signal) {
  const auto& all = recorder.series();
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].signal == signal) return i;
  }
  throw std::invalid_argument(spec.file + ": the live synchronisation reads '" + signal +
                              "' from the recording, which does not record it — add it to 'record.signals'");
}

}  // namespace

double live_time_budget(double h, std::span<const TaskLoad> tasks) noexcept {
  double unpinned = 0.0;
  for (const auto& t : tasks) {
    if (t.cpu < 0 && t.period > 0.0) unpinned += t.exec_p99 / t.period;
  }
  double busiest = 0.0;
  bool any_component = false;
  for (const auto& c : tasks) {
    if (!c.component) continue;
    any_component = true;
    double load = unpinned;
    if (c.cpu >= 0) {
      for (const auto& t : tasks) {
        if (t.cpu == c.cpu && t.period > 0.0) load += t.exec_p99 / t.period;
      }
    }
    busiest = std::max(busiest, load);
  }
  if (!any_component) busiest = unpinned;
  return h * std::max(0.1, 1.0 - busiest);
}

LiveSync::LiveSync(const config::GraphSpec& spec, const tasks::BlockRegistry& blocks, runtime::Graph& graph,
                   const runtime::Recorder& recorder, double duration)
    : spec_(spec), recorder_(recorder), with_(spec, blocks), without_(spec, blocks), graph_(graph) {
  for (const auto& signal : with_.column_signals()) {
    column_series_.push_back(series_of(recorder, spec, signal));
  }
  for (const auto& p : spec.sync.compare) simulated_series_.push_back(series_of(recorder, spec, p.simulated.str()));
  for (const auto& v : with_.variables()) {
    runtime::TaskRuntime* task = nullptr;
    for (auto& t : graph.tasks()) {
      if (t->spec().name == v.task) task = t.get();
    }
    if (!task || v.block >= task->partition().block_count() ||
        task->partition().block(v.block).name() != v.name.substr(0, v.name.find('.'))) {
      throw std::logic_error("live synchronisation: task '" + v.task + "' of the graph does not hold '" + v.name +
                             "' where its copy does");
    }
    variable_tasks_.push_back(task);
  }
  endless_ = !(duration > 0.0);
  macro_steps_ = endless_ ? ~std::size_t{0} : static_cast<std::size_t>(std::llround(duration / with_.step()));
  if (!(spec.sync.optimise.max_time > 0.0)) {
    auto_budget_ = true;
    with_.set_time_budget(with_.step());
    without_.set_time_budget(with_.step());
  }
  for (const auto& t : graph.tasks()) {
    const auto& names = with_.components();
    is_component_.push_back(std::find(names.begin(), names.end(), t->spec().name) != names.end());
  }
  loads_.resize(graph.tasks().size());
  run_ = sync_run_for(with_, spec);
}

LiveSync::~LiveSync() = default;

// Appends y^(n h) to every column once a sample at or after n h arrived.
// Found by time, not by position: the recorder keeps only the latest
// samples of an endless run.
void LiveSync::append_measurements() {
  const double h = with_.step(), eps = 1e-6 * h;
  auto& m = with_.measured();
  for (std::size_t c = 0; c < column_series_.size(); ++c) {
    const auto& s = recorder_.series()[column_series_[c]];
    auto& col = m.columns[c];
    while (!s.time.empty()) {
      const double tn = static_cast<double>(m.first + col.size()) * h;
      if (s.time.back() < tn - eps) break;
      const auto after = std::upper_bound(s.time.begin(), s.time.end(), tn + eps);
      const double v =
          after == s.time.begin() ? s.value.front() : s.value[static_cast<std::size_t>(after - s.time.begin()) - 1];
      col.push_back(v);
      without_.measured().columns[c].push_back(v);
    }
  }
}

void LiveSync::poll(bool final) {
  (void) final;  // steps whose horizon the measurement does not cover stay undone either way
  append_measurements();
  std::size_t covered = ~std::size_t{0};
  for (const auto& col : with_.measured().columns) covered = std::min(covered, col.size());
  if (covered == 0 && with_.measured().first == 0) return;
  if (!sync_ && spec_.sync.measured) {
    // `delay: measured`: Delta_o from the first kMeasuredRows rows' ages;
    // the columns wait meanwhile (nothing is cut before the first step).
    const auto delay = measured_output_delay(kMeasuredRows);
    if (!delay) return;
    with_.set_delay(*delay);
    without_.set_delay(*delay);
    run_.delay_steps = with_.delay_steps();
  }
  if (!sync_) {
    // Built once y^(0) is known: StateSync starts its components from the
    // measured inputs at t = 0.
    sync_ = with_.make_sync();
    shadow_ = without_.make_sync();
    run_.distance = sync_->distance();
    for (std::size_t c = 0; c < run_.components.size(); ++c) {
      if (sync_->rerun()[c]) run_.rerun.push_back(run_.components[c]);
    }
  }
  const auto needs = [&](std::size_t k) {
    // Indices up to k + T_P + d of every column.
    return static_cast<long>(k) + with_.horizon() + std::max(0L, with_.delay_steps()) + 1;
  };
  std::size_t known = covered + with_.measured().first;  // indices 0 .. known-1 are in
  while (sync_->step_index() < macro_steps_ && static_cast<long>(known) >= needs(sync_->step_index())) {
    if (auto_budget_) {
      const auto& tasks = graph_.tasks();
      for (std::size_t i = 0; i < tasks.size(); ++i) {
        const auto& t = *tasks[i];
        loads_[i] =
            TaskLoad{t.spec().cpu, t.spec().period, static_cast<double>(t.stats().execution_ns.percentile(0.99)) * 1e-9,
                     is_component_[i] != 0};
      }
      sync_->set_time_budget(live_time_budget(with_.step(), loads_));
    }
    totals_.budget_last = sync_->time_budget();
    const auto fig = sync_->synchronise();
    shadow_->advance();
    ++totals_.steps;
    totals_.evaluations += static_cast<std::uint64_t>(fig.evaluations);
    totals_.max_evaluations = std::max(totals_.max_evaluations, fig.evaluations);
    totals_.exhausted += fig.budget_exhausted ? 1 : 0;
    totals_.seconds += fig.seconds;
    totals_.max_seconds = std::max(totals_.max_seconds, fig.seconds);
    totals_.before_last = fig.objective_before;
    totals_.after_last = fig.objective_after;
    for (std::size_t i = 0; i < run_.variables.size(); ++i) {
      const auto& v = with_.variables()[i];
      if (variable_tasks_[i]->post_parameter(v.block, v.parameter, sync_->u()[i])) {
        ++posted_;
      } else {
        ++refused_;
      }
    }
    if (endless_) continue;
    run_.steps.push_back(fig);
    run_.time.push_back(static_cast<double>(sync_->step_index()) * with_.step());
    for (std::size_t i = 0; i < run_.variables.size(); ++i) run_.u[i].push_back(sync_->u()[i]);
    for (std::size_t i = 0; i < run_.pairs.size(); ++i) run_.pairs[i].without.push_back(shadow_->output(i));
  }
  // An endless run drops what the next macro step no longer reads (it
  // reads from its own index on), in batches.
  if (endless_) {
    for (auto* m : {&with_.measured(), &without_.measured()}) {
      const std::size_t k = sync_->step_index();
      if (k > m->first + 4096) {
        const std::size_t drop = k - m->first;
        for (auto& col : m->columns) col.erase(col.begin(), col.begin() + static_cast<std::ptrdiff_t>(drop));
        m->first += drop;
      }
    }
  }
}

std::string LiveSync::status_json() const {
  using base::json_number;
  std::uint64_t applied = 0;
  for (const auto* t : variable_tasks_) applied += t->parameters_applied();
  const double n = totals_.steps ? static_cast<double>(totals_.steps) : 1.0;
  std::string out =
      "{\"steps\":" + std::to_string(totals_.steps) +
      ",\"evaluations_mean\":" + json_number(static_cast<double>(totals_.evaluations) / n) +
      ",\"evaluations_max\":" + std::to_string(totals_.max_evaluations) +
      ",\"seconds_mean\":" + json_number(totals_.seconds / n) + ",\"seconds_max\":" + json_number(totals_.max_seconds) +
      ",\"budget_exhausted\":" + std::to_string(totals_.exhausted) +
      ",\"budget_s\":" + json_number(totals_.budget_last) +
      ",\"objective_before\":" + json_number(totals_.before_last) +
      ",\"objective_after\":" + json_number(totals_.after_last) + ",\"posted\":" + std::to_string(posted_) +
      ",\"applied\":" + std::to_string(applied) + ",\"refused\":" + std::to_string(refused_) + ",\"u\":{";
  for (std::size_t i = 0; i < run_.variables.size(); ++i) {
    out += (i ? "," : "") + base::json_string(run_.variables[i]) + ":" +
           json_number(sync_ ? sync_->u()[i] : spec_.sync.optimise.variables[i].start);
  }
  return out + "}}";
}

SyncRun LiveSync::result() {
  run_.macro_steps = run_.time.size();
  run_.n_ges = sync_ ? sync_->partition_steps() : 0;
  run_.n_ges_without = shadow_ ? shadow_->partition_steps() : 0;
  const double h = with_.step(), eps = 1e-6 * h;
  for (std::size_t i = 0; i < run_.pairs.size(); ++i) {
    const auto& s = recorder_.series()[simulated_series_[i]];
    auto& with = run_.pairs[i].with;
    with.clear();
    std::size_t at = 0;
    for (const double t : run_.time) {
      while (at + 1 < s.time.size() && s.time[at + 1] <= t + eps) ++at;
      with.push_back(s.time.empty() ? std::nan("") : s.time[at] <= t + eps ? s.value[at] : s.value.front());
    }
  }
  score_sync_pairs(run_, with_);
  return run_;
}

std::string LiveSync::summary() {
  const SyncRun run = result();
  std::uint64_t applied = 0;
  for (const auto* t : variable_tasks_) applied += t->parameters_applied();
  std::string out =
      "state synchronisation (live; 'with' is the running graph's recorded signal, 'without' a copy "
      "left unsynchronised):\n";
  out += sync_run_summary(run, spec_);
  out += "  parameter updates: " + std::to_string(posted_) + " posted to the running tasks, " +
         std::to_string(applied) + " applied by their frames, " + std::to_string(refused_) +
         " refused (inbox full); macro steps synchronised " + std::to_string(run.steps.size()) + " of " +
         std::to_string(macro_steps_) + "\n";
  if (auto_budget_) {
    out += "  time budget per macro step: " + base::format_duration(totals_.budget_last) + " in the last (h " +
           base::format_duration(with_.step()) + " less the CPU share of the real-time frames, p99)\n";
  }
  return out;
}

}  // namespace rtcosim::session
