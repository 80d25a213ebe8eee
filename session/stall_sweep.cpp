#include "session/stall_sweep.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "base/duration.hpp"
#include "base/json.hpp"
#include "runtime/graph.hpp"
#include "runtime/recorder.hpp"
#include "runtime/virtual_executor.hpp"
#include "tasks/diagram.hpp"

namespace rtcosim::session {

namespace {

using base::json_number;
using base::json_string;

StallTaskFigures task_figures(const runtime::TaskRuntime& t) {
  const runtime::TaskStats& s = t.stats();
  StallTaskFigures f;
  f.name = t.spec().name;
  f.frames = s.frames.load();
  f.step_min = s.step.min();
  f.step_max = s.step.max();
  f.overruns = s.overruns.load();
  f.missed = s.missed_periods.load();
  f.lag_min = s.lag.min();
  f.lag_max = s.lag.max();
  f.lost = s.lost_real_time.load();
  if (t.partition().integrator() == tasks::IntegratorKind::kAb2) f.ab2_lte_max = s.truncation_error.max();
  f.stalls = s.stalls.load();
  f.stalls_absorbed = s.stalls_absorbed.load();
  f.catch_up_frames = s.catch_up_frames.load();
  f.longest_catch_up = s.longest_catch_up.load();
  f.extra_substeps = s.extra_substeps.load();
  f.owed = s.owed.load();
  f.owed_max = s.owed_max.load();
  f.data_waits = s.data_waits.load();
  return f;
}

// One run of the graph in virtual time, with `spec`'s own execution script
// (the stall is already written into it), compared with the reference.
StallCase run_case(const config::GraphSpec& spec, const tasks::BlockRegistry& blocks,
                   const coupling::MethodRegistry& methods, double duration, const tasks::ReferenceSolver& reference) {
  const auto graph = runtime::Graph::build(spec, blocks, methods);
  runtime::Recorder::Options keep;
  keep.keep = runtime::Recorder::kKeepAll;
  runtime::Recorder recorder(*graph, keep);
  std::unordered_map<const runtime::TaskRuntime*, std::size_t> index;
  for (std::size_t i = 0; i < graph->tasks().size(); ++i) index[graph->tasks()[i].get()] = i;
  std::vector<StallTaskFigures> longest(graph->tasks().size());
  std::vector<bool> seen(graph->tasks().size(), false);
  std::size_t frames = 0;
  runtime::VirtualExecutor executor(*graph);
  executor.run(duration, [&](runtime::TaskRuntime& task, const runtime::FrameRecord& f) {
    (void)recorder.sample(task);
    const std::size_t i = index[&task];
    const double execution = f.end - f.start;
    if (!seen[i] || execution > longest[i].longest_execution) {
      seen[i] = true;
      longest[i].longest_frame = f.frame;
      longest[i].longest_execution = execution;
      longest[i].longest_frame_step = f.step;
    }
    // The rings hold 65536 samples per task: drained as `rtcosim run
    // --virtual` drains them, so that none is dropped.
    if (++frames % 4096 == 0) recorder.drain();
  });
  recorder.finish(nullptr);
  StallCase out;
  out.errors = reference_errors(*graph, recorder, reference, 0.75 * duration);
  for (std::size_t i = 0; i < graph->tasks().size(); ++i) {
    const auto& t = *graph->tasks()[i];
    StallTaskFigures f = task_figures(t);
    f.longest_frame = longest[i].longest_frame;
    f.longest_execution = longest[i].longest_execution;
    f.longest_frame_step = longest[i].longest_frame_step;
    out.tasks.push_back(std::move(f));
    if (t.failed()) {
      out.failed = true;
      out.failure += (out.failure.empty() ? "" : "; ") + t.failure();
    }
  }
  return out;
}

// Per signal, this case's RMS over the unstalled run's (`of` picks the
// whole run's or the last quarter's); the largest, and whose it is.
void ratios_of(const StallCase& c, const StallCase& unstalled, double (*of)(const ReferenceError&),
               std::vector<double>& ratios, double& worst, std::string& signal) {
  ratios.clear();
  worst = 1.0;
  signal.clear();
  for (std::size_t i = 0; i < c.errors.size(); ++i) {
    const double base = i < unstalled.errors.size() ? of(unstalled.errors[i]) : 0.0;
    const double rms = of(c.errors[i]);
    // A signal the unstalled run reproduces exactly (a source, a table) has
    // no error to scale: equal is 1, any error at all is infinitely worse.
    double r = base > 0.0 ? rms / base : rms == 0.0 ? 1.0 : std::numeric_limits<double>::infinity();
    if (std::isnan(rms)) r = std::numeric_limits<double>::quiet_NaN();
    ratios.push_back(r);
    // NaN (a signal that went non-finite) outranks every number.
    if (signal.empty() || (!std::isnan(worst) && (std::isnan(r) || r > worst))) {
      worst = r;
      signal = c.errors[i].signal;
    }
  }
}

void compare(StallCase& c, const StallCase& unstalled, double factor, double tube) {
  ratios_of(
      c, unstalled, [](const ReferenceError& e) { return e.rms; }, c.ratios, c.ratio, c.worst_signal);
  ratios_of(
      c, unstalled, [](const ReferenceError& e) { return e.rms_after; }, c.after_ratios, c.after_ratio, c.after_signal);
  c.after_of_range = 0.0;
  for (const ReferenceError& e : c.errors) {
    // A constant reference has no range: any error at all is out of the tube.
    const double f = e.range > 0.0 ? e.rms_after / e.range : (e.rms_after == 0.0 ? 0.0 : INFINITY);
    if (std::isnan(f) || !(f <= c.after_of_range)) c.after_of_range = f;
  }
  c.silent_blow_up = !c.failed && !(c.after_ratio <= factor) && !(c.after_of_range <= tube);
  c.recovered = !c.failed && !c.silent_blow_up && !(c.ratio <= factor);
}

std::string k_text(double k) {
  std::ostringstream s;
  s << k;
  return s.str();
}

std::string ratio_text(double r) { return std::isinf(r) ? std::string("inf") : format_general(r); }

std::string verdict(const StallCase& c) {
  if (c.failed) return "failed";
  if (c.silent_blow_up) return "SILENT BLOW-UP";
  return c.recovered ? "recovered" : "ok";
}

// TSV and Markdown cells hold no tabs, pipes or line breaks.
std::string cell_text(std::string s, char bad) {
  for (char& ch : s) {
    if (ch == bad || ch == '\n' || ch == '\t') ch = ' ';
  }
  return s;
}

std::string task_json(const StallTaskFigures& f) {
  return "{\"name\":" + json_string(f.name) + ",\"frames\":" + std::to_string(f.frames) +
         ",\"step_min_s\":" + json_number(f.step_min) + ",\"step_max_s\":" + json_number(f.step_max) +
         ",\"overruns\":" + std::to_string(f.overruns) + ",\"missed_periods\":" + std::to_string(f.missed) +
         ",\"lag_min_s\":" + json_number(f.lag_min) + ",\"lag_max_s\":" + json_number(f.lag_max) +
         ",\"lost_real_time_s\":" + json_number(f.lost) + ",\"ab2_lte_max\":" + json_number(f.ab2_lte_max) +
         ",\"longest_frame\":" + std::to_string(f.longest_frame) +
         ",\"longest_execution_s\":" + json_number(f.longest_execution) +
         ",\"longest_frame_step_s\":" + json_number(f.longest_frame_step) + ",\"stalls\":" + std::to_string(f.stalls) +
         ",\"stalls_absorbed\":" + std::to_string(f.stalls_absorbed) +
         ",\"catch_up_frames\":" + std::to_string(f.catch_up_frames) +
         ",\"longest_catch_up\":" + std::to_string(f.longest_catch_up) +
         ",\"extra_substeps\":" + std::to_string(f.extra_substeps) + ",\"owed_s\":" + json_number(f.owed) +
         ",\"owed_max_s\":" + json_number(f.owed_max) + ",\"data_waits\":" + std::to_string(f.data_waits) + "}";
}

std::string case_json(const StallCase& c) {
  std::string out =
      "{\"task\":" + (c.task.empty() ? std::string("null") : json_string(c.task)) +
      ",\"periods\":" + json_number(c.periods) + ",\"stalled_frames\":" + std::to_string(c.stalled_frames) +
      ",\"frame\":" + std::to_string(c.frame) + ",\"spike_s\":" + json_number(c.spike) +
      ",\"ratio\":" + (std::isinf(c.ratio) ? std::string("\"inf\"") : json_number(c.ratio)) +
      ",\"worst_signal\":" + json_string(c.worst_signal) +
      ",\"after_ratio\":" + (std::isinf(c.after_ratio) ? std::string("\"inf\"") : json_number(c.after_ratio)) +
      ",\"after_signal\":" + json_string(c.after_signal) +
      ",\"after_of_range\":" + (std::isinf(c.after_of_range) ? std::string("\"inf\"") : json_number(c.after_of_range)) +
      ",\"failed\":" + (c.failed ? "true" : "false") + ",\"failure\":" + json_string(c.failure) +
      ",\"silent_blow_up\":" + (c.silent_blow_up ? "true" : "false") +
      ",\"recovered\":" + (c.recovered ? "true" : "false") + ",\"signals\":[";
  for (std::size_t i = 0; i < c.errors.size(); ++i) {
    const auto& e = c.errors[i];
    const double r = i < c.ratios.size() ? c.ratios[i] : 1.0;
    out += std::string(i ? "," : "") + "{\"signal\":" + json_string(e.signal) + ",\"rms\":" + json_number(e.rms) +
           ",\"max\":" + json_number(e.max) + ",\"samples\":" + std::to_string(e.samples) +
           ",\"rms_after\":" + json_number(e.rms_after) +
           ",\"ratio\":" + (std::isinf(r) ? std::string("\"inf\"") : json_number(r)) + "}";
  }
  out += "],\"tasks\":[";
  for (std::size_t i = 0; i < c.tasks.size(); ++i) out += (i ? "," : "") + task_json(c.tasks[i]);
  return out + "]}";
}

}  // namespace

const StallTaskFigures& StallCase::stalled() const {
  for (const auto& t : tasks) {
    if (t.name == task) return t;
  }
  if (tasks.empty()) throw std::logic_error("StallCase::stalled(): a case without task figures");
  return tasks.front();
}

std::uint64_t StallCase::data_waits() const noexcept {
  std::uint64_t n = 0;
  for (const auto& t : tasks) n += t.data_waits;
  return n;
}

std::vector<const StallCase*> StallSweep::silent_blow_ups() const {
  std::vector<const StallCase*> out;
  for (const auto& c : cases) {
    if (c.silent_blow_up) out.push_back(&c);
  }
  return out;
}

std::uint64_t stall_frame(const config::TaskSpec& task, double duration) noexcept {
  // The relative margin keeps a quarter that is a whole number of periods
  // (1.25 s of 10 ms) from rounding down one frame.
  return static_cast<std::uint64_t>(std::floor(duration / 4.0 / task.period * (1.0 + 1e-12)));
}

namespace {

// Everything a sweep needs is checked before the reference runs: a refusal
// costs nothing, and a sweep that starts finishes.
void check_sweep(const config::GraphSpec& spec, const StallSweepOptions& options, const std::string& label,
                 double duration) {
  if (!(duration > 0.0)) {
    throw std::invalid_argument(label + " runs until stopped; a stall sweep compares whole runs — give a duration");
  }
  if (spec.record.signals.empty()) {
    throw std::invalid_argument(label +
                                " records no signal, so there is no error to compare — add a 'record:' section");
  }
  if (spec.sync.optimise.enabled) {
    throw std::invalid_argument(label +
                                " synchronises its parameters with a measurement while it runs ('sync.optimise'); "
                                "a virtual run without that would not be the run the file describes — sweep a copy "
                                "without 'sync.optimise'");
  }
  if (options.periods.empty()) throw std::invalid_argument("no stall length given — expected k such as 1,2,4,8,16");
  for (double k : options.periods) {
    if (!(k > 0.0) || !std::isfinite(k)) {
      throw std::invalid_argument("a stall of " + k_text(k) + " periods — expected a positive number of periods");
    }
  }
  if (!(options.factor > 0.0)) throw std::invalid_argument("the factor must be positive, e.g. 3");
  if (!(options.tube >= 0.0)) throw std::invalid_argument("the tube must be a fraction >= 0, e.g. 0.01");
}

// Every task, or those named, each once and in the order given.
std::vector<const config::TaskSpec*> stalled_tasks(const config::GraphSpec& spec, const StallSweepOptions& options,
                                                   const std::string& label) {
  std::vector<const config::TaskSpec*> stalled;
  if (options.tasks.empty()) {
    for (const auto& t : spec.tasks) stalled.push_back(&t);
  } else {
    for (const auto& name : options.tasks) {
      const auto* t = spec.find_task(name);
      if (!t) {
        std::string known;
        for (const auto& k : spec.tasks) known += (known.empty() ? "" : ", ") + k.name;
        throw std::invalid_argument(label + " has no task '" + name + "' — expected one of: " + known);
      }
      if (std::find(stalled.begin(), stalled.end(), t) == stalled.end()) stalled.push_back(t);
    }
  }
  return stalled;
}

// Frames start at multiples of the period at the earliest: the last
// stalled one must start before the end for the stall to happen at all.
void check_stall_frames(const std::vector<const config::TaskSpec*>& stalled, const StallSweepOptions& options,
                        int max_stalled, double duration) {
  for (const auto* t : stalled) {
    const std::uint64_t frame = options.frame.value_or(stall_frame(*t, duration));
    const double last_start = static_cast<double>(frame + static_cast<std::uint64_t>(max_stalled) - 1) * t->period;
    if (!(last_start < duration)) {
      throw std::invalid_argument("task '" + t->name + "' runs every " + base::format_duration(t->period) + ": frame " +
                                  std::to_string(frame + static_cast<std::uint64_t>(max_stalled) - 1) +
                                  " would start at " + base::format_duration(last_start) + ", not before the end at " +
                                  base::format_duration(duration) + " — expected an earlier frame");
    }
  }
}

// One case: the graph as the file scripts it but `count` frames of the task,
// from `frame`, executing k of its periods.
StallCase run_stalled(const config::GraphSpec& spec, const tasks::BlockRegistry& blocks,
                      const coupling::MethodRegistry& methods, double duration, const tasks::ReferenceSolver& reference,
                      const config::TaskSpec& t, std::uint64_t frame, double k, int count) {
  config::GraphSpec changed = spec;
  auto& execution = std::find_if(changed.tasks.begin(), changed.tasks.end(), [&](const auto& c) {
                      return c.name == t.name;
                    })->execution;
  // The injected frames replace whatever the file scripted for them
  // (the executor takes the first spike that names a frame).
  std::erase_if(execution.spikes,
                [&](const auto& s) { return s.frame >= frame && s.frame < frame + std::uint64_t(count); });
  const double spike = k * t.period;
  for (int i = 0; i < count; ++i) execution.spikes.push_back({frame + std::uint64_t(i), spike});
  StallCase c = run_case(changed, blocks, methods, duration, reference);
  c.task = t.name;
  c.periods = k;
  c.stalled_frames = count;
  c.frame = frame;
  c.spike = spike;
  return c;
}

}  // namespace

StallSweep run_stall_sweep(const config::GraphSpec& spec, const tasks::BlockRegistry& blocks,
                           const coupling::MethodRegistry& methods, const StallSweepOptions& options,
                           const std::function<void(const StallCase&)>& progress) {
  const std::string label = spec.name.empty() ? spec.file : spec.name;
  const double duration = options.duration > 0.0 ? options.duration : spec.duration;
  check_sweep(spec, options, label, duration);
  const std::vector<const config::TaskSpec*> stalled = stalled_tasks(spec, options, label);
  const int max_stalled = options.doubled ? 2 : 1;
  check_stall_frames(stalled, options, max_stalled, duration);

  tasks::ReferenceSolver reference(blocks, spec.diagram, options.reference_step);
  reference.run(duration, spec.record.signals);

  StallSweep sweep;
  sweep.graph = label;
  sweep.duration = duration;
  sweep.reference_step = options.reference_step;
  sweep.factor = options.factor;
  sweep.unstalled = run_case(spec, blocks, methods, duration, reference);
  sweep.tube = options.tube;
  compare(sweep.unstalled, sweep.unstalled, options.factor, options.tube);
  if (progress) progress(sweep.unstalled);
  for (const auto* t : stalled) {
    const std::uint64_t frame = options.frame.value_or(stall_frame(*t, duration));
    for (double k : options.periods) {
      for (int count = 1; count <= max_stalled; ++count) {
        StallCase c = run_stalled(spec, blocks, methods, duration, reference, *t, frame, k, count);
        compare(c, sweep.unstalled, options.factor, options.tube);
        if (progress) progress(c);
        sweep.cases.push_back(std::move(c));
      }
    }
  }
  return sweep;
}

std::vector<Field<StallCase>> stall_sweep_columns(const StallSweep& sweep, bool signals) {
  std::vector<Field<StallCase>> out = {
      {"task", Align::kLeft, [](const StallCase& c) { return c.task.empty() ? std::string("-") : c.task; }},
      {"k", Align::kRight, [](const StallCase& c) { return c.stalled_frames ? k_text(c.periods) : std::string("-"); }},
      {"stall", Align::kLeft,
       [](const StallCase& c) {
         return c.stalled_frames == 0   ? std::string("none")
                : c.stalled_frames == 1 ? std::string("single")
                                        : std::string("double");
       }},
      {"frame", Align::kRight,
       [](const StallCase& c) { return c.stalled_frames ? std::to_string(c.frame) : std::string("-"); }},
      {"spike", Align::kRight,
       [](const StallCase& c) { return c.stalled_frames ? format_seconds(c.spike) : std::string("-"); }},
      {"worst signal", Align::kLeft, [](const StallCase& c) { return c.worst_signal; }},
      {"RMS", Align::kRight,
       [](const StallCase& c) {
         for (const auto& e : c.errors) {
           if (e.signal == c.worst_signal) return format_general(e.rms);
         }
         return std::string("-");
       }},
      {"ratio", Align::kRight, [](const StallCase& c) { return ratio_text(c.ratio); }},
      {"after", Align::kRight, [](const StallCase& c) { return ratio_text(c.after_ratio); }},
      {"after/range", Align::kRight, [](const StallCase& c) { return ratio_text(c.after_of_range); }},
      // The stalled task's figures, as `rtcosim run` prints them.
      {"step max", Align::kRight, [](const StallCase& c) { return format_seconds(c.stalled().step_max); }},
      {"lost", Align::kRight, [](const StallCase& c) { return format_seconds(c.stalled().lost); }},
      {"lag max", Align::kRight, [](const StallCase& c) { return format_seconds(c.stalled().lag_max); }},
      {"overruns", Align::kRight, [](const StallCase& c) { return format_count(c.stalled().overruns); }},
      {"missed", Align::kRight, [](const StallCase& c) { return format_count(c.stalled().missed); }},
      // How the stall was repaid (docs/stalls.md).
      {"absorbed", Align::kRight,
       [](const StallCase& c) {
         return format_count(c.stalled().stalls_absorbed) + "/" + format_count(c.stalled().stalls);
       }},
      {"catch-up", Align::kRight, [](const StallCase& c) { return format_count(c.stalled().catch_up_frames); }},
      {"sub-steps", Align::kRight, [](const StallCase& c) { return format_count(c.stalled().extra_substeps); }},
      {"owed max", Align::kRight, [](const StallCase& c) { return format_seconds(c.stalled().owed_max); }},
      {"owed", Align::kRight, [](const StallCase& c) { return format_seconds(c.stalled().owed); }},
      {"waits", Align::kRight, [](const StallCase& c) { return format_count(c.data_waits()); }},
      {"verdict", Align::kLeft, verdict},
      {"failure", Align::kLeft, [](const StallCase& c) { return c.failed ? c.failure : std::string("-"); }},
  };
  if (signals) {
    for (std::size_t i = 0; i < sweep.unstalled.errors.size(); ++i) {
      out.push_back({"RMS " + sweep.unstalled.errors[i].signal, Align::kRight, [i](const StallCase& c) {
                       return i < c.errors.size() ? format_general(c.errors[i].rms) : std::string("-");
                     }});
    }
  }
  return out;
}

std::string render_stall_sweep(const StallSweep& sweep, StallSweepFormat format) {
  // Each stalled task's cases after the unstalled run, shown with that
  // task's figures, so that a column compares like with like.
  std::vector<StallCase> baselines;
  for (const auto& c : sweep.cases) {
    if (baselines.empty() || baselines.back().task != c.task) {
      baselines.push_back(sweep.unstalled);
      baselines.back().task = c.task;
    }
  }
  std::vector<const StallCase*> rows;
  if (baselines.empty()) rows.push_back(&sweep.unstalled);
  std::size_t next = 0;
  for (const auto& c : sweep.cases) {
    if (next < baselines.size() && baselines[next].task == c.task) rows.push_back(&baselines[next++]);
    rows.push_back(&c);
  }
  if (format == StallSweepFormat::kJson) {
    std::string out = "{\"graph\":" + json_string(sweep.graph) + ",\"duration_s\":" + json_number(sweep.duration) +
                      ",\"reference_step_s\":" + json_number(sweep.reference_step) +
                      ",\"factor\":" + json_number(sweep.factor) + ",\"unstalled\":" + case_json(sweep.unstalled) +
                      ",\"cases\":[";
    for (std::size_t i = 0; i < sweep.cases.size(); ++i) out += (i ? "," : "") + case_json(sweep.cases[i]);
    return out + "]}\n";
  }
  if (format == StallSweepFormat::kText) return render_table(stall_sweep_columns(sweep, false), rows);
  const bool tsv = format == StallSweepFormat::kTsv;
  const auto columns = stall_sweep_columns(sweep, tsv);
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      out += tsv ? (i ? "\t" : "") + cell_text(cells[i], '\t') : "| " + cell_text(cells[i], '|') + " ";
    }
    out += tsv ? "\n" : "|\n";
  };
  std::vector<std::string> header;
  for (const auto& f : columns) header.push_back(f.header);
  line(header);
  if (!tsv) {
    for (const auto& f : columns) out += f.align == Align::kRight ? "|---:" : "|---";
    out += "|\n";
  }
  for (const auto* c : rows) {
    std::vector<std::string> cells;
    for (const auto& f : columns) cells.push_back(f.cell(*c));
    line(cells);
  }
  return out;
}

}  // namespace rtcosim::session
