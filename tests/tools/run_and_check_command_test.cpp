#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_config/loader.hpp"
#include "runtime/virtual_executor.hpp"
#include "session/report/graph_report.hpp"
#include "session/report/run_summary.hpp"
#include "tests/support/graphs.hpp"
#include "tools/rtcosim/check_command.hpp"
#include "tools/rtcosim/run_command.hpp"

namespace rtcosim::tools {
namespace {

const std::string kExamples = RTCOSIM_EXAMPLES_DIR;

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CheckCommand, EveryExampleIsValidAndABrokenFileIsNot) {
  for (const auto& entry : std::filesystem::directory_iterator(kExamples)) {
    if (entry.path().extension() == ".yaml") {
      EXPECT_EQ(run_check_command({entry.path().string()}), 0) << entry.path();
    }
  }
  const auto bad = std::filesystem::temp_directory_path() / "rtcosim_check_bad.yaml";
  std::ofstream(bad) << "tasks: []\nblocks: []\nwires: []\n";
  EXPECT_EQ(run_check_command({bad.string()}), 1);
  EXPECT_EQ(run_check_command({}), 2);
  EXPECT_EQ(run_check_command({"--dto", bad.string()}), 2);
  std::filesystem::remove(bad);
}

TEST(CheckCommand, SummaryListsTasksAndLinksAndDotHasOneClusterPerTask) {
  const auto loaded = config::load_graph_file(kExamples + "/flight_control.yaml");
  ASSERT_TRUE(loaded.ok());
  const std::string summary = session::graph_summary(loaded.graph);
  for (const char* word : {"controller", "actuator", "airframe", "zoh_average", "predictor", "3 link(s)"}) {
    EXPECT_NE(summary.find(word), std::string::npos) << word << "\n" << summary;
  }
  const std::string dot = session::graph_dot(loaded.graph);
  std::size_t clusters = 0;
  for (auto p = dot.find("subgraph \"cluster_"); p != std::string::npos; p = dot.find("subgraph \"cluster_", p + 1)) {
    ++clusters;
  }
  EXPECT_EQ(clusters, 3u);
  EXPECT_EQ(dot.rfind("}\n"), dot.size() - 2);
}

TEST(CheckCommand, SummaryShowsLoadAndResponseTimesOfDeclaredExecutionTimes) {
  const auto loaded = config::load_graph_file(kExamples + "/overrun_virtual.yaml");
  ASSERT_TRUE(loaded.ok());
  const std::string summary = session::graph_summary(loaded.graph);
  // The rate group's cycle: 8 actuator frames of 1 ms and one airframe
  // frame of 10 ms, 20 ms at its spike: 28 ms against an 18 ms period.
  for (const char* line :
       {"  CPU 0: 100.0 %\n", "  single_processor    0    90   18 ms      28 ms     28 ms  overruns\n"}) {
    EXPECT_NE(summary.find(line), std::string::npos) << line << "\n" << summary;
  }
  EXPECT_EQ(session::graph_summary(config::load_graph_file(kExamples + "/flight_control.yaml").graph).find("response"),
            std::string::npos);  // nothing declared, nothing analysed
}

// The summary's timing table on a schedule worked out by hand: b (2 ms per
// 10 ms frame) shares CPU 0 with a (0.3 ms per 1 ms, higher priority), so b
// waits 0.3 ms to start and its frame spans 2.6 ms.
TEST(RunSummary, TimingTableShowsLatencyAndExecutionPercentiles) {
  const char* yaml = R"(name: pair
realtime: off
tasks:
  - {name: a, period: 1ms,  cpu: 0, priority: 90, step: fixed, execution: {nominal: 300us}}
  - {name: b, period: 10ms, cpu: 0, priority: 80, step: fixed, execution: {nominal: 2ms}}
blocks:
  - {name: k1, type: constant, task: a, params: {value: [1]}}
  - {name: k2, type: constant, task: b, params: {value: [1]}}
wires: []
)";
  auto graph = rtcosim::testing::build_graph(rtcosim::testing::checked(config::load_graph_text(yaml, "pair.yaml")));
  runtime::VirtualExecutor executor(*graph);
  executor.run(0.01);
  const std::string summary = session::run_summary(*graph);
  const std::string timing = summary.substr(summary.find("timing:\n"));
  EXPECT_EQ(timing.substr(0, timing.find("links:")),
            "timing:\n"
            "  name  latency p50  latency p99  latency p99.9  latency max  late start p99  late start max  exec p50  "
            "exec p99  exec p99.9  exec max  cycle p99  cycle max\n"
            "  a             0 s          0 s            0 s          0 s             0 s             0 s    300 us  "
            "  300 us      300 us    300 us     300 us     300 us\n"
            "  b          300 us       300 us         300 us       300 us          300 us          300 us   2.60 ms  "
            " 2.60 ms     2.60 ms   2.60 ms    2.60 ms    2.60 ms\n")
      << summary;
}

// Above 40 links the table keeps the links that dropped the most, then were read furthest ahead, in graph
// order, and counts the rest: here the 15 wires of the 10 ms producer, whose 5 ms frames publish late (read up
// to 5 ms ahead by the 1 ms consumer), and the first 25 of the 1 ms producer's 30 (never read ahead); the last 5
// are counted.
TEST(RunSummary, ALargeGraphShowsItsWorstLinksAndCountsTheRest) {
  std::string blocks, wires;
  for (int i = 0; i < 30; ++i) {
    const std::string n = std::to_string(i);
    blocks += "  - {name: f" + n + ", type: sine, task: fast}\n  - {name: g" + n +
              ", type: gain, task: c, params: {gain: 1}}\n";
    wires += "  - {from: f" + n + ".y, to: g" + n + ".u}\n";
  }
  for (int i = 0; i < 15; ++i) {
    const std::string n = std::to_string(i);
    blocks += "  - {name: s" + n + ", type: sine, task: slow}\n  - {name: h" + n +
              ", type: gain, task: c, params: {gain: 1}}\n";
    wires += "  - {from: s" + n + ".y, to: h" + n + ".u}\n";
  }
  const std::string yaml =
      "name: many\nrealtime: off\ncoupling: {method: predictor}\ntasks:\n"
      "  - {name: fast, period: 1ms, step: fixed}\n"
      "  - {name: slow, period: 10ms, step: fixed, cpu: 1, execution: {nominal: 5ms}}\n  - {name: c, period: 1ms, "
      "step: fixed}\n"
      "blocks:\n" +
      blocks + "wires:\n" + wires;
  auto graph = rtcosim::testing::build_graph(rtcosim::testing::checked(config::load_graph_text(yaml, "many.yaml")));
  ASSERT_EQ(graph->links().size(), 45u);
  runtime::VirtualExecutor executor(*graph);
  executor.run(0.1);
  const std::string summary = session::run_summary(*graph);
  const std::string table = summary.substr(summary.find("links:\n"));
  for (int i = 0; i < 30; ++i) {
    const std::string row = "  f" + std::to_string(i) + ".y (fast) -> c ";
    EXPECT_EQ(table.find(row) != std::string::npos, i < 25) << row << "\n" << table;
  }
  for (int i = 0; i < 15; ++i) {
    const std::string row = "  s" + std::to_string(i) + ".y (slow) -> c ";
    EXPECT_NE(table.find(row), std::string::npos) << row << "\n" << table;
  }
  EXPECT_NE(table.find("  ... and 5 more link(s), none of which dropped a block (the 40 above dropped the most, then "
                       "were read furthest ahead; --json FILE lists every link)\n"),
            std::string::npos)
      << table;
}

// The link-health block of the summary and the per-link counters in the
// JSON: a hermite link fed by a port without derivatives (every frame of the
// consumer is a fallback frame) into which a NaN value, a +1e9 s tag and a
// stale block are also pushed by hand after the run.
TEST(RunSummary, LinkHealthShowsEveryCounterOfADegradedLinkOnly) {
  const char* yaml = R"(name: health
realtime: off
tasks:
  - {name: a, period: 10ms, cpu: 0, priority: 70, step: fixed}
  - {name: b, period: 10ms, cpu: 0, priority: 71, step: fixed}
  - {name: c, period: 5ms, cpu: 1, priority: 80, step: fixed}
blocks:
  - {name: s, type: sine, task: a}
  - {name: g, type: gain, task: b, params: {gain: 2}}
  - {name: h, type: gain, task: c, params: {gain: 1}}
wires:
  - {from: s.y, to: g.u, coupling: {method: zoh}}
  - {from: g.y, to: h.u, coupling: {method: hermite, order: 3, max_extrapolation: 30ms}}
)";
  auto graph = rtcosim::testing::build_graph(rtcosim::testing::checked(config::load_graph_text(yaml, "health.yaml")));
  runtime::VirtualExecutor executor(*graph);
  executor.run(0.1);
  runtime::GraphLink* hermite = nullptr;
  for (auto& l : graph->links()) {
    if (l->method == "hermite") hermite = l.get();
  }
  ASSERT_NE(hermite, nullptr);
  auto& ex = hermite->link->extrapolator();
  const double newest = ex.newest_tag();
  coupling::DataBlock b(1);
  b.sequence = 1000;
  b.tag = newest + 0.01;
  b.set(0, std::nan(""), 0.0, false);
  ex.push(b);  // a NaN value
  b.set(0, 1.0, 0.0, false);
  b.tag = newest + 1e9;
  ex.push(b);  // a tag out of reach
  b.tag = newest - 0.05;
  ex.push(b);  // stale

  const std::uint64_t frames = graph->find_task("c")->stats().frames.load();
  const std::string summary = session::run_summary(*graph);
  const std::string health = summary.substr(summary.find("link health:\n"));
  const std::string header =
      "link health:\n  from -> to    stale  rejected tags  rejected values  fallback frames  beyond horizon  horizon"
      "  longest gap\n";
  EXPECT_EQ(health.substr(0, header.size()), header) << summary;
  const std::string row = "  g.y (b) -> c      1              1                1  " +
                          std::string(15 - std::to_string(frames).size(), ' ') + std::to_string(frames) +
                          "               0  30.0 ms";
  EXPECT_EQ(health.substr(header.size(), row.size()), row) << summary;
  EXPECT_EQ(health.find("s.y (a) -> b"), std::string::npos) << summary;  // the zoh link is healthy

  const std::string json = session::summary_json(*graph, {}, "virtual");
  const std::string fields =
      ",\"stale\":1,\"rejected_tags\":1,\"rejected_values\":1,\"fallback_frames\":" + std::to_string(frames) +
      ",\"beyond_horizon_frames\":0,\"max_extrapolation_s\":0.03,";
  EXPECT_NE(json.find(fields), std::string::npos) << json;
  EXPECT_NE(json.find(",\"stale\":0,\"rejected_tags\":0,\"rejected_values\":0,\"fallback_frames\":0,"),
            std::string::npos)
      << json;
}

TEST(RunCommand, VirtualRunWritesJsonFramesAndRecording) {
  const auto dir = std::filesystem::temp_directory_path() / "rtcosim_run_test";
  std::filesystem::create_directories(dir);
  const auto json = dir / "summary.json", frames = dir / "frames.csv", record = dir / "record.csv";
  ASSERT_EQ(
      run_run_command({"--virtual", "--duration", "0.2s", "--compare-reference", "--json", json.string(), "--frames",
                       frames.string(), "--record", record.string(), kExamples + "/overrun_virtual.yaml"}),
      0);
  const std::string summary = slurp(json);
  // Cycles start at 0, 18, 46 (after the 28 ms one), 64, ..., 190 ms: 11
  // airframe frames, 8 actuator frames each; one overrun, nothing missed.
  // Every cycle ends exactly at the next release, so only the first one
  // slept: one wake-up latency.
  for (const char* key :
       {"\"tasks\":[", "\"name\":\"actuator\",\"cpu\":0,\"policy\":\"virtual\",\"priority\":90",
        "\"overrun_policy\":\"rephase\",\"frames\":88,\"cycles\":0,\"overruns\":0,\"missed_periods\":0,"
        "\"latency_ns\":{\"count\":0,",
        "\"overrun_policy\":\"rephase\",\"frames\":11,\"cycles\":11,\"overruns\":1,\"missed_periods\":0,"
        "\"latency_ns\":{\"count\":1,\"p50\":0,\"p99\":0,\"p999\":0,\"max\":0}",
        "\"exec_ns\":{\"count\":11,", "\"cycle_ns\":{\"count\":11,", "\"step_s\":{\"min\":0.018", "\"links\":[",
        "\"method\":\"predictor\"", "\"published\":89,\"dropped\":0", "\"signals\":[", "\"rms_error\":"}) {
    EXPECT_NE(summary.find(key), std::string::npos) << key << "\n" << summary;
  }
  std::ifstream f(frames);
  std::string header;
  std::getline(f, header);
  EXPECT_EQ(header, "task,frame,wall_s,sim_s,step_s,latency_ns,exec_ns,start_lateness_ns");
  std::size_t rows = 0;
  for (std::string line; std::getline(f, line);) ++rows;
  EXPECT_EQ(rows, 88u + 11u);
  // One row per frame of the task that records the signal, all of them in
  // the file when the run is over.
  std::ifstream r(record);
  std::getline(r, header);
  EXPECT_EQ(header, "time_s,task,signal,value");
  std::map<std::string, std::size_t> samples;
  for (std::string line; std::getline(r, line);) {
    const auto a = line.find(','), b = line.find(',', a + 1), c = line.find(',', b + 1);
    ASSERT_NE(c, std::string::npos) << line;
    ++samples[line.substr(b + 1, c - b - 1)];
  }
  // One per frame and the t = 0 sample.
  EXPECT_EQ(samples, (std::map<std::string, std::size_t>{{"actuator.y", 89}, {"airframe_pitch.y", 12}}));
  // Errors against the reference: 0.000396 and 0.000156 when this was
  // written; the bounds leave 25 %.
  for (const auto& [signal, bound] : {std::pair{"actuator.y", 0.0005}, std::pair{"airframe_pitch.y", 0.0002}}) {
    const std::string key = std::string("{\"name\":\"") + signal + "\",\"rms_error\":";
    const auto at = summary.find(key);
    ASSERT_NE(at, std::string::npos) << key << "\n" << summary;
    const double rms = std::stod(summary.substr(at + key.size()));
    EXPECT_GT(rms, 0.0) << signal;
    EXPECT_LE(rms, bound) << signal;
  }
  std::filesystem::remove_all(dir);
}

// A task whose simulation diverges (Euler at 5 ms on a 1 ms lag: x_{n+1} =
// -4 x_n) stops on its divergence guard: the run exits 1 and the JSON names
// the task, the block and the figure; the other task runs to the end.
TEST(RunCommand, ADivergedTaskFailsTheRunNamingTheBlock) {
  const auto dir = std::filesystem::temp_directory_path() / ("rtcosim_diverge_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto graph = dir / "diverging.yaml", json = dir / "summary.json";
  std::ofstream(graph) << "name: diverging\nrealtime: off\nduration: 1s\ntasks:\n"
                          "  - {name: steady, period: 10ms, integrator: rk4}\n"
                          "  - {name: runaway, period: 5ms, integrator: euler}\n"
                          "blocks:\n"
                          "  - {name: wave, type: sine, task: steady, params: {frequency: 1}}\n"
                          "  - {name: fast_lag, type: first_order_lag, task: runaway, params: {time_constant: 0.001}}\n"
                          "wires:\n  - {from: wave.y, to: fast_lag.u, coupling: {method: zoh}}\n";
  EXPECT_EQ(run_run_command({"--virtual", "--json", json.string(), graph.string()}), 1);
  const std::string summary = slurp(json);
  EXPECT_NE(summary.find("\"name\":\"steady\""), std::string::npos);
  EXPECT_NE(summary.find("\"frames\":100,"), std::string::npos) << summary;  // steady ran its whole second
  const auto failure = summary.find("\"failure\":\"task 'runaway' stopped in frame ");
  ASSERT_NE(failure, std::string::npos) << summary;
  EXPECT_NE(summary.find("the simulation diverged: block 'fast_lag' (first_order_lag): its state 0 had a relative "
                         "local error of ",
                         failure),
            std::string::npos)
      << summary;
  std::filesystem::remove_all(dir);
}

// A model that ends the simulation itself (an FMU's terminateSimulation,
// issue 40) ends the run normally: exit 0, the summary says who ended it and
// when, and the recording stops at that instant (count2 with stop_at 2: its
// event at t = 2 s).
TEST(RunCommand, AModelThatEndsTheSimulationEndsTheRunWithExitZero) {
  const auto dir = std::filesystem::temp_directory_path() / ("rtcosim_ends_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto graph = dir / "ends.yaml", json = dir / "summary.json", csv = dir / "out.csv";
  std::ofstream(graph) << "name: ends\nrealtime: off\nduration: 10s\ntasks:\n"
                          "  - {name: p, period: 250ms, step: fixed}\n"
                          "blocks:\n"
                          "  - {name: m, type: fmu, task: p, params: {file: " RTCOSIM_FMU_DIR
                          "/count2.fmu, interface: co_simulation, start: {stop_at: 2}}}\n"
                          "record: {file: "
                       << csv.string() << ", signals: [m.counter]}\n";
  EXPECT_EQ(run_run_command({"--virtual", "--json", json.string(), graph.string()}), 0);
  const std::string summary = slurp(json);
  EXPECT_NE(summary.find("\"ended_run\":\"task 'p' ended the run in frame 7: block 'm' (fmu): FMU 'm' ended the "
                         "simulation at t = 2 s (fmi2DoStep (fmi2Terminated))\""),
            std::string::npos)
      << summary;
  EXPECT_EQ(summary.find("\"failure\""), std::string::npos) << summary;
  const std::string recording = slurp(csv);
  EXPECT_NE(recording.find("\n2,p,m.counter,2\n"), std::string::npos) << recording;
  EXPECT_EQ(recording.find("\n2.25,"), std::string::npos) << recording;
  std::filesystem::remove_all(dir);
}

// A period under 1 us (issue 40: the Rectifier's reference step is 0.1 us)
// runs in virtual time, which counts whole nanoseconds: 10 us of a 100 ns
// task are 100 frames; a real-time run refuses it before anything runs.
TEST(RunCommand, ASubMicrosecondPeriodRunsInVirtualTimeOnly) {
  const auto dir = std::filesystem::temp_directory_path() / ("rtcosim_subus_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto graph = dir / "fast.yaml", json = dir / "summary.json";
  std::ofstream(graph) << "name: fast\nrealtime: off\nduration: 10us\ntasks:\n"
                          "  - {name: t, period: 100ns, integrator: rk4}\n"
                          "blocks:\n  - {name: k, type: constant, task: t, params: {value: 1}}\n"
                          "  - {name: i, type: integrator, task: t}\n"
                          "wires:\n  - {from: k.y, to: i.u}\n";
  EXPECT_EQ(run_run_command({"--virtual", "--json", json.string(), graph.string()}), 0);
  EXPECT_NE(slurp(json).find("\"name\":\"t\",\"cpu\":-1,\"policy\":\"virtual\""), std::string::npos) << slurp(json);
  EXPECT_NE(slurp(json).find("\"frames\":100,"), std::string::npos) << slurp(json);
  std::stringstream err;
  auto* old = std::cerr.rdbuf(err.rdbuf());
  const int rc = run_run_command({graph.string()});
  std::cerr.rdbuf(old);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.str().find("task 't' runs every 100 ns, below the real-time floor of 1us — such a period runs only "
                           "in virtual time (rtcosim run --virtual)"),
            std::string::npos)
      << err.str();
  std::filesystem::remove_all(dir);
}

TEST(RunCommand, UsageAndFileErrorsHaveTheirExitCodes) {
  EXPECT_EQ(run_run_command({}), 2);
  EXPECT_EQ(run_run_command({"--virtual", "--duration", "-1s", kExamples + "/overrun_virtual.yaml"}), 2);
  EXPECT_EQ(run_run_command({"--virtual", "/nonexistent/graph.yaml"}), 1);
  EXPECT_EQ(run_run_command({"--help"}), 0);
  // Output paths are checked before the run, not after it.
  for (const char* option : {"--json", "--plot", "--frames", "--record"}) {
    std::stringstream err;
    auto* old = std::cerr.rdbuf(err.rdbuf());
    const int rc = run_run_command({"--virtual", option, "/nonexistent/out", kExamples + "/two_task_sine.yaml"});
    std::cerr.rdbuf(old);
    EXPECT_EQ(rc, 2) << option;
    EXPECT_NE(err.str().find(std::string(option) + ": cannot write '/nonexistent/out': directory '/nonexistent' does "
                                                   "not exist"),
              std::string::npos)
        << err.str();
  }
}

// A summary the disk refuses fails the command: the summary (2 kB) fits the
// stream's buffer, so the full disk shows only at close, after which
// "summary written" and exit status 0 used to follow. A link to /dev/full
// stands for the full disk, in a directory the check before the run accepts.
TEST(RunCommand, ASummaryTheDiskRefusesFailsTheCommand) {
  const auto dir = std::filesystem::temp_directory_path() / ("rtcosim_run_full_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto json = dir / "summary.json";
  std::filesystem::create_symlink("/dev/full", json);
  std::stringstream err, out;
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  const int rc = run_run_command({"--virtual", "--duration", "0.1s", "--json", json.string(), "--record",
                                  (dir / "rec.csv").string(), kExamples + "/two_task_sine.yaml"});
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(err.str().find("cannot write '" + json.string() + "': No space left on device"), std::string::npos)
      << err.str();
  EXPECT_EQ(out.str().find("summary written"), std::string::npos) << out.str();
  std::filesystem::remove_all(dir);
}

TEST(RunCommand, TraceInVirtualTimeIsRefusedBeforeAnythingRuns) {
  const auto dir = std::filesystem::temp_directory_path() / "rtcosim_virtual_trace";
  std::filesystem::remove_all(dir);
  std::stringstream err;
  auto* old = std::cerr.rdbuf(err.rdbuf());
  const int rc =
      run_run_command({"--virtual", "--duration", "0.1s", "--trace", dir.string(), kExamples + "/two_task_sine.yaml"});
  std::cerr.rdbuf(old);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.str().find("cannot be combined with --virtual"), std::string::npos) << err.str();
  EXPECT_FALSE(std::filesystem::exists(dir));
}

// --host names one of the file's hosts, in real time only; check lists the
// remote links with their topics.
TEST(RunCommand, HostMustBeOneOfTheFilesHostsAndCheckListsRemoteLinks) {
  auto run_err = [](const std::vector<std::string>& args) {
    std::stringstream err;
    auto* old = std::cerr.rdbuf(err.rdbuf());
    const int rc = run_run_command(args);
    std::cerr.rdbuf(old);
    return std::make_pair(rc, err.str());
  };
  const std::string two = kExamples + "/flight_control_two_hosts.yaml";
  auto [rc, err] = run_err({"--host", "hil_pc", two});
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.find("--host hil_pc: " + two + " has no such host — expected one of: plant-pc, hil-pc"),
            std::string::npos)
      << err;
  std::tie(rc, err) = run_err({"--host", "plant-pc", kExamples + "/flight_control.yaml"});
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.find("declares no 'hosts:'"), std::string::npos) << err;
  std::tie(rc, err) = run_err({"--virtual", "--duration", "1s", "--host", "plant-pc", two});
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.find("--virtual runs the whole graph"), std::string::npos) << err;
  const std::string summary = session::graph_summary(config::load_graph_file(two).graph);
  for (const char* line :
       {"  controller  hil-pc ", "rtcosim_flight_control_two_hosts_controller_gain__y__actuator\n",
        "rtcosim_flight_control_two_hosts_airframe_pitch__y__controller\n", "2 remote link(s), carried over DDS"}) {
    EXPECT_NE(summary.find(line), std::string::npos) << line << "\n" << summary;
  }
}

// --period-scale 1e-11 made 1 ms periods 10 fs and crashed with SIGFPE;
// scaled periods meet the loader's floor.
TEST(RunCommand, APeriodScaleBelowTheFloorIsAUsageError) {
  std::stringstream err;
  auto* old = std::cerr.rdbuf(err.rdbuf());
  const int rc = run_run_command(
      {"--virtual", "--duration", "0.1s", "--period-scale", "1e-11", kExamples + "/two_task_sine.yaml"});
  std::cerr.rdbuf(old);
  EXPECT_EQ(rc, 2);
  // In virtual time the floor is 1 ns (whole nanoseconds), in real time 1 us.
  EXPECT_NE(err.str().find("--period-scale 1e-11 makes task 'slow' run every 0.0004 ns, below the floor of 1 ns — "
                           "expected a scale that keeps every period at 1ns or more"),
            std::string::npos)
      << err.str();
  std::stringstream err_rt;
  old = std::cerr.rdbuf(err_rt.rdbuf());
  const int rc_rt =
      run_run_command({"--duration", "0.1s", "--period-scale", "1e-4", kExamples + "/two_task_sine.yaml"});
  std::cerr.rdbuf(old);
  EXPECT_EQ(rc_rt, 2);
  EXPECT_NE(err_rt.str().find("--period-scale 1e-4 makes task 'fast' run every 100 ns, below the floor of 1 us"),
            std::string::npos)
      << err_rt.str();
}

// Plots and reference errors keep every sample in memory: only for a run
// that ends. An open-ended run is refused before it starts.
TEST(RunCommand, PlotAndCompareReferenceNeedAFiniteRun) {
  const auto file =
      std::filesystem::temp_directory_path() / ("rtcosim_open_ended_" + std::to_string(getpid()) + ".yaml");
  std::string text = slurp(kExamples + "/two_task_sine.yaml");
  text.replace(text.find("duration: 5s"), 12, "duration: 0s");
  std::ofstream(file) << text;
  for (const char* option : {"--plot", "--compare-reference"}) {
    std::vector<std::string> args = {option};
    if (std::string(option) == "--plot") args.push_back((std::filesystem::temp_directory_path() / "x.svg").string());
    args.push_back(file.string());
    std::stringstream err;
    auto* old = std::cerr.rdbuf(err.rdbuf());
    const int rc = run_run_command(args);
    std::cerr.rdbuf(old);
    EXPECT_EQ(rc, 2) << option;
    EXPECT_NE(err.str().find("runs until stopped; --plot and --compare-reference need a finite run: give --duration"),
              std::string::npos)
        << err.str();
  }
  std::filesystem::remove(file);
}

// A run killed with SIGKILL (nothing of it runs after the signal) leaves
// the target as it was: the rows go to a temporary name until the run ends.
// The old code truncated the file first and left a partial last line.
TEST(RunCommand, ARunKilledWithSigkillLeavesTheTargetAsItWas) {
  const auto dir = std::filesystem::temp_directory_path() / ("rtcosim_sigkill_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto target = dir / "out.csv";
  std::ofstream(target) << "old\n";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::cout.setstate(std::ios::badbit);
    _exit(run_run_command(
        {"--virtual", "--duration", "100000s", "--record", target.string(), kExamples + "/two_task_sine.yaml"}));
  }
  // Wait until rows are being written, then kill.
  std::uintmax_t written = 0;
  for (int i = 0; i < 200 && written < (1u << 20); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.path().extension() == ".part") written = e.file_size();
    }
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_GE(written, 1u << 20);
  EXPECT_EQ(slurp(target), "old\n");
  std::filesystem::remove_all(dir);
}

// Per-task recording counts in --json and in the summary: the fast task
// (1 ms, the one that records) has one sample per frame and one at t = 0,
// none dropped.
TEST(RunCommand, TheSummaryAndJsonCountRecordedAndDroppedSamplesPerTask) {
  const auto dir = std::filesystem::temp_directory_path() / ("rtcosim_run_counts_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::stringstream out;
  auto* old = std::cout.rdbuf(out.rdbuf());
  const int rc = run_run_command({"--virtual", "--duration", "0.2s", "--record", (dir / "r.csv").string(), "--frames",
                                  (dir / "f.csv").string(), "--json", (dir / "s.json").string(),
                                  kExamples + "/two_task_sine.yaml"});
  std::cout.rdbuf(old);
  ASSERT_EQ(rc, 0) << out.str();
  EXPECT_NE(out.str().find("recording:\n  name               samples     dropped   frame log dropped\n"
                           "  slow                     0           0                   0\n"
                           "  fast                   201           0                   0\n"),
            std::string::npos)
      << out.str();
  EXPECT_NE(slurp(dir / "s.json")
                .find(",\"recording\":{\"file\":\"" + (dir / "r.csv").string() +
                      "\",\"error\":null,\"samples_written\":201,\"samples_lost\":0,"
                      "\"time_reached_s\":0.2,\"tasks\":[{\"name\":\"slow\",\"samples\":0,"
                      "\"dropped\":0,\"frame_log_dropped\":0},{\"name\":\"fast\",\"samples\":201,"
                      "\"dropped\":0,\"frame_log_dropped\":0}],\"latest\":[]}}"),
            std::string::npos)
      << slurp(dir / "s.json");
  std::filesystem::remove_all(dir);
}

// A disk that fills during the run (a 1 MB tmpfs; a batch is ~0.4 MB): the run exits 1 with
// the file, the time reached and the samples lost; the old file is as it
// was, the rows written are whole, and written + lost is every sample.
TEST(RunCommand, ADiskThatFillsEndsTheRecordingWithAnErrorAndKeepsTheOldFile) {
  const auto dir = std::filesystem::temp_directory_path() / ("rtcosim_small_fs_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  if (std::system(("mount -t tmpfs -o size=1m tmpfs " + dir.string() + " 2>/dev/null").c_str()) != 0) {
    std::filesystem::remove_all(dir);
    GTEST_SKIP() << "cannot mount a small tmpfs here (needs root and CAP_SYS_ADMIN)";
  }
  const auto target = dir / "out.csv";
  std::ofstream(target) << "old\n";
  const auto json = std::filesystem::temp_directory_path() / ("rtcosim_small_fs_" + std::to_string(getpid()) + ".json");
  std::stringstream err, out;
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  const int rc = run_run_command({"--virtual", "--duration", "20s", "--record", target.string(), "--json",
                                  json.string(), kExamples + "/two_task_sine.yaml"});
  std::cerr.rdbuf(old_err);
  std::cout.rdbuf(old_out);
  const std::string old_content = slurp(target);
  std::string part;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".part") part = slurp(e.path());
  }
  const std::string summary = slurp(json);
  (void)std::system(("umount " + dir.string()).c_str());
  std::filesystem::remove_all(dir);
  std::filesystem::remove(json);

  EXPECT_EQ(rc, 1);
  EXPECT_EQ(old_content, "old\n");
  EXPECT_NE(err.str().find("rtcosim run: recording to '" + target.string() + "' failed at t = "), std::string::npos)
      << err.str();
  EXPECT_NE(err.str().find(" s: write failed: No space left on device; "), std::string::npos) << err.str();
  ASSERT_FALSE(part.empty()) << err.str();
  EXPECT_EQ(part.back(), '\n');
  const auto number_after = [&](const std::string& key) {
    const auto at = summary.find("\"" + key + "\":");
    return at == std::string::npos ? -1.0 : std::stod(summary.substr(at + key.size() + 3));
  };
  EXPECT_EQ(number_after("samples_written") + number_after("samples_lost"), 20001.0) << summary;  // t = 0 too
  // The last row on disk is at the time the error names.
  const auto last_row = part.substr(part.rfind('\n', part.size() - 2) + 1);
  EXPECT_DOUBLE_EQ(std::stod(last_row), number_after("time_reached_s")) << last_row;
  EXPECT_EQ(std::count(part.begin(), part.end(), '\n'), 1 + 3 * static_cast<long>(number_after("samples_written")));
}

}  // namespace
}  // namespace rtcosim::tools
