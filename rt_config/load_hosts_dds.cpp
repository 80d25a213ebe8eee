// Reads 'hosts' and 'dds' and checks the tasks against the hosts (and the hosts against 'dds: security').
#include <cstdint>
#include <map>
#include <string_view>
#include <utility>

#include "base/text.hpp"
#include "rt_config/load_context.hpp"

namespace rtcosim::config::detail {

void GraphLoader::read_hosts(const yaml::Node& node) {
  if (!node) return;
  if (!node.IsSequence() || node.size() == 0) {
    in_.error(node, "'hosts' is " + Reader::kind(node) + " — expected a non-empty list of {name, domain}");
    return;
  }
  for (const auto& h : node) {
    if (!in_.mapping(h, "a host", {"name", "domain", "certificate", "private_key", "permissions"})) continue;
    HostSpec host;
    host.where = location_of(h);
    auto name = in_.text(h, "name", "a host", true);
    if (name) {
      host.name = *name;
      if (graph_.find_host(*name))
        in_.error(h["name"], "a second host is named '" + *name + "' — host names must be unique");
    }
    // DDS domain ids above 232 make port numbers overflow (DDSI-RTPS 9.6.1.1).
    if (auto d = in_.integer(h, "domain", "host '" + host.name + "'", 0, 232)) host.domain = static_cast<int>(*d);
    for (auto [key, field] : {std::pair{"certificate", &host.certificate}, std::pair{"private_key", &host.private_key},
                              std::pair{"permissions", &host.permissions}}) {
      if (auto f = in_.text(h, key, "host '" + host.name + "'", false)) {
        *field = graph_file(*f, location_of(h[key]), "host '" + host.name + "': '" + key + "'").value_or("");
      }
    }
    graph_.hosts.push_back(std::move(host));
  }
  for (const auto& h : graph_.hosts) {
    if (h.domain == graph_.hosts.front().domain) continue;
    in_.error(h.where, "host '" + h.name + "' is in DDS domain " + std::to_string(h.domain) + " and host '" +
                           graph_.hosts.front().name + "' in domain " + std::to_string(graph_.hosts.front().domain) +
                           " — participants see each other's topics only within one domain; give every host the same "
                           "domain");
  }
}

void GraphLoader::read_dds(const yaml::Node& node) {
  if (!node) return;
  const std::string what = "'dds'";
  if (!in_.mapping(node, what,
                   {"discovery_timeout", "start_delay", "bridge_priority", "bridge_cpu", "max_sequence_gap",
                    "max_clock_offset", "security"})) {
    return;
  }
  graph_.dds.where = location_of(node);
  if (const auto sec = node["security"]) {
    const std::string w = "'dds': 'security'";
    if (in_.mapping(sec, w, {"identity_ca", "permissions_ca", "governance"})) {
      auto& s = graph_.dds.security;
      s.where = location_of(sec);
      for (auto [key, field] : {std::pair{"identity_ca", &s.identity_ca}, std::pair{"governance", &s.governance},
                                std::pair{"permissions_ca", &s.permissions_ca}}) {
        if (auto f = in_.text(sec, key, w, std::string(key) != "permissions_ca")) {
          *field = graph_file(*f, location_of(sec[key]), w + ": '" + key + "'").value_or("");
        }
      }
      if (s.permissions_ca.empty()) s.permissions_ca = s.identity_ca;
    }
  }
  if (auto t = in_.duration(node, "discovery_timeout", what, false)) {
    if (!(*t > 0.0) || *t > 3600.0) {
      in_.error(node["discovery_timeout"], "'dds': 'discovery_timeout' = " + node["discovery_timeout"].Scalar() +
                                               " — expected a duration above 0 and at most 1h");
    }
    graph_.dds.discovery_timeout = *t;
  }
  if (auto t = in_.duration(node, "start_delay", what, false)) {
    if (!(*t >= 0.01) || *t > 60.0) {
      in_.error(node["start_delay"], "'dds': 'start_delay' = " + node["start_delay"].Scalar() +
                                         " — expected a duration from 10ms to 60s (every host must hear the start "
                                         "time before it)");
    }
    graph_.dds.start_delay = *t;
  }
  if (auto p = in_.integer(node, "bridge_priority", what, 1, 99)) graph_.dds.bridge_priority = static_cast<int>(*p);
  if (auto c = in_.integer(node, "bridge_cpu", what, 0, 4095)) graph_.dds.bridge_cpu = static_cast<int>(*c);
  if (auto g = in_.integer(node, "max_sequence_gap", what, 1, 1'000'000'000)) {
    graph_.dds.max_sequence_gap = static_cast<std::uint64_t>(*g);
  }
  if (auto t = in_.duration(node, "max_clock_offset", what, false)) {
    if (!(*t > 0.0) || *t > 60.0) {
      in_.error(node["max_clock_offset"], "'dds': 'max_clock_offset' = " + node["max_clock_offset"].Scalar() +
                                              " — expected a duration above 0 and at most 60s");
    }
    graph_.dds.max_clock_offset = *t;
  }
}

// With 'dds: security' every host names its certificate, key and
// permissions; without it none does (they would be ignored).
void GraphLoader::check_security() {
  const bool on = graph_.dds.security.enabled();
  for (const auto& h : graph_.hosts) {
    const bool any = !h.certificate.empty() || !h.private_key.empty() || !h.permissions.empty();
    if (on && (h.certificate.empty() || h.private_key.empty() || h.permissions.empty())) {
      in_.error(h.where, "host '" + h.name +
                             "' needs 'certificate', 'private_key' and 'permissions' with 'dds: security' — its "
                             "identity and what it may publish (docs/dds.md, Security)");
    } else if (on && h.domain > 230) {
      in_.error(h.where, "host '" + h.name + "' is in DDS domain " + std::to_string(h.domain) +
                             " — with 'dds: security' expected 0..230 (Cyclone DDS reads no governance beyond 230)");
    } else if (!on && any) {
      in_.error(h.where, "host '" + h.name +
                             "' names security files, but 'dds' has no 'security' — expected 'dds: {security: "
                             "{identity_ca: ..., governance: ...}}' or no certificate");
    }
  }
}

// Every task on a declared host when there are hosts; rate groups within
// one host; the bridge below every task's priority on its CPU.
void GraphLoader::check_hosts() {
  check_security();
  std::vector<std::string> host_names;
  for (const auto& h : graph_.hosts) host_names.push_back(h.name);
  if (graph_.hosts.empty()) {
    for (std::size_t i = 0; i < graph_.tasks.size(); ++i) {
      const TaskSpec& t = graph_.tasks[i];
      if (t.host.empty()) continue;
      in_.error(host_locations_[i], "task '" + t.name + "' runs on host '" + t.host +
                                        "', but the file has no 'hosts:' — expected a list "
                                        "'hosts: [{name: " +
                                        t.host + ", domain: 0}, ...]' or no 'host'");
    }
    if (graph_.dds.where.line > 0) {
      in_.warning(graph_.dds.where,
                  "'dds' is set, but the file has no 'hosts:' — it applies only to graphs across hosts");
    }
    return;
  }
  std::map<std::string, std::size_t> tasks_on;
  for (std::size_t i = 0; i < graph_.tasks.size(); ++i) {
    const TaskSpec& t = graph_.tasks[i];
    if (t.host.empty()) {
      in_.error(t.where, "task '" + t.name +
                             "' has no 'host' — with 'hosts:' every task names the host it runs on "
                             "(one of: " +
                             join(host_names) + ")");
      continue;
    }
    if (!graph_.find_host(t.host)) {
      std::string message = "task '" + t.name + "' runs on host '" + t.host + "', which is not in 'hosts:'";
      if (const auto guess = base::closest_match(t.host, host_names); !guess.empty()) {
        message += " (did you mean '" + guess + "'?)";
      }
      in_.error(host_locations_[i], message + " — expected one of: " + join(host_names));
      continue;
    }
    ++tasks_on[t.host];
  }
  for (const auto& h : graph_.hosts) {
    if (!tasks_on.count(h.name)) {
      in_.warning(h.where, "host '" + h.name + "' runs no task — every host still takes part in the start");
    }
  }
  std::map<std::string, const TaskSpec*> group_host;
  for (const auto& t : graph_.tasks) {
    if (t.rate_group.empty()) continue;
    const auto [it, fresh] = group_host.emplace(t.rate_group, &t);
    if (!fresh && it->second->host != t.host) {
      in_.error(t.where, "task '" + t.name + "' on host '" + t.host + "' is in rate group '" + t.rate_group +
                             "' with task '" + it->second->name + "' on host '" + it->second->host +
                             "' — a rate group runs in one thread, on one host");
    }
  }
  if (graph_.dds.bridge_priority > 0) {
    for (const auto& t : graph_.tasks) {
      if (t.priority <= 0 || t.priority > graph_.dds.bridge_priority) continue;
      in_.warning(graph_.dds.where, "'dds': 'bridge_priority' " + std::to_string(graph_.dds.bridge_priority) +
                                        " is not below task '" + t.name + "' (" + std::to_string(t.priority) +
                                        ") — the bridge may delay that task's frames; expected a priority below "
                                        "every task's");
      break;
    }
  }
  // Which links leave their host.
  std::map<std::string_view, std::string_view> host_of_block;
  for (const auto& b : graph_.diagram.blocks) {
    const TaskSpec* t = graph_.find_task(b.task);
    if (t) host_of_block.emplace(b.name, t->host);
  }
  for (auto& w : graph_.wires) {
    if (!w.crosses_tasks) continue;
    const auto from = host_of_block.find(w.wire.from.block);
    const auto to = host_of_block.find(w.wire.to.block);
    w.crosses_hosts = from != host_of_block.end() && to != host_of_block.end() && from->second != to->second;
  }
}

}  // namespace rtcosim::config::detail
