#include "tools/rtcosim/sync_command.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <stdexcept>

#include "base/duration.hpp"
#include "base/json.hpp"
#include "rt_config/loader.hpp"
#include "tasks/diagram.hpp"
#include "tools/plot/svg_plot.hpp"
#include "tools/rtcosim/cli_args.hpp"
#include "tools/rtcosim/graph_file.hpp"
#include "tools/rtcosim/text_table.hpp"

namespace rtcosim::tools {

namespace {

using tasks::sync::ComparedPair;
using tasks::sync::Component;
using tasks::sync::DecisionVariable;
using tasks::sync::InputFeed;
using tasks::sync::Measurements;

constexpr const char* kHelp = R"(usage: rtcosim sync [options] FILE

Replays a task graph's state synchronisation (docs/sync.md): the tasks that
'sync.optimise' names are kept in step with the measured signals of the
others by choosing tunable block parameters before every macro step
(NLopt, over the horizon T_P). The components run twice from t = 0, without
and with synchronisation; the summary compares both with the measurement.
Not real time: the optimiser runs as fast as it can on this thread.

options:
  --duration D        how long (default: the file's duration)
  --csv FILE          time, each pair's measured / without / with, each u
  --plot FILE.svg     each pair's measured, without and with, and each u
  --json FILE         the figures of the summary as JSON
  --quiet             no progress lines
  --max-file-size MIB refuse task-graph files larger than this (default 4)
  -h, --help          this text
)";

struct Built {
  std::vector<std::unique_ptr<tasks::Partition>> parts;  // components, then measurement tasks
  std::vector<Component> components;
  std::vector<DecisionVariable> variables;
  std::vector<ComparedPair> compared;
  Measurements measured;
};

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

}  // namespace

SyncRun run_state_sync(const config::GraphSpec& spec, const tasks::BlockRegistry& blocks, double duration,
                       const std::function<void(std::size_t, std::size_t, const SyncRun&)>& progress) {
  const auto& o = spec.sync.optimise;
  if (!o.enabled) throw std::invalid_argument(spec.file + " has no 'sync.optimise' section (docs/sync.md)");
  const std::string at = where(spec, o.where);
  const auto split = tasks::split_by_task(blocks, spec.diagram);
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
  SyncRun run;
  run.components = names;
  auto component_of = [&](const std::string& task) -> long {
    const auto it = std::find(names.begin(), names.end(), task);
    return it == names.end() ? -1 : it - names.begin();
  };
  // h: given, or the components' common period.
  double h = o.step;
  if (h <= 0.0) {
    for (const auto& n : names) {
      const double period = spec.find_task(n)->period;
      if (h > 0.0 && std::abs(period - h) > 1e-12 * h) {
        throw std::invalid_argument(at + "the synchronised tasks run at " + base::format_duration(h) + " and " +
                                    base::format_duration(period) + " ('" + n +
                                    "') — give the common macro step as "
                                    "'sync.optimise.step'");
      }
      h = period;
    }
  }
  run.step = h;
  run.macro_steps = static_cast<std::size_t>(std::llround(duration / h));
  if (run.macro_steps == 0)
    throw std::invalid_argument("the duration is shorter than one macro step of " + base::format_duration(h));
  run.delay_steps = std::lround(spec.sync.delay / h);

  Built b;
  // Components in `names` order, then the measurement side.
  std::vector<const tasks::TaskPartitionSpec*> ordered(names.size(), nullptr);
  std::vector<const tasks::TaskPartitionSpec*> sources;
  for (const auto& p : split) {
    const long c = component_of(p.task);
    if (c >= 0) {
      ordered[static_cast<std::size_t>(c)] = &p;
    } else {
      sources.push_back(&p);
    }
  }
  for (std::size_t c = 0; c < names.size(); ++c) {
    if (!ordered[c]) throw std::invalid_argument(at + "task '" + names[c] + "' runs no block");
  }
  for (const auto* p : ordered) {
    b.parts.push_back(tasks::build_partition(blocks, p->task, p->blocks, p->wires, p->externals,
                                             spec.find_task(p->task)->integrator));
  }
  // The measurement side: every other task, stepped alone (it must read
  // nothing) and sampled every h over the run, the horizon and the delay.
  const std::size_t samples = run.macro_steps + static_cast<std::size_t>(o.horizon) +
                              static_cast<std::size_t>(std::max(0L, run.delay_steps)) + 1;
  std::map<std::string, std::size_t> column_of;  // "block.port" -> measured column
  for (const auto* p : sources) {
    if (!p->externals.empty()) {
      throw std::invalid_argument(at + "task '" + p->task + "' is on the measurement side but reads '" +
                                  p->externals.front().name +
                                  "' from another task — expected measurement tasks "
                                  "that only produce (a plant block replaying a recording)");
    }
    auto part = tasks::build_partition(blocks, p->task, p->blocks, p->wires, {}, spec.find_task(p->task)->integrator);
    const double period = spec.find_task(p->task)->period;
    const int sub = std::max(1, static_cast<int>(std::lround(h / period)));
    std::vector<std::pair<std::size_t, tasks::OutputRef>> probes;
    for (const auto& e : p->exported) {
      const auto ref = part->find_output(e);
      if (ref.width != 1) continue;  // StateSync's signals are scalar
      column_of[e.str()] = b.measured.columns.size();
      probes.emplace_back(b.measured.columns.size(), ref);
      b.measured.columns.emplace_back();
    }
    for (const auto& c : spec.sync.compare) {
      if (block_spec(spec, c.measured.block).task != p->task || column_of.count(c.measured.str())) continue;
      column_of[c.measured.str()] = b.measured.columns.size();
      probes.emplace_back(b.measured.columns.size(), part->find_output(c.measured));
      b.measured.columns.emplace_back();
    }
    NoInputs none;
    part->reset(0.0);
    part->refresh_outputs(none);
    for (std::size_t k = 0; k < samples; ++k) {
      for (const auto& [col, ref] : probes) b.measured.columns[col].push_back(part->output(ref)[0]);
      for (int i = 0; i < sub; ++i) part->step(static_cast<double>(k) * h + i * (h / sub), h / sub, none);
      if (part->failed()) throw std::invalid_argument("task '" + p->task + "': " + part->failure());
    }
    run.measurement_tasks.push_back(p->task);
    b.parts.push_back(std::move(part));
  }
  // Feeds of the components' external inputs.
  for (std::size_t c = 0; c < names.size(); ++c) {
    Component comp{b.parts[c].get(), {}};
    for (const auto& x : b.parts[c]->externals()) {
      const auto dot = x.name.find('.');
      const tasks::Endpoint source{x.name.substr(0, dot), x.name.substr(dot + 1)};
      if (x.width != 1) {
        throw std::invalid_argument(at + "task '" + names[c] + "' reads '" + x.name + "' of width " +
                                    std::to_string(x.width) + " — the synchronisation couples scalar signals only");
      }
      const std::string& from_task = block_spec(spec, source.block).task;
      const long from = component_of(from_task);
      if (from >= 0) {
        comp.inputs.push_back({InputFeed::Kind::kComponent, static_cast<std::size_t>(from),
                               b.parts[static_cast<std::size_t>(from)]->find_output(source), 0.0});
      } else {
        comp.inputs.push_back({InputFeed::Kind::kMeasured, column_of.at(x.name), {}, 0.0});
      }
    }
    b.components.push_back(std::move(comp));
  }
  for (const auto& v : o.variables) {
    const std::string& task = block_spec(spec, v.block).task;
    const long c = component_of(task);
    if (c < 0) {
      throw std::invalid_argument(where(spec, v.where) + "decision variable '" + v.block + "." + v.parameter +
                                  "' is in task '" + task +
                                  "', which is not synchronised — expected a parameter of "
                                  "a block in one of: " +
                                  [&] {
                                    std::string s;
                                    for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
                                    return s;
                                  }());
    }
    const auto& part = *b.parts[static_cast<std::size_t>(c)];
    const std::size_t bi = block_index(part, v.block);
    const auto tunables = part.block(bi).tunable_parameters();
    std::size_t pi = 0;
    while (pi < tunables.size() && v.parameter != tunables[pi]) ++pi;
    b.variables.push_back({static_cast<std::size_t>(c), bi, pi, v.lower, v.upper, v.start});
    run.variables.push_back(v.block + "." + v.parameter);
  }
  for (const auto& p : spec.sync.compare) {
    const long c = component_of(block_spec(spec, p.simulated.block).task);
    if (c < 0) {
      throw std::invalid_argument(at + "'sync.compare' simulates '" + p.simulated.str() + "' in task '" +
                                  block_spec(spec, p.simulated.block).task + "', which is not synchronised");
    }
    b.compared.push_back({static_cast<std::size_t>(c), b.parts[static_cast<std::size_t>(c)]->find_output(p.simulated),
                          column_of.at(p.measured.str()), p.weight});
    SyncPairSeries series;
    series.simulated = p.simulated.str();
    series.measured = p.measured.str();
    series.weight = p.weight;
    run.pairs.push_back(std::move(series));
  }
  tasks::sync::SyncSettings settings;
  settings.step = h;
  settings.horizon = o.horizon;
  settings.dynamic = o.dynamic;
  settings.solver = o.solver == "nelder_mead" ? tasks::sync::Solver::kNelderMead
                    : o.solver == "sbplx"     ? tasks::sync::Solver::kSbplx
                                              : tasks::sync::Solver::kBobyqa;
  settings.max_evaluations = o.max_evaluations;
  settings.max_seconds = o.max_time;
  settings.delay_steps = run.delay_steps;
  settings.reduce = o.reduce;
  try {
    tasks::sync::StateSync sync(b.components, b.variables, b.compared, b.measured, settings);
    run.distance = sync.distance();
    for (std::size_t c = 0; c < names.size(); ++c) {
      if (sync.rerun()[c]) run.rerun.push_back(names[c]);
    }
    for (std::size_t k = 1; k <= run.macro_steps; ++k) {
      sync.advance();
      run.time.push_back(static_cast<double>(k) * h);
      for (std::size_t i = 0; i < run.pairs.size(); ++i) run.pairs[i].without.push_back(sync.output(i));
    }
    run.n_ges_without = sync.partition_steps();
    sync.reset();
    run.u.assign(run.variables.size(), {});
    for (std::size_t k = 1; k <= run.macro_steps; ++k) {
      run.steps.push_back(sync.synchronise());
      for (std::size_t i = 0; i < run.variables.size(); ++i) run.u[i].push_back(sync.u()[i]);
      for (std::size_t i = 0; i < run.pairs.size(); ++i) run.pairs[i].with.push_back(sync.output(i));
      if (progress) progress(k, run.macro_steps, run);
    }
    run.n_ges = sync.partition_steps();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(at + e.what());
  }
  // Metrics at the compared instants t_k against y^(t_k + Delta_o).
  for (std::size_t i = 0; i < run.pairs.size(); ++i) {
    auto& p = run.pairs[i];
    const auto& col = b.measured.columns[b.compared[i].column];
    PairErrors errors;
    for (std::size_t k = 1; k <= run.macro_steps; ++k) {
      const long idx = static_cast<long>(k) + run.delay_steps;
      const double m =
          idx >= 0 && static_cast<std::size_t>(idx) < col.size() ? col[static_cast<std::size_t>(idx)] : std::nan("");
      p.measured_values.push_back(m);
      if (!std::isnan(m)) errors.add(p.without[k - 1] - m, p.with[k - 1] - m);
    }
    errors.finish(p);
  }
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

std::string summary(const SyncRun& run, const config::GraphSpec& spec) {
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
  // Optimiser figures over the macro steps.
  double evals = 0, eval_max = 0, secs = 0, secs_max = 0, before = 0, after = 0;
  std::size_t exhausted = 0;
  for (const auto& s : run.steps) {
    evals += s.evaluations;
    eval_max = std::max(eval_max, static_cast<double>(s.evaluations));
    secs += s.seconds;
    secs_max = std::max(secs_max, s.seconds);
    before += s.objective_before;
    after += s.objective_after;
    exhausted += s.budget_exhausted ? 1 : 0;
  }
  const double n = std::max<double>(1.0, static_cast<double>(run.steps.size()));
  char line[512];
  std::snprintf(
      line, sizeof line,
      "optimiser (%s, %s, T_P %d, T_D %d, at most %d evaluations per macro step):\n"
      "  macro steps %zu; evaluations per step mean %.2f, max %.0f; time per step mean %s, max %s "
      "(wall clock, this thread)\n"
      "  objective J mean before %s, after %s; budget exhausted in %zu of %zu steps\n"
      "  N_ges %llu with synchronisation (re-run per candidate: %s), %llu without\n",
      spec.sync.optimise.solver.c_str(), spec.sync.optimise.dynamic ? "dynamic" : "static", spec.sync.optimise.horizon,
      run.distance, spec.sync.optimise.max_evaluations, run.steps.size(), evals / n, eval_max, micro(secs / n).c_str(),
      micro(secs_max).c_str(), sci(before / n).c_str(), sci(after / n).c_str(), exhausted, run.steps.size(),
      static_cast<unsigned long long>(run.n_ges),
      [&] {
        std::string s;
        for (const auto& r : run.rerun) s += (s.empty() ? "" : ", ") + r;
        return s;
      }()
          .c_str(),
      static_cast<unsigned long long>(run.n_ges_without));
  out += line;
  for (std::size_t i = 0; i < run.variables.size(); ++i) {
    const auto& u = run.u[i];
    const auto [lo, hi] = std::minmax_element(u.begin(), u.end());
    out += "  u " + run.variables[i] + ": start " + sci(spec.sync.optimise.variables[i].start) + ", min " + sci(*lo) +
           ", max " + sci(*hi) + ", last " + sci(u.back()) + "\n";
  }
  return out;
}

void write_csv(const SyncRun& run, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);
  out << "time_s";
  for (const auto& p : run.pairs)
    out << ',' << p.measured << ',' << p.simulated << "_without," << p.simulated << "_with";
  for (const auto& v : run.variables) out << ',' << v;
  out << '\n';
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
    out << '\n';
  }
  if (!out.flush()) throw std::runtime_error("writing " + path + " failed");
}

void write_plot(const SyncRun& run, const std::string& title, const std::string& path) {
  plot::Figure figure;
  figure.title = title;
  figure.x_label = "simulation time (s)";
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
  figure.panel_height = 220;
  std::string why;
  if (!plot::write_svg(figure, path, &why)) throw std::runtime_error(why);
}

std::string json(const SyncRun& run) {
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
           ",\"max_without\":" + json_number(p.max_without) + ",\"max_with\":" + json_number(p.max_with) + "}";
  }
  std::size_t evals = 0, exhausted = 0;
  double secs = 0;
  for (const auto& s : run.steps) {
    evals += static_cast<std::size_t>(s.evaluations);
    exhausted += s.budget_exhausted ? 1 : 0;
    secs += s.seconds;
  }
  out += "],\"evaluations\":" + std::to_string(evals) + ",\"budget_exhausted_steps\":" + std::to_string(exhausted) +
         ",\"optimiser_seconds\":" + json_number(secs) + ",\"u_last\":[";
  for (std::size_t i = 0; i < run.u.size(); ++i) out += std::string(i ? "," : "") + json_number(run.u[i].back());
  return out + "]}\n";
}

}  // namespace

int run_sync_command(const std::vector<std::string>& raw_args) {
  return run_verb("sync", [&]() -> int {
    CliArgs args("sync", {"duration", "csv", "plot", "json", "max-file-size"}, {"quiet", "help"}, {});
    const auto parsed = args.parse_for_file(raw_args, kHelp);
    if (!parsed) return 0;
    const std::string file = *parsed;
    config::LoadOptions load_options;
    load_options.max_file_bytes = args.max_file_bytes(load_options.max_file_bytes);
    const auto loaded = load_graph_or_report(file, load_options);
    if (!loaded) return 1;
    const auto& spec = *loaded;
    if (!spec.sync.optimise.enabled) {
      throw UsageError(file +
                       " has no 'sync.optimise' section — add the decision variables and the horizon "
                       "(docs/sync.md)");
    }
    const double duration = args.positive_duration("duration", spec.duration);
    if (!(duration > 0.0)) throw UsageError(file + " runs until stopped; give --duration");
    for (const char* output : {"csv", "plot", "json"}) (void)args.output_path(output);
    const bool quiet = args.flag("quiet");
    const auto blocks = tasks::BlockRegistry::with_builtins();
    std::cout << file << ": state synchronisation over " << base::format_duration(duration) << '\n';
    std::size_t shown = 0;
    const auto run = run_state_sync(spec, blocks, duration, [&](std::size_t k, std::size_t n, const SyncRun& r) {
      if (quiet || k * 10 / n == shown) return;
      shown = k * 10 / n;
      const auto& s = r.steps.back();
      std::cout << "  t = " << base::format_duration(static_cast<double>(k) * r.step) << ": macro step " << k << " of "
                << n << ", J before " << sci(s.objective_before) << " after " << sci(s.objective_after) << ", "
                << s.evaluations << " evaluations" << std::endl;
    });
    std::cout << "components: ";
    for (std::size_t i = 0; i < run.components.size(); ++i) std::cout << (i ? ", " : "") << run.components[i];
    std::cout << "; measurement: ";
    for (std::size_t i = 0; i < run.measurement_tasks.size(); ++i)
      std::cout << (i ? ", " : "") << run.measurement_tasks[i];
    std::cout << "; h " << base::format_duration(run.step) << '\n' << summary(run, spec);
    if (const auto path = args.value("csv")) {
      write_csv(run, *path);
      std::cout << "series written to " << *path << '\n';
    }
    if (const auto path = args.value("plot")) {
      write_plot(run, (spec.name.empty() ? file : spec.name) + " — state synchronisation", *path);
      std::cout << "plot written to " << *path << '\n';
    }
    if (const auto path = args.value("json")) {
      std::ofstream out(*path);
      out << json(run);
      if (!out.flush()) throw std::runtime_error("cannot write " + *path);
      std::cout << "summary written to " << *path << '\n';
    }
    return 0;
  });
}

}  // namespace rtcosim::tools
