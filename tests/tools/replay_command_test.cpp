// `rtcosim run --replay-log` and `rtcosim replay` through the binary: a real
// run (SCHED_FIFO as root) logged and replayed gives its recording and frame
// table back byte for byte, its statistics too, overruns and dropped blocks
// included; the usage errors exit 2 and say what to do.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/support/cli_process.hpp"
#include "tests/support/files.hpp"
#include "tests/support/scratch.hpp"

namespace rtcosim::tools {
namespace {

namespace fs = std::filesystem;
using rtcosim::testing::CliResult;
using rtcosim::testing::run_rtcosim;
using rtcosim::testing::said;
using rtcosim::testing::slurp;

const std::string kExamples = RTCOSIM_EXAMPLES_DIR;

// The tasks and links of a --json summary, without the thread placement (a
// replay's threads are its own: unpinned, normal priority). No std::regex:
// GCC 12 warns falsely inside <regex> under ASan, and warnings are errors.
std::string statistics(const std::string& json) {
  std::string stats = json.substr(0, json.find(",\"signals\""));
  for (std::size_t at = stats.find("\"cpu\":"); at != std::string::npos; at = stats.find("\"cpu\":", at)) {
    const std::size_t priority = stats.find("\"priority\":", at);
    const std::size_t end = priority == std::string::npos ? std::string::npos : stats.find(',', priority);
    if (end == std::string::npos) break;
    stats.erase(at, end + 1 - at);
  }
  return stats;
}

// The number after `"key":` in the JSON object of the task named `task`.
std::uint64_t task_figure(const std::string& json, const std::string& task, const std::string& key) {
  const std::size_t at = json.find("\"name\":\"" + task + "\"");
  const std::size_t value = at == std::string::npos ? at : json.find("\"" + key + "\":", at);
  return value == std::string::npos ? 0 : std::stoull(json.substr(value + key.size() + 3));
}

// The RMS and max columns of `signal`'s row in the table that follows
// `heading` in `out`.
std::pair<std::string, std::string> table_row(const std::string& out, const std::string& heading,
                                              const std::string& signal) {
  const std::size_t table = out.find(heading);
  const std::size_t row = table == std::string::npos ? table : out.find("\n  " + signal + " ", table);
  if (row == std::string::npos) return {};
  std::istringstream fields(out.substr(row + 3 + signal.size()));
  std::string rms, max;
  fields >> rms >> max;
  return {rms, max};
}

// A run of `graph` for 1 s with a replay log, then its replay: recording,
// frame table and statistics the same. Returns the run's --json summary.
std::string run_and_replay(const fs::path& dir, const fs::path& graph) {
  const CliResult run = run_rtcosim({"run", "--duration", "1s", "--record", "run.csv", "--frames", "run_frames.csv",
                                     "--json", "run.json", "--replay-log", "run.rpl", graph.string()},
                                    dir);
  EXPECT_EQ(run.code, 0) << said(run);
  EXPECT_NE(run.out.find("replay log written to run.rpl"), std::string::npos) << said(run);
  const CliResult replay = run_rtcosim({"replay", "run.rpl", graph.string(), "--record", "replay.csv", "--frames",
                                        "replay_frames.csv", "--json", "replay.json"},
                                       dir);
  EXPECT_EQ(replay.code, 0) << said(replay);
  const std::string csv = slurp(dir / "run.csv"), frames = slurp(dir / "run_frames.csv");
  EXPECT_GT(csv.size(), 1000u);
  EXPECT_GT(frames.size(), 1000u);
  // Whole files, the #dropped rows of a run whose recording or frame-table
  // ring overflowed (its writer stalled: a loaded machine, a sanitizer
  // build) included: the log holds those drops.
  EXPECT_TRUE(slurp(dir / "replay.csv") == csv) << "the recordings differ (" << dir << ")";
  EXPECT_TRUE(slurp(dir / "replay_frames.csv") == frames) << "the frame tables differ (" << dir << ")";
  const std::string json = slurp(dir / "run.json");
  EXPECT_EQ(statistics(slurp(dir / "replay.json")), statistics(json));
  return json;
}

TEST(ReplayCommand, RealTimeRunsAreReplayedByteForByte) {
  if (geteuid() != 0) GTEST_SKIP() << "SCHED_FIFO needs root";
  {
    const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay_cli_flight");
    const std::string json = run_and_replay(dir, fs::path(kExamples) / "flight_control.yaml");
    fs::remove_all(dir);
    if (json.find("\"policy\":\"fifo\"") == std::string::npos) GTEST_SKIP() << "SCHED_FIFO is not permitted here";
  }
  // The other examples that run in real time here: signals only, a plant
  // replaying a CSV table, an FMU.
  for (const char* example : {"two_task_sine.yaml", "plant_replay.yaml", "fmu_plant.yaml"}) {
    const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay_cli_example");
    (void)run_and_replay(dir, fs::path(kExamples) / example);
    fs::remove_all(dir);
  }
  // four_task with every period 50 times shorter (plant 20 us, filter 40 us,
  // stimulus 200 us, monitor 400 us): thousands of overruns a second, rings
  // of a few blocks that fill, drains that take blocks published while they
  // drain (more than the ring holds).
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay_cli_four");
  std::string text = slurp(fs::path(kExamples) / "four_task.yaml");
  for (const auto& [from, to] :
       std::vector<std::pair<std::string, std::string>>{{"period: 10ms,", "period: 200us,"},
                                                        {"period: 2ms, ", "period: 40us,"},
                                                        {"period: 1ms, ", "period: 20us,"},
                                                        {"period: 20ms,", "period: 400us,"},
                                                        {"max_step: 8ms", "max_step: 160us"},
                                                        {"max_step: 80ms", "max_step: 1600us"}}) {
    const auto at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
  }
  const fs::path graph = dir / "four_task_fast.yaml";
  std::ofstream(graph) << text;
  const std::string json = run_and_replay(dir, graph);
  EXPECT_GT(task_figure(json, "plant", "overruns"), 100u) << json;
  fs::remove_all(dir);
}

// --what-if on the run's timing: the logged graph itself differs from the
// run by exactly 0 on every signal; another coupling method on the
// airframe -> controller link changes every signal that depends on it.
TEST(ReplayCommand, WhatIfComparesWithTheLoggedRun) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay_cli_what_if");
  const std::string flight_control = kExamples + "/flight_control.yaml";
  const CliResult run = run_rtcosim({"run", "--duration", "0.5s", "--replay-log", "fc.rpl", flight_control}, dir);
  ASSERT_EQ(run.code, 0) << said(run);
  const CliResult same = run_rtcosim({"replay", "fc.rpl", flight_control, "--what-if"}, dir);
  ASSERT_EQ(same.code, 0) << said(same);
  for (const char* signal : {"airframe_pitch.y", "actuator.y", "controller_gain.y"}) {
    const auto [rms, max] = table_row(same.out, "what-if against the logged run", signal);
    EXPECT_EQ(rms, "0") << signal << '\n' << said(same);
    EXPECT_EQ(max, "0") << signal;
  }
  std::string text = slurp(flight_control);
  const auto at = text.find("coupling: {method: predictor}");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 29, "coupling: {method: zoh}");
  // Held links put the loop near its limit; on the timing of a loaded
  // machine (a sanitizer build) the actuator's oscillation may grow and its
  // divergence guard stop it (docs/stalls.md). This test compares runs, so
  // the what-if's guard is off.
  for (const char* step : {"max_step: 20ms}", "max_step: 60ms}"}) {
    const auto s = text.find(step);
    ASSERT_NE(s, std::string::npos) << step;
    text.insert(s + std::string(step).size() - 1, ", divergence: {tolerance: 0, state_bound: 0}");
  }
  const fs::path changed = dir / "fc_zoh.yaml";
  std::ofstream(changed) << text;
  const CliResult zoh = run_rtcosim({"replay", "fc.rpl", changed.string(), "--what-if", "--plot", "w.svg"}, dir);
  ASSERT_EQ(zoh.code, 0) << said(zoh);
  const auto [rms, max] = table_row(zoh.out, "what-if against the logged run", "airframe_pitch.y");
  ASSERT_FALSE(rms.empty()) << said(zoh);
  EXPECT_GT(std::stod(rms), 0.0) << said(zoh);
  EXPECT_GE(std::stod(max), std::stod(rms)) << said(zoh);
  EXPECT_NE(slurp(dir / "w.svg").find("the logged run"), std::string::npos);
  // Another period runs in virtual time on the logged timing mapped onto
  // it, compared at the instants both runs recorded (every 20 ms for the
  // controller, where the logged run recorded every 10 ms).
  std::string slower = slurp(flight_control);
  slower.replace(slower.find("period: 10ms"), 12, "period: 20ms");
  std::ofstream(dir / "fc_slow.yaml") << slower;
  const CliResult period = run_rtcosim({"replay", "fc.rpl", (dir / "fc_slow.yaml").string(), "--what-if"}, dir);
  EXPECT_EQ(period.code, 0) << said(period);
  EXPECT_NE(period.out.find("what-if: task 'controller' has another period"), std::string::npos) << said(period);
  EXPECT_NE(period.out.find("what-if against the logged run (at the instants both recorded"), std::string::npos)
      << said(period);
  const auto [slow_rms, slow_max] = table_row(period.out, "what-if against the logged run", "controller_gain.y");
  ASSERT_FALSE(slow_rms.empty()) << said(period);
  EXPECT_GT(std::stod(slow_max), 0.0) << said(period);
  // Another overrun policy would read the logged frames' readings in other
  // roles: refused.
  std::string policy = slurp(flight_control);
  policy.replace(policy.find("step: fixed}"), 12, "step: fixed, overrun: skip}");
  std::ofstream(dir / "fc_skip.yaml") << policy;
  const CliResult skip = run_rtcosim({"replay", "fc.rpl", (dir / "fc_skip.yaml").string(), "--what-if"}, dir);
  EXPECT_EQ(skip.code, 2) << said(skip);
  EXPECT_NE(skip.err.find("task 'controller' has another overrun policy"), std::string::npos) << said(skip);
  fs::remove_all(dir);
}

TEST(ReplayCommand, UsageErrorsExit2AndSayWhatToDo) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay_cli_usage");
  const std::string flight_control = kExamples + "/flight_control.yaml";
  // --help.
  const CliResult help = run_rtcosim({"replay", "--help"}, dir);
  EXPECT_EQ(help.code, 0) << said(help);
  EXPECT_NE(help.out.find("usage: rtcosim replay"), std::string::npos) << said(help);
  // --replay-log logs real time only.
  const CliResult virtual_run =
      run_rtcosim({"run", "--virtual", "--duration", "0.1s", "--replay-log", "v.rpl", flight_control}, dir);
  EXPECT_EQ(virtual_run.code, 2) << said(virtual_run);
  EXPECT_NE(virtual_run.err.find("--replay-log logs a real-time run"), std::string::npos) << said(virtual_run);
  EXPECT_FALSE(fs::exists(dir / "v.rpl"));
  // A log of flight_control (a short real-time run; without root at normal
  // priority, which logs as well), replayed with another graph file.
  const CliResult run = run_rtcosim({"run", "--duration", "0.2s", "--replay-log", "fc.rpl", flight_control}, dir);
  ASSERT_EQ(run.code, 0) << said(run);
  const fs::path changed = dir / "flight_control_changed.yaml";
  std::string text = slurp(flight_control);
  text.replace(text.find("gain: 6.0"), 9, "gain: 5.0");
  std::ofstream(changed) << text;
  const CliResult other = run_rtcosim({"replay", "fc.rpl", changed.string()}, dir);
  EXPECT_EQ(other.code, 2) << said(other);
  EXPECT_NE(other.err.find("is not the graph that fc.rpl logged"), std::string::npos) << said(other);
  EXPECT_NE(other.err.find("--what-if"), std::string::npos) << said(other);
  // A data file changed after the run: the plant's table. The graph is the
  // same file, its SHA-256 the same: the log's hash of the table refuses it,
  // --what-if replays with it and says so.
  fs::create_directories(dir / "data");
  fs::copy_file(kExamples + "/plant_replay.yaml", dir / "plant_replay.yaml");
  fs::copy_file(kExamples + "/data/second_order_step.csv", dir / "data/second_order_step.csv");
  const std::string plant = (dir / "plant_replay.yaml").string();
  const CliResult plant_run = run_rtcosim({"run", "--duration", "0.2s", "--replay-log", "plant.rpl", plant}, dir);
  ASSERT_EQ(plant_run.code, 0) << said(plant_run);
  EXPECT_EQ(run_rtcosim({"replay", "plant.rpl", plant}, dir).code, 0);
  std::ofstream(dir / "data/second_order_step.csv", std::ios::app) << "\n";
  const CliResult table = run_rtcosim({"replay", "plant.rpl", plant}, dir);
  EXPECT_EQ(table.code, 2) << said(table);
  EXPECT_NE(table.err.find("the data file of plant.file is not the one the run read"), std::string::npos)
      << said(table);
  const CliResult table_what_if = run_rtcosim({"replay", "plant.rpl", plant, "--what-if"}, dir);
  EXPECT_EQ(table_what_if.code, 0) << said(table_what_if);
  EXPECT_NE(table_what_if.out.find("note: the data file of plant.file"), std::string::npos) << said(table_what_if);
  // The wrong number of operands.
  const CliResult one = run_rtcosim({"replay", "fc.rpl"}, dir);
  EXPECT_EQ(one.code, 2) << said(one);
  EXPECT_NE(one.err.find("rtcosim replay LOG GRAPH"), std::string::npos) << said(one);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rtcosim::tools
