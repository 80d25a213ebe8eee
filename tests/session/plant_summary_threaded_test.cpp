// The live plant sources' counters as `rtcosim run` and the daemon show them.
#include <chrono>
#include <thread>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io/plant_datagram.hpp"
#include "io/plant_receivers.hpp"
#include "session/report/plant_summary.hpp"
#include "tasks/plant/live_feed.hpp"
#include "tests/support/udp_port.hpp"

namespace rtcosim::tools {
namespace {

// The live sources' threads and sockets, as a front end installs them.
io::PlantReceivers g_receivers;

TEST(PlantSummary, TheCountersOfALiveSourceAppearInTheTableAndTheJson) {
  EXPECT_EQ(session::plant_lines(), "");  // no source: no table
  EXPECT_EQ(session::plant_json(), "[]");
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(static_cast<std::uint16_t>(rtcosim::testing::free_udp_port()));
  tasks::plant::UdpOptions o;
  o.port = ntohs(sa.sin_port);
  o.signals = {"a"};
  const auto source = tasks::plant::acquire(o);
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  unsigned char b[io::kMaxDatagram];
  const double v = 1.0;
  const std::size_t n = io::encode_datagram(0, 0.0, std::span<const double>(&v, 1), b);
  ::sendto(fd, b, n, 0, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  ::sendto(fd, b, 3, 0, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  sockaddr_in me{};
  socklen_t len = sizeof me;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&me), &len);
  for (int i = 0; i < 20000 && source->status().good + source->status().malformed < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::close(fd);
  const std::string key = "udp:127.0.0.1:" + std::to_string(o.port);
  const std::string bad =
      "127.0.0.1:" + std::to_string(ntohs(me.sin_port)) + ": 3 bytes — shorter than the 24-byte header";
  EXPECT_EQ(session::plant_json(),
            "[{\"source\":\"" + key +
                "\",\"good\":1,\"malformed\":1,\"ring_full\":0,\"late\":0,\"out_of_order\":0,"
                "\"sequence_gaps\":0,\"sequence_resets\":0,\"too_far_ahead\":0,\"overflowing\":0,\"unsent\":0,"
                "\"last_bad\":\"" +
                bad + "\",\"taken\":0,\"age_median_s\":null}]");
  const std::string table = session::plant_lines();
  EXPECT_EQ(table.substr(0, 15), "plant sources:\n");
  EXPECT_NE(table.find(key +
                       "     1          1          0     0             0         0           0              0          "
                       "  0       0      0        -  " +
                       bad),
            std::string::npos)
      << table;
}

}  // namespace
}  // namespace rtcosim::tools
