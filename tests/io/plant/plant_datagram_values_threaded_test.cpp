// Plant datagrams at their boundaries (issue 45, item 9; docs/plant.md):
// every non-finite number in every field that holds one is refused (NaN,
// +inf and -inf, as a value in any position and as the time tag), the
// largest finite ones are taken bit for bit; and a sender's first datagram
// sets where its numbering starts: a first sequence number N > 0 counts no
// gap and no reset (nothing was lost before the first), only a later jump
// does. The receiver runs its own thread on a loopback socket; the test
// waits (a fail-safe bound, never a measured time) until it has handled
// what was sent.
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io/plant_datagram.hpp"
#include "io/plant_receivers.hpp"
#include "tests/support/udp_port.hpp"

namespace rtcosim::io {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<unsigned char> datagram(std::uint64_t seq, double t, const std::vector<double>& v) {
  std::vector<unsigned char> b(kMaxDatagram);
  b.resize(encode_datagram(seq, t, v, b.data()));
  return b;
}

std::string decode(const std::vector<unsigned char>& b, std::size_t expected, Datagram* out = nullptr) {
  Datagram d;
  const std::string why = decode_datagram(b, expected, d);
  if (out) *out = d;
  return why;
}

// Every value position of 1, 3 and 64 values, each non-finite kind: refused
// naming the position.
TEST(PlantDatagramValues, ANonFiniteValueInAnyPositionIsRefused) {
  const double bad[] = {kInf, -kInf, std::numeric_limits<double>::quiet_NaN(),
                        -std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::signaling_NaN()};
  for (const std::size_t count : {std::size_t{1}, std::size_t{3}, kMaxDatagramValues}) {
    for (std::size_t at = 0; at < count; ++at) {
      if (count == kMaxDatagramValues && at != 0 && at != 31 && at != count - 1) continue;
      for (const double b : bad) {
        std::vector<double> v(count, 1.5);
        v[at] = b;
        EXPECT_EQ(decode(datagram(7, 2.0, v), count),
                  "value " + std::to_string(at) + " not finite — expected finite values")
            << count << " values, " << b << " at " << at;
      }
    }
  }
}

TEST(PlantDatagramValues, ANonFiniteTimeTagIsRefused) {
  for (const double t : {kInf, -kInf, std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_EQ(decode(datagram(0, t, {1.0, 2.0}), 2), "time tag not finite — expected a finite time") << t;
  }
}

// The extremes that are finite pass, bit for bit.
TEST(PlantDatagramValues, TheLargestAndSmallestFiniteNumbersAreTaken) {
  const double lim[] = {std::numeric_limits<double>::max(), -std::numeric_limits<double>::max(),
                        std::numeric_limits<double>::denorm_min(), -0.0, std::numeric_limits<double>::min()};
  for (const double x : lim) {
    Datagram d;
    ASSERT_EQ(decode(datagram(std::numeric_limits<std::uint64_t>::max(), x, {x, 0.0, x}), 3, &d), "") << x;
    EXPECT_EQ(std::memcmp(&d.time, &x, sizeof x), 0) << x;
    EXPECT_EQ(std::memcmp(&d.values[0], &x, sizeof x), 0) << x;
    EXPECT_EQ(std::memcmp(&d.values[2], &x, sizeof x), 0) << x;
    EXPECT_EQ(d.sequence, std::numeric_limits<std::uint64_t>::max());
    EXPECT_EQ(d.count, 3u);
  }
}

// The receiver's side.

PlantReceivers g_receivers;

struct Sender {
  explicit Sender(int port) : fd(::socket(AF_INET, SOCK_DGRAM, 0)) {
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<std::uint16_t>(port));
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  }
  ~Sender() { ::close(fd); }
  void values(std::uint64_t seq, double t, const std::vector<double>& v) const {
    const auto b = datagram(seq, t, v);
    ASSERT_EQ(::sendto(fd, b.data(), b.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to),
              static_cast<ssize_t>(b.size()));
  }
  int fd;
  sockaddr_in to{};
};

struct Listening {
  int port = rtcosim::testing::free_udp_port();
  std::shared_ptr<tasks::plant::LiveSource> source;
  explicit Listening(std::size_t signals) {
    tasks::plant::UdpOptions o;
    o.port = port;
    for (std::size_t i = 0; i < signals; ++i) o.signals.push_back("s" + std::to_string(i));
    source = g_receivers.open(o);
  }
  // Waits until the receiver has handled `n` datagrams (a fail-safe of
  // 20 s: a lost datagram fails the counts below, it does not hang).
  tasks::plant::LiveStatus handled(std::uint64_t n) const {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (;;) {
      const auto s = source->status();
      if (s.good + s.malformed + s.ring_full >= n || std::chrono::steady_clock::now() > give_up) return s;
      std::this_thread::yield();
    }
  }
};

TEST(PlantDatagramValues, AnInfiniteValueReceivedIsCountedMalformedAndNeverReachesTheRows) {
  Listening l(2);
  Sender send(l.port);
  send.values(0, 0.0, {1.0, 2.0});
  send.values(1, 1.0, {kInf, 2.0});
  send.values(2, 2.0, {1.0, -kInf});
  send.values(3, 3.0, {3.0, 4.0});
  const auto s = l.handled(4);
  EXPECT_EQ(s.good, 2u);
  EXPECT_EQ(s.malformed, 2u);
  EXPECT_NE(s.last_bad.find("value 1 not finite"), std::string::npos) << s.last_bad;
  // The refused ones are no losses either: 0, 1, 2, 3 arrived.
  EXPECT_EQ(s.sequence_gaps, 2u) << "the two refused datagrams are missing between 0 and 3";
}

// A sender that starts at N > 0 (it ran before, or numbers from a clock):
// no gap, no reset; the numbering it starts is checked from there on.
TEST(PlantDatagramValues, AFirstSequenceNumberAboveZeroCountsNoGapAndNoReset) {
  const std::uint64_t firsts[] = {1, 5, 1000, kMaxSequenceGap + 1, std::uint64_t{1} << 40};
  for (const std::uint64_t first : firsts) {
    Listening l(1);
    Sender send(l.port);
    send.values(first, 0.0, {1.0});
    send.values(first + 1, 1.0, {2.0});
    auto s = l.handled(2);
    EXPECT_EQ(s.good, 2u) << first;
    EXPECT_EQ(s.sequence_gaps, 0u) << "first sequence number " << first;
    EXPECT_EQ(s.sequence_resets, 0u) << "first sequence number " << first;
    // Two lost after it are two gaps.
    send.values(first + 4, 2.0, {3.0});
    s = l.handled(3);
    EXPECT_EQ(s.sequence_gaps, 2u) << first;
    EXPECT_EQ(s.sequence_resets, 0u) << first;
  }
}

}  // namespace
}  // namespace rtcosim::io
