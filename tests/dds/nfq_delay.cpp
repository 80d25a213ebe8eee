// nfq_delay: holds every packet an iptables NFQUEUE rule hands it for a
// random delay, then lets it go: the "2 ms +- 1 ms" of `tc netem delay` for
// kernels built without sch_netem (tests/dds/two_hosts_netns.py).
//
//   nfq_delay QUEUE DELAY_US JITTER_US SEED
//
// Each packet is held DELAY_US + U(-JITTER_US, +JITTER_US) microseconds
// (CLOCK_MONOTONIC, from its arrival in this program), so packets may be
// reordered as netem's jitter reorders them. On SIGTERM/SIGINT it lets the
// held packets go, prints "nfq_delay: held N packets, mean M us, min A us,
// max B us" (the delays drawn) and exits 0. The rule should carry
// --queue-bypass so that traffic flows when this program is not running.
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <queue>
#include <random>
#include <vector>

#include <arpa/inet.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <signal.h>
#include <time.h>

namespace {

volatile sig_atomic_t g_stop = 0;

std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

struct Held {
  std::int64_t release_ns;
  std::uint32_t id;
  bool operator>(const Held& o) const { return release_ns > o.release_ns; }
};

struct State {
  std::priority_queue<Held, std::vector<Held>, std::greater<>> held;
  std::mt19937_64 rng;
  std::uniform_int_distribution<std::int64_t> delay_ns;
  std::uint64_t count = 0;
  double sum_us = 0.0, min_us = 1e300, max_us = 0.0;
};

int on_packet(nfq_q_handle*, nfgenmsg*, nfq_data* nfa, void* data) {
  auto& s = *static_cast<State*>(data);
  const nfqnl_msg_packet_hdr* ph = nfq_get_msg_packet_hdr(nfa);
  if (!ph) return 0;
  const std::int64_t d = s.delay_ns(s.rng);
  s.held.push({now_ns() + d, ntohl(ph->packet_id)});
  const double us = static_cast<double>(d) / 1000.0;
  ++s.count;
  s.sum_us += us;
  s.min_us = std::min(s.min_us, us);
  s.max_us = std::max(s.max_us, us);
  return 0;
}

long parse(const char* text, const char* what) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < 0) {
    std::fprintf(stderr, "nfq_delay: %s '%s' — expected a non-negative integer\n", what, text);
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: nfq_delay QUEUE DELAY_US JITTER_US SEED\n");
    return 2;
  }
  const auto queue = static_cast<std::uint16_t>(parse(argv[1], "QUEUE"));
  const long delay_us = parse(argv[2], "DELAY_US"), jitter_us = parse(argv[3], "JITTER_US");
  if (jitter_us > delay_us) {
    std::fprintf(stderr, "nfq_delay: JITTER_US %ld exceeds DELAY_US %ld — a delay cannot be negative\n", jitter_us,
                 delay_us);
    return 2;
  }
  State state{
      {},
      std::mt19937_64(static_cast<std::uint64_t>(parse(argv[4], "SEED"))),
      std::uniform_int_distribution<std::int64_t>((delay_us - jitter_us) * 1000, (delay_us + jitter_us) * 1000)};
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_stop = 1; };
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  nfq_handle* h = nfq_open();
  if (!h) {
    std::perror("nfq_delay: nfq_open");
    return 1;
  }
  nfq_q_handle* qh = nfq_create_queue(h, queue, &on_packet, &state);
  if (!qh) {
    std::fprintf(stderr, "nfq_delay: cannot bind queue %u (another program holds it?)\n", queue);
    return 1;
  }
  // Only the verdict goes back: the metadata is enough.
  if (nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0) {
    std::perror("nfq_delay: nfq_set_mode");
    return 1;
  }
  const int fd = nfq_fd(h);
  std::printf("nfq_delay: queue %u, delay %ld us +- %ld us\n", queue, delay_us, jitter_us);
  std::fflush(stdout);
  std::vector<char> buf(65536);
  auto release_due = [&](bool all) {
    const std::int64_t t = now_ns();
    while (!state.held.empty() && (all || state.held.top().release_ns <= t)) {
      nfq_set_verdict(qh, state.held.top().id, NF_ACCEPT, 0, nullptr);
      state.held.pop();
    }
  };
  while (!g_stop) {
    int timeout_ms = 100;
    if (!state.held.empty()) {
      const std::int64_t wait = state.held.top().release_ns - now_ns();
      timeout_ms = wait <= 0 ? 0 : static_cast<int>(std::min<std::int64_t>(100, wait / 1000000));
    }
    pollfd p{fd, POLLIN, 0};
    // Millisecond poll granularity: a release is at most about 1 ms late,
    // so the time left is slept precisely when it is short.
    const int rc = poll(&p, 1, timeout_ms);
    if (rc > 0) {
      const ssize_t n = recv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
      if (n > 0) nfq_handle_packet(h, buf.data(), static_cast<int>(n));
    } else if (rc == 0 && !state.held.empty()) {
      const std::int64_t wait = state.held.top().release_ns - now_ns();
      if (wait > 0) {
        timespec ts{0, static_cast<long>(wait)};
        nanosleep(&ts, nullptr);
      }
    } else if (rc < 0 && errno != EINTR) {
      std::perror("nfq_delay: poll");
      break;
    }
    release_due(false);
  }
  release_due(true);
  nfq_destroy_queue(qh);
  nfq_close(h);
  std::printf("nfq_delay: held %llu packets, mean %.0f us, min %.0f us, max %.0f us\n",
              static_cast<unsigned long long>(state.count),
              state.count ? state.sum_us / static_cast<double>(state.count) : 0.0, state.count ? state.min_us : 0.0,
              state.max_us);
  return 0;
}
