#include "session/sync/sync_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

#include "base/duration.hpp"
#include "base/json.hpp"
#include "session/report/svg_plot.hpp"
#include "session/report/text_table.hpp"
#include "session/sync/sync_model.hpp"
#include "tasks/diagram.hpp"

namespace rtcosim::session {

SyncRun sync_run_for(const SyncModel& model, const config::GraphSpec& spec) {
  SyncRun run;
  run.components = model.components();
  run.measurement_tasks = model.measurement_tasks();
  run.step = model.step();
  run.delay_steps = model.delay_steps();
  for (const auto& v : model.variables()) run.variables.push_back(v.name);
  run.u.assign(run.variables.size(), {});
  for (const auto& p : spec.sync.compare) {
    SyncPairSeries series;
    series.simulated = p.simulated.str();
    series.measured = p.measured.str();
    series.weight = p.weight;
    run.pairs.push_back(std::move(series));
  }
  return run;
}

void score_sync_pairs(SyncRun& run, const SyncModel& model) {
  // At the compared instants t_k against y^(t_k + Delta_o).
  for (std::size_t i = 0; i < run.pairs.size(); ++i) {
    auto& p = run.pairs[i];
    PairErrors errors;
    p.measured_values.clear();
    for (std::size_t k = 1; k <= run.time.size(); ++k) {
      const long idx = static_cast<long>(k) + run.delay_steps;
      const auto& measured = model.measured();
      const std::size_t column = model.compared_column(i);
      const double m = idx >= 0 && measured.has(column, static_cast<std::size_t>(idx))
                           ? measured.columns[column][static_cast<std::size_t>(idx) - measured.first]
                           : std::nan("");
      p.measured_values.push_back(m);
      if (!std::isnan(m) && k <= p.without.size() && k <= p.with.size()) {
        errors.add(p.without[k - 1] - m, p.with[k - 1] - m);
      }
    }
    errors.finish(p);
    double sum = 0.0;
    p.held_out_instants = 0;
    p.max_held_out = 0.0;
    for (const auto& f : run.steps) {
      if (i >= f.held_out.size() || std::isnan(f.held_out[i])) continue;
      sum += f.held_out[i] * f.held_out[i];
      p.max_held_out = std::max(p.max_held_out, std::abs(f.held_out[i]));
      ++p.held_out_instants;
    }
    p.mse_held_out = p.held_out_instants ? sum / static_cast<double>(p.held_out_instants) : 0.0;
  }
}

SyncRun run_state_sync(const config::GraphSpec& spec, const tasks::BlockRegistry& blocks, double duration,
                       const std::function<void(std::size_t, std::size_t, const SyncRun&)>& progress) {
  if (spec.sync.measured) {
    throw std::invalid_argument(spec.file +
                                ": 'sync.delay: measured' takes Delta_o from live plant rows, which a replay has "
                                "none of — give the delay (e.g. 'delay: 10ms') or run it live with 'rtcosim run'");
  }
  SyncModel model(spec, blocks);
  SyncRun run = sync_run_for(model, spec);
  run.macro_steps = static_cast<std::size_t>(std::llround(duration / run.step));
  if (run.macro_steps == 0)
    throw std::invalid_argument("the duration is shorter than one macro step of " + base::format_duration(run.step));
  // The run, the horizon after its last step and the delay.
  model.replay_measurements(run.macro_steps + static_cast<std::size_t>(model.horizon()) +
                            static_cast<std::size_t>(std::max(0L, run.delay_steps)) + 1);
  const auto sync = model.make_sync();
  run.distance = sync->distance();
  for (std::size_t c = 0; c < run.components.size(); ++c) {
    if (sync->rerun()[c]) run.rerun.push_back(run.components[c]);
  }
  for (std::size_t k = 1; k <= run.macro_steps; ++k) {
    sync->advance();
    run.time.push_back(static_cast<double>(k) * run.step);
    for (std::size_t i = 0; i < run.pairs.size(); ++i) run.pairs[i].without.push_back(sync->output(i));
  }
  run.n_ges_without = sync->partition_steps();
  sync->reset();
  for (std::size_t k = 1; k <= run.macro_steps; ++k) {
    run.steps.push_back(sync->synchronise());
    for (std::size_t i = 0; i < run.variables.size(); ++i) run.u[i].push_back(sync->u()[i]);
    for (std::size_t i = 0; i < run.pairs.size(); ++i) run.pairs[i].with.push_back(sync->output(i));
    if (progress) progress(k, run.macro_steps, run);
  }
  run.n_ges = sync->partition_steps();
  score_sync_pairs(run, model);
  return run;
}

namespace {

std::string formatted(const char* format, double x) {
  char buf[48];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}
std::string sci(double x) { return formatted("%.4g", x); }
std::string micro(double seconds) { return formatted("%.3g us", seconds * 1e6); }

}  // namespace

double executions_per_evaluation(const SyncRun& run, bool after_first) {
  double executions = 0.0, evaluations = 0.0;
  for (const auto& s : run.steps) {
    for (std::size_t i = after_first ? 1 : 0; i < s.executions.size(); ++i) {
      executions += s.executions[i];
      evaluations += 1.0;
    }
  }
  return evaluations > 0.0 ? executions / evaluations : 0.0;
}

std::string sync_run_summary(const SyncRun& run, const config::GraphSpec& spec) {
  std::string out;
  struct PairRow {
    const SyncPairSeries* p;
  };
  std::vector<PairRow> rows;
  for (const auto& p : run.pairs) rows.push_back({&p});
  const std::vector<Field<PairRow>> pair_fields = {
      {"simulated", Align::kLeft, [](const PairRow& r) { return r.p->simulated; }},
      {"measured", Align::kLeft, [](const PairRow& r) { return r.p->measured; }},
      {"instants", Align::kRight, [](const PairRow& r) { return format_count(r.p->instants); }},
      {"MSE without", Align::kRight, [](const PairRow& r) { return sci(r.p->mse_without); }},
      {"MSE with", Align::kRight, [](const PairRow& r) { return sci(r.p->mse_with); }},
      {"without / with", Align::kRight,
       [](const PairRow& r) { return r.p->mse_with > 0 ? sci(r.p->mse_without / r.p->mse_with) : std::string("-"); }},
      {"MAX without", Align::kRight, [](const PairRow& r) { return sci(r.p->max_without); }},
      {"MAX with", Align::kRight, [](const PairRow& r) { return sci(r.p->max_with); }},
  };
  out += "compared signals (delay " + base::format_duration(static_cast<double>(run.delay_steps) * run.step) + " = " +
         std::to_string(run.delay_steps) + " macro steps):\n" + render_table(pair_fields, rows);
  // MSE with is an in-sample fit (the optimiser saw those measurements); the
  // held-out error is the prediction of each measurement before it was used.
  for (const auto& p : run.pairs) {
    out += "  held out " + p.simulated + ": MSE " + sci(p.mse_held_out) + ", MAX " + sci(p.max_held_out) + " over " +
           std::to_string(p.held_out_instants) +
           " measurements, each predicted T_P = " + std::to_string(spec.sync.optimise.horizon) +
           " macro step(s) ahead before the optimiser used it (MSE with above is in-sample)\n";
  }
  // Optimiser figures over the macro steps.
  double evals = 0, eval_max = 0, secs = 0, secs_max = 0, before = 0, after = 0;
  std::size_t exhausted = 0, on_bound = 0;
  for (const auto& s : run.steps) {
    evals += s.evaluations;
    eval_max = std::max(eval_max, static_cast<double>(s.evaluations));
    secs += s.seconds;
    secs_max = std::max(secs_max, s.seconds);
    before += s.objective_before;
    after += s.objective_after;
    exhausted += s.budget_exhausted ? 1 : 0;
    on_bound += s.on_bound ? 1 : 0;
  }
  const double n = std::max<double>(1.0, static_cast<double>(run.steps.size()));
  char line[1536];
  std::snprintf(
      line, sizeof line,
      "optimiser (%s, %s, T_P %d, T_D %d, at most %d evaluations per macro step):\n"
      "  macro steps %zu; evaluations per step mean %.2f, max %.0f; time per step mean %s, max %s "
      "(wall clock, this thread)\n"
      "  objective J mean before %s, after %s; budget exhausted in %zu of %zu steps; u on a bound in %zu\n"
      "  N_ges %llu with synchronisation (re-run per candidate: %s), %llu without\n"
      "  executions per candidate after each step's first (thesis table 4.2) mean %.2f, without reduction T_P x %zu "
      "= %llu; per candidate, each step's first (the current u, free) included: mean %.2f\n",
      spec.sync.optimise.solver.c_str(), spec.sync.optimise.dynamic ? "dynamic" : "static", spec.sync.optimise.horizon,
      run.distance, spec.sync.optimise.max_evaluations, run.steps.size(), evals / n, eval_max, micro(secs / n).c_str(),
      micro(secs_max).c_str(), sci(before / n).c_str(), sci(after / n).c_str(), exhausted, run.steps.size(), on_bound,
      static_cast<unsigned long long>(run.n_ges),
      [&] {
        std::string s;
        for (const auto& r : run.rerun) s += (s.empty() ? "" : ", ") + r;
        return s;
      }()
          .c_str(),
      static_cast<unsigned long long>(run.n_ges_without), executions_per_evaluation(run, true), run.components.size(),
      static_cast<unsigned long long>(run.components.size()) *
          static_cast<unsigned long long>(spec.sync.optimise.horizon),
      executions_per_evaluation(run, false));
  out += line;
  for (std::size_t i = 0; i < run.variables.size(); ++i) {
    const auto& u = run.u[i];
    const auto [lo, hi] = std::minmax_element(u.begin(), u.end());
    out += "  u " + run.variables[i] + ": start " + sci(spec.sync.optimise.variables[i].start) + ", min " + sci(*lo) +
           ", max " + sci(*hi) + ", last " + sci(u.back()) + "\n";
  }
  return out;
}

void write_sync_csv(const SyncRun& run, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);
  out << "time_s";
  for (const auto& p : run.pairs)
    out << ',' << p.measured << ',' << p.simulated << "_without," << p.simulated << "_with";
  for (const auto& v : run.variables) out << ',' << v;
  // The optimiser's figures of each macro step (docs/sync.md).
  out << ",evaluations,optimiser_s,objective_before,objective_after,budget_exhausted\n";
  char buf[32];
  auto put = [&](double x) {
    std::snprintf(buf, sizeof buf, ",%.17g", x);
    out << buf;
  };
  for (std::size_t k = 0; k < run.time.size(); ++k) {
    std::snprintf(buf, sizeof buf, "%.17g", run.time[k]);
    out << buf;
    for (const auto& p : run.pairs) {
      put(p.measured_values[k]);
      put(p.without[k]);
      put(p.with[k]);
    }
    for (const auto& u : run.u) put(u[k]);
    const auto& f = run.steps[k];
    out << ',' << f.evaluations;
    put(f.seconds);
    put(f.objective_before);
    put(f.objective_after);
    out << ',' << (f.budget_exhausted ? 1 : 0) << '\n';
  }
  if (!out.flush()) throw std::runtime_error("writing " + path + " failed");
}

void add_sync_panels(plot::Figure& figure, const SyncRun& run) {
  for (const auto& p : run.pairs) {
    plot::Panel panel;
    panel.y_label = p.simulated;
    panel.series.push_back({"measured " + p.measured, run.time, p.measured_values, "#000000", 2.2, false, false});
    panel.series.push_back({"without sync", run.time, p.without, "#d62728", 1.2, true, false});
    panel.series.push_back({"with sync", run.time, p.with, "#2ca02c", 1.4, false, false});
    figure.panels.push_back(std::move(panel));
  }
  for (std::size_t i = 0; i < run.variables.size(); ++i) {
    plot::Panel panel;
    panel.y_label = "u: " + run.variables[i];
    panel.series.push_back({run.variables[i], run.time, run.u[i], "#9467bd", 1.2, false, true});
    figure.panels.push_back(std::move(panel));
  }
}

void write_sync_plot(const SyncRun& run, const std::string& title, const std::string& path) {
  plot::Figure figure;
  figure.title = title;
  figure.x_label = "simulation time (s)";
  add_sync_panels(figure, run);
  figure.panel_height = 220;
  std::string why;
  if (!plot::write_svg(figure, path, &why)) throw std::runtime_error(why);
}

std::string sync_run_json(const SyncRun& run) {
  using base::json_number;
  std::string out = "{\"step_s\":" + json_number(run.step) + ",\"macro_steps\":" + std::to_string(run.macro_steps) +
                    ",\"delay_steps\":" + std::to_string(run.delay_steps) +
                    ",\"distance\":" + std::to_string(run.distance) + ",\"n_ges\":" + std::to_string(run.n_ges) +
                    ",\"n_ges_without\":" + std::to_string(run.n_ges_without) + ",\"pairs\":[";
  for (std::size_t i = 0; i < run.pairs.size(); ++i) {
    const auto& p = run.pairs[i];
    out += std::string(i ? "," : "") + "{\"simulated\":" + base::json_string(p.simulated) +
           ",\"measured\":" + base::json_string(p.measured) + ",\"instants\":" + std::to_string(p.instants) +
           ",\"mse_without\":" + json_number(p.mse_without) + ",\"mse_with\":" + json_number(p.mse_with) +
           ",\"max_without\":" + json_number(p.max_without) + ",\"max_with\":" + json_number(p.max_with) +
           ",\"held_out_instants\":" + std::to_string(p.held_out_instants) +
           ",\"mse_held_out\":" + json_number(p.mse_held_out) + ",\"max_held_out\":" + json_number(p.max_held_out) +
           "}";
  }
  std::size_t evals = 0, exhausted = 0, on_bound = 0;
  double secs = 0;
  for (const auto& s : run.steps) {
    evals += static_cast<std::size_t>(s.evaluations);
    exhausted += s.budget_exhausted ? 1 : 0;
    on_bound += s.on_bound ? 1 : 0;
    secs += s.seconds;
  }
  out += "],\"evaluations\":" + std::to_string(evals) +
         ",\"executions_per_evaluation\":" + json_number(executions_per_evaluation(run, false)) +
         ",\"executions_per_evaluation_after_first\":" + json_number(executions_per_evaluation(run, true)) +
         ",\"budget_exhausted_steps\":" + std::to_string(exhausted) +
         ",\"on_bound_steps\":" + std::to_string(on_bound) + ",\"optimiser_seconds\":" + json_number(secs) +
         ",\"u_last\":[";
  for (std::size_t i = 0; i < run.u.size(); ++i) out += std::string(i ? "," : "") + json_number(run.u[i].back());
  return out + "]}\n";
}

}  // namespace rtcosim::session
