#include "runtime/virtual_executor.hpp"

#include <cmath>
#include <memory>
#include <stdexcept>

#include <gtest/gtest.h>

#include "rt_config/loader.hpp"
#include "tests/support/alloc_counter.hpp"
#include "tests/support/graphs.hpp"

namespace rtcosim::runtime {
namespace {

using rtcosim::testing::build_graph;
using rtcosim::testing::load_example;

std::vector<FrameRecord> frames_of(const VirtualExecutor& e, const std::string& task) {
  std::vector<FrameRecord> out;
  for (const auto& f : e.frames()) {
    if (f.task == task) out.push_back(f);
  }
  return out;
}

// Reference table 10.1: N = 8, actuator 1 ms and airframe 10 ms per frame,
// one airframe execution doubled.
TEST(VirtualExecutor, Table10_1MeasuredStepsAbsorbTheDoubledAirframeFrame) {
  const auto spec = load_example("overrun_virtual.yaml");
  auto graph = build_graph(spec);
  VirtualExecutor executor(*graph, true);
  executor.run(0.2);

  const auto airframe = frames_of(executor, "airframe");
  const auto actuator = frames_of(executor, "actuator");
  ASSERT_GE(airframe.size(), 5u);
  EXPECT_NEAR(airframe[0].step, 0.018, 1e-12);
  EXPECT_NEAR(airframe[1].step, 0.028, 1e-12);  // the doubled execution
  for (std::size_t n = 2; n < airframe.size(); ++n) EXPECT_NEAR(airframe[n].step, 0.018, 1e-12) << n;

  ASSERT_GE(actuator.size(), 40u);
  for (std::size_t j = 0; j < 16; ++j) EXPECT_NEAR(actuator[j].step, 0.00225, 1e-12) << j;
  for (std::size_t j = 16; j < 24; ++j) EXPECT_NEAR(actuator[j].step, 0.0035, 1e-12) << j;  // the eight following
  for (std::size_t j = 24; j < actuator.size(); ++j) EXPECT_NEAR(actuator[j].step, 0.00225, 1e-12) << j;

  // Back in step with real time: after the recovery the airframe's
  // simulation time equals the wall time of its integration point.
  for (std::size_t n = 1; n < airframe.size(); ++n) EXPECT_NEAR(airframe[n].sim_time, airframe[n].end, 1e-9) << n;
  // The actuator's eight steps of a cycle add up to the cycle's airframe
  // step, so both partitions reach the wall time of the airframe's
  // integration point together, except in the one cycle whose actuator
  // steps were sized before the doubled frame was measured.
  for (std::size_t c = 1; c <= airframe.size(); ++c) {
    if (c == 2) continue;
    EXPECT_NEAR(actuator[8 * c - 1].sim_time, airframe[c - 1].end, 1e-9) << "cycle " << c;
  }
  EXPECT_NEAR(actuator[15].sim_time, airframe[1].end - 0.010, 1e-9);  // 10 ms short: the doubling
}

TEST(VirtualExecutor, ARunIsDeterministic) {
  const auto spec = load_example("overrun_virtual.yaml");
  auto a = build_graph(spec);
  auto b = build_graph(spec);
  VirtualExecutor ea(*a, true), eb(*b, true);
  ea.run(0.3);
  eb.run(0.3);
  ASSERT_EQ(ea.frames().size(), eb.frames().size());
  for (std::size_t i = 0; i < ea.frames().size(); ++i) {
    EXPECT_EQ(ea.frames()[i].step, eb.frames()[i].step);
    EXPECT_EQ(ea.frames()[i].sim_time, eb.frames()[i].sim_time);
  }
  const auto& pa = a->find_task("airframe")->partition();
  const auto& pb = b->find_task("airframe")->partition();
  for (std::size_t i = 0; i < pa.state_size(); ++i) EXPECT_EQ(pa.state()[i], pb.state()[i]);
}

// A second run of the same graph is a fresh run: the same counts, not their
// sum, and measured steps start nominal again.
TEST(VirtualExecutor, ASecondRunStartsFromScratch) {
  auto graph = build_graph(load_example("overrun_virtual.yaml"));
  VirtualExecutor executor(*graph, true);
  executor.run(0.2);
  const auto& airframe = graph->find_task("airframe")->stats();
  const auto frames = airframe.frames.load(), overruns = airframe.overruns.load();
  const auto latencies = airframe.wakeup_latency_ns.count();
  const double first_step = executor.frames().front().step, sim = graph->find_task("airframe")->partition().time();
  executor.run(0.2);
  EXPECT_EQ(airframe.frames.load(), frames);
  EXPECT_EQ(airframe.overruns.load(), overruns);
  EXPECT_EQ(airframe.wakeup_latency_ns.count(), latencies);
  EXPECT_EQ(executor.frames().front().step, first_step);
  EXPECT_EQ(graph->find_task("airframe")->partition().time(), sim);
}

TEST(VirtualExecutor, FixedStepsKeepThePeriodAndCountLag) {
  const auto spec = load_example("two_task_sine.yaml");
  auto graph = build_graph(spec);
  VirtualExecutor executor(*graph, true);
  executor.run(1.0);
  const auto fast = frames_of(executor, "fast");
  const auto slow = frames_of(executor, "slow");
  EXPECT_EQ(fast.size(), 1000u);
  EXPECT_EQ(slow.size(), 25u);
  for (const auto& f : fast) EXPECT_EQ(f.step, 0.001);
  for (const auto& l : graph->links()) {
    EXPECT_EQ(l->link->dropped(), 0u);
    EXPECT_EQ(l->link->published(), 26u);  // the initial block plus one per frame
  }
}

// Two tasks with scripted execution times, each alone in a partition with a
// constant block; `cpu_b` and `prio_b` place the second one.
struct Pair {
  std::unique_ptr<Graph> graph;
  VirtualExecutor executor;
  explicit Pair(std::unique_ptr<Graph> g) : graph(std::move(g)), executor(*graph, true) {}
};

std::unique_ptr<Graph> two_tasks(int cpu_b, int prio_b, const std::string& exec_b = "2ms",
                                 const std::string& period_b = "10ms", const std::string& overrun_a = "rephase") {
  const std::string yaml =
      "name: pair\nrealtime: off\ntasks:\n"
      "  - {name: a, period: 1ms, cpu: 0, priority: 90, step: measured, max_step: 1s,"
      " overrun: " +
      overrun_a +
      ", execution: {nominal: 300us}}\n"
      "  - {name: b, period: " +
      period_b + ", cpu: " + std::to_string(cpu_b) + ", priority: " + std::to_string(prio_b) +
      ", step: measured, max_step: 1s, execution: {nominal: " + exec_b +
      "}}\n"
      "blocks:\n"
      "  - {name: ka, type: constant, task: a, params: {value: 1}}\n"
      "  - {name: ia, type: integrator, task: a}\n"
      "  - {name: kb, type: constant, task: b, params: {value: 1}}\n"
      "  - {name: ib, type: integrator, task: b}\n"
      "wires:\n"
      "  - {from: ka.y, to: ia.u}\n"
      "  - {from: kb.y, to: ib.u}\n";
  return build_graph(rtcosim::testing::checked(config::load_graph_text(yaml, "pair.yaml")));
}

const TaskRuntime& task(Graph& g, const std::string& name) {
  for (const auto& t : g.tasks()) {
    if (t->spec().name == name) return *t;
  }
  throw std::runtime_error("no task " + name);
}

// Response-time analysis for the lower-priority task b (C = 2 ms) under a
// (T = 1 ms, C = 0.3 ms), both released at 0: R = 2 + ceil(R / 1) 0.3
// converges to 2.9 ms. b runs 0.3-1.0, 1.3-2.0, 2.3-2.9 ms.
TEST(VirtualExecutor, AHigherPriorityTaskOnTheSameCpuPreemptsTheFrame) {
  Pair p(two_tasks(0, 80));
  p.executor.run(0.01);
  const auto b = frames_of(p.executor, "b");
  const auto a = frames_of(p.executor, "a");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_NEAR(b[0].start, 0.0003, 1e-12);
  EXPECT_NEAR(b[0].end, 0.0029, 1e-12);
  // A measured task's first step is one nominal period, wherever its
  // integration point falls.
  EXPECT_NEAR(b[0].sim_time, 0.01, 1e-12);
  ASSERT_EQ(a.size(), 10u);
  for (std::size_t k = 0; k < a.size(); ++k) {
    EXPECT_NEAR(a[k].start, 0.001 * static_cast<double>(k), 1e-12) << k;  // never delayed
    EXPECT_NEAR(a[k].end, 0.001 * static_cast<double>(k) + 0.0003, 1e-12) << k;
  }
  const auto& tb = task(*p.graph, "b");
  // Its execution time is the span it occupied, preemptions included, and
  // its wake-up latency the 0.3 ms it waited for a.
  EXPECT_EQ(tb.stats().execution_ns.max(), 2'600'000);
  EXPECT_EQ(tb.stats().wakeup_latency_ns.max(), 300'000);
  EXPECT_EQ(task(*p.graph, "a").stats().wakeup_latency_ns.max(), 0);
  EXPECT_EQ(tb.stats().overruns.load(), 0u);
}

TEST(VirtualExecutor, TasksOnDifferentCpusDoNotInterfere) {
  Pair p(two_tasks(1, 80));
  p.executor.run(0.01);
  const auto b = frames_of(p.executor, "b");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_NEAR(b[0].start, 0.0, 1e-12);
  EXPECT_NEAR(b[0].end, 0.002, 1e-12);
}

// With b above a, a released together with b waits for b's whole frame.
// Under catch_up a's frames 0, 1 and 2, due at 0, 1 and 2 ms, run back to
// back after b, and frame 3 is on its schedule again.
TEST(VirtualExecutor, TheHigherPriorityFrameRunsFirstAtAJointReleaseCatchUp) {
  Pair p(two_tasks(0, 95, "2ms", "10ms", "catch_up"));
  p.executor.run(0.004);
  const auto a = frames_of(p.executor, "a");
  const auto b = frames_of(p.executor, "b");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_NEAR(b[0].end, 0.002, 1e-12);
  ASSERT_EQ(a.size(), 4u);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_NEAR(a[k].start, 0.002 + 0.0003 * static_cast<double>(k), 1e-12) << k;
    EXPECT_NEAR(a[k].end, 0.0023 + 0.0003 * static_cast<double>(k), 1e-12) << k;
  }
  EXPECT_NEAR(a[3].start, 0.003, 1e-12);
  // Measured steps: frame 0 integrates 2.3 ms after the epoch, later than
  // one period, and takes all of it (the first frame's lateness is owed
  // like any other); frames 1 and 2 follow 0.3 ms apart and frame 3 0.4 ms
  // later: no step shorter than half a period, the simulation running
  // ahead of the wall clock by 0.2, 0.4 and (capped) 0.5 ms.
  EXPECT_NEAR(a[0].step, 0.0023, 1e-12);
  const double ahead[] = {0.0, 0.0002, 0.0004, 0.0005};
  for (std::size_t k = 0; k < a.size(); ++k) {
    EXPECT_NEAR(a[k].step, k == 0 ? 0.0023 : 0.0005, 1e-12) << k;
    EXPECT_NEAR(a[k].sim_time - a[k].end, ahead[k], 1e-12) << k;
  }
  // Frame 0 ended at 2.3 ms, past its deadline (1 ms), frame 1 at 2.6 ms
  // past its deadline (2 ms), frame 2 at 2.9 ms within 3 ms: two overruns.
  // Every release got its frame: nothing missed.
  const auto& ta = task(*p.graph, "a");
  EXPECT_EQ(ta.stats().overruns.load(), 2u);
  EXPECT_EQ(ta.stats().missed_periods.load(), 0u);
  // Frames 0 and 3 slept until their release (latencies 2 ms and 0); 1 and
  // 2 started late without sleeping: start lateness only.
  EXPECT_EQ(ta.stats().wakeup_latency_ns.count(), 2u);
  EXPECT_EQ(ta.stats().wakeup_latency_ns.max(), 2'000'000);
  EXPECT_EQ(ta.stats().wakeup_latency_ns.min(), 0);
  EXPECT_EQ(ta.stats().start_lateness_ns.count(), 4u);
  EXPECT_EQ(a[1].latency_ns, -1);
  EXPECT_EQ(a[1].start_lateness_ns, 1'300'000);
  EXPECT_EQ(a[2].start_lateness_ns, 600'000);
  EXPECT_EQ(a[3].latency_ns, 0);
}

// The same under rephase (the default for measured steps): frame 0 started
// 2 ms late, so the grid moves to one period after that start: frame 1 at
// 3 ms with a nominal step; the grid moved 2 ms, two whole periods missed.
TEST(VirtualExecutor, TheHigherPriorityFrameRunsFirstAtAJointReleaseRephase) {
  Pair p(two_tasks(0, 95));
  p.executor.run(0.004);
  const auto a = frames_of(p.executor, "a");
  ASSERT_EQ(a.size(), 2u);
  EXPECT_NEAR(a[0].start, 0.002, 1e-12);
  EXPECT_NEAR(a[1].start, 0.003, 1e-12);
  EXPECT_NEAR(a[1].step, 0.001, 1e-12);
  const auto& ta = task(*p.graph, "a");
  EXPECT_EQ(ta.stats().overruns.load(), 1u);
  EXPECT_EQ(ta.stats().missed_periods.load(), 2u);
  EXPECT_EQ(ta.stats().wakeup_latency_ns.count(), 2u);  // both slept until their release
  EXPECT_EQ(a[1].start_lateness_ns, 0);                 // released at 3 ms, started then
}

// An overloaded CPU (utilisation 0.3 + 0.9 > 1): the higher priority keeps
// its schedule, the lower one overruns every frame.
TEST(VirtualExecutor, AnOverloadedCpuMakesOnlyTheLowerPriorityOverrun) {
  Pair p(two_tasks(0, 80, "9ms"));
  p.executor.run(0.1);
  const auto& ta = task(*p.graph, "a");
  const auto& tb = task(*p.graph, "b");
  EXPECT_EQ(ta.stats().overruns.load(), 0u);
  EXPECT_EQ(tb.stats().overruns.load(), tb.stats().frames.load());
  EXPECT_GT(tb.stats().frames.load(), 5u);
  // A measured step absorbs the lateness: b keeps its distance to the wall
  // clock, set by its first frame.
  const auto b = frames_of(p.executor, "b");
  for (const auto& f : b) EXPECT_NEAR(f.sim_time - f.end, b[0].sim_time - b[0].end, 1e-12);
}

// The executor's event queues at scale: 60 tasks pinned to one CPU, all
// released together every 10 ms with 100 us of work, run strictly by
// priority, so the k-th highest waits k x 100 us for each of its frames;
// 2000 unpinned tasks beside them each keep their own processor. Exact
// counts and times: the order of 2060 threads at each instant is the whole
// test.
TEST(VirtualExecutor, SixtyTasksOnOneCpuRunInPriorityOrderBesideTwoThousandUnpinned) {
  std::string tasks = "name: crowd\nrealtime: off\ntasks:\n", blocks = "blocks:\n", wires = "wires:\n";
  auto add = [&](const std::string& name, const std::string& placement, const std::string& period,
                 const std::string& exec) {
    tasks += "  - {name: " + name + ", period: " + period + placement + ", execution: {nominal: " + exec + "}}\n";
    blocks += "  - {name: k" + name + ", type: constant, task: " + name + ", params: {value: 1}}\n";
    blocks += "  - {name: i" + name + ", type: integrator, task: " + name + "}\n";
    wires += "  - {from: k" + name + ".y, to: i" + name + ".u}\n";
  };
  // The file lists the lowest priority first: file order and priority
  // order disagree.
  for (int k = 59; k >= 0; --k) {
    add("p" + std::to_string(k), ", cpu: 0, priority: " + std::to_string(90 - k), "10ms", "100us");
  }
  for (int k = 0; k < 2000; ++k) add("u" + std::to_string(k), "", k % 2 ? "1ms" : "2ms", "300us");
  auto graph = build_graph(rtcosim::testing::checked(config::load_graph_text(tasks + blocks + wires, "crowd.yaml")));
  VirtualExecutor executor(*graph);
  executor.run(0.1);
  for (int k = 0; k < 60; ++k) {
    const auto& t = task(*graph, "p" + std::to_string(k)).stats();
    EXPECT_EQ(t.frames.load(), 10u) << k;
    EXPECT_EQ(t.overruns.load(), 0u) << k;
    EXPECT_EQ(t.start_lateness_ns.min(), 100'000 * k) << k;
    EXPECT_EQ(t.start_lateness_ns.max(), 100'000 * k) << k;
    EXPECT_EQ(t.execution_ns.max(), 100'000) << k;
  }
  for (int k = 0; k < 2000; ++k) {
    const auto& t = task(*graph, "u" + std::to_string(k)).stats();
    ASSERT_EQ(t.frames.load(), k % 2 ? 100u : 50u) << k;
    ASSERT_EQ(t.start_lateness_ns.max(), 0) << k;
    ASSERT_EQ(t.overruns.load(), 0u) << k;
  }
}

// In a rate group the slow frame runs after the fast frames of its cycle
// on the same thread, so it reads what they published.
TEST(VirtualExecutor, ARateGroupsSlowFrameSeesItsFastFramesOutputs) {
  const auto spec = load_example("overrun_virtual.yaml");
  auto graph = build_graph(spec);
  VirtualExecutor executor(*graph, true);
  executor.run(0.1);
  ASSERT_EQ(graph->links().size(), 1u);
  // Each airframe frame consumed data the actuator had produced 8 frames
  // (18 ms of simulation) ahead of the airframe's own time.
  const auto& age = graph->links().front()->stats->data_age;
  EXPECT_GT(age.count(), 0u);
  EXPECT_NEAR(age.max(), -0.018, 1e-9);
  EXPECT_NEAR(age.min(), -0.018, 1e-9);
}

class EveryExample : public ::testing::TestWithParam<const char*> {};

// Two fixed-step tasks pinned to no CPU, 6 ms of execution every 10 ms:
// each gets a processor of its own, as on a machine with enough cores, so
// neither waits for the other. A fixed step released on its grid has lag
// = the wall time of its integration point - (simulation time after the
// step - period) = its execution time, 6 ms, in every frame.
TEST(VirtualExecutor, UnpinnedTasksRunSideBySideAndLagByTheirExecutionTime) {
  const std::string yaml =
      "name: unpinned\nrealtime: off\ntasks:\n"
      "  - {name: a, period: 10ms, priority: 90, execution: {nominal: 6ms}}\n"
      "  - {name: b, period: 10ms, priority: 80, execution: {nominal: 6ms}}\n"
      "blocks:\n"
      "  - {name: ka, type: constant, task: a, params: {value: 1}}\n"
      "  - {name: ia, type: integrator, task: a}\n"
      "  - {name: kb, type: constant, task: b, params: {value: 1}}\n"
      "  - {name: ib, type: integrator, task: b}\n"
      "wires:\n"
      "  - {from: ka.y, to: ia.u}\n"
      "  - {from: kb.y, to: ib.u}\n";
  Pair p(build_graph(rtcosim::testing::checked(config::load_graph_text(yaml, "unpinned.yaml"))));
  p.executor.run(0.05);
  for (const char* name : {"a", "b"}) {
    const auto f = frames_of(p.executor, name);
    ASSERT_EQ(f.size(), 5u) << name;
    for (std::size_t k = 0; k < f.size(); ++k) {
      EXPECT_NEAR(f[k].start, 0.01 * static_cast<double>(k), 1e-12) << name << k;
      EXPECT_NEAR(f[k].end, 0.01 * static_cast<double>(k) + 0.006, 1e-12) << name << k;
    }
    const auto& t = task(*p.graph, name);
    EXPECT_EQ(t.stats().overruns.load(), 0u) << name;
    EXPECT_EQ(t.stats().lag.count(), 5u) << name;
    EXPECT_NEAR(t.stats().lag.min(), 0.006, 1e-12) << name;
    EXPECT_NEAR(t.stats().lag.max(), 0.006, 1e-12) << name;
  }
}

// A frame that takes its whole period ends exactly at the next release;
// over 30 ms the cycles due at 0, 10 and 20 ms run, the one due at the end
// (30 ms) does not: 3 frames, no overrun (ending at the deadline is in
// time), nothing missed.
TEST(VirtualExecutor, ACycleDueExactlyAtTheEndDoesNotStart) {
  Pair p(two_tasks(1, 80, "10ms"));
  p.executor.run(0.03);
  const auto b = frames_of(p.executor, "b");
  ASSERT_EQ(b.size(), 3u);
  for (std::size_t k = 0; k < b.size(); ++k) {
    EXPECT_NEAR(b[k].start, 0.01 * static_cast<double>(k), 1e-12) << k;
    EXPECT_NEAR(b[k].end, 0.01 * static_cast<double>(k + 1), 1e-12) << k;
  }
  const auto& tb = task(*p.graph, "b");
  EXPECT_EQ(tb.stats().frames.load(), 3u);
  EXPECT_EQ(tb.stats().cycles.load(), 3u);
  EXPECT_EQ(tb.stats().overruns.load(), 0u);
  EXPECT_EQ(tb.stats().missed_periods.load(), 0u);
}

// A period that does not divide the run's duration: a fixed step's last
// frame ends on the duration, not a part period past it (docs/figures.md,
// "frames"). A 7 ms task over 1 s runs 143 frames, the last of 6 ms from
// 0.994 s; its integrator of 1 reaches exactly 1.
TEST(VirtualExecutor, TheLastFrameEndsOnTheDurationWhereThePeriodDoesNotDivideIt) {
  for (const char* step : {"fixed"}) {
    const std::string yaml = std::string(
                                 "name: p7\nrealtime: off\ntasks:\n"
                                 "  - {name: a, period: 1ms, execution: {nominal: 100us}}\n"
                                 "  - {name: b, period: 7ms, step: ") +
                             step +
                             ", execution: {nominal: 100us}}\n"
                             "blocks:\n"
                             "  - {name: k, type: constant, task: a, params: {value: 1}}\n"
                             "  - {name: i, type: integrator, task: b}\n"
                             "wires:\n"
                             "  - {from: k.y, to: i.u}\n";
    auto graph = build_graph(rtcosim::testing::checked(config::load_graph_text(yaml, "p7.yaml")));
    VirtualExecutor executor(*graph, true);
    executor.run(1.0);
    const auto b = frames_of(executor, "b");
    ASSERT_EQ(b.size(), 143u) << step;
    EXPECT_NEAR(b.back().step, 0.006, 1e-12) << step;
    EXPECT_DOUBLE_EQ(b.back().sim_time, 1.0) << step;
    for (std::size_t k = 0; k + 1 < b.size(); ++k) EXPECT_NEAR(b[k].step, 0.007, 1e-12) << step << " frame " << k;
    const auto& pb = task(*graph, "b").partition();
    EXPECT_NEAR(pb.output(pb.find_output({"i", "y"}))[0], 1.0, 1e-12) << step;
    const auto a = frames_of(executor, "a");
    ASSERT_EQ(a.size(), 1000u) << step;
    EXPECT_DOUBLE_EQ(a.back().sim_time, 1.0) << step;
  }
}

TEST_P(EveryExample, SteadyStateFramesOfEveryTaskAllocateNothing) {
  const auto spec = load_example(GetParam());
  auto graph = build_graph(spec);
  graph->reset();
  auto one_round = [&] {
    for (auto& t : graph->tasks()) {
      t->drain();
      t->step(t->spec().period);
      t->publish();
    }
  };
  for (int i = 0; i < 100; ++i) one_round();  // warm-up
  rtcosim::testing::AllocationScope scope;
  for (int i = 0; i < 10000; ++i) one_round();
  EXPECT_EQ(scope.count(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Examples, EveryExample,
                         ::testing::Values("flight_control.yaml", "overrun_virtual.yaml", "two_task_sine.yaml",
                                           "four_task.yaml"));

}  // namespace
}  // namespace rtcosim::runtime
