// The plant block's live sources: a CSV file followed while a writer appends
// to it, and UDP datagrams good and hostile, with exact counts. Frames run
// on the test's thread at times it chooses (virtual time); the test waits
// for the receiver thread to have handled what was sent before it steps.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numbers>
#include <thread>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io/plant_datagram.hpp"
#include "io/plant_receivers.hpp"
#include "tasks/plant/live_feed.hpp"
#include "tests/support/alloc_counter.hpp"
#include "tests/support/scratch.hpp"
#include "tests/support/udp_port.hpp"
#include "tests/tasks/block_rig.hpp"

namespace rtcosim::tasks {
namespace {

// The live sources' threads and sockets, as a front end installs them.
io::PlantReceivers g_receivers;

using testing::Rig;

constexpr double kOmega = 2.0 * std::numbers::pi * 0.5;

plant::LiveStatus status_of(const std::string& key) {
  for (const auto& s : plant::live_status()) {
    if (s.key == key) return s;
  }
  ADD_FAILURE() << "no live source " << key;
  return {};
}

// Waits (at most 20 s, a fail-safe, never a measured time) until the
// source has handled `n` rows or datagrams.
plant::LiveStatus wait_handled(const std::string& key, std::uint64_t n) {
  for (int i = 0; i < 20000; ++i) {
    const auto s = status_of(key);
    if (s.good + s.malformed + s.ring_full >= n) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return status_of(key);
}

std::string row(double t) {
  char line[128];
  std::snprintf(line, sizeof line, "%.17g,%.17g\n", t, std::sin(kOmega * t));
  return line;
}

TEST(PlantFollow, RowsAppendedByAWriterAreReplayedAndBadOnesCountedWithTheirLine) {
  const auto dir = rtcosim::testing::test_scratch_dir("plant_follow");
  const auto path = (dir / "growing.csv").string();
  { std::ofstream(path) << "time,s\n"; }
  Rig rig({{"p", "plant", {{"file", path}, {"follow", true}}}}, {}, {});
  const std::string key = "csv:" + path;
  // The writer appends 201 rows (dt = 0.01) in pieces, a row split across
  // two writes, and 4 bad lines (lines 52, 103, 154 and 205 of the file).
  std::thread writer([&] {
    std::ofstream out(path, std::ios::app);
    for (int k = 0; k <= 200; ++k) {
      const std::string r = row(0.01 * k);
      out << r.substr(0, r.size() / 2) << std::flush;
      out << r.substr(r.size() / 2) << std::flush;
      if (k % 50 == 49) out << "0.5,not a number\n" << std::flush;
      if (k % 20 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  writer.join();
  const auto s = wait_handled(key, 205);
  EXPECT_EQ(s.good, 201u);
  EXPECT_EQ(s.malformed, 4u);
  EXPECT_EQ(s.last_bad, path + ":205:5: value of 's' 'not a number' — expected a finite number");
  // Linear between rows: within dt^2 w^2 / 8 of the signal.
  const double bound = 0.01 * 0.01 * kOmega * kOmega / 8.0;
  for (long k = 1; k <= 500; ++k) {
    rig.step_at(k - 1, 0.0037);
    EXPECT_NEAR(rig.y("p", "s"), std::sin(kOmega * 0.0037 * static_cast<double>(k)), bound);
  }
  // Now at t = 1.85. A row for 2.5 (after the newest, 2.0: taken, not
  // late), then 1.9 (not after 2.5: out of order), 2.6, and then, after the
  // frames passed 2.7, a row for 2.65 (late) and 3.0.
  {
    std::ofstream out(path, std::ios::app);
    out << row(2.5) << row(1.9) << row(2.6);
  }
  wait_handled(key, 208);
  for (long k = 500; k < 760; ++k) rig.step_at(k, 0.0037);      // to t = 2.812
  EXPECT_NEAR(rig.y("p", "s"), std::sin(kOmega * 2.6), 1e-15);  // the newest row holds
  {
    std::ofstream out(path, std::ios::app);
    out << row(2.65) << row(3.0);
  }
  wait_handled(key, 210);
  rig.step_at(760, 0.0037);
  const auto end = status_of(key);
  EXPECT_EQ(end.good, 206u);
  EXPECT_EQ(end.out_of_order, 1u);
  EXPECT_EQ(end.late, 1u);
  EXPECT_EQ(end.ring_full, 0u);
}

TEST(PlantFollow, SteadyStateFramesAllocateNothingWhileRowsArrive) {
  const auto dir = rtcosim::testing::test_scratch_dir("plant_follow");
  const auto path = (dir / "growing.csv").string();
  { std::ofstream(path) << "time,s\n"; }
  Rig rig({{"p", "plant", {{"file", path}, {"follow", true}, {"history", 256.0}}}}, {}, {});
  rig.step_at(0, 0.001);
  std::thread writer([&] {
    std::ofstream out(path, std::ios::app);
    for (int k = 0; k < 2000; ++k) out << row(0.001 * k) << std::flush;
  });
  rtcosim::testing::AllocationScope scope;
  for (long k = 1; k <= 3000; ++k) rig.step_at(k, 0.001);
  const auto allocations = scope.count();
  writer.join();
  EXPECT_EQ(allocations, 0u);
}

struct Sender {
  explicit Sender(int port) : fd(::socket(AF_INET, SOCK_DGRAM, 0)) {
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<std::uint16_t>(port));
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  }
  ~Sender() { ::close(fd); }
  void bytes(const unsigned char* b, std::size_t n) const {
    ASSERT_EQ(::sendto(fd, b, n, 0, reinterpret_cast<const sockaddr*>(&to), sizeof to), static_cast<ssize_t>(n));
  }
  void values(std::uint64_t seq, double t, std::vector<double> v) const {
    unsigned char b[io::kMaxDatagram];
    bytes(b, io::encode_datagram(seq, t, v, b));
  }
  int fd;
  sockaddr_in to{};
};

// A rig with one udp plant block `p` listening on `port`, and its source's key.
std::unique_ptr<Rig> udp_rig(int port, const std::string& signals, BlockParams extra = {}) {
  extra.set("source", std::string("udp"));
  extra.set("port", static_cast<double>(port));
  extra.set("signals", signals);
  return std::make_unique<Rig>(std::vector<testing::RigBlock>{{"p", "plant", extra}}, std::vector<WireSpec>{},
                               std::vector<testing::RigInput>{});
}

std::string udp_key(int port) { return "udp:127.0.0.1:" + std::to_string(port); }

TEST(PlantUdp, GoodAndHostileDatagramsGiveExactCounts) {
  const int port = rtcosim::testing::free_udp_port();
  auto made = udp_rig(port, "a, b");
  Rig& rig = *made;
  const std::string key = udp_key(port);
  Sender send(port);
  send.values(0, 0.0, {1.0, 10.0});
  send.values(1, 1.0, {3.0, 30.0});
  send.values(5, 2.0, {5.0, 50.0});  // 3 datagrams lost before it
  unsigned char b[io::kMaxDatagram + 64] = {};
  const std::size_t good = io::encode_datagram(6, 3.0, std::vector<double>{7.0, 70.0}, b);
  send.bytes(b, 10);                     // short
  send.bytes(b, io::kMaxDatagram + 64);  // long
  send.bytes(b, good + 8);               // one value too many for its count
  b[0] ^= 0xff;
  send.bytes(b, good);  // wrong magic
  b[0] ^= 0xff;
  send.values(7, 3.0, {std::nan(""), 1.0});                             // NaN
  send.values(8, 3.0, {1.0, 2.0, 3.0});                                 // wrong count
  send.values(9, std::numeric_limits<double>::infinity(), {1.0, 2.0});  // infinite time
  const auto s = wait_handled(key, 10);
  EXPECT_EQ(s.good, 3u);
  EXPECT_EQ(s.malformed, 7u);
  EXPECT_EQ(s.sequence_gaps, 3u);
  EXPECT_EQ(s.last_bad.substr(0, 10), "127.0.0.1:");
  EXPECT_NE(s.last_bad.find("time tag not finite"), std::string::npos) << s.last_bad;
  // The frames interpolate between the time tags.
  rig.step_at(0, 0.5);
  EXPECT_DOUBLE_EQ(rig.y("p", "a"), 2.0);
  EXPECT_DOUBLE_EQ(rig.y("p", "b"), 20.0);
  EXPECT_DOUBLE_EQ(rig.dy("p", "a"), 2.0);
  rig.step_at(3, 0.5);  // t = 2: the newest
  EXPECT_DOUBLE_EQ(rig.y("p", "a"), 5.0);
  rig.step_at(5, 0.5);  // t = 3: it holds
  EXPECT_DOUBLE_EQ(rig.y("p", "a"), 5.0);
  EXPECT_EQ(rig.dy("p", "a"), 0.0);
}

TEST(PlantUdp, AFloodFillsTheRingAndIsCountedNeverWaitedOn) {
  const int port = rtcosim::testing::free_udp_port();
  auto made = udp_rig(port, "a", {{"ring", 64.0}});
  Rig& rig = *made;
  const std::string key = udp_key(port);
  Sender send(port);
  // 500 datagrams in bursts of 50 (the socket's own buffer would drop a
  // burst of 500 before the receiver sees it, and that is not ours to count).
  for (int k = 0; k < 500; ++k) {
    send.values(static_cast<std::uint64_t>(k), 0.01 * k, {static_cast<double>(k)});
    if (k % 50 == 49) wait_handled(key, static_cast<std::uint64_t>(k + 1));
  }
  auto s = wait_handled(key, 500);
  EXPECT_EQ(s.good, 64u);
  EXPECT_EQ(s.ring_full, 436u);
  rig.step_at(0, 1.0);  // takes the 64: rows 0..63, t = 0 .. 0.63; at t = 1 the newest holds
  EXPECT_DOUBLE_EQ(rig.y("p", "a"), 63.0);
  send.values(500, 5.0, {500.0});
  s = wait_handled(key, 501);
  EXPECT_EQ(s.good, 65u);
}

TEST(PlantUdp, ASenderNotAllowedIsRefusedWithItsAddress) {
  const int port = rtcosim::testing::free_udp_port();
  auto made = udp_rig(port, "a", {{"allow", std::string("192.0.2.7")}});
  const std::string key = udp_key(port);
  Sender send(port);
  send.values(0, 0.0, {1.0});
  const auto s = wait_handled(key, 1);
  EXPECT_EQ(s.good, 0u);
  EXPECT_EQ(s.malformed, 1u);
  EXPECT_NE(s.last_bad.find("127.0.0.1:"), std::string::npos);
  EXPECT_NE(s.last_bad.find("sender not in 'allow'"), std::string::npos);
}

// What a frame shows of an on-change (`events`) signal of a live source, and
// of a row whose time tag equals the newest one's: shared by the followed
// CSV and the UDP tests below. Rows: t = 0 {x 0, on 0}, t = 1 {x 10, on
// held}, t = 1 again {x 99, on 7} (not after the newest: dropped and counted
// out of order), t = 2 {x 20, on 1}. Frames of 0.5 from t = 0.
void expect_events_held_and_equal_tags_refused(Rig& rig, const std::string& key) {
  Partition& p = rig.partition();
  const auto on = p.find_output({"p", "on"});
  EXPECT_TRUE(p.output_may_jump(on));
  // x linear between rows, `on` held (no slope), a jump only where a row
  // was passed (the first frame's: its rows replace the 0 shown before any).
  const double x[] = {5.0, 10.0, 15.0, 20.0, 20.0};
  const double on_value[] = {0.0, 0.0, 0.0, 1.0, 1.0};
  const bool jumped[] = {true, true, false, true, false};
  for (long k = 0; k < 5; ++k) {
    rig.step_at(k, 0.5);
    const double t = 0.5 * static_cast<double>(k + 1);
    EXPECT_EQ(rig.y("p", "x"), x[k]) << "t = " << t;
    EXPECT_EQ(rig.y("p", "on"), on_value[k]) << "t = " << t;
    EXPECT_EQ(rig.dy("p", "on"), 0.0) << "t = " << t;
    EXPECT_EQ(p.output_jumped(on), jumped[k]) << "t = " << t;
  }
  const auto s = status_of(key);
  EXPECT_EQ(s.out_of_order, 1u);
  EXPECT_EQ(s.late, 0u);
}

TEST(PlantFollow, OnChangeSignalsHoldAndJumpAndAnEqualTagIsOutOfOrder) {
  const auto dir = rtcosim::testing::test_scratch_dir("plant_follow");
  const auto path = (dir / "events.csv").string();
  { std::ofstream(path) << "time,x,on\n"; }
  Rig rig({{"p", "plant", {{"file", path}, {"follow", true}, {"events", std::string("on")}}}}, {}, {});
  const std::string key = "csv:" + path;
  { std::ofstream(path, std::ios::app) << "0,0,0\n1,10,\n1,99,7\n2,20,1\n" << std::flush; }
  const auto s = wait_handled(key, 4);
  ASSERT_EQ(s.good, 4u);
  expect_events_held_and_equal_tags_refused(rig, key);
}

TEST(PlantUdp, OnChangeSignalsHoldAndJumpAndAnEqualTagIsOutOfOrder) {
  const int port = rtcosim::testing::free_udp_port();
  auto made = udp_rig(port, "x, on", {{"events", std::string("on")}});
  const std::string key = udp_key(port);
  Sender send(port);
  // A datagram carries every signal: `on` repeats its value where the CSV
  // leaves the cell empty.
  send.values(0, 0.0, {0.0, 0.0});
  send.values(1, 1.0, {10.0, 0.0});
  send.values(2, 1.0, {99.0, 7.0});
  send.values(3, 2.0, {20.0, 1.0});
  const auto s = wait_handled(key, 4);
  ASSERT_EQ(s.good, 4u);
  EXPECT_EQ(s.sequence_gaps, 0u);
  expect_events_held_and_equal_tags_refused(*made, key);
}

// Datagrams each valid on its own, hostile together (issue 27): values of
// opposite sign near the largest double, whose slope overflows; a tag of
// 1e300, which would put every later row out of order; a sequence number of
// 2^64 - 1. Each is dropped or counted as what it is, and what the frames
// show stays finite.
TEST(PlantUdp, ValidButHostileDatagramsAreDroppedCountedAndNeverPoisonTheRows) {
  const int port = rtcosim::testing::free_udp_port();
  auto made = udp_rig(port, "a");
  Rig& rig = *made;
  const std::string key = udp_key(port);
  Sender send(port);
  send.values(0, 0.0, {1e308});
  send.values(1, 1.0, {-1e308});                                          // slope -2e308 per second: overflows, dropped
  send.values(2, 1e300, {0.0});                                           // far beyond max_tag_lead (10 s): dropped
  send.values(3, 2.0, {1e308});                                           // taken: after the newest kept row (t = 0)
  send.values(std::numeric_limits<std::uint64_t>::max(), 3.0, {-5e307});  // a reset, not 2^64 lost
  const auto s = wait_handled(key, 5);
  EXPECT_EQ(s.good, 5u);
  EXPECT_EQ(s.sequence_gaps, 0u);
  EXPECT_EQ(s.sequence_resets, 1u);
  const double a[] = {1e308, 1e308, 1e308, 1e308, 2.5e307, -5e307, -5e307};
  const double da[] = {0.0, 0.0, 0.0, -1.5e308, -1.5e308, 0.0, 0.0};  // at t = 2 the segment to t = 3 begins
  for (long k = 0; k < 7; ++k) {
    rig.step_at(k, 0.5);
    EXPECT_EQ(rig.y("p", "a"), a[k]) << "t = " << 0.5 * static_cast<double>(k + 1);
    EXPECT_EQ(rig.dy("p", "a"), da[k]) << "t = " << 0.5 * static_cast<double>(k + 1);
  }
  const auto end = status_of(key);
  EXPECT_EQ(end.overflowing, 1u);
  EXPECT_EQ(end.too_far_ahead, 1u);
  EXPECT_EQ(end.out_of_order, 0u);
  EXPECT_FALSE(rig.partition().failed());
}

// `ctl stop` and `start` reset the graph: the new run starts with an empty
// history, so that its rows (tagged from 0 again) are neither hidden behind
// the last run's rows nor counted out of order.
TEST(PlantUdp, ANewRunStartsWithAnEmptyHistory) {
  const int port = rtcosim::testing::free_udp_port();
  auto made = udp_rig(port, "a");
  Rig& rig = *made;
  const std::string key = udp_key(port);
  Sender send(port);
  send.values(0, 0.0, {1.0});
  send.values(1, 5.0, {2.0});
  wait_handled(key, 2);
  rig.step_at(0, 1.0);
  EXPECT_DOUBLE_EQ(rig.y("p", "a"), 1.2);
  rig.partition().reset(0.0);
  rig.step_at(0, 0.5);
  EXPECT_EQ(rig.y("p", "a"), 0.0);  // no row of this run yet
  send.values(2, 0.5, {7.0});
  send.values(3, 1.5, {9.0});
  wait_handled(key, 4);
  rig.step_at(1, 0.5);
  EXPECT_DOUBLE_EQ(rig.y("p", "a"), 8.0);
  EXPECT_EQ(status_of(key).out_of_order, 0u);
}

TEST(PlantUdp, WrongSettingsAreRefusedAtSetUp) {
  EXPECT_NE(testing::creation_error("plant", {{"source", std::string("udp")}, {"signals", std::string("a")}})
                .find("'port' is required"),
            std::string::npos);
  EXPECT_NE(
      testing::creation_error("plant", {{"source", std::string("udp")}, {"port", 40000.0}}).find("'signals' names 0"),
      std::string::npos);
  EXPECT_NE(testing::creation_error("plant", {{"source", std::string("tcp")}}).find("expected csv or udp"),
            std::string::npos);
}

}  // namespace
}  // namespace rtcosim::tasks

namespace rtcosim::tasks {
namespace {

TEST(PlantUdp, OneSimulationsSignalsReachAnotherThroughUdpOut) {
  const int port = rtcosim::testing::free_udp_port();
  auto made = udp_rig(port, "y");
  Rig& plant_side = *made;
  Rig sender({{"out", "udp_out", {{"port", static_cast<double>(port)}, {"signals", std::string("a")}}}}, {},
             {{"src", {{"out", "a"}}, [](double t) { return std::sin(kOmega * t); }}});
  for (long k = 0; k < 100; ++k) sender.step_at(k, 0.01);
  const auto s = wait_handled(udp_key(port), 100);
  EXPECT_EQ(s.good, 100u);
  EXPECT_EQ(s.malformed, 0u);
  EXPECT_EQ(s.sequence_gaps, 0u);
  // Each datagram carries the sender's value at its step's start, bit for bit.
  for (long k = 1; k < 100; ++k) {
    plant_side.step_at(k - 1, 0.01);
    EXPECT_EQ(plant_side.y("p", "y"), std::sin(kOmega * (static_cast<double>(k) * 0.01))) << k;
  }
  const auto out = status_of("udp_out:127.0.0.1:" + std::to_string(port));
  EXPECT_EQ(out.good, 100u);
  EXPECT_EQ(out.ring_full, 0u);
  EXPECT_EQ(out.unsent, 0u);
  EXPECT_EQ(out.malformed, 0u);
}

// Nobody listens: the kernel answers with ICMP port unreachable, and a later
// send fails with ECONNREFUSED. That is our send failing, not bad input:
// counted unsent with its reason, never malformed.
TEST(PlantUdp, SendsNobodyReceivesAreCountedUnsentNotMalformed) {
  const int port = rtcosim::testing::free_udp_port();
  Rig sender({{"out", "udp_out", {{"port", static_cast<double>(port)}, {"signals", std::string("a")}}}}, {},
             {{"src", {{"out", "a"}}, [](double t) { return t; }}});
  const std::string key = "udp_out:127.0.0.1:" + std::to_string(port);
  plant::LiveStatus out;
  // Each step offers one datagram; the sender thread sends them as they come.
  for (long k = 0; k < 2000 && out.unsent == 0; ++k) {
    sender.step_at(k, 0.01);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    out = status_of(key);
  }
  EXPECT_GT(out.unsent, 0u);
  EXPECT_EQ(out.malformed, 0u);
  EXPECT_NE(out.last_bad.find("Connection refused"), std::string::npos) << out.last_bad;
}

}  // namespace
}  // namespace rtcosim::tasks
