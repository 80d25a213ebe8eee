#include "tools/rtcosim/import_command.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "rt_config/ssp_import.hpp"
#include "tools/common/cli_args.hpp"

namespace rtcosim::tools {

namespace {

constexpr const char* kImportUsage = R"(usage: rtcosim import ssp FILE.ssp [--period 1ms] [--tasks per-component|one]
                          [-o graph.yaml] [--fmu-dir DIR]

Writes a task graph of the system an SSP 1.0 package describes (its
SystemStructure.ssd, the FMUs and the parameter sets under resources/):
one fmu block per component, one wire per connection (kind, type and unit
checked), start values from the parameter bindings (.ssv files and inline
sets), every output connector of a component recorded, and the duration
from the SSD's DefaultExperiment. `rtcosim check` and `rtcosim run` take
the file as it is.

  --period D     every task's period (default 1ms)
  --tasks T      per-component (default): one task per component, the
                 connections between them links; one: a single task
  -o, --output F the graph file (default: stdout)
  --fmu-dir DIR  where the components' FMUs are copied out of the archive
                 (default: NAME_fmus next to the graph file, NAME the SSP's
                 file name without .ssp; in the current directory when the
                 graph goes to stdout); the blocks' `file` paths are
                 relative to the graph file's directory (to the current
                 directory with stdout: save the output there)

Refused, by name, with the file and line of the SSD: nested systems,
signal dictionaries, parameter mappings, connection transformations,
connections of the system's own inputs or of parameters, referenced SSDs,
String/Binary/Enumeration values, units that differ; archives with paths
outside themselves, symbolic links, or beyond the size limits
(docs/ssp.md).
)";

}  // namespace

int run_import_command(const std::vector<std::string>& args_in) {
  return run_verb("import", [&]() -> int {
    if (args_in.empty() || args_in[0] == "--help" || args_in[0] == "-h") {
      std::cout << kImportUsage;
      return args_in.empty() ? 2 : 0;
    }
    if (args_in[0] != "ssp") throw UsageError("unknown format '" + args_in[0] + "' — expected 'import ssp FILE.ssp'");
    std::vector<std::string> args(args_in.begin() + 1, args_in.end());
    for (auto& a : args)
      if (a == "-o") a = "--output";
    CliArgs cli("import", {"period", "tasks", "output", "fmu-dir"}, {"help"});
    cli.parse(args);
    if (cli.flag("help")) {
      std::cout << kImportUsage;
      return 0;
    }
    if (cli.positionals().size() != 1) throw UsageError("expected one FILE.ssp");
    namespace fs = std::filesystem;
    const std::string ssp = cli.positionals()[0];
    config::SspImportOptions options;
    if (const auto p = cli.value("period")) {
      (void)cli.positive_duration("period", 0.0);  // a UsageError naming --period when not a duration
      options.period = *p;
    }
    if (const auto t = cli.value("tasks")) {
      if (*t == "one") {
        options.tasks = config::SspTaskLayout::kOne;
      } else if (*t != "per-component") {
        throw UsageError("--tasks '" + *t + "' — expected per-component or one");
      }
    }
    const auto output = cli.output_path("output");
    const std::string stem = fs::path(ssp).stem().string();
    if (output) {
      options.graph_dir = fs::absolute(*output).parent_path().string();
      options.record_file = fs::path(*output).stem().string() + ".csv";
    }
    const fs::path base_dir = output ? fs::path(options.graph_dir) : fs::current_path();
    options.fmu_dir = cli.value("fmu-dir") ? *cli.value("fmu-dir") : (base_dir / (stem + "_fmus")).string();
    const auto result = config::import_ssp(ssp, options);
    for (const auto& w : result.warnings) std::cerr << "rtcosim import: warning: " << w << '\n';
    if (output) {
      std::ofstream out(*output, std::ios::binary | std::ios::trunc);
      out << result.yaml;
      out.close();
      if (!out) throw std::runtime_error(*output + ": cannot write");
      std::cerr << "rtcosim import: wrote " << *output << " and " << result.fmus.size() << " FMU(s) into "
                << options.fmu_dir << '\n';
    } else {
      std::cout << result.yaml;
    }
    return 0;
  });
}

}  // namespace rtcosim::tools
