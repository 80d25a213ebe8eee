// Response-time analysis of declared execution times (rt_config) against an
// independent reference: the virtual executor's preemptive schedule of the
// same graph. Every run starts with all threads released together, the
// critical instant, so each thread's first cycle takes exactly its
// worst-case response time when execution times are constant.
#include "rt_config/schedulability.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "runtime/virtual_executor.hpp"
#include "tests/support/graphs.hpp"

namespace rtcosim::config {
namespace {

using rtcosim::testing::build_graph;
using rtcosim::testing::checked;

// hi preempts everything on CPU 0; the rate group g (4 fast frames of
// 0.3 ms and one slow frame of 1 ms per 8 ms) preempts lo; `alone` has CPU 1.
constexpr const char* kGraph = R"(name: rta
realtime: off
tasks:
  - {name: hi,     period: 1ms,  cpu: 0, priority: 95, step: fixed, execution: {nominal: 200us}}
  - {name: g_fast, period: 2ms,  cpu: 0, priority: 80, step: fixed, rate_group: g, execution: {nominal: 300us}}
  - {name: g_slow, period: 8ms,  cpu: 0, priority: 80, step: fixed, rate_group: g, execution: {nominal: 1ms}}
  - {name: lo,     period: 20ms, cpu: 0, priority: 70, step: fixed, execution: {nominal: 2ms}}
  - {name: alone,  period: 5ms,  cpu: 1, priority: 90, step: fixed, execution: {nominal: 4ms}}
blocks:
  - {name: k1, type: constant, task: hi, params: {value: [1]}}
  - {name: k2, type: constant, task: g_fast, params: {value: [1]}}
  - {name: k3, type: constant, task: g_slow, params: {value: [1]}}
  - {name: k4, type: constant, task: lo, params: {value: [1]}}
  - {name: k5, type: constant, task: alone, params: {value: [1]}}
wires: []
)";

const ThreadTiming& thread(const Schedulability& s, const std::string& name) {
  for (const auto& th : s.threads) {
    if (th.name == name) return th;
  }
  throw std::runtime_error("no thread " + name);
}

TEST(Schedulability, ResponseTimesByHand) {
  const auto spec = checked(load_graph_text(kGraph, "rta.yaml"));
  const auto s = analyse_schedulability(spec);
  EXPECT_NEAR(s.cpu_load.at(CpuId{{}, 0}), 0.2 + 0.3 / 2 + 1.0 / 8 + 2.0 / 20, 1e-12);
  EXPECT_NEAR(s.cpu_load.at(CpuId{{}, 1}), 0.8, 1e-12);
  ASSERT_EQ(s.threads.size(), 4u);
  EXPECT_NEAR(thread(s, "hi").response, 0.0002, 1e-12);
  // g: C = 4 x 0.3 + 1 = 2.2 ms; R = 2.2 + ceil(R / 1) 0.2 -> 2.8 ms.
  EXPECT_NEAR(thread(s, "g").execution, 0.0022, 1e-12);
  EXPECT_NEAR(thread(s, "g").response, 0.0028, 1e-12);
  // lo: R = 2 + ceil(R / 1) 0.2 + ceil(R / 8) 2.2: 2 -> 4.6 -> 5.2 -> 5.4 -> 5.4 ms.
  EXPECT_NEAR(thread(s, "lo").response, 0.0054, 1e-12);
  EXPECT_NEAR(thread(s, "alone").response, 0.004, 1e-12);
  for (const auto& th : s.threads) EXPECT_TRUE(th.meets_deadline()) << th.name;
}

TEST(Schedulability, AgreesWithTheVirtualSchedule) {
  const auto spec = checked(load_graph_text(kGraph, "rta.yaml"));
  const auto s = analyse_schedulability(spec);
  auto graph = build_graph(spec);
  runtime::VirtualExecutor executor(*graph, true);
  executor.run(0.04);
  // The end of each thread's first cycle: its first frame, or for the
  // group the first frame of its slowest task.
  auto first_end = [&](const std::string& task) {
    for (const auto& f : executor.frames()) {
      if (f.task == task) return f.end;
    }
    return -1.0;
  };
  EXPECT_NEAR(first_end("hi"), thread(s, "hi").response, 1e-12);
  EXPECT_NEAR(first_end("g_slow"), thread(s, "g").response, 1e-12);
  EXPECT_NEAR(first_end("lo"), thread(s, "lo").response, 1e-12);
  EXPECT_NEAR(first_end("alone"), thread(s, "alone").response, 1e-12);
  for (const auto& t : graph->tasks()) EXPECT_EQ(t->stats().overruns.load(), 0u) << t->spec().name;
}

// Utilisation below 1 does not make a CPU schedulable: a (1 ms, 0.5 ms)
// above b (1.6 ms, 0.7 ms) loads it to 94 %, but b's first frame ends at
// R = 0.7 + 2 x 0.5 = 1.7 ms, after its 1.6 ms deadline. The loader warns.
TEST(Schedulability, ALoadBelowOneCanStillMissADeadline) {
  const std::string yaml = R"(name: tight
realtime: off
tasks:
  - {name: a, period: 1ms,   cpu: 0, priority: 90, step: fixed, execution: {nominal: 500us}}
  - {name: b, period: 1.6ms, cpu: 0, priority: 80, step: fixed, execution: {nominal: 700us}}
blocks:
  - {name: k1, type: constant, task: a, params: {value: [1]}}
  - {name: k2, type: constant, task: b, params: {value: [1]}}
wires: []
)";
  const auto loaded = load_graph_text(yaml, "tight.yaml");
  const auto s = analyse_schedulability(checked(loaded));
  EXPECT_LT(s.cpu_load.at(CpuId{{}, 0}), 1.0);
  EXPECT_NEAR(thread(s, "b").response, 0.0017, 1e-12);
  EXPECT_FALSE(thread(s, "b").meets_deadline());
  bool warned = false;
  for (const auto& d : loaded.diagnostics) {
    warned = warned || d.str() == "tight.yaml:5:5: warning: task 'b' on CPU 0: worst-case response time 1.7 ms exceeds "
                                  "its period 1.6 ms — its frames will overrun (longest scripted execution 700 us, "
                                  "preempted by higher priorities for 1 ms)";
  }
  EXPECT_TRUE(warned) << (loaded.diagnostics.empty() ? "no diagnostics" : loaded.diagnostics.front().str());

  auto graph = build_graph(loaded.graph);
  runtime::VirtualExecutor executor(*graph, true);
  executor.run(0.0016);
  for (const auto& f : executor.frames()) {
    if (f.task == "b") {
      EXPECT_NEAR(f.end, 0.0017, 1e-12);
    }
  }
  EXPECT_EQ(graph->tasks().at(1)->stats().overruns.load(), 1u);
}

// Higher priorities that take the whole CPU leave nothing: unbounded.
TEST(Schedulability, AnOverloadedCpuHasAnUnboundedResponse) {
  const std::string yaml = R"(name: full
realtime: off
tasks:
  - {name: a, period: 1ms,  cpu: 0, priority: 90, step: fixed, execution: {nominal: 1ms}}
  - {name: b, period: 10ms, cpu: 0, priority: 80, step: fixed, execution: {nominal: 1ms}}
blocks:
  - {name: k1, type: constant, task: a, params: {value: [1]}}
  - {name: k2, type: constant, task: b, params: {value: [1]}}
wires: []
)";
  const auto s = analyse_schedulability(checked(load_graph_text(yaml, "full.yaml")));
  EXPECT_NEAR(thread(s, "a").response, 0.001, 1e-12);
  EXPECT_TRUE(thread(s, "a").meets_deadline());
  EXPECT_TRUE(std::isinf(thread(s, "b").response));
}

// A CPU where one task declares nothing is not analysed: its load is unknown.
TEST(Schedulability, OnlyFullyDeclaredCpusAreAnalysed) {
  const std::string yaml = R"(name: partial
realtime: off
tasks:
  - {name: a, period: 1ms,  cpu: 0, priority: 90, step: fixed, execution: {nominal: 100us}}
  - {name: b, period: 10ms, cpu: 0, priority: 80, step: fixed}
  - {name: c, period: 10ms, step: fixed, execution: {nominal: 1ms}}
blocks:
  - {name: k1, type: constant, task: a, params: {value: [1]}}
  - {name: k2, type: constant, task: b, params: {value: [1]}}
  - {name: k3, type: constant, task: c, params: {value: [1]}}
wires: []
)";
  const auto s = analyse_schedulability(checked(load_graph_text(yaml, "partial.yaml")));
  EXPECT_TRUE(s.cpu_load.empty());
  ASSERT_EQ(s.threads.size(), 1u);  // c, unpinned, has a CPU to itself
  EXPECT_EQ(s.threads[0].name, "c");
  EXPECT_NEAR(s.threads[0].response, 0.001, 1e-12);
}

// What the loader analyses may still hold mistakes it reported: two tasks of
// one name, a period of zero, a higher-priority load just below 1. The
// analysis must end, and say unbounded rather than make up a number.
TEST(Schedulability, EndsOnWhateverTheLoaderPassesIt) {
  GraphSpec g;
  auto task = [&](const std::string& name, double period, int priority, double exec, const std::string& group = "") {
    TaskSpec t;
    t.name = name;
    t.period = period;
    t.cpu = 0;
    t.priority = priority;
    t.rate_group = group;
    t.execution.declared = true;
    t.execution.nominal = exec;
    g.tasks.push_back(t);
  };
  task("fast", 0.002, 90, 0.0, "group");
  task("fast", 0.0, 90, 0.0005, "group");  // same name, no period
  task("busy", 1e-9, 95, 1e-9 * (1.0 - 1e-15));  // leaves 1e-15 of the CPU
  task("slow", 3600.0, 10, 1.0);
  const auto s = analyse_schedulability(g);
  ASSERT_EQ(s.threads.size(), 3u);
  EXPECT_NEAR(thread(s, "busy").response, 1e-9 * (1.0 - 1e-15), 1e-24);
  EXPECT_TRUE(std::isinf(thread(s, "slow").response));
}

}  // namespace
}  // namespace rtcosim::config

namespace rtcosim::config {
namespace {

// CPU numbers are per machine: the same two tasks as above, but on two hosts,
// do not share a processor. Each host's CPU 0 carries its own task only
// (50 % and 43.75 %), b is not preempted (R = C = 700 us) and nothing warns;
// the overloaded CPU 0 of one host names that host.
TEST(Schedulability, CpusOfDifferentHostsAreDifferentProcessors) {
  const std::string yaml = R"(name: apart
realtime: off
hosts:
  - {name: pa, domain: 0}
  - {name: pb, domain: 0}
tasks:
  - {name: a, host: pa, period: 1ms,   cpu: 0, priority: 90, step: fixed, execution: {nominal: 500us}}
  - {name: b, host: pb, period: 1.6ms, cpu: 0, priority: 80, step: fixed, execution: {nominal: 700us}}
  - {name: c, host: pb, period: 1ms,   cpu: 1, priority: 80, step: fixed, execution: {nominal: 1.2ms}}
blocks:
  - {name: k1, type: constant, task: a, params: {value: [1]}}
  - {name: k2, type: constant, task: b, params: {value: [1]}}
  - {name: k3, type: constant, task: c, params: {value: [1]}}
wires: []
)";
  const auto loaded = load_graph_text(yaml, "apart.yaml");
  const auto s = analyse_schedulability(checked(loaded));
  ASSERT_EQ(s.cpu_load.size(), 3u);
  EXPECT_NEAR(s.cpu_load.at(CpuId{"pa", 0}), 0.5, 1e-12);
  EXPECT_NEAR(s.cpu_load.at(CpuId{"pb", 0}), 0.4375, 1e-12);
  EXPECT_NEAR(s.cpu_load.at(CpuId{"pb", 1}), 1.2, 1e-12);
  EXPECT_NEAR(thread(s, "b").response, 0.0007, 1e-12);
  EXPECT_TRUE(thread(s, "b").meets_deadline());
  std::string warnings;
  for (const auto& d : loaded.diagnostics) warnings += d.str() + "\n";
  EXPECT_EQ(warnings, "apart.yaml:9:5: warning: CPU 1 of host 'pb' is loaded to 120 % by the declared execution "
                      "times — its tasks will overrun\n");
}

}  // namespace
}  // namespace rtcosim::config
