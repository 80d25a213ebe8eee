// A plant block in a task-graph file: its recording is found relative to
// the file, its signals are ports, and a wrong recording is reported at the
// 'file' parameter with the recording's own line and column.
#include <fstream>

#include <gtest/gtest.h>

#include "rt_config/loader.hpp"
#include "tests/support/scratch.hpp"

namespace rtcosim::config {
namespace {

std::string graph(const std::string& wire) {
  return "tasks:\n  - {name: t, period: 10ms, integrator: rk4, step: fixed}\n"
         "blocks:\n"
         "  - {name: meas, type: plant, task: t, params: {file: data/rec.csv, events: on}}\n"
         "  - {name: g, type: gain, task: t, params: {gain: 1}}\n"
         "wires:\n  - " +
         wire + "\n";
}

LoadResult load(const std::filesystem::path& dir, const std::string& csv, const std::string& wire) {
  std::filesystem::create_directories(dir / "data");
  std::ofstream(dir / "data" / "rec.csv") << csv;
  std::ofstream(dir / "g.yaml") << graph(wire);
  return load_graph_file((dir / "g.yaml").string());
}

TEST(PlantConfig, TheRecordingIsRelativeToTheGraphFileAndItsSignalsArePorts) {
  const auto dir = rtcosim::testing::test_scratch_dir("plant_config");
  const auto r = load(dir, "time,speed,on\n0,1,0\n1,2,\n", "{from: meas.speed, to: g.u}");
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.str();
  EXPECT_TRUE(r.ok());
}

TEST(PlantConfig, AWrongRecordingIsReportedAtTheFileParameter) {
  const auto dir = rtcosim::testing::test_scratch_dir("plant_config");
  const auto r = load(dir, "time,speed,on\n0,1,0\n0.5,x,\n", "{from: meas.speed, to: g.u}");
  ASSERT_FALSE(r.ok());
  ASSERT_GE(r.diagnostics.size(), 1u);
  const auto& d = r.diagnostics[0];  // in file order: the block's line comes first
  EXPECT_EQ(d.line, 4);
  EXPECT_EQ(d.column, 49);  // 'file' in the plant block's params
  EXPECT_NE(d.message.find("data/rec.csv:3:5: value of 'speed' 'x' — expected a finite number"), std::string::npos)
      << d.message;
}

TEST(PlantConfig, AWireToASignalTheRecordingLacksIsAnError) {
  const auto dir = rtcosim::testing::test_scratch_dir("plant_config");
  const auto r = load(dir, "time,speed,on\n0,1,0\n", "{from: meas.sped, to: g.u}");
  ASSERT_FALSE(r.ok());
  bool named = false;
  for (const auto& d : r.diagnostics) named = named || d.message.find("sped") != std::string::npos;
  EXPECT_TRUE(named);
}

}  // namespace
}  // namespace rtcosim::config
