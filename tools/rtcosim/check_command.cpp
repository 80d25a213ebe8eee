#include "tools/rtcosim/check_command.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string_view>

#include "base/duration.hpp"
#include "coupling/link.hpp"
#include "rt_config/hosts.hpp"
#include "rt_config/loader.hpp"
#include "rt_config/schedulability.hpp"
#include "session/report/graph_report.hpp"
#include "session/report/text_table.hpp"
#include "tools/common/cli_args.hpp"

namespace rtcosim::tools {

namespace {

constexpr const char* kCheckHelp =
    R"(usage: rtcosim check [--dot] [--load-plugins --plugin-dir DIR] [--max-file-size MIB] FILE

Loads a task-graph file and validates everything that can be known before
running: keys, types and units, block types and parameters, coupling methods
and parameters, ports and widths, unconnected inputs, inputs driven twice,
algebraic loops across the whole diagram, CPUs and priorities, rate groups,
and the CPU load and response times of declared execution times.

Prints every problem as FILE:LINE:COLUMN: error: what — expected … and exits 1,
or prints a summary of the graph (tasks, links and their rings) and exits 0.

options:
  --dot        write the graph as Graphviz DOT instead (one cluster per task);
               e.g.  rtcosim check --dot graph.yaml | dot -Tsvg > graph.svg
  --load-plugins
               load the file's 'plugins:' to check the methods they add (by
               default no plugin is loaded: checking a file runs no code)
  --plugin-dir DIR
               where those plugins may be loaded from; repeatable
  --max-file-size MIB
               refuse files larger than this (default 4; generated graphs of
               10^5 tasks need about 20)
  -h, --help   this text
)";

}  // namespace

int run_check_command(const std::vector<std::string>& raw_args) {
  try {
    CliArgs args("check", {"plugin-dir", "max-file-size"}, {"dot", "load-plugins", "help"}, {"plugin-dir"});
    args.parse(raw_args);
    if (args.flag("help")) {
      std::cout << kCheckHelp;
      return 0;
    }
    if (args.positionals().size() != 1) {
      throw UsageError(args.positionals().empty()
                           ? "no file given — expected 'rtcosim check FILE'"
                           : "one file at a time — got " + std::to_string(args.positionals().size()));
    }
    config::LoadOptions options;
    options.plugins = {args.values("plugin-dir"), args.flag("load-plugins")};
    options.max_file_bytes = args.max_file_bytes(options.max_file_bytes);
    const auto result = config::load_graph_file(args.positionals().front(), options);
    for (const auto& d : result.diagnostics) std::cerr << d.str() << '\n';
    if (!result.ok()) {
      const auto errors = config::count(result.diagnostics, config::Diagnostic::Severity::kError);
      std::cerr << errors << " error(s) in " << args.positionals().front() << '\n';
      return 1;
    }
    std::cout << (args.flag("dot") ? session::graph_dot(result.graph) : session::graph_summary(result.graph));
    return 0;
  } catch (const UsageError& e) {
    std::cerr << "rtcosim check: " << e.what() << "\nsee 'rtcosim check --help'\n";
    return 2;
  }
}

}  // namespace rtcosim::tools
