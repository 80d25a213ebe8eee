// The real-time loop (run_unit) driven by a fake clock: the same cycle code
// that runs on CLOCK_MONOTONIC, made deterministic, so that its steps and
// counts can be held to exact values and to the virtual executor's.
#include "runtime/unit_loop.hpp"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "runtime/virtual_executor.hpp"
#include "tests/support/alloc_counter.hpp"
#include "tests/support/graphs.hpp"

namespace rtcosim::runtime {
namespace {

using rtcosim::testing::build_graph;
using rtcosim::testing::checked;

// Time stands still except where the loop sleeps (to the deadline, plus a
// scripted wake-up latency) and where a frame does its scripted work.
struct FakeClock {
  std::int64_t t = -1'000'000;  // set-up ends before the epoch, as start_delay makes it
  std::int64_t wake_latency_ns = 0;
  std::uint64_t sleeps = 0;
  std::int64_t now() noexcept { return t; }
  void sleep_until(std::int64_t deadline_ns) noexcept {
    ++sleeps;
    t = std::max(t, deadline_ns) + wake_latency_ns;
  }
  void before_integration(const TaskRuntime& task, std::uint64_t frame) noexcept {
    t += seconds_to_ns(execution_time(task.spec(), frame));
  }
};

std::unique_ptr<Graph> graph_of(const std::string& tasks, const std::string& blocks, const std::string& wires = "") {
  const std::string yaml = "name: scenario\nrealtime: off\ntasks:\n" + tasks + "blocks:\n" + blocks +
                           (wires.empty() ? "wires: []\n" : "wires:\n" + wires);
  return build_graph(checked(config::load_graph_text(yaml, "scenario.yaml")));
}

// The same graph stalled and steady, both run in virtual time for
// `duration`: `tasks` has a "%s" where the stalled run's first task takes
// `execution`.
std::pair<std::unique_ptr<Graph>, std::unique_ptr<Graph>> stalled_and_steady(const std::string& tasks,
                                                                             const std::string& execution,
                                                                             const std::string& blocks,
                                                                             const std::string& wires,
                                                                             double duration) {
  auto with = [&](const std::string& e) {
    std::string t = tasks;
    t.replace(t.find("%s"), 2, e);
    return graph_of(t, blocks, wires);
  };
  auto stalled = with(execution);
  auto steady = with("");
  VirtualExecutor(*stalled, false).run(duration);
  VirtualExecutor(*steady, false).run(duration);
  return {std::move(stalled), std::move(steady)};
}

// One task: period 10 ms, every frame 15 ms of work, one integrator.
std::unique_ptr<Graph> overloaded(const std::string& overrun, const std::string& step = "fixed") {
  return graph_of(
      "  - {name: t, period: 10ms, step: " + step + ", overrun: " + overrun + ", execution: {nominal: 15ms}}\n",
      "  - {name: k, type: constant, task: t, params: {value: 1}}\n"
      "  - {name: i, type: integrator, task: t}\n",
      "  - {from: k.y, to: i.u}\n");
}

// Runs every thread of the graph, one after the other, each on its own fake
// clock from epoch 0 (the graph's threads must not share data for this to
// equal a concurrent run); returns the frame rows as --frames writes them.
std::string run_with_fake_clock(Graph& graph, double duration, std::int64_t wake_latency_ns = 0) {
  graph.reset();
  auto units = thread_units(graph);
  std::vector<std::string> names;
  for (const auto& t : graph.tasks()) names.push_back(t->spec().name);
  FrameLog log(names, 1u << 16);
  const std::atomic<bool> running{true};
  for (auto& u : units) {
    u.reset(0, seconds_to_ns(duration));
    FakeClock clock;
    clock.wake_latency_ns = wake_latency_ns;
    run_unit(u, clock, 0, seconds_to_ns(duration), running, UnitSinks{nullptr, &log});
  }
  // Through a real record file, as --frames writes them.
  const auto path = std::filesystem::temp_directory_path() / ("rtcosim_unit_loop_" + std::to_string(getpid()) + ".csv");
  std::string why;
  auto file = RecordFile::create(path.string(), &why);
  EXPECT_TRUE(file) << why;
  if (!file) return {};
  log.finish(*file);
  EXPECT_TRUE(file->commit()) << file->error();
  std::ifstream in(path);
  std::stringstream rows;
  rows << in.rdbuf();
  std::filesystem::remove(path);
  return rows.str();
}

std::string run_virtual(Graph& graph, double duration) {
  VirtualExecutor executor(graph, true);
  executor.run(duration);
  // The frame log writes task by task; so does this.
  std::string rows;
  for (const auto& t : graph.tasks()) {
    for (const auto& f : executor.frames()) {
      if (f.task != t->spec().name) continue;
      FrameLog::write_row(rows, f.task,
                          FrameRow{f.frame, f.end, f.sim_time, f.step, f.latency_ns,
                                   std::llround((f.end - f.start) * 1e9), f.start_lateness_ns});
    }
  }
  return rows;
}

struct Counts {
  std::uint64_t frames, overruns, missed, latencies, lateness;
  bool operator==(const Counts&) const = default;
};
std::ostream& operator<<(std::ostream& o, const Counts& c) {
  return o << "{frames " << c.frames << ", overruns " << c.overruns << ", missed " << c.missed << ", latencies "
           << c.latencies << ", lateness " << c.lateness << "}";
}
Counts counts(const TaskRuntime& t) {
  const auto& s = t.stats();
  return {s.frames.load(), s.overruns.load(), s.missed_periods.load(), s.wakeup_latency_ns.count(),
          s.start_lateness_ns.count()};
}

// Period 10 ms, every frame 15 ms, 1 s: 100 release instants.
//   catch_up: frames back to back at 0, 15, ..., 990 (67), every one ends
//             after its deadline; 33 instants never get a frame.
//   skip:     frames at 0, 20, ..., 980 (50), each misses the instant that
//             passed while it ran (50).
//   rephase:  frames back to back (67), the grid moves 5 ms per frame:
//             335 ms in all, 33 whole periods missed.
// Only frame 0 sleeps (to the epoch): one wake-up latency; every frame has
// a start lateness.
TEST(UnitLoop, OverloadCountsEachDeadlineOnceUnderEveryPolicy) {
  const struct {
    const char* policy;
    Counts expected;
  } cases[] = {
      {"catch_up", {67, 67, 33, 1, 67}},
      {"skip", {50, 50, 50, 50, 50}},
      {"rephase", {67, 67, 33, 1, 67}},
  };
  for (const auto& c : cases) {
    auto graph = overloaded(c.policy);
    const std::string virtual_rows = run_virtual(*graph, 1.0);
    EXPECT_EQ(counts(*graph->tasks()[0]), c.expected) << c.policy << " (virtual time)";
    const std::string loop_rows = run_with_fake_clock(*graph, 1.0);
    EXPECT_EQ(counts(*graph->tasks()[0]), c.expected) << c.policy << " (real-time loop)";
    EXPECT_EQ(loop_rows, virtual_rows) << c.policy;
  }
}

// Under catch_up only frame 0 sleeps (to the epoch): one latency; every
// later frame starts when its predecessor ends, 5 ms later each time.
// A run whose epoch lies an hour ahead (a spoofed or mistaken start
// announce) must still stop at once: the thread sleeps towards a far
// release in pieces of at most kStopCheckNs and looks at `running` between.
TEST(UnitLoop, AStopWakesAThreadWaitingForAFarEpoch) {
  struct StoppingClock {
    std::int64_t t = 0;
    std::vector<std::int64_t> asked;
    std::atomic<bool>* running = nullptr;
    std::int64_t now() noexcept { return t; }
    void sleep_until(std::int64_t deadline_ns) noexcept {
      asked.push_back(deadline_ns);
      t = std::max(t, deadline_ns);
      if (asked.size() == 3) running->store(false);  // the stop arrives during the third piece
    }
    void before_integration(const TaskRuntime&, std::uint64_t) noexcept {}
  };
  auto graph = overloaded("skip");
  graph->reset();
  auto units = thread_units(*graph);
  std::atomic<bool> running{true};
  const std::int64_t epoch = 3600 * std::int64_t{1'000'000'000};
  units[0].reset(epoch, 0);
  StoppingClock clock;
  clock.running = &running;
  run_unit(units[0], clock, epoch, 0, running, UnitSinks{});
  EXPECT_EQ(clock.asked, (std::vector<std::int64_t>{kStopCheckNs, 2 * kStopCheckNs, 3 * kStopCheckNs}));
  EXPECT_EQ(graph->tasks()[0]->stats().frames.load(), 0u);
}

TEST(UnitLoop, WakeUpLatencyIsMeasuredOnlyAfterASleep) {
  auto graph = overloaded("catch_up");
  (void)run_with_fake_clock(*graph, 1.0, 40'000);
  const auto& s = graph->tasks()[0]->stats();
  EXPECT_EQ(s.wakeup_latency_ns.count(), 1u);  // only frame 0 slept
  EXPECT_EQ(s.wakeup_latency_ns.max(), 40'000);
  // Frame k starts at 40 us + 15 k ms for release 10 k ms.
  EXPECT_EQ(s.start_lateness_ns.min(), 40'000);
  EXPECT_EQ(s.start_lateness_ns.max(), 40'000 + 66 * 5'000'000);
}

// A 50 ms hog in a 1 ms task of 0.1 ms frames, catch_up: the 55 frames that
// repay the debt start late without sleeping and report no wake-up latency
// (before: latencies of 51 ms down to 2 ms); the frame after them sleeps.
TEST(UnitLoop, AHogLeavesLatenessNotLatency) {
  auto graph = graph_of(
      "  - {name: t, period: 1ms, overrun: catch_up, execution: {nominal: 100us, spikes: [{frame: 5, time: 50ms}]}}\n",
      "  - {name: k, type: constant, task: t, params: {value: 1}}\n");
  for (bool virtual_time : {true, false}) {
    virtual_time ? (void)run_virtual(*graph, 0.2) : (void)run_with_fake_clock(*graph, 0.2);
    const auto& s = graph->tasks()[0]->stats();
    EXPECT_EQ(s.frames.load(), 200u) << virtual_time;
    EXPECT_EQ(s.wakeup_latency_ns.count(), 200u - 55u) << virtual_time;
    EXPECT_EQ(s.wakeup_latency_ns.max(), 0) << virtual_time;
    EXPECT_EQ(s.start_lateness_ns.max(), 49'000'000) << virtual_time;  // release 6 ms, start 55 ms
    EXPECT_EQ(s.overruns.load(), 55u) << virtual_time;                 // frame 5 and 54 of the 55
    EXPECT_EQ(s.missed_periods.load(), 0u) << virtual_time;
  }
}

// The reference's table 10.1 through the real-time loop: the same rows as
// virtual time, one overrun, nothing missed.
TEST(UnitLoop, Table10_1IsTheSameInBothExecutors) {
  auto graph = build_graph(rtcosim::testing::load_example("overrun_virtual.yaml"));
  const std::string virtual_rows = run_virtual(*graph, 0.5);
  const std::string loop_rows = run_with_fake_clock(*graph, 0.5);
  EXPECT_EQ(loop_rows, virtual_rows);
  const TaskRuntime& airframe = *graph->find_task("airframe");
  EXPECT_EQ(airframe.stats().overruns.load(), 1u);
  EXPECT_EQ(airframe.stats().missed_periods.load(), 0u);
  EXPECT_NEAR(airframe.stats().step.min(), 0.018, 1e-12);
  EXPECT_NEAR(airframe.stats().step.max(), 0.028, 1e-12);
  EXPECT_EQ(graph->find_task("actuator")->stats().overruns.load(), 0u);
}

// A stall of 95 ms of work in frame 5 of a 10 ms task (max_step 20 ms, 4
// sub-steps), x' = 1 so that the state is the simulation time. Frame 5 is
// released at 50 ms, integrates at 145 ms: 104 ms since frame 4's point,
// 80 ms in 4 sub-steps, 24 ms owed. It ends at 145 ms and re-phases there;
// frame 6 integrates at 146 ms: 1 ms + 24 ms owed in 2 sub-steps, debt
// repaid. From then on the task is back on its place: simulation time
// 9 ms ahead of the wall (one period minus frame 0's 1 ms), as before.
TEST(UnitLoop, AStallIsRepaidWithExactCountsInBothExecutors) {
  auto graph = graph_of(
      "  - {name: t, period: 10ms, step: measured, max_step: 20ms, integrator: euler,"
      " execution: {nominal: 1ms, spikes: [{frame: 5, time: 95ms}]}}\n",
      "  - {name: k, type: constant, task: t, params: {value: 1}}\n"
      "  - {name: i, type: integrator, task: t}\n",
      "  - {from: k.y, to: i.u}\n");
  const std::string virtual_rows = run_virtual(*graph, 0.3);
  const TaskRuntime& t = *graph->find_task("t");
  for (bool virtual_time : {true, false}) {
    if (!virtual_time) {
      EXPECT_EQ(run_with_fake_clock(*graph, 0.3), virtual_rows);
    }
    const TaskStats& s = t.stats();
    EXPECT_EQ(s.stalls.load(), 1u);
    EXPECT_EQ(s.stalls_absorbed.load(), 1u);
    EXPECT_EQ(s.catch_up_frames.load(), 2u);
    EXPECT_EQ(s.longest_catch_up.load(), 2u);
    EXPECT_EQ(s.extra_substeps.load(), 3u + 1u);
    EXPECT_NEAR(s.owed_max.load(), 0.024, 1e-12);
    EXPECT_EQ(s.owed.load(), 0.0);
    EXPECT_EQ(s.lost_real_time.load(), 0.0);
    EXPECT_NEAR(s.step.max(), 0.080, 1e-12);
    // Lag is frame 0's 1 ms, plus the 24 ms owed after frame 5, and back.
    EXPECT_NEAR(s.lag.max(), 0.025, 1e-12);
    EXPECT_NEAR(s.lag.last(), 0.001, 1e-12);
    // Frames 0-4, 5 (stalled), 6 (repays), then 7.. released at 155 ms + 10 k
    // up to 300 ms: 15 more.
    EXPECT_EQ(s.frames.load(), 7u + 15u) << (virtual_time ? "virtual" : "loop");
    // The last frame integrates at 296 ms: simulation time 305 ms, and the
    // state x' = 1 holds it.
    EXPECT_NEAR(t.partition().time(), 0.305, 1e-12);
    EXPECT_NEAR(t.partition().state()[0], 0.305, 1e-12);
  }
}

// A fixed step does not run ahead of a producer that lags: `a` (20 ms, the
// higher priority) shares CPU 0 with `b` (1 ms), whose sine it integrates.
// a's frame 10 (released at 200 ms) executes 80 ms; b cannot run meanwhile.
// At 280 ms a's frame 11 would integrate 220-240 ms on b's block of 200 ms,
// 40 ms past it: b is 80 periods behind, so a waits one b period (one data
// wait); b repays its 81 frames back to back at 280 ms, and from 281 ms a
// repays frames 11-14 on b's blocks, nothing read past a horizon.
TEST(UnitLoop, AFixedStepWaitsOnceForAProducerThatLagsOnItsProcessor) {
  const std::string tasks =
      "  - {name: a, period: 20ms, cpu: 0, priority: 80, integrator: rk4, step: fixed%s}\n"
      "  - {name: b, period: 1ms, cpu: 0, priority: 70, integrator: rk4, step: fixed}\n";
  const std::string blocks =
      "  - {name: s, type: sine, task: b, params: {amplitude: 1, frequency: 2}}\n"
      "  - {name: i, type: integrator, task: a}\n";
  const std::string wires = "  - {from: s.y, to: i.u, coupling: {method: polynomial, order: 1}}\n";
  const auto [stalled, steady] =
      stalled_and_steady(tasks, ", execution: {nominal: 0s, spikes: [{frame: 10, time: 80ms}]}", blocks, wires, 0.5);
  const TaskRuntime& a = *stalled->find_task("a");
  EXPECT_EQ(a.stats().data_waits.load(), 1u);
  EXPECT_EQ(stalled->find_task("b")->stats().data_waits.load(), 0u);
  EXPECT_EQ(steady->find_task("a")->stats().data_waits.load(), 0u);
  const LinkHealth h = stalled->links().front()->health();
  EXPECT_EQ(h.beyond_horizon_frames, 0u);
  EXPECT_EQ(h.behind_history_frames, 0u);
  // The stalled frame itself extrapolates 20 ms, as every frame of `a` does
  // on time; the catch-up frames interpolate b's blocks.
  EXPECT_NEAR(h.longest_gap, 0.020, 1e-12);
  // At 0.5 s the state of the run with the stall is within 7e-5 of the
  // steady run's (-2.5e-3: both extrapolate b's sine 20 ms per frame; the
  // exact integral is 0). Without the wait, frames 11-14 read b held 40 to
  // 97 ms past its block of 200 ms (5 frames beyond the horizon) and the
  // state ends 0.038 away.
  const double x = a.partition().state()[0], x_steady = steady->find_task("a")->partition().state()[0];
  EXPECT_NEAR(a.partition().time(), 0.5, 1e-12);
  EXPECT_NEAR(x_steady, -2.5e-3, 1e-4);
  EXPECT_NEAR(x, x_steady, 2e-4);

  // `wait_for_data: false` (a task that keeps its deadlines whatever its
  // inputs) runs on as before the rule: no wait, 5 frames held at the horizon.
  const auto [off, off_steady] = stalled_and_steady(
      tasks, ", wait_for_data: false, execution: {nominal: 0s, spikes: [{frame: 10, time: 80ms}]}", blocks, wires, 0.5);
  EXPECT_EQ(off->find_task("a")->stats().data_waits.load(), 0u);
  EXPECT_EQ(off->links().front()->health().beyond_horizon_frames, 5u);
  EXPECT_NEAR(off->find_task("a")->partition().state()[0] - x_steady, 0.038, 0.002);
}

// A measured step holds for a lagging producer, and a fixed step that
// repays back to back waits for room in its consumer's ring: `src` (10 ms,
// fixed) stalls 160 ms on CPU 0 under `c` (2 ms, measured, the higher
// priority), which reads its sine. Before, c integrated those 160 ms on the
// sine held at its horizon and src's 16 catch-up blocks overflowed the
// 6-block ring (10 dropped); now c integrates only as far as src's data
// reaches (plus its own period) and owes the rest, src waits for c to drain,
// and c repays once the blocks are there.
TEST(UnitLoop, AMeasuredStepHoldsForALaggingProducerThatWaitsForRoom) {
  const std::string tasks =
      "  - {name: src, period: 10ms, cpu: 0, priority: 70, integrator: rk4, step: fixed%s}\n"
      "  - {name: c, period: 2ms, cpu: 0, priority: 80, integrator: ab2, step: measured, max_step: 8ms}\n";
  const std::string blocks =
      "  - {name: s, type: sine, task: src, params: {amplitude: 1, frequency: 2}}\n"
      "  - {name: i, type: integrator, task: c}\n";
  const std::string wires = "  - {from: s.y, to: i.u, coupling: {method: polynomial, order: 2}}\n";
  const auto [stalled, steady] =
      stalled_and_steady(tasks, ", execution: {nominal: 0s, spikes: [{frame: 25, time: 160ms}]}", blocks, wires, 1.0);
  const TaskRuntime& c = *stalled->find_task("c");
  const GraphLink& link = *stalled->links().front();
  EXPECT_EQ(link.link->dropped(), 0u);
  EXPECT_EQ(link.health().beyond_horizon_frames, 0u);
  EXPECT_GT(c.stats().data_waits.load(), 0u);
  EXPECT_GT(stalled->find_task("src")->stats().data_waits.load(), 0u);
  // c owed most of the stall (160 ms less what src's last block and c's
  // reach covered), and repaid all of it.
  EXPECT_GT(c.stats().owed_max.load(), 0.120);
  EXPECT_EQ(c.stats().owed.load(), 0.0);
  EXPECT_EQ(c.stats().lost_real_time.load(), 0.0);
  EXPECT_NEAR(c.partition().time(), steady->find_task("c")->partition().time(), 1e-9);
  // c integrates the sine, so what it read wrong stays in its state: at
  // 1 s it is within 7.3e-5 of the steady run's; without the hold and the
  // wait for room (58 frames beyond the horizon, 10 blocks dropped) 0.024.
  const double y = c.partition().state()[0], y_steady = steady->find_task("c")->partition().state()[0];
  EXPECT_NEAR(y, y_steady, 2e-4);
}

// A producer that publishes nothing (here: its thread never runs) is waited
// for up to ThreadUnit::kDataPatience (1 s) since the first wait, then given
// up on: the consumer (10 ms) finds b (5 ms) a period behind at frame 1
// (10 ms) and waits 5 ms at a time, 200 times (10 to 1005 ms), gives up at
// 1010 ms and never waits again, so that a hung producer costs that once.
TEST(UnitLoop, AProducerThatPublishesNothingIsWaitedForOnceAndThenGivenUp) {
  auto graph = graph_of(
      "  - {name: a, period: 10ms, step: fixed}\n"
      "  - {name: b, period: 5ms, step: fixed}\n",
      "  - {name: s, type: sine, task: b}\n"
      "  - {name: i, type: integrator, task: a}\n",
      "  - {from: s.y, to: i.u, coupling: {method: polynomial, order: 1}}\n");
  graph->reset();
  auto units = thread_units(*graph);
  ThreadUnit& a = units.front();
  ASSERT_EQ(a.owner().spec().name, "a");
  ASSERT_EQ(ThreadUnit::kDataPatience, 1.0);
  a.reset(0, seconds_to_ns(1.2));
  FakeClock clock;
  const std::atomic<bool> running{true};
  run_unit(a, clock, 0, seconds_to_ns(1.2), running, UnitSinks{});
  const TaskStats& s = a.owner().stats();
  EXPECT_EQ(s.data_waits.load(), 200u);
  // Frame 1 started 1 s late; catch_up runs frames 2-101 back to back at
  // 1010 ms, of which those released before 1000 ms end past their
  // deadlines (frames 1-99: 99 overruns); every release is served.
  EXPECT_EQ(s.frames.load(), 120u);
  EXPECT_EQ(s.start_lateness_ns.max(), 1'000'000'000);
  EXPECT_EQ(s.overruns.load(), 99u);
}

// Periods 1, 2 and 4 ms in one rate group: 4 + 2 + 1 frames per 4 ms cycle,
// each member at its own step, all at simulation time 1 s after 1 s.
TEST(UnitLoop, ARateGroupOfThreeRunsEachMemberAtItsRate) {
  auto graph = graph_of(
      "  - {name: fast, period: 1ms, cpu: 0, priority: 90, rate_group: g}\n"
      "  - {name: middle, period: 2ms, cpu: 0, priority: 90, rate_group: g}\n"
      "  - {name: slow, period: 4ms, cpu: 0, priority: 90, rate_group: g}\n",
      "  - {name: kf, type: constant, task: fast, params: {value: 1}}\n"
      "  - {name: km, type: constant, task: middle, params: {value: 1}}\n"
      "  - {name: ks, type: constant, task: slow, params: {value: 1}}\n");
  for (bool virtual_time : {true, false}) {
    virtual_time ? (void)run_virtual(*graph, 1.0) : (void)run_with_fake_clock(*graph, 1.0);
    for (const auto& [name, frames, step] :
         {std::tuple{"fast", 1000u, 0.001}, std::tuple{"middle", 500u, 0.002}, std::tuple{"slow", 250u, 0.004}}) {
      const TaskRuntime& t = *graph->find_task(name);
      EXPECT_EQ(t.stats().frames.load(), frames) << name << (virtual_time ? " virtual" : " loop");
      EXPECT_EQ(t.stats().step.min(), step) << name;
      EXPECT_EQ(t.stats().step.max(), step) << name;
      EXPECT_NEAR(t.partition().time(), 1.0, 1e-12) << name;
    }
    // The cycle belongs to the slowest member.
    EXPECT_EQ(graph->find_task("slow")->stats().cycles.load(), 250u);
    EXPECT_EQ(graph->find_task("fast")->stats().cycles.load(), 0u);
  }
}

// Measured steps in a rate group whose fast member has 2 ms frames: a slow
// (10 ms) cycle of 5 fast frames and one slow frame of 3 ms takes 13 ms, so
// every cycle overruns its 10 ms period and re-phases; steps follow.
TEST(UnitLoop, MeasuredRateGroupStepsFollowTheCycleInBothExecutors) {
  auto graph = graph_of(
      "  - {name: fast, period: 2ms, cpu: 0, priority: 90, rate_group: g, step: measured, max_step: 1s,"
      " execution: {nominal: 2ms}}\n"
      "  - {name: slow, period: 10ms, cpu: 0, priority: 90, rate_group: g, step: measured, max_step: 1s,"
      " execution: {nominal: 3ms}}\n",
      "  - {name: kf, type: constant, task: fast, params: {value: 1}}\n"
      "  - {name: i, type: integrator, task: slow}\n",
      "  - {from: kf.y, to: i.u}\n");
  const std::string virtual_rows = run_virtual(*graph, 0.2);
  const std::string loop_rows = run_with_fake_clock(*graph, 0.2);
  EXPECT_EQ(loop_rows, virtual_rows);
  const TaskRuntime& slow = *graph->find_task("slow");
  // Every step is the 13 ms cycle, the first too: its integration point
  // comes 13 ms after the epoch, later than one period, and that lateness is
  // owed like any other (the simulation is not left 3 ms behind for good).
  EXPECT_NEAR(slow.stats().step.min(), 0.013, 1e-12);
  EXPECT_NEAR(slow.stats().step.max(), 0.013, 1e-12);
  EXPECT_NEAR(slow.partition().time(), static_cast<double>(slow.stats().step.count()) * 0.013, 1e-12);
  EXPECT_NEAR(graph->find_task("fast")->stats().step.max(), 0.013 / 5, 1e-12);
  EXPECT_EQ(slow.stats().overruns.load(), slow.stats().cycles.load());
}

// After a warm-up, cycles allocate nothing in the loop: the flight-control
// example, and the mechanical blocks of the rim examples (each evaluation
// solves the bolt force with LDL^T and reduces a body to its RIM; both
// directions add the state-only pass).
TEST(UnitLoop, SteadyStateCyclesAllocateNothing) {
  for (const char* example : {"flight_control.yaml", "rim_two_mass.yaml", "rim_two_mass_two_way.yaml"}) {
    auto graph = build_graph(rtcosim::testing::load_example(example));
    graph->reset();
    auto units = thread_units(*graph);
    const std::atomic<bool> running{true};
    std::uint64_t waits = 0;
    for (auto& u : units) {
      u.reset(0);
      FakeClock clock;
      run_unit(u, clock, 0, seconds_to_ns(0.5), running, UnitSinks{});  // warm-up
      const std::uint64_t waits_before = u.owner().stats().data_waits.load();
      rtcosim::testing::AllocationScope scope;
      run_unit(u, clock, 0, seconds_to_ns(1.5), running, UnitSinks{});
      EXPECT_EQ(scope.count(), 0u) << example << ": " << u.owner().spec().name;
      EXPECT_GT(clock.sleeps, 0u);
      waits += u.owner().stats().data_waits.load() - waits_before;
    }
    // Run one after the other, a thread finds those that have not run yet
    // lagging: waits and holds (up to the 1 s give-up) are among the
    // frames counted.
    EXPECT_GT(waits, 0u) << example;
  }
}

}  // namespace
}  // namespace rtcosim::runtime
