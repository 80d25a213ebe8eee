// Round trip of one 16-signal data block between two processes, three ways
// (bench/dds_roundtrip.sh runs them):
//   rtcosim ping|pong  through rtcosim's remote links: ring -> bridge
//                      thread -> DDS -> bridge thread -> ring, and back;
//                      the ping and pong threads sleep until a block
//                      arrives (a wake word on their incoming link), so
//                      the figure is the links' own, not a task's phase
//   udp ping|pong      a raw UDP datagram of the same payload
//   handoff            no network: two threads of one process wake each
//                      other through a WakeWord, as a producer wakes the
//                      bridge and the bridge a consumer; its round trip is
//                      two thread hand-offs, the unit of what rtcosim's
//                      remote link adds to a DDS round trip (four of them:
//                      a sending thread and a consumer on each side)
// Prints p50 / p99 / max of the round trips in microseconds, one line:
//   roundtrip KIND n=N p50_us=.. p99_us=.. max_us=..
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/wake_word.hpp"
#include "coupling/registry.hpp"
#include "io/dds_bridge.hpp"
#include "rt_config/loader.hpp"
#include "runtime/graph.hpp"
#include "tasks/block_registry.hpp"

namespace {

constexpr std::size_t kSignals = 16;
// The payload rtcosim's sample carries: header, values, derivatives, flags.
constexpr std::size_t kUdpBytes = 8 * 4 + 1 + kSignals * (8 + 8 + 1);

std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void nap(long ns) {
  timespec ts{0, ns};
  nanosleep(&ts, nullptr);
}

void report(const char* kind, std::vector<double> us) {
  std::sort(us.begin(), us.end());
  auto at = [&](double p) {
    return us[std::min(us.size() - 1, static_cast<std::size_t>(p * static_cast<double>(us.size())))];
  };
  std::printf("roundtrip %s n=%zu p50_us=%.1f p99_us=%.1f max_us=%.1f\n", kind, us.size(), at(0.5), at(0.99),
              us.back());
}

// With RTCOSIM_DDS_SECURITY_DIR set (scripts/dds-security-docs.sh DIR a b),
// both hosts join with DDS Security and those documents.
std::string graph_text(const std::string& domain) {
  std::string values;
  for (std::size_t i = 0; i < kSignals; ++i) values += (i ? ", " : "") + std::to_string(i + 1) + ".0";
  const char* dir = std::getenv("RTCOSIM_DDS_SECURITY_DIR");
  const std::string sec = dir ? std::string(dir) : std::string();
  const auto files = [&](const std::string& host) {
    return sec.empty() ? std::string()
                       : ", certificate: " + sec + "/" + host + "/cert.pem, private_key: " + sec + "/" + host +
                             "/key.pem, permissions: " + sec + "/permissions.p7s";
  };
  return "name: dds_roundtrip\nrealtime: off\nhosts:\n  - {name: a, domain: " + domain + files("a") +
         "}\n  - {name: b, domain: " + domain + files("b") + "}\ndds: {discovery_timeout: 20s, start_delay: 200ms" +
         (sec.empty() ? std::string()
                      : ", security: {identity_ca: " + sec + "/ca.pem, governance: " + sec + "/governance.p7s}") +
         "}\n"
         "tasks:\n  - {name: ping, host: a, period: 1ms}\n  - {name: echo, host: b, period: 1ms}\n"
         "blocks:\n  - {name: c, type: constant, task: ping, params: {value: [" +
         values +
         "]}}\n"
         "  - {name: g, type: gain, task: echo, params: {gain: 1.0, width: 16}}\n"
         "  - {name: h, type: gain, task: ping, params: {gain: 1.0, width: 16}}\n"
         "wires:\n  - {from: c.y, to: g.u}\n  - {from: g.y, to: h.u}\n";
}

int rtcosim_side(bool ping, int count, const std::string& domain) {
  const auto loaded = rtcosim::config::load_graph_text(graph_text(domain), "dds_roundtrip.yaml");
  for (const auto& d : loaded.diagnostics) std::cerr << d.str() << '\n';
  if (!loaded.ok()) return 1;
  const auto blocks = rtcosim::tasks::BlockRegistry::with_builtins();
  const auto methods = rtcosim::coupling::MethodRegistry::with_builtins();
  auto graph = rtcosim::runtime::Graph::build(loaded.graph, blocks, methods);
  graph->set_host(ping ? "a" : "b");
  rtcosim::io::RemoteState remote(*graph);
  rtcosim::io::DdsBridge bridge(*graph, remote);
  (void)bridge.coordinate_start(20.0, 0.2);
  graph->reset();
  rtcosim::coupling::Link* out = nullptr;
  rtcosim::coupling::Link* in = nullptr;
  for (auto* l : graph->remote_links()) (l->producer_local ? out : in) = l->link;
  // The initial blocks of the reset are not ours.
  in->drain_to([](const rtcosim::coupling::DataBlock&) noexcept {});
  rtcosim::base::WakeWord arrived;
  in->set_wake(&arrived);
  bridge.start(false);
  rtcosim::coupling::DataBlock block(kSignals);
  for (std::size_t i = 0; i < kSignals; ++i) block.set(i, static_cast<double>(i), 0.5, true);
  if (!ping) {
    // Echo every block until the pinger's last one.
    for (std::uint64_t last = 0; last < static_cast<std::uint64_t>(count) + 1;) {
      const std::uint32_t seen = arrived.value();
      in->drain_to([&](const rtcosim::coupling::DataBlock& b) noexcept {
        block.assign_from(b);
        last = b.sequence;
        (void)out->publish(block);
      });
      arrived.wait(seen, 100'000'000);
    }
    nap(200'000'000);  // the last echo on its way
    bridge.stop();
    in->set_wake(nullptr);
    return 0;
  }
  std::vector<double> us;
  nap(300'000'000);  // both bridges running
  for (int k = 0; k < count + 1; ++k) {
    block.sequence = static_cast<std::uint64_t>(k) + 2;  // after the initial block's 1
    block.tag = 0.001 * k;
    const std::int64_t t0 = now_ns();
    (void)out->publish(block);
    bool back = false;
    while (!back && now_ns() - t0 < 1'000'000'000) {
      const std::uint32_t seen = arrived.value();
      in->drain_to(
          [&](const rtcosim::coupling::DataBlock& b) noexcept { back = back || b.sequence == block.sequence; });
      if (!back) arrived.wait(seen, 100'000'000);
    }
    if (k > 0 && back) us.push_back(static_cast<double>(now_ns() - t0) * 1e-3);  // the first warms up
    nap(1'000'000);
  }
  bridge.stop();
  in->set_wake(nullptr);
  report("rtcosim", us);
  return 0;
}

int udp_side(bool ping, int count, const std::string& peer, int port) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in self{}, other{};
  self.sin_family = other.sin_family = AF_INET;
  self.sin_addr.s_addr = htonl(INADDR_ANY);
  self.sin_port = htons(static_cast<std::uint16_t>(ping ? port + 1 : port));
  other.sin_port = htons(static_cast<std::uint16_t>(ping ? port : port + 1));
  inet_pton(AF_INET, peer.c_str(), &other.sin_addr);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&self), sizeof self) != 0) {
    std::perror("udp");
    return 1;
  }
  timeval tv{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[kUdpBytes] = {};
  auto* to = reinterpret_cast<sockaddr*>(&other);
  if (!ping) {
    for (int k = 0; k < count + 1; ++k) {
      const ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n > 0) (void)sendto(fd, buf, static_cast<std::size_t>(n), 0, to, sizeof other);
    }
    close(fd);
    return 0;
  }
  nap(300'000'000);  // the ponger is listening
  std::vector<double> us;
  for (int k = 0; k < count + 1; ++k) {
    std::memcpy(buf, &k, sizeof k);
    const std::int64_t t0 = now_ns();
    (void)sendto(fd, buf, sizeof buf, 0, to, sizeof other);
    if (recv(fd, buf, sizeof buf, 0) > 0 && k > 0) us.push_back(static_cast<double>(now_ns() - t0) * 1e-3);
    nap(1'000'000);
  }
  close(fd);
  report("udp", us);
  return 0;
}

int handoff_side(int count) {
  rtcosim::base::WakeWord to_b, to_a;
  std::atomic<int> turn{0};
  std::atomic<bool> done{false};
  std::thread b([&] {
    int answered = 0;
    while (!done.load()) {
      const std::uint32_t seen = to_b.value();
      if (turn.load() == 2 * answered + 1) {
        turn.store(2 * answered + 2);
        ++answered;
        to_a.notify();
        continue;
      }
      to_b.wait(seen, 100'000'000);
    }
  });
  std::vector<double> us;
  for (int k = 0; k < count + 1; ++k) {
    const std::int64_t t0 = now_ns();
    turn.store(2 * k + 1);
    to_b.notify();
    for (;;) {
      const std::uint32_t seen = to_a.value();
      if (turn.load() == 2 * k + 2) break;
      to_a.wait(seen, 100'000'000);
    }
    if (k > 0) us.push_back(static_cast<double>(now_ns() - t0) * 1e-3);
    nap(1'000'000);
  }
  done.store(true);
  to_b.notify();
  b.join();
  report("handoff", us);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  (void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);  // naps as short as asked
  if (args.size() == 2 && args[0] == "handoff") return handoff_side(std::stoi(args[1]));
  if (args.size() < 3 || (args[1] != "ping" && args[1] != "pong")) {
    std::cerr << "usage: dds_roundtrip rtcosim ping|pong COUNT [DOMAIN]\n"
                 "       dds_roundtrip udp ping|pong COUNT PEER_ADDRESS [PORT]\n"
                 "       dds_roundtrip handoff COUNT\n";
    return 2;
  }
  const int count = std::stoi(args[2]);
  if (args[0] == "rtcosim") return rtcosim_side(args[1] == "ping", count, args.size() > 3 ? args[3] : "0");
  if (args[0] == "udp" && args.size() > 3) {
    return udp_side(args[1] == "ping", count, args[3], args.size() > 4 ? std::stoi(args[4]) : 47300);
  }
  return 2;
}
