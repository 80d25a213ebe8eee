#include "tools/rtcosim/stall_sweep_command.hpp"

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "base/duration.hpp"
#include "rt_config/plugins.hpp"
#include "session/stall_sweep.hpp"
#include "tools/common/cli_args.hpp"
#include "tools/rtcosim/graph_file.hpp"

namespace rtcosim::tools {

namespace {

constexpr const char* kStallSweepHelp =
    R"(usage: rtcosim stall-sweep [--periods 1,2,4,8,16] [--tasks a,b] [--double] [--frame N]
                           [--duration D] [--factor 3] [--tube 0.01] [--format text|tsv|markdown|json] FILE

Runs FILE in virtual time (as 'rtcosim run --virtual'), once as the file
scripts it and once per stalled task and k with one frame of that task made
to execute k of its periods: frame N of the task gets the execution spike
{frame: N, time: k x period}, exactly as if written into its 'execution:'.
Every run's recorded signals are compared with the merged RK4 reference
(as 'rtcosim run --compare-reference'); per case it prints the error ratio
to the unstalled run (the worst signal's RMS over its unstalled RMS),
whether a task failed (and why), and the stalled task's step max, lost real
time, lag max, overruns and missed periods.

The run's last quarter shows what the stall left behind: a case is a silent
blow-up when no task failed and, over that quarter, some signal's RMS error
is more than --factor times the unstalled run's and more than --tube of the
signal's range in the reference (the FMI Cross-Check's 1 % tube): the
co-simulation went wrong and nothing said so. The command then names each
one on stderr and exits 1; otherwise 0. A case worse than the factor over
the whole run but back within it by the last quarter is 'recovered'.
docs/stalls.md says what each figure measures and on which clock.

options:
  --periods K,K,...       stall lengths in periods of the stalled task (default 1,2,4,8,16;
                          fractions allowed)
  --tasks A,B,...         the tasks to stall (default: every task)
  --double                also two stalled frames in a row (N and N + 1)
  --frame N               the first stalled frame, each task's own index (default: the frame
                          released at a quarter of the run)
  --duration DURATION     how long each run lasts (default: the file's `duration`)
  --factor F              the last-quarter error ratio beyond which a case is a blow-up (default 3)
  --tube T                ... and the last-quarter RMS error over the signal's range beyond which
                          (default 0.01)
  --reference-step D      step of the RK4 reference (default 0.5ms)
  --format FORMAT         text (default), tsv (adds every signal's RMS), markdown, json
                          (every figure of every task)
  --plugin-dir DIR        where the file's 'plugins:' ids may be loaded from; repeatable
  --max-file-size MIB     refuse task-graph files larger than this (default 4)
  -h, --help              this text

example:
  rtcosim stall-sweep examples/flight_control.yaml --tasks airframe --double
)";

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const auto comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

std::string number_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

double positive_number(const std::string& option, const std::string& text, const char* example) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(v > 0.0) || !std::isfinite(v)) {
    throw UsageError("--" + option + ": '" + text + "' — expected a positive number, e.g. " + example);
  }
  return v;
}

// The options as the command line gives them, each refused with its own
// message before the graph is even loaded.
session::StallSweepOptions sweep_options(const CliArgs& args) {
  session::StallSweepOptions options;
  if (const auto v = args.value("periods")) {
    options.periods.clear();
    for (const auto& k : split(*v)) options.periods.push_back(positive_number("periods", k, "1,2,4,8,16"));
  }
  if (const auto v = args.value("tasks")) {
    for (const auto& t : split(*v)) {
      if (t.empty()) throw UsageError("--tasks: '" + *v + "' has an empty name — expected names like a,b");
      options.tasks.push_back(t);
    }
  }
  if (const auto v = args.value("frame")) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v->c_str(), &end, 10);
    if (v->empty() || (*v)[0] == '-' || end != v->c_str() + v->size()) {
      throw UsageError("--frame: '" + *v + "' — expected a frame index >= 0, e.g. 60");
    }
    options.frame = n;
  }
  options.doubled = args.flag("double");
  options.duration = args.positive_duration("duration", 0.0);
  if (const auto v = args.value("factor")) options.factor = positive_number("factor", *v, "3");
  if (const auto v = args.value("tube")) options.tube = positive_number("tube", *v, "0.01");
  options.reference_step = args.positive_duration("reference-step", options.reference_step);
  return options;
}

// Checked with the other options: a typo must not cost a sweep of many runs.
session::StallSweepFormat sweep_format(const CliArgs& args) {
  const std::string format_name = args.value("format").value_or("text");
  session::StallSweepFormat format = session::StallSweepFormat::kText;
  if (format_name == "tsv") {
    format = session::StallSweepFormat::kTsv;
  } else if (format_name == "markdown") {
    format = session::StallSweepFormat::kMarkdown;
  } else if (format_name == "json") {
    format = session::StallSweepFormat::kJson;
  } else if (format_name != "text") {
    throw UsageError("--format: '" + format_name + "' — expected text, tsv, markdown or json");
  }
  return format;
}

// The table on stdout, the verdicts on stderr: the exit status is 1 when
// the ratios mean nothing (the unstalled run failed) or a blow-up was silent.
int report_sweep(const session::StallSweep& sweep, const session::StallSweepOptions& options,
                 session::StallSweepFormat format, const std::string& file) {
  std::cout << session::render_stall_sweep(sweep, format);
  if (sweep.unstalled.failed) {
    std::cerr << "rtcosim stall-sweep: the unstalled run failed (" << sweep.unstalled.failure
              << "); every ratio is relative to it — make " << file << " run unstalled first\n";
    return 1;
  }
  const auto blow_ups = sweep.silent_blow_ups();
  for (const auto* c : blow_ups) {
    std::cerr << "rtcosim stall-sweep: silent blow-up: task '" << c->task << "', "
              << (c->stalled_frames == 2 ? "two frames" : "one frame") << " of " << number_text(c->periods)
              << " period(s) from frame " << c->frame << ": over the last quarter the RMS error of " << c->after_signal
              << " is " << session::format_general(c->after_ratio) << " times the unstalled run's (factor "
              << session::format_general(options.factor) << ") and the worst signal's is "
              << session::format_general(100.0 * c->after_of_range) << " % of its range (tube "
              << session::format_general(100.0 * options.tube) << " %), and no task failed\n";
  }
  if (!blow_ups.empty()) return 1;
  return 0;
}

}  // namespace

int run_stall_sweep_command(const std::vector<std::string>& raw_args) {
  return run_verb("stall-sweep", [&]() -> int {
    CliArgs args("stall-sweep",
                 {"periods", "tasks", "frame", "duration", "factor", "tube", "reference-step", "format", "plugin-dir",
                  "max-file-size"},
                 {"double", "help"}, {"plugin-dir"});
    const auto file = args.parse_for_file(raw_args, kStallSweepHelp);
    if (!file) return 0;
    const session::StallSweepOptions options = sweep_options(args);
    const session::StallSweepFormat format = sweep_format(args);

    config::LoadOptions load;
    load.plugins = {args.values("plugin-dir"), true};
    load.max_file_bytes = args.max_file_bytes(load.max_file_bytes);
    const auto spec = load_graph_or_report(*file, load);
    if (!spec) return 1;
    const auto blocks = tasks::BlockRegistry::with_builtins();
    const auto methods = config::plugin_registry(*spec, load.plugins.directories);
    session::StallSweep sweep;
    try {
      sweep = session::run_stall_sweep(*spec, blocks, methods, options, [](const session::StallCase& c) {
        // One line per run on stderr: a sweep of many tasks takes a while,
        // and stdout stays the table alone.
        std::cerr << "  " << (c.task.empty() ? std::string("unstalled") : c.task + " k=" + number_text(c.periods))
                  << (c.stalled_frames == 2 ? " double" : "") << ": ratio " << session::format_general(c.ratio)
                  << (c.failed ? " (failed)" : "") << '\n';
      });
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    return report_sweep(sweep, options, format, *file);
  });
}

}  // namespace rtcosim::tools
