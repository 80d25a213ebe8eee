// `hosts:` and a task's `host:`: which links leave their host, and every
// mistake a multi-host file can hold reported at its place.
#include "rt_config/hosts.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "rt_config/loader.hpp"
#include "rt_config/writer.hpp"

namespace rtcosim::config {
namespace {

// Two tasks, one link each way, on the hosts given in `task_hosts`.
std::string two_host_graph(const std::string& hosts, const std::string& host_a, const std::string& host_b,
                           const std::string& extra = "") {
  return "name: pair\n" + hosts + extra +
         "tasks:\n"
         "  - {name: a, period: 10ms" +
         host_a +
         "}\n"
         "  - {name: b, period: 10ms" +
         host_b +
         "}\n"
         "blocks:\n"
         "  - {name: src, type: sine, task: a, params: {amplitude: 1.0, frequency: 1.0}}\n"
         "  - {name: g, type: gain, task: b, params: {gain: 2.0}}\n"
         "  - {name: h, type: gain, task: a, params: {gain: 1.0}}\n"
         "wires:\n"
         "  - {from: src.y, to: g.u}\n"
         "  - {from: g.y, to: h.u}\n";
}

const std::string kHosts = "hosts:\n  - {name: plant-pc, domain: 3}\n  - {name: hil-pc, domain: 3}\n";

const Diagnostic* find(const LoadResult& r, const std::string& text) {
  const auto it = std::find_if(r.diagnostics.begin(), r.diagnostics.end(),
                               [&](const Diagnostic& d) { return d.message.find(text) != std::string::npos; });
  return it == r.diagnostics.end() ? nullptr : &*it;
}

std::string all_of(const LoadResult& r) {
  std::string out;
  for (const auto& d : r.diagnostics) out += "\n  " + d.str();
  return out;
}

TEST(Hosts, LinksBetweenHostsAreRemoteAndHostsRoundTrip) {
  const auto r = load_graph_text(two_host_graph(kHosts, ", host: plant-pc", ", host: hil-pc"), "pair.yaml");
  ASSERT_TRUE(r.ok()) << all_of(r);
  ASSERT_EQ(r.graph.hosts.size(), 2u);
  EXPECT_EQ(r.graph.hosts[1].name, "hil-pc");
  EXPECT_EQ(r.graph.hosts[1].domain, 3);
  EXPECT_EQ(r.graph.tasks[0].host, "plant-pc");
  ASSERT_EQ(r.graph.wires.size(), 2u);
  EXPECT_TRUE(r.graph.wires[0].crosses_hosts);
  EXPECT_TRUE(r.graph.wires[1].crosses_hosts);
  const auto again = load_graph_text(write_graph(r.graph), "again.yaml");
  ASSERT_TRUE(again.ok()) << all_of(again);
  std::string difference;
  EXPECT_TRUE(same_graph(r.graph, again.graph, &difference)) << difference;
}

TEST(Hosts, TasksOnOneHostHaveLocalLinks) {
  const auto r = load_graph_text(two_host_graph(kHosts, ", host: hil-pc", ", host: hil-pc"), "pair.yaml");
  ASSERT_TRUE(r.ok()) << all_of(r);
  EXPECT_FALSE(r.graph.wires[0].crosses_hosts);
  EXPECT_FALSE(r.graph.wires[1].crosses_hosts);
  // plant-pc runs nothing: said, not an error.
  const Diagnostic* d = find(r, "host 'plant-pc' runs no task");
  ASSERT_NE(d, nullptr) << all_of(r);
  EXPECT_EQ(d->severity, Diagnostic::Severity::kWarning);
  EXPECT_EQ(d->line, 3);
}

TEST(Hosts, UnknownHostIsReportedWithDidYouMean) {
  const auto r = load_graph_text(two_host_graph(kHosts, ", host: plant-pc", ", host: hil_pc"), "pair.yaml");
  const Diagnostic* d = find(r, "task 'b' runs on host 'hil_pc', which is not in 'hosts:' (did you mean 'hil-pc'?)");
  ASSERT_NE(d, nullptr) << all_of(r);
  EXPECT_EQ(d->severity, Diagnostic::Severity::kError);
  EXPECT_EQ(d->line, 7);
  EXPECT_EQ(d->column, 35);
}

TEST(Hosts, TaskWithoutHostWhenHostsExist) {
  const auto r = load_graph_text(two_host_graph(kHosts, ", host: plant-pc", ""), "pair.yaml");
  const Diagnostic* d = find(r,
                             "task 'b' has no 'host' — with 'hosts:' every task names the host it runs on "
                             "(one of: plant-pc, hil-pc)");
  ASSERT_NE(d, nullptr) << all_of(r);
  EXPECT_EQ(d->line, 7);
}

TEST(Hosts, HostWithoutHostsList) {
  const auto r = load_graph_text(two_host_graph("", ", host: plant-pc", ""), "pair.yaml");
  const Diagnostic* d = find(r, "task 'a' runs on host 'plant-pc', but the file has no 'hosts:'");
  ASSERT_NE(d, nullptr) << all_of(r);
  EXPECT_EQ(d->line, 3);
}

TEST(Hosts, DuplicateHostsDomainsAndRateGroupsAcrossHosts) {
  const auto dup =
      load_graph_text(two_host_graph("hosts:\n  - {name: x}\n  - {name: x}\n", ", host: x", ", host: x"), "pair.yaml");
  EXPECT_NE(find(dup, "a second host is named 'x'"), nullptr) << all_of(dup);
  const auto domains = load_graph_text(
      two_host_graph("hosts:\n  - {name: x, domain: 0}\n  - {name: y, domain: 1}\n", ", host: x", ", host: y"),
      "pair.yaml");
  const Diagnostic* d = find(domains, "host 'y' is in DDS domain 1 and host 'x' in domain 0");
  ASSERT_NE(d, nullptr) << all_of(domains);
  EXPECT_EQ(d->line, 4);
  const auto range =
      load_graph_text(two_host_graph("hosts:\n  - {name: x, domain: 233}\n", ", host: x", ", host: x"), "pair.yaml");
  EXPECT_EQ(count(range.diagnostics, Diagnostic::Severity::kError), 1u) << all_of(range);
  const auto group = load_graph_text(
      two_host_graph(kHosts, ", host: plant-pc, rate_group: g", ", host: hil-pc, rate_group: g"), "pair.yaml");
  EXPECT_NE(find(group, "a rate group runs in one thread, on one host"), nullptr) << all_of(group);
}

TEST(Hosts, SameCpuAndPriorityOnTwoHostsIsNoConflict) {
  const auto r = load_graph_text(
      two_host_graph(kHosts, ", host: plant-pc, cpu: 0, priority: 80", ", host: hil-pc, cpu: 0, priority: 80"),
      "pair.yaml");
  EXPECT_TRUE(r.ok()) << all_of(r);
  const auto one = load_graph_text(
      two_host_graph(kHosts, ", host: hil-pc, cpu: 0, priority: 80", ", host: hil-pc, cpu: 0, priority: 80"),
      "pair.yaml");
  EXPECT_NE(find(one, "share CPU 0 and priority 80"), nullptr) << all_of(one);
}

TEST(Hosts, DdsSection) {
  const auto r = load_graph_text(
      two_host_graph(kHosts, ", host: plant-pc, priority: 80", ", host: hil-pc, priority: 70",
                     "dds: {discovery_timeout: 2s, start_delay: 250ms, bridge_priority: 75, bridge_cpu: 1, "
                     "max_sequence_gap: 500, max_clock_offset: 250us}\n"),
      "pair.yaml");
  EXPECT_EQ(r.graph.dds.max_sequence_gap, 500u);
  EXPECT_DOUBLE_EQ(r.graph.dds.max_clock_offset, 250e-6);
  EXPECT_DOUBLE_EQ(r.graph.dds.discovery_timeout, 2.0);
  EXPECT_DOUBLE_EQ(r.graph.dds.start_delay, 0.25);
  EXPECT_EQ(r.graph.dds.bridge_priority, 75);
  EXPECT_EQ(r.graph.dds.bridge_cpu, 1);
  // 75 is not below task b's 70.
  EXPECT_NE(find(r, "'bridge_priority' 75 is not below task 'b' (70)"), nullptr) << all_of(r);
  const auto bad = load_graph_text(two_host_graph(kHosts, ", host: plant-pc", ", host: hil-pc",
                                                  "dds: {discovery_timeout: 0s, start_delay: 1ms, max_sequence_gap: 0, "
                                                  "max_clock_offset: 0s}\n"),
                                   "pair.yaml");
  EXPECT_EQ(count(bad.diagnostics, Diagnostic::Severity::kError), 4u) << all_of(bad);
}

// `dds: security`: paths relative to the file, the permissions CA by
// default the identity CA, and every host with its three files; without it,
// a host's security files are a mistake; with it, domains stop at 230.
TEST(Hosts, SecuritySection) {
  const std::string secure_hosts =
      "hosts:\n  - {name: plant-pc, domain: 3, certificate: p/cert.pem, private_key: p/key.pem, permissions: "
      "perm.p7s}\n"
      "  - {name: hil-pc, domain: 3, certificate: /etc/h/cert.pem, private_key: /etc/h/key.pem, permissions: "
      "perm.p7s}\n";
  const auto r = load_graph_text(two_host_graph(secure_hosts, ", host: plant-pc", ", host: hil-pc",
                                                "dds: {security: {identity_ca: ca.pem, governance: gov.p7s}}\n"),
                                 "/srv/graphs/pair.yaml");
  EXPECT_TRUE(r.ok()) << all_of(r);
  EXPECT_EQ(r.graph.dds.security.identity_ca, "/srv/graphs/ca.pem");
  EXPECT_EQ(r.graph.dds.security.permissions_ca, "/srv/graphs/ca.pem");
  EXPECT_EQ(r.graph.dds.security.governance, "/srv/graphs/gov.p7s");
  ASSERT_EQ(r.graph.hosts.size(), 2u);
  EXPECT_EQ(r.graph.hosts[0].certificate, "/srv/graphs/p/cert.pem");
  EXPECT_EQ(r.graph.hosts[1].private_key, "/etc/h/key.pem");
  EXPECT_EQ(r.graph.hosts[1].permissions, "/srv/graphs/perm.p7s");

  const auto missing = load_graph_text(two_host_graph(kHosts, ", host: plant-pc", ", host: hil-pc",
                                                      "dds: {security: {identity_ca: ca.pem, governance: gov.p7s}}\n"),
                                       "pair.yaml");
  EXPECT_NE(find(missing, "host 'plant-pc' needs 'certificate', 'private_key' and 'permissions' with 'dds: security'"),
            nullptr)
      << all_of(missing);
  EXPECT_EQ(count(missing.diagnostics, Diagnostic::Severity::kError), 2u) << all_of(missing);
  const auto stray = load_graph_text(two_host_graph(secure_hosts, ", host: plant-pc", ", host: hil-pc"), "pair.yaml");
  EXPECT_NE(find(stray, "host 'plant-pc' names security files, but 'dds' has no 'security'"), nullptr) << all_of(stray);
  std::string far = secure_hosts;
  for (auto at = far.find("domain: 3"); at != std::string::npos; at = far.find("domain: 3"))
    far.replace(at, 9, "domain: 231");
  const auto high = load_graph_text(two_host_graph(far, ", host: plant-pc", ", host: hil-pc",
                                                   "dds: {security: {identity_ca: ca.pem, governance: gov.p7s}}\n"),
                                    "pair.yaml");
  EXPECT_NE(find(high, "is in DDS domain 231 — with 'dds: security' expected 0..230"), nullptr) << all_of(high);
  const auto no_ca = load_graph_text(
      two_host_graph(secure_hosts, ", host: plant-pc", ", host: hil-pc", "dds: {security: {governance: gov.p7s}}\n"),
      "pair.yaml");
  EXPECT_NE(find(no_ca, "identity_ca"), nullptr) << all_of(no_ca);
  // Where files are confined (rtcosimd's reload), the documents are too:
  // a key named outside the allowed directories is refused at its place.
  LoadOptions confined;
  confined.file_roots = std::vector<std::string>{"/srv/graphs"};
  const auto outside = load_graph_text(two_host_graph(secure_hosts, ", host: plant-pc", ", host: hil-pc",
                                                      "dds: {security: {identity_ca: ca.pem, governance: gov.p7s}}\n"),
                                       "/srv/graphs/pair.yaml", confined);
  EXPECT_NE(find(outside,
                 "host 'hil-pc': 'private_key' names /etc/h/key.pem, which is outside the directories files "
                 "may be read from here (/srv/graphs)"),
            nullptr)
      << all_of(outside);
}

TEST(Hosts, TopicNamesAndTextHash) {
  GraphSpec g;
  g.name = "flight-control";
  EXPECT_EQ(dds_topic_name(g, "controller_gain.y", "actuator"), "rtcosim_flight_control_controller_gain__y__actuator");
  // FNV-1a 64 reference values.
  EXPECT_EQ(graph_text_hash(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(graph_text_hash("a"), 0xaf63dc4c8601ec8cull);
  const std::string text = two_host_graph(kHosts, ", host: plant-pc", ", host: hil-pc");
  EXPECT_EQ(load_graph_text(text, "x.yaml").graph.text_hash, graph_text_hash(text));
  EXPECT_NE(load_graph_text(text + "# edited\n", "x.yaml").graph.text_hash, graph_text_hash(text));
}

}  // namespace
}  // namespace rtcosim::config
