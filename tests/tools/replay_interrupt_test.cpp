// `rtcosim replay` through the binary, on the work a log may cost
// (docs/replay.md, "What a log may claim"): a small log that claims days is
// refused before the replay, naming the file, the claim, the frames and the
// bound; the reference integration `--plot` asks for stops on SIGINT with
// what it integrated drawn, a message and exit code 130.
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "base/sha256.hpp"
#include "runtime/replay_log.hpp"
#include "tests/support/cli_process.hpp"
#include "tests/support/files.hpp"
#include "tests/support/graphs.hpp"
#include "tests/support/replay_logs.hpp"
#include "tests/support/scratch.hpp"

namespace rtcosim::tools {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using rtcosim::testing::CliResult;
using rtcosim::testing::run_rtcosim;
using rtcosim::testing::said;
using rtcosim::testing::slurp;

// 80 kB of log of the solo graph: 2 500 frames whose cycles lie 40 s apart
// (10 s per reading, which the reading check lets through), 27 hours
// claimed. Before the bound, `--plot` integrated the reference over those
// 27 hours (2·10^8 RK4 steps, gigabytes).
TEST(ReplayInterrupt, ASmallLogClaimingDaysIsRefusedBeforeTheReplay) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay_interrupt");
  const fs::path graph_path = dir / "solo.yaml";
  const std::string solo = rtcosim::testing::solo_graph_text();
  std::ofstream(graph_path) << solo;
  auto graph =
      rtcosim::testing::build_graph(rtcosim::testing::checked(config::load_graph_text(solo, graph_path.string())));
  const fs::path log_path = rtcosim::testing::write_replay_log(
      *graph, dir / "days.rpl", rtcosim::testing::overrunning_cycles(2500, 40'000'000'000),
      runtime::ReplayLog::Header{graph_path.string(), base::sha256_hex(slurp(graph_path)), 0, "real time", "", {}});
  EXPECT_LT(fs::file_size(log_path), 90'000u);
  const CliResult r =
      run_rtcosim({"replay", log_path.string(), graph_path.string(), "--plot", "days.svg"}, dir, {.limit = 20s});
  EXPECT_EQ(r.code, 1) << said(r);
  EXPECT_NE(r.err.find(log_path.string()), std::string::npos) << said(r);
  EXPECT_NE(r.err.find("claim a run of 100000.0 s"), std::string::npos) << said(r);
  EXPECT_NE(r.err.find("2500 frames"), std::string::npos) << said(r);
  EXPECT_NE(r.err.find("at most 250.0 s"), std::string::npos) << said(r);
  EXPECT_FALSE(fs::exists(dir / "days.svg"));
  fs::remove_all(dir);
}

// A real-time run of 0.3 s, logged, replayed with --plot and a reference
// step of 10 ns (3·10^7 steps: long enough to be interrupted). SIGINT once
// the integration has begun stops it: the plot is written with the
// reference as far as it got, the message says where it stopped, and the
// exit code is 128 + SIGINT.
TEST(ReplayInterrupt, SigintStopsTheReferenceAndKeepsThePlot) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay_interrupt");
  std::ofstream(dir / "solo.yaml") << rtcosim::testing::solo_graph_text();
  const CliResult run = run_rtcosim({"run", "--duration", "0.3s", "--replay-log", "solo.rpl", "solo.yaml"}, dir);
  ASSERT_EQ(run.code, 0) << said(run);
  const CliResult r =
      run_rtcosim({"replay", "solo.rpl", "solo.yaml", "--plot", "solo.svg", "--reference-step", "10ns"}, dir,
                  {.limit = 20s, .signal = SIGINT, .when_stdout_holds = "integrating the reference"});
  EXPECT_TRUE(r.signalled) << said(r);
  EXPECT_EQ(r.code, 128 + SIGINT) << said(r);
  EXPECT_NE(r.err.find("the reference integration stopped (SIGINT) at t = "), std::string::npos) << said(r);
  EXPECT_NE(r.out.find("plot written to solo.svg"), std::string::npos) << said(r);
  const std::string svg = slurp(dir / "solo.svg");
  EXPECT_NE(svg.find("reference (RK4)"), std::string::npos);
  EXPECT_NE(svg.find("wave.y"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rtcosim::tools
