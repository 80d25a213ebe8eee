#include "tools/rtcosim/sync_command.hpp"

#include <fstream>
#include <iostream>

#include "base/duration.hpp"
#include "rt_config/loader.hpp"
#include "session/report/text_table.hpp"
#include "session/sync/sync_model.hpp"
#include "session/sync/sync_run.hpp"
#include "tools/common/cli_args.hpp"
#include "tools/rtcosim/graph_file.hpp"

namespace rtcosim::tools {

namespace {

constexpr const char* kSyncHelp = R"(usage: rtcosim sync [options] FILE

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

}  // namespace

int run_sync_command(const std::vector<std::string>& raw_args) {
  return run_verb("sync", [&]() -> int {
    CliArgs args("sync", {"duration", "csv", "plot", "json", "max-file-size"}, {"quiet", "help"}, {});
    const auto parsed = args.parse_for_file(raw_args, kSyncHelp);
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
    const auto run =
        session::run_state_sync(spec, blocks, duration, [&](std::size_t k, std::size_t n, const session::SyncRun& r) {
          if (quiet || k * 10 / n == shown) return;
          shown = k * 10 / n;
          const auto& s = r.steps.back();
          std::cout << "  t = " << base::format_duration(static_cast<double>(k) * r.step) << ": macro step " << k
                    << " of " << n << ", J before " << session::format_general(s.objective_before, 4) << " after "
                    << session::format_general(s.objective_after, 4) << ", " << s.evaluations << " evaluations"
                    << std::endl;
        });
    std::cout << "components: ";
    for (std::size_t i = 0; i < run.components.size(); ++i) std::cout << (i ? ", " : "") << run.components[i];
    std::cout << "; measurement: ";
    for (std::size_t i = 0; i < run.measurement_tasks.size(); ++i)
      std::cout << (i ? ", " : "") << run.measurement_tasks[i];
    std::cout << "; h " << base::format_duration(run.step) << '\n' << session::sync_run_summary(run, spec);
    if (const auto path = args.value("csv")) {
      session::write_sync_csv(run, *path);
      std::cout << "series written to " << *path << '\n';
    }
    if (const auto path = args.value("plot")) {
      session::write_sync_plot(run, (spec.name.empty() ? file : spec.name) + " — state synchronisation", *path);
      std::cout << "plot written to " << *path << '\n';
    }
    if (const auto path = args.value("json")) {
      std::ofstream out(*path);
      out << session::sync_run_json(run);
      if (!out.flush()) throw std::runtime_error("cannot write " + *path);
      std::cout << "summary written to " << *path << '\n';
    }
    return 0;
  });
}

}  // namespace rtcosim::tools
