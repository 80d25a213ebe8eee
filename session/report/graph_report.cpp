#include "session/report/graph_report.hpp"

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string_view>

#include "base/duration.hpp"
#include "coupling/link.hpp"
#include "rt_config/hosts.hpp"
#include "rt_config/schedulability.hpp"
#include "session/report/text_table.hpp"

namespace rtcosim::session {

namespace {

std::string or_dash(int v, bool set) { return set ? std::to_string(v) : "-"; }

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

// Indexed once: scans per task and per wire made a 10^4-task summary quadratic.
struct GraphIndex {
  std::map<std::string_view, std::size_t> blocks_in;
  std::map<std::string_view, std::string_view> task_of;
  std::map<std::string_view, const config::TaskSpec*> task_named;

  std::string task_of_block(const std::string& block) const {
    const auto it = task_of.find(block);
    return it == task_of.end() ? std::string() : std::string(it->second);
  }
  const config::TaskSpec* find_task(const std::string& name) const {
    const auto it = task_named.find(name);
    return it == task_named.end() ? nullptr : it->second;
  }
};

GraphIndex index_of(const config::GraphSpec& g) {
  GraphIndex index;
  for (const auto& b : g.diagram.blocks) {
    ++index.blocks_in[b.task];
    index.task_of.emplace(b.name, b.task);
  }
  for (const auto& t : g.tasks) index.task_named.emplace(t.name, &t);
  return index;
}

// The task table gets a host column only when the graph spans hosts, so a
// one-host summary reads as it always did.
void write_tasks(std::ostringstream& out, const config::GraphSpec& g, GraphIndex& index) {
  using config::TaskSpec;
  auto& blocks_in = index.blocks_in;
  // Values as the file gave them (format_duration: exact, "2.5 ms"), not
  // rounded to three digits as measured figures are.
  const std::vector<Field<TaskSpec>> task_columns = {
      {"name", Align::kLeft, [](const TaskSpec& t) { return t.name; }},
      {"cpu", Align::kRight, [](const TaskSpec& t) { return or_dash(t.cpu, t.cpu >= 0); }},
      {"prio", Align::kRight, [](const TaskSpec& t) { return or_dash(t.priority, t.priority > 0); }},
      {"period", Align::kRight, [](const TaskSpec& t) { return base::format_duration(t.period); }},
      {"integrator", Align::kLeft, [](const TaskSpec& t) { return std::string(tasks::integrator_name(t.integrator)); }},
      {"step", Align::kLeft, [](const TaskSpec& t) { return std::string(config::to_string(t.step)); }},
      {"overrun", Align::kLeft, [](const TaskSpec& t) { return std::string(config::to_string(t.overrun)); }},
      {"max step", Align::kRight,
       [](const TaskSpec& t) { return base::format_duration(t.max_step > 0.0 ? t.max_step : 4.0 * t.period); }},
      {"blocks", Align::kRight, [&blocks_in](const TaskSpec& t) { return format_count(blocks_in[t.name]); }},
      {"rate group", Align::kLeft, [](const TaskSpec& t) { return t.rate_group.empty() ? "-" : t.rate_group; }},
  };
  auto task_table = task_columns;
  if (!g.hosts.empty()) {
    task_table.insert(task_table.begin() + 1, {"host", Align::kLeft, [](const TaskSpec& t) { return t.host; }});
    out << "hosts (DDS domain " << g.hosts.front().domain << "):";
    for (const auto& h : g.hosts) out << ' ' << h.name;
    out << "\n\n";
  }
  out << "tasks:\n" << render_table(task_table, g.tasks);
}

// Each link's ring as the runtime will size it, so that the summary shows the
// memory a link takes before anything runs; "?" when a period is unknown.
void write_links(std::ostringstream& out, const config::GraphSpec& g, const GraphIndex& index) {
  std::vector<TextTable::Column> link_columns = {
      {"from", Align::kLeft}, {"to", Align::kLeft}, {"coupling", Align::kLeft}, {"ring", Align::kRight}};
  if (!g.hosts.empty()) link_columns.push_back({"remote (DDS topic)", Align::kLeft});
  TextTable table(link_columns);
  std::size_t remote = 0;
  for (const auto& w : g.wires) {
    if (!w.crosses_tasks) continue;
    const auto* producer = index.find_task(index.task_of_block(w.wire.from.block));
    const auto* consumer = index.find_task(index.task_of_block(w.wire.to.block));
    std::string ring = "?";
    if (producer && consumer && producer->period > 0.0 && consumer->period > 0.0) {
      const double longest = consumer->max_step > 0.0 ? consumer->max_step : 4.0 * consumer->period;
      ring =
          std::to_string(coupling::ring_capacity_blocks({producer->period, consumer->period, longest, 2})) + " blocks";
    }
    std::vector<std::string> row = {w.wire.from.str() + " (" + index.task_of_block(w.wire.from.block) + ")",
                                    w.wire.to.str() + " (" + index.task_of_block(w.wire.to.block) + ")",
                                    describe_coupling(g.coupling_of(w)), ring};
    if (!g.hosts.empty()) {
      remote += w.crosses_hosts ? 1 : 0;
      row.push_back(w.crosses_hosts ? config::dds_topic_name(g, w.wire.from.str(), index.task_of_block(w.wire.to.block))
                                    : std::string("-"));
    }
    table.add_row(row);
  }
  out << "\nlinks:\n" << table.render();
  if (!g.hosts.empty()) out << remote << " remote link(s), carried over DDS (docs/dds.md)\n";
}

// Only what declared execution times allow: a graph without them prints
// neither the load nor the response times.
void write_schedulability(std::ostringstream& out, const config::GraphSpec& g) {
  using config::ThreadTiming;
  const config::Schedulability sched = config::analyse_schedulability(g);
  if (!sched.cpu_load.empty()) {
    out << "\nCPU load from declared execution times:\n";
    for (const auto& [cpu, u] : sched.cpu_load) {
      char buf[64];
      std::snprintf(buf, sizeof buf, ": %.1f %%\n", u * 100.0);
      out << "  " << cpu.str() << buf;
    }
  }
  if (!sched.threads.empty()) {
    const std::vector<Field<ThreadTiming>> columns = {
        {"thread", Align::kLeft, [](const ThreadTiming& th) { return th.name; }},
        {"cpu", Align::kRight, [](const ThreadTiming& th) { return or_dash(th.cpu, th.cpu >= 0); }},
        {"prio", Align::kRight, [](const ThreadTiming& th) { return or_dash(th.priority, th.priority > 0); }},
        {"period", Align::kRight, [](const ThreadTiming& th) { return base::format_duration(th.period); }},
        {"execution", Align::kRight, [](const ThreadTiming& th) { return base::format_duration(th.execution); }},
        {"response", Align::kRight,
         [](const ThreadTiming& th) {
           return std::isfinite(th.response) ? base::format_duration(th.response) : std::string("unbounded");
         }},
        {"result", Align::kLeft, [](const ThreadTiming& th) { return th.meets_deadline() ? "ok" : "overruns"; }},
    };
    out << "\nworst-case response times (fixed-priority analysis of the longest scripted executions):\n"
        << render_table(columns, sched.threads);
  }
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
  GraphIndex index = index_of(g);
  write_tasks(out, g, index);
  if (links > 0) write_links(out, g, index);
  write_schedulability(out, g);
  if (!g.record.signals.empty()) {
    out << "\nrecords " << g.record.signals.size() << " signal(s) to " << g.record.file << '\n';
  }
  return out.str();
}

std::string graph_dot(const config::GraphSpec& g) {
  std::ostringstream out;
  out << "digraph " << dot_id(g.name.empty() ? "rtcosim" : g.name)
      << " {\n  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\"];\n";
  for (const auto& t : g.tasks) {
    out << "  subgraph " << dot_id("cluster_" + t.name) << " {\n    label="
        << dot_id(t.name + " (" + base::format_duration(t.period) + ", cpu " +
                  (t.cpu >= 0 ? std::to_string(t.cpu) : "-") + ")")
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
}  // namespace rtcosim::session
