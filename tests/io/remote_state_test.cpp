// The counters of a remote link as the DDS bridge keeps them
// (io/remote_state.hpp), and the state a run without a bridge reports.
#include "io/remote_state.hpp"

#include <cstdint>

#include <gtest/gtest.h>

#include "tests/support/graphs.hpp"

namespace rtcosim::io {
namespace {

// Sequence numbers come over the network: one far off, either way, is a
// reset, never billions of lost samples.
TEST(RemoteLinkStats, SequenceJumpsBeyondTheWindowAreResetsNotLosses) {
  RemoteLinkStats s;
  s.last_sequence.store(1);
  for (std::uint64_t n : {2, 3, 5, 9}) s.account_sequence(n, 100);  // 4, 6, 7, 8 missing
  EXPECT_EQ(s.lost.load(), 4u);
  s.account_sequence(8, 100);  // late, within the window: nothing
  EXPECT_EQ(s.lost.load(), 4u);
  EXPECT_EQ(s.last_sequence.load(), 9u);
  s.account_sequence(std::uint64_t{1} << 62, 100);  // hostile
  s.account_sequence(10, 100);                      // the producer goes on
  s.account_sequence(12, 100);
  EXPECT_EQ(s.lost.load(), 5u);
  EXPECT_EQ(s.sequence_resets.load(), 2u);
  s.account_sequence(112, 100);  // exactly 100 further: 99 lost, not a reset
  EXPECT_EQ(s.lost.load(), 5u + 99u);
  EXPECT_EQ(s.sequence_resets.load(), 2u);
  s.account_sequence(2, 100);  // a restarted producer
  s.account_sequence(3, 100);
  EXPECT_EQ(s.sequence_resets.load(), 3u);
  EXPECT_EQ(s.lost.load(), 104u);
}

// What a host's bridge will fill: one entry per link with one end on this
// host (the topic as the file names it), one clock per other host; a graph
// without a host has neither, and a reset zeroes the counters only.
TEST(RemoteState, OneEntryPerLinkLeavingThisHostAndOneClockPerOtherHost) {
  const config::GraphSpec spec = rtcosim::testing::checked(
      config::load_graph_file(std::string(RTCOSIM_EXAMPLES_DIR) + "/flight_control_two_hosts.yaml"));
  auto graph = rtcosim::testing::build_graph(spec);
  {
    const RemoteState none(*graph);
    EXPECT_TRUE(none.links().empty());
    EXPECT_TRUE(none.host_clocks().empty());
  }
  graph->set_host("plant-pc");
  RemoteState state(*graph);
  ASSERT_EQ(state.links().size(), 2u);  // airframe -> controller, controller -> actuator
  std::size_t produced_here = 0;
  for (const auto& e : state.links()) {
    EXPECT_EQ(e->topic, config::dds_topic_name(spec, e->link->source, e->link->consumer));
    EXPECT_EQ(e->topic.rfind("rtcosim_", 0), 0u) << e->topic;
    EXPECT_EQ(state.find(e->link), e.get());
    produced_here += e->link->producer_local ? 1 : 0;
  }
  EXPECT_EQ(produced_here, 1u);
  for (const auto& l : graph->links()) {
    if (!l->remote) {
      EXPECT_EQ(state.find(l.get()), nullptr) << l->source << " -> " << l->consumer;
    }
  }
  ASSERT_EQ(state.host_clocks().size(), 1u);
  EXPECT_EQ(state.host_clocks()[0]->host, "hil-pc");

  auto& stats = state.links()[0]->stats;
  stats.received.store(7);
  stats.latency.add(0.001);
  state.host_clocks()[0]->exchanges.store(3);
  state.reset();
  EXPECT_EQ(stats.received.load(), 0u);
  EXPECT_EQ(stats.latency.count(), 0u);
  EXPECT_EQ(state.host_clocks()[0]->exchanges.load(), 3u);  // an estimate outlives a run
}

}  // namespace
}  // namespace rtcosim::io
