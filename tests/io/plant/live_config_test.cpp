// The live pair of examples/live/ as the loader sees it: refused where a
// program has not installed the plant receivers, at the block's place in
// the file, and loaded once it has.
#include <string>

#include <gtest/gtest.h>

#include "io/plant_receivers.hpp"
#include "rt_config/loader.hpp"

namespace rtcosim::io {
namespace {

// The live pair lives in examples/live/, away from the examples every
// loader test loads in parallel processes: loading the receiver binds its
// UDP port, and two processes cannot both hold it.
const char* const kPair[] = {"plant_sender.yaml", "plant_receiver.yaml"};

std::string path_of(const char* name) { return std::string(RTCOSIM_EXAMPLES_DIR) + "/live/" + name; }

TEST(LiveConfig, WithoutReceiversTheLiveBlocksAreRefusedAtTheirPlace) {
  ASSERT_EQ(tasks::plant::installed_receivers(), nullptr);
  const auto sender = config::load_graph_file(path_of("plant_sender.yaml"));
  ASSERT_FALSE(sender.ok());
  ASSERT_EQ(sender.diagnostics.size(), 1u);
  EXPECT_NE(sender.diagnostics[0].str().find("plant_sender.yaml:15:55: error: block 'send' (udp_out): live sources "
                                             "need the plant receivers of io/"),
            std::string::npos)
      << sender.diagnostics[0].str();
  const auto receiver = config::load_graph_file(path_of("plant_receiver.yaml"));
  ASSERT_FALSE(receiver.ok());
  EXPECT_NE(receiver.diagnostics[0].str().find("plant_receiver.yaml:19:27: error: block 'plant' (plant)"),
            std::string::npos)
      << receiver.diagnostics[0].str();
}

TEST(LiveConfig, TheLivePairLoadsWithTheReceiversInstalled) {
  PlantReceivers receivers;
  for (const char* name : kPair) {
    const auto r = config::load_graph_file(path_of(name));
    for (const auto& d : r.diagnostics) ADD_FAILURE() << d.str();
    EXPECT_TRUE(r.ok()) << name;
  }
  // The receiver's graph is gone, so is its source: the registry holds none.
  EXPECT_TRUE(receivers.status().empty());
}

TEST(LiveConfig, OneReceiversPerProcess) {
  PlantReceivers first;
  EXPECT_THROW(PlantReceivers second, std::logic_error);
  EXPECT_EQ(tasks::plant::installed_receivers(), &first);
}

}  // namespace
}  // namespace rtcosim::io
