// Issue 45, likewise for the replay log: random small task graphs (2-4
// tasks of periods 1, 2, 5 or 10 ms, fixed or measured steps, a source, a
// sum, a lag or an integrator and a gain in each task, the tasks in a ring
// of wires with random coupling methods) run in real time on
// RealtimeExecutor while writing a replay log, then ReplayExecutor on a
// fresh graph of the same text must give every sample of every recorded
// signal, and every task's statistics, back bit for bit. The wall clock of
// a busy machine makes every run different; the replay must reproduce
// whatever happened. Nothing here asserts on absolute times.
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/frame_log.hpp"
#include "runtime/recorder.hpp"
#include "runtime/replay_executor.hpp"
#include "runtime/replay_log.hpp"
#include "runtime/rt_executor.hpp"
#include "tests/support/dice.hpp"
#include "tests/support/graphs.hpp"
#include "tests/support/scratch.hpp"

namespace rtcosim::runtime {
namespace {

namespace fs = std::filesystem;
using rtcosim::testing::build_graph;
using rtcosim::testing::checked;

using rtcosim::testing::Dice;
using rtcosim::testing::random_coupling;

// Task k: src{k} (sine, ramp or step) + the previous task's out -> sum{k}
// -> dyn{k} (lag or integrator) -> out{k} (gain); out{k} feeds the next
// task's sum (a ring through states).
std::string generate(std::uint32_t seed) {
  Dice d(seed);
  static const char* const kPeriods[] = {"1ms", "2ms", "5ms", "10ms"};
  static const int kPeriodMs[] = {1, 2, 5, 10};
  static const char* const kIntegrators[] = {"euler", "ab2", "rk2", "rk4", "ros1", "ros2"};
  const std::size_t n = 2 + d.below(3);
  std::string tasks = "tasks:\n", blocks = "blocks:\n", wires = "wires:\n", record;
  for (std::size_t k = 0; k < n; ++k) {
    const std::string i = std::to_string(k), t = "t" + i;
    const std::size_t p = d.below(4);
    tasks += "  - {name: " + t + ", period: " + kPeriods[p] + ", integrator: " + d.pick(kIntegrators);
    if (d.chance(0.5)) {
      tasks += ", step: measured, max_step: " + std::to_string(4 * kPeriodMs[p]) + "ms}\n";
    } else {
      tasks += ", step: fixed}\n";
    }
    auto block = [&](const std::string& name, const std::string& type, const std::string& params) {
      blocks += "  - {name: " + name + i + ", type: " + type + ", task: " + t +
                (params.empty() ? "" : ", params: {" + params + "}") + "}\n";
    };
    switch (d.below(3)) {
      case 0:
        block("src", "sine", "frequency: " + d.real_text(0.5, 20.0));
        break;
      case 1:
        block("src", "ramp", "slope: " + d.real_text(-5.0, 5.0) + ", time: " + d.real_text(0.0, 0.1));
        break;
      default:
        block("src", "step", "time: " + d.real_text(0.01, 0.1) + ", final: " + d.real_text(-2.0, 2.0));
        break;
    }
    block("sum", "sum", "signs: \"+-\"");
    if (d.chance(0.5)) {
      block("dyn", "first_order_lag", "time_constant: " + d.real_text(0.005, 0.1));
    } else {
      block("dyn", "integrator", "");
    }
    block("out", "gain", "gain: " + d.real_text(-0.9, 0.9));
    wires += "  - {from: src" + i + ".y, to: sum" + i + ".u1}\n";
    wires += "  - {from: sum" + i + ".y, to: dyn" + i + ".u}\n";
    wires += "  - {from: dyn" + i + ".y, to: out" + i + ".u}\n";
    const std::string prev = std::to_string((k + n - 1) % n);
    wires += "  - {from: out" + prev + ".y, to: sum" + i + ".u2, coupling: " + random_coupling(d) + "}\n";
    record +=
        std::string(record.empty() ? "" : ", ") + "src" + i + ".y, sum" + i + ".y, dyn" + i + ".y, out" + i + ".y";
  }
  return "name: replay_diff\n" + tasks + blocks + wires + "record: {signals: [" + record + "], file: diff.csv}\n";
}

std::unique_ptr<Graph> graph_of(const std::string& yaml) {
  auto spec = checked(config::load_graph_text(yaml, "replay_diff.yaml"));
  spec.realtime = config::RealtimeMode::kOff;  // SCHED_OTHER: the noisy clock is the point
  return build_graph(spec);
}

std::string exact(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%a", v);
  return text;
}

// What a task counted, exactly (the figures a replay reproduces).
std::vector<std::string> figures(const TaskRuntime& t) {
  const TaskStats& s = t.stats();
  return {"frames=" + std::to_string(s.frames.load()),
          "cycles=" + std::to_string(s.cycles.load()),
          "overruns=" + std::to_string(s.overruns.load()),
          "missed_periods=" + std::to_string(s.missed_periods.load()),
          "sim_time=" + exact(t.partition().time()),
          "wakeup_latency.max=" + std::to_string(s.wakeup_latency_ns.max()),
          "execution.count=" + std::to_string(s.execution_ns.count()),
          "step.count=" + std::to_string(s.step.count()),
          "step.max=" + exact(s.step.max()),
          "step.mean=" + exact(s.step.mean())};
}

std::vector<std::uint64_t> bits(const std::vector<double>& v) {
  std::vector<std::uint64_t> out;
  for (const double x : v) out.push_back(std::bit_cast<std::uint64_t>(x));
  return out;
}

constexpr double kDuration = 0.15;

// One case: the real run with its log, the replay, the comparison.
void check_case(std::uint32_t seed, const fs::path& dir) {
  const std::string yaml = generate(seed);
  SCOPED_TRACE("seed " + std::to_string(seed) + ", graph:\n" + yaml);
  const fs::path log_path = dir / ("run_" + std::to_string(seed) + ".rpl");

  auto run_graph = graph_of(yaml);
  ASSERT_EQ(replay_log_refusal(*run_graph), "");
  std::vector<std::string> names;
  for (const auto& t : run_graph->tasks()) names.push_back(t->spec().name);
  Recorder recorder(*run_graph, Recorder::Options{.samples_per_task = 1u << 14, .keep = Recorder::kKeepAll});
  FrameLog frames(names, 1u << 14);
  ReplayLog log(*run_graph, log_path.string(),
                ReplayLog::Header{"replay_diff.yaml", "no-sha", seconds_to_ns(kDuration), "real time", "", {}});
  std::string why;
  ASSERT_TRUE(log.open(&why)) << why;
  (void)run_graph->link_warnings();  // as `rtcosim run`, before the executor's reset
  auto drain = [&] {
    recorder.drain();
    frames.drain(nullptr, nullptr);
    std::vector<std::uint64_t> recorded;
    for (const auto& c : recorder.counts()) recorded.push_back(c.samples);
    log.drain(recorded, frames.rows_drained());
  };
  {
    RealtimeExecutor executor(*run_graph, &recorder, RealtimeReport{}, &frames);
    executor.set_replay_log(&log);
    executor.start(kDuration, 0.01);
    while (!executor.finished()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      drain();  // batches at whatever instants the scheduler gives this thread
    }
    executor.join();
  }
  drain();
  recorder.finish(nullptr);
  frames.finish(nullptr, nullptr);
  ASSERT_TRUE(log.finish(&why)) << why;
  EXPECT_EQ(log.dropped(), 0u);

  const ReplayRecord record = ReplayRecord::load(log_path.string());
  auto replay_graph = graph_of(yaml);
  Recorder replayed(*replay_graph, Recorder::Options{.samples_per_task = 1u << 14, .keep = Recorder::kKeepAll});
  FrameLog replayed_frames(names, 1u << 14);
  {
    ReplayExecutor executor(*replay_graph, record);
    ASSERT_TRUE(executor.run(&replayed, &replayed_frames, &why)) << why;
  }
  for (const auto& b : record.batches) {
    replayed.drain(nullptr, b.recorded);
    replayed_frames.drain(nullptr, nullptr, b.frame_rows);
  }
  replayed.finish(nullptr);
  replayed_frames.finish(nullptr, nullptr);

  ASSERT_EQ(replay_graph->tasks().size(), run_graph->tasks().size());
  for (std::size_t i = 0; i < run_graph->tasks().size(); ++i) {
    const TaskRuntime& a = *run_graph->tasks()[i];
    EXPECT_GT(a.stats().frames.load(), 0u) << a.spec().name;
    EXPECT_EQ(figures(*replay_graph->tasks()[i]), figures(a)) << "task " << a.spec().name;
  }
  const auto& sa = recorder.series();
  const auto& sb = replayed.series();
  ASSERT_EQ(sb.size(), sa.size());
  ASSERT_FALSE(sa.empty());
  for (std::size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sb[i].signal, sa[i].signal);
    EXPECT_GT(sa[i].time.size(), 5u) << sa[i].signal;
    EXPECT_EQ(bits(sb[i].time), bits(sa[i].time)) << sa[i].signal;
    EXPECT_EQ(bits(sb[i].value), bits(sa[i].value)) << sa[i].signal;
  }
  EXPECT_EQ(replayed.dropped(), recorder.dropped());
  EXPECT_EQ(replayed_frames.rows_drained(), frames.rows_drained());
}

TEST(ReplayDifferential, RealTimeRunsOfGeneratedGraphsAreReplayedBitForBit) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay_diff");
  for (std::uint32_t seed = 4545000; seed < 4545020; ++seed) {
    check_case(seed, dir);
    if (::testing::Test::HasFatalFailure()) break;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rtcosim::runtime
