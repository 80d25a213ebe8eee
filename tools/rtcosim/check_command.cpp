#include "tools/rtcosim/check_command.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "base/duration.hpp"
#include "coupling/link.hpp"
#include "rt_config/loader.hpp"
#include "rt_config/schedulability.hpp"
#include "tools/rtcosim/cli_args.hpp"

namespace rtcosim::tools {

namespace {

constexpr const char* kHelp = R"(usage: rtcosim check [--dot] [--load-plugins --plugin-dir DIR] FILE

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
  -h, --help   this text
)";

std::string pad(std::string s, std::size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::size_t blocks_in(const config::GraphSpec& g, const std::string& task) {
  std::size_t n = 0;
  for (const auto& b : g.diagram.blocks) n += b.task == task ? 1 : 0;
  return n;
}

std::string task_of(const config::GraphSpec& g, const std::string& block) {
  for (const auto& b : g.diagram.blocks) {
    if (b.name == block) return b.task;
  }
  return {};
}

std::string describe_coupling(const config::CouplingSpec& c) {
  std::string out = c.method;
  for (const auto& p : c.params) out += " " + p.name + "=" + p.value;
  return out;
}

std::string dot_id(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string graph_summary(const config::GraphSpec& g) {
  std::ostringstream out;
  std::size_t links = 0;
  for (const auto& w : g.wires) links += w.crosses_tasks ? 1 : 0;
  out << g.file << ": " << (g.name.empty() ? "task graph" : g.name) << " — " << g.tasks.size() << " task(s), "
      << g.diagram.blocks.size() << " block(s), " << g.wires.size() << " wire(s) of which " << links
      << " link(s); realtime " << config::to_string(g.realtime) << ", "
      << (g.duration > 0.0 ? "runs " + base::format_duration(g.duration) : std::string("runs until stopped")) << "\n\n";
  out << "tasks:\n  " << pad("name", 16) << pad("cpu", 5) << pad("prio", 6) << pad("period", 10) << pad("integrator", 12)
      << pad("step", 10) << pad("overrun", 10) << pad("max step", 10) << "blocks\n";
  for (const auto& t : g.tasks) {
    const double max_step = t.max_step > 0.0 ? t.max_step : 4.0 * t.period;
    out << "  " << pad(t.name, 16) << pad(t.cpu >= 0 ? std::to_string(t.cpu) : "-", 5)
        << pad(t.priority > 0 ? std::to_string(t.priority) : "-", 6) << pad(base::format_duration(t.period), 10)
        << pad(std::string(tasks::integrator_name(t.integrator)), 12) << pad(config::to_string(t.step), 10)
        << pad(config::to_string(t.overrun), 10) << pad(base::format_duration(max_step), 10) << blocks_in(g, t.name);
    if (!t.rate_group.empty()) out << "  (rate group " << t.rate_group << ")";
    out << '\n';
  }
  if (links > 0) {
    out << "\nlinks:\n  " << pad("from", 34) << pad("to", 38) << pad("coupling", 30) << "ring\n";
    for (const auto& w : g.wires) {
      if (!w.crosses_tasks) continue;
      const auto* producer = g.find_task(task_of(g, w.wire.from.block));
      const auto* consumer = g.find_task(task_of(g, w.wire.to.block));
      std::string ring = "?";
      if (producer && consumer && producer->period > 0.0 && consumer->period > 0.0) {
        const double longest = consumer->max_step > 0.0 ? consumer->max_step : 4.0 * consumer->period;
        ring = std::to_string(coupling::ring_capacity_blocks({producer->period, consumer->period, longest, 2})) +
               " blocks";
      }
      out << "  " << pad(w.wire.from.str() + " (" + task_of(g, w.wire.from.block) + ")", 34)
          << pad(w.wire.to.str() + " (" + task_of(g, w.wire.to.block) + ")", 38)
          << pad(describe_coupling(g.coupling_of(w)), 30) << ring << '\n';
    }
  }
  const config::Schedulability sched = config::analyse_schedulability(g);
  if (!sched.cpu_load.empty()) {
    out << "\nCPU load from declared execution times:\n";
    for (const auto& [cpu, u] : sched.cpu_load) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "  CPU %d: %.1f %%\n", cpu, u * 100.0);
      out << buf;
    }
  }
  if (!sched.threads.empty()) {
    out << "\nworst-case response times (fixed-priority analysis of the longest scripted executions):\n  "
        << pad("thread", 20) << pad("cpu", 5) << pad("prio", 6) << pad("period", 10) << pad("execution", 11)
        << pad("response", 10) << "result\n";
    for (const auto& th : sched.threads) {
      out << "  " << pad(th.name, 20) << pad(th.cpu >= 0 ? std::to_string(th.cpu) : "-", 5)
          << pad(th.priority > 0 ? std::to_string(th.priority) : "-", 6) << pad(base::format_duration(th.period), 10)
          << pad(base::format_duration(th.execution), 11)
          << pad(std::isfinite(th.response) ? base::format_duration(th.response) : "unbounded", 10)
          << (th.meets_deadline() ? "ok" : "overruns") << '\n';
    }
  }
  if (!g.record.signals.empty()) {
    out << "\nrecords " << g.record.signals.size() << " signal(s) to " << g.record.file << '\n';
  }
  return out.str();
}

std::string graph_dot(const config::GraphSpec& g) {
  std::ostringstream out;
  out << "digraph " << dot_id(g.name.empty() ? "rtcosim" : g.name) << " {\n  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\"];\n";
  for (const auto& t : g.tasks) {
    out << "  subgraph " << dot_id("cluster_" + t.name) << " {\n    label=" << dot_id(t.name + " (" + base::format_duration(t.period) + ", cpu " + (t.cpu >= 0 ? std::to_string(t.cpu) : "-") + ")")
        << ";\n    style=rounded;\n";
    for (const auto& b : g.diagram.blocks) {
      if (b.task == t.name) out << "    " << dot_id(b.name) << " [label=" << dot_id(b.name + "\n" + b.type) << "];\n";
    }
    out << "  }\n";
  }
  for (const auto& w : g.wires) {
    out << "  " << dot_id(w.wire.from.block) << " -> " << dot_id(w.wire.to.block) << " [";
    if (w.crosses_tasks) {
      out << "label=" << dot_id(describe_coupling(g.coupling_of(w))) << ", style=bold, color=\"#d62728\"";
    } else {
      out << "label=" << dot_id(w.wire.from.port + " → " + w.wire.to.port) << ", fontsize=9";
    }
    out << "];\n";
  }
  out << "}\n";
  return out.str();
}

int run_check_command(const std::vector<std::string>& raw_args) {
  try {
    CliArgs args("check", {"plugin-dir"}, {"dot", "load-plugins", "help"}, {"plugin-dir"});
    args.parse(raw_args);
    if (args.flag("help")) {
      std::cout << kHelp;
      return 0;
    }
    if (args.positionals().size() != 1) {
      throw UsageError(args.positionals().empty() ? "no file given — expected 'rtcosim check FILE'"
                                                  : "one file at a time — got " + std::to_string(args.positionals().size()));
    }
    config::LoadOptions options;
    options.plugins = {args.values("plugin-dir"), args.flag("load-plugins")};
    const auto result = config::load_graph_file(args.positionals().front(), options);
    for (const auto& d : result.diagnostics) std::cerr << d.str() << '\n';
    if (!result.ok()) {
      const auto errors = config::count(result.diagnostics, config::Diagnostic::Severity::kError);
      std::cerr << errors << " error(s) in " << args.positionals().front() << '\n';
      return 1;
    }
    std::cout << (args.flag("dot") ? graph_dot(result.graph) : graph_summary(result.graph));
    return 0;
  } catch (const UsageError& e) {
    std::cerr << "rtcosim check: " << e.what() << "\nsee 'rtcosim check --help'\n";
    return 2;
  }
}

}  // namespace rtcosim::tools
