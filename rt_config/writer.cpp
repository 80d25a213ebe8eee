#include "rt_config/writer.hpp"

#include <cstdio>
#include <variant>

#include <yaml-cpp/yaml.h>

namespace rtcosim::config {

namespace {

std::string exact_seconds(double seconds) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17gs", seconds);
  return buf;
}

std::string exact(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void emit_value(YAML::Emitter& out, const tasks::ParamValue& value) {
  if (const auto* d = std::get_if<double>(&value)) {
    out << exact(*d);
  } else if (const auto* v = std::get_if<tasks::Vector>(&value)) {
    out << YAML::Flow << YAML::BeginSeq;
    for (double x : *v) out << exact(x);
    out << YAML::EndSeq;
  } else if (const auto* m = std::get_if<tasks::Matrix>(&value)) {
    out << YAML::Flow << YAML::BeginSeq;
    for (const auto& row : *m) {
      out << YAML::Flow << YAML::BeginSeq;
      for (double x : row) out << exact(x);
      out << YAML::EndSeq;
    }
    out << YAML::EndSeq;
  } else if (const auto* s = std::get_if<std::string>(&value)) {
    out << YAML::DoubleQuoted << *s;
  } else {
    out << (std::get<bool>(value) ? "true" : "false");
  }
}

void emit_coupling(YAML::Emitter& out, const CouplingSpec& c) {
  out << YAML::Flow << YAML::BeginMap << YAML::Key << "method" << YAML::Value << c.method;
  for (const auto& p : c.params) out << YAML::Key << p.name << YAML::Value << p.value;
  if (c.max_extrapolation)
    out << YAML::Key << "max_extrapolation" << YAML::Value << exact_seconds(*c.max_extrapolation);
  if (c.max_tag_lead) out << YAML::Key << "max_tag_lead" << YAML::Value << exact_seconds(*c.max_tag_lead);
  out << YAML::EndMap;
}

// Hosts and dds together: the dds section only means something when the graph spans hosts.
void emit_hosts_dds(YAML::Emitter& out, const GraphSpec& g) {
  out << YAML::Key << "hosts" << YAML::Value << YAML::BeginSeq;
  for (const auto& h : g.hosts) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << h.name << YAML::Key << "domain"
        << YAML::Value << h.domain << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::Key << "dds" << YAML::Value << YAML::BeginMap << YAML::Key << "discovery_timeout" << YAML::Value
      << exact_seconds(g.dds.discovery_timeout) << YAML::Key << "start_delay" << YAML::Value
      << exact_seconds(g.dds.start_delay);
  if (g.dds.bridge_priority > 0) out << YAML::Key << "bridge_priority" << YAML::Value << g.dds.bridge_priority;
  if (g.dds.bridge_cpu >= 0) out << YAML::Key << "bridge_cpu" << YAML::Value << g.dds.bridge_cpu;
  out << YAML::Key << "max_sequence_gap" << YAML::Value << g.dds.max_sequence_gap << YAML::Key << "max_clock_offset"
      << YAML::Value << exact_seconds(g.dds.max_clock_offset);
  out << YAML::EndMap;
}

// One task, its optional keys only when they differ from the loader's defaults, so that the file reads back the same.
void emit_task(YAML::Emitter& out, const TaskSpec& t) {
  out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << t.name << YAML::Key << "period" << YAML::Value
      << exact_seconds(t.period);
  if (t.cpu >= 0) out << YAML::Key << "cpu" << YAML::Value << t.cpu;
  if (t.priority > 0) out << YAML::Key << "priority" << YAML::Value << t.priority;
  out << YAML::Key << "integrator" << YAML::Value << std::string(tasks::integrator_name(t.integrator));
  out << YAML::Key << "step" << YAML::Value << to_string(t.step);
  out << YAML::Key << "overrun" << YAML::Value << to_string(t.overrun);
  if (t.max_step > 0.0) out << YAML::Key << "max_step" << YAML::Value << exact_seconds(t.max_step);
  if (t.max_substeps > 0) out << YAML::Key << "max_substeps" << YAML::Value << t.max_substeps;
  if (t.max_owed > 0.0) out << YAML::Key << "max_owed" << YAML::Value << exact_seconds(t.max_owed);
  if (!t.wait_for_data) out << YAML::Key << "wait_for_data" << YAML::Value << false;
  if (t.divergence != TaskSpec::Divergence{}) {
    out << YAML::Key << "divergence" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "tolerance" << YAML::Value << t.divergence.tolerance;
    out << YAML::Key << "steps" << YAML::Value << t.divergence.steps;
    out << YAML::Key << "state_bound" << YAML::Value << t.divergence.state_bound;
    out << YAML::EndMap;
  }
  if (!t.rate_group.empty()) out << YAML::Key << "rate_group" << YAML::Value << t.rate_group;
  if (!t.host.empty()) out << YAML::Key << "host" << YAML::Value << t.host;
  if (t.execution.declared) {
    out << YAML::Key << "execution" << YAML::Value << YAML::BeginMap << YAML::Key << "nominal" << YAML::Value
        << exact_seconds(t.execution.nominal);
    if (!t.execution.spikes.empty()) {
      out << YAML::Key << "spikes" << YAML::Value << YAML::BeginSeq;
      for (const auto& s : t.execution.spikes) {
        out << YAML::Flow << YAML::BeginMap << YAML::Key << "frame" << YAML::Value << s.frame << YAML::Key << "time"
            << YAML::Value << exact_seconds(s.time) << YAML::EndMap;
      }
      out << YAML::EndSeq;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

// One block, its parameters with emit_value so that numbers keep every bit.
void emit_block(YAML::Emitter& out, const tasks::BlockSpec& b) {
  out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << b.name << YAML::Key << "type" << YAML::Value << b.type
      << YAML::Key << "task" << YAML::Value << b.task;
  if (!b.params.all().empty()) {
    out << YAML::Key << "params" << YAML::Value << YAML::BeginMap;
    for (const auto& [k, v] : b.params.all()) {
      out << YAML::Key << k << YAML::Value;
      emit_value(out, v);
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

// One wire, with its coupling only where it has its own (else the default applies on reading).
void emit_wire(YAML::Emitter& out, const WireEntry& w) {
  out << YAML::BeginMap << YAML::Key << "from" << YAML::Value << w.wire.from.str() << YAML::Key << "to" << YAML::Value
      << w.wire.to.str();
  if (w.coupling) {
    out << YAML::Key << "coupling" << YAML::Value;
    emit_coupling(out, *w.coupling);
  }
  out << YAML::EndMap;
}

}  // namespace

std::string write_graph(const GraphSpec& g) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  if (!g.name.empty()) out << YAML::Key << "name" << YAML::Value << g.name;
  out << YAML::Key << "duration" << YAML::Value << exact_seconds(g.duration);
  out << YAML::Key << "realtime" << YAML::Value << to_string(g.realtime);
  out << YAML::Key << "coupling" << YAML::Value;
  emit_coupling(out, g.default_coupling);
  if (!g.hosts.empty()) emit_hosts_dds(out, g);
  out << YAML::Key << "tasks" << YAML::Value << YAML::BeginSeq;
  for (const auto& t : g.tasks) emit_task(out, t);
  out << YAML::EndSeq;
  out << YAML::Key << "blocks" << YAML::Value << YAML::BeginSeq;
  for (const auto& b : g.diagram.blocks) emit_block(out, b);
  out << YAML::EndSeq;
  out << YAML::Key << "wires" << YAML::Value << YAML::BeginSeq;
  for (const auto& w : g.wires) emit_wire(out, w);
  out << YAML::EndSeq;
  if (!g.record.signals.empty()) {
    out << YAML::Key << "record" << YAML::Value << YAML::BeginMap << YAML::Key << "signals" << YAML::Value << YAML::Flow
        << YAML::BeginSeq;
    for (const auto& s : g.record.signals) out << s.str();
    out << YAML::EndSeq << YAML::Key << "file" << YAML::Value << g.record.file << YAML::EndMap;
  }
  out << YAML::Key << "trace" << YAML::Value << YAML::BeginMap << YAML::Key << "enabled" << YAML::Value
      << (g.trace.enabled ? "true" : "false") << YAML::Key << "directory" << YAML::Value << g.trace.directory
      << YAML::EndMap;
  if (!g.plugins.empty()) {
    out << YAML::Key << "plugins" << YAML::Value << YAML::BeginSeq;
    for (const auto& p : g.plugins) out << p;
    out << YAML::EndSeq;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

namespace {

bool same_coupling(const CouplingSpec& a, const CouplingSpec& b) {
  if (a.method != b.method || a.params.size() != b.params.size()) return false;
  if (a.max_extrapolation != b.max_extrapolation || a.max_tag_lead != b.max_tag_lead) return false;
  for (std::size_t i = 0; i < a.params.size(); ++i) {
    if (a.params[i].name != b.params[i].name || a.params[i].value != b.params[i].value) return false;
  }
  return true;
}

}  // namespace

bool same_graph(const GraphSpec& a, const GraphSpec& b, std::string* difference) {
  auto differ = [&](const std::string& what) {
    if (difference) *difference = what;
    return false;
  };
  if (a.name != b.name) return differ("name");
  if (a.duration != b.duration) return differ("duration");
  if (a.realtime != b.realtime) return differ("realtime");
  if (!same_coupling(a.default_coupling, b.default_coupling)) return differ("default coupling");
  if (a.hosts.size() != b.hosts.size()) return differ("number of hosts");
  for (std::size_t i = 0; i < a.hosts.size(); ++i) {
    if (a.hosts[i].name != b.hosts[i].name || a.hosts[i].domain != b.hosts[i].domain)
      return differ("host " + a.hosts[i].name);
  }
  if (a.dds.discovery_timeout != b.dds.discovery_timeout || a.dds.start_delay != b.dds.start_delay ||
      a.dds.bridge_priority != b.dds.bridge_priority || a.dds.bridge_cpu != b.dds.bridge_cpu ||
      a.dds.max_sequence_gap != b.dds.max_sequence_gap || a.dds.max_clock_offset != b.dds.max_clock_offset) {
    return differ("dds");
  }
  if (a.tasks.size() != b.tasks.size()) return differ("number of tasks");
  for (std::size_t i = 0; i < a.tasks.size(); ++i) {
    const auto &x = a.tasks[i], &y = b.tasks[i];
    const std::string t = "task " + x.name + ": ";
    if (x.name != y.name) return differ(t + "name");
    if (x.period != y.period) return differ(t + "period");
    if (x.cpu != y.cpu || x.priority != y.priority) return differ(t + "cpu/priority");
    if (x.integrator != y.integrator || x.step != y.step || x.overrun != y.overrun) return differ(t + "policies");
    if (x.max_step != y.max_step) return differ(t + "max_step");
    if (x.max_substeps != y.max_substeps) return differ(t + "max_substeps");
    if (x.max_owed != y.max_owed) return differ(t + "max_owed");
    if (x.wait_for_data != y.wait_for_data) return differ(t + "wait_for_data");
    if (x.divergence != y.divergence) return differ(t + "divergence");
    if (x.rate_group != y.rate_group) return differ(t + "rate_group");
    if (x.host != y.host) return differ(t + "host");
    if (x.execution.declared != y.execution.declared || x.execution.nominal != y.execution.nominal ||
        x.execution.spikes.size() != y.execution.spikes.size()) {
      return differ(t + "execution");
    }
    for (std::size_t s = 0; s < x.execution.spikes.size(); ++s) {
      if (x.execution.spikes[s].frame != y.execution.spikes[s].frame ||
          x.execution.spikes[s].time != y.execution.spikes[s].time) {
        return differ(t + "spikes");
      }
    }
  }
  if (a.diagram.blocks.size() != b.diagram.blocks.size()) return differ("number of blocks");
  for (std::size_t i = 0; i < a.diagram.blocks.size(); ++i) {
    const auto &x = a.diagram.blocks[i], &y = b.diagram.blocks[i];
    if (x.name != y.name || x.type != y.type || x.task != y.task) return differ("block " + x.name);
    if (x.params.all() != y.params.all()) return differ("block " + x.name + " parameters");
  }
  if (a.wires.size() != b.wires.size()) return differ("number of wires");
  for (std::size_t i = 0; i < a.wires.size(); ++i) {
    const auto &x = a.wires[i], &y = b.wires[i];
    if (x.wire.from.str() != y.wire.from.str() || x.wire.to.str() != y.wire.to.str())
      return differ("wire " + std::to_string(i + 1));
    if (x.coupling.has_value() != y.coupling.has_value() || (x.coupling && !same_coupling(*x.coupling, *y.coupling))) {
      return differ("wire " + x.wire.from.str() + " coupling");
    }
  }
  if (a.record.file != b.record.file || a.record.signals.size() != b.record.signals.size()) return differ("record");
  for (std::size_t i = 0; i < a.record.signals.size(); ++i) {
    if (a.record.signals[i].str() != b.record.signals[i].str()) return differ("record signals");
  }
  if (a.trace.enabled != b.trace.enabled || a.trace.directory != b.trace.directory) return differ("trace");
  if (a.plugins != b.plugins) return differ("plugins");
  return true;
}

}  // namespace rtcosim::config
