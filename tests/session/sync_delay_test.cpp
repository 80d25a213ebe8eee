// The time synchronisation through the runtime (issue 15; docs/sync.md):
// examples/sync_delay.yaml, run in virtual time, compared by its `sync:`
// section, against the stand-alone experiment of table 5.16/5.17; and the
// loader's checks of a `sync:` section.
#include <string>

#include <gtest/gtest.h>

#include "rt_config/delay_model.hpp"
#include "rt_config/loader.hpp"
#include "runtime/recorder.hpp"
#include "runtime/virtual_executor.hpp"
#include "session/sync/sync_report.hpp"
#include "tests/support/graphs.hpp"
#include "tests/support/time_sync_experiment.hpp"

namespace rtcosim {
namespace {

std::vector<session::SyncPairResult> run_example(const config::GraphSpec& spec) {
  auto graph = testing::build_graph(spec);
  runtime::Recorder::Options keep;
  keep.keep = runtime::Recorder::kKeepAll;
  runtime::Recorder recorder(*graph, keep);
  runtime::VirtualExecutor executor(*graph);
  std::size_t frames = 0;
  executor.run(spec.duration, [&](runtime::TaskRuntime& task, const runtime::FrameRecord&) {
    recorder.sample(task);
    if (++frames % 4096 == 0) recorder.drain();
  });
  recorder.finish(nullptr);
  return session::sync_comparison(spec.sync, recorder);
}

// The example's variant without alpha_SS (the line its comments give):
// the thesis's Delta_o of 8 ms and its comparison.
config::GraphSpec without_alpha_ss() {
  auto spec = testing::load_example("sync_delay.yaml");
  EXPECT_EQ(spec.sync.simulation_path.size(), 3u);
  spec.sync.simulation_path.pop_back();
  spec.sync.delay = config::output_delay(spec.sync.measurement_path, spec.sync.simulation_path, spec.sync.grid).delta_o;
  return spec;
}

TEST(SyncDelay, ExampleGivesTheThesisDelayAndTheStandAloneExperimentsMetrics) {
  const auto spec = without_alpha_ss();
  ASSERT_TRUE(spec.sync.enabled);
  ASSERT_TRUE(spec.sync.automatic);
  EXPECT_NEAR(spec.sync.delay, 0.008, 1e-12);  // table 5.17's Delta_o
  EXPECT_DOUBLE_EQ(spec.sync.acquisition_cycle, 0.004);
  const auto results = run_example(spec);
  ASSERT_EQ(results.size(), 1u);
  const auto& r = results[0];
  // The recording starts after the first frame (t = 4 ms): 1250 samples, of
  // which those with t + 8 ms <= 5 s are compared.
  EXPECT_EQ(r.instants, 1248u);
  // The stand-alone experiment (RK4 with 40 steps per 4 ms cycle, closed-form
  // checked in time_sync_experiment_test) at the same timing; the runtime
  // integrates the simulated plant with one RK4 step per cycle.
  const auto reference = testing::run_time_sync_experiment({});
  EXPECT_NEAR(r.mse_without, reference.without_compensation.mse, 0.01 * reference.without_compensation.mse);
  EXPECT_NEAR(r.mse_with, reference.with_compensation.mse, 0.01 * reference.with_compensation.mse);
  EXPECT_NEAR(r.max_without, reference.without_compensation.max, 1e-4);
  EXPECT_NEAR(r.max_with, reference.with_compensation.max, 1e-4);
  // docs/sync.md's table.
  EXPECT_NEAR(r.mse_without, 2.562e-4, 0.001e-4);
  EXPECT_NEAR(r.mse_with, 2.849e-5, 0.001e-5);
  EXPECT_NEAR(r.max_without, 0.0704, 0.0001);
  EXPECT_NEAR(r.max_with, 0.0235, 0.0001);
}

// A given delay instead of the model: 0 compares at the same instants.
TEST(SyncDelay, GivenDelayOfZeroMakesBothComparisonsEqual) {
  auto spec = without_alpha_ss();
  spec.sync.delay = 0.0;
  const auto r = run_example(spec).at(0);
  EXPECT_EQ(r.instants, 1250u);
  EXPECT_DOUBLE_EQ(r.mse_with, r.mse_without);
}

std::string errors_of(const std::string& sync_yaml) {
  const std::string text =
      "tasks:\n  - {name: a, period: 4ms}\n"
      "blocks:\n  - {name: s, type: step, task: a}\n  - {name: g, type: gain, task: a, params: {gain: 2}}\n"
      "wires:\n  - {from: s.y, to: g.u}\n"
      "record: {signals: [s.y, g.y], file: x.csv}\n" +
      sync_yaml;
  const auto r = config::load_graph_text(text, "sync.yaml");
  std::string all;
  for (const auto& d : r.diagnostics) all += d.str() + "\n";
  return all;
}

TEST(SyncDelay, LoaderNamesWhatIsWrongInASyncSection) {
  EXPECT_EQ(errors_of("sync: {delay: 8ms, compare: [{simulated: g.y, measured: s.y}]}\n"), "");
  EXPECT_NE(errors_of("sync: {delay: 8ms, compare: [{simulated: g.y, measured: s.u}]}\n")
                .find("'s.u', which 'record.signals' does not list"),
            std::string::npos);
  const std::string elements =
      "sync:\n  delay:\n    auto: true\n    elements: {A: {dead_time: 1ms, task: a}, "
      "B: {dead_time: 0s, cycle: 2ms}}\n";
  const std::string compare = "  compare: [{simulated: g.y, measured: s.y}]\n";
  EXPECT_EQ(errors_of(elements + "    measurement: [\"A -> B sync\"]\n    simulation: [\"B -> A async\"]\n" + compare),
            "");
  const auto bad_hop = errors_of(elements + "    measurement: [\"A => B sync\"]\n    simulation: []\n" + compare);
  EXPECT_NE(bad_hop.find("sync.yaml:13:19: error: hop"), std::string::npos) << bad_hop;
  EXPECT_NE(bad_hop.find("expected \"A -> B sync\""), std::string::npos) << bad_hop;
  const auto no_task = errors_of(
      "sync:\n  delay:\n    auto: true\n    elements: {A: {dead_time: 1ms, task: b}}\n    measurement: []\n"
      "    simulation: []\n" +
      compare);
  EXPECT_NE(no_task.find("task 'b', which 'tasks' does not list"), std::string::npos) << no_task;
  const auto off_grid = errors_of(
      "sync:\n  delay:\n    auto: true\n    grid: 1ms\n    elements: {A: {dead_time: 0.3ms, cycle: 2ms}}\n"
      "    measurement: [\"A -> A sync\"]\n    simulation: []\n" +
      compare);
  EXPECT_NE(off_grid.find("not a multiple of the grid step"), std::string::npos) << off_grid;
  // "^n": the hop n times over (eq. 4.15's alpha^n_CM); anything else after the kind is refused.
  EXPECT_EQ(
      errors_of(elements + "    measurement: [\"A -> B sync\"]\n    simulation: [\"B -> A async ^3\"]\n" + compare),
      "");
  for (const char* hop : {"B -> A async ^0", "B -> A async ^x", "B -> A async 3", "B -> A async ^2 more"}) {
    const auto bad = errors_of(elements + "    measurement: []\n    simulation: [\"" + hop + "\"]\n" + compare);
    EXPECT_NE(bad.find("optionally followed by ^n"), std::string::npos) << hop << ": " << bad;
  }
}

// Eq. 4.15 as printed, every term, on the example's timing: with alpha_SS
// and n = T_D = 1 the two paths' rightmost modes are both 20 ms, so Delta_o
// is 0 and the comparison with it is the one without; `rtcosim run` prints
// each hop as its alpha and each path's density.
TEST(SyncDelay, Equation415AsPrintedGivesNoDelayOnTheExamplesTiming) {
  // The shipped example is the equation as printed: the loader's Delta_o is
  // exactly 0 (the modes are counted on one grid of ticks).
  const auto spec = testing::load_example("sync_delay.yaml");
  ASSERT_EQ(spec.sync.simulation_path.size(), 3u);
  EXPECT_EQ(spec.sync.delay, 0.0);
  const auto d = config::output_delay(spec.sync.measurement_path, spec.sync.simulation_path, spec.sync.grid);
  EXPECT_NEAR(d.measurement_mode, 0.020, 1e-12);
  EXPECT_NEAR(d.simulation_mode, 0.020, 1e-12);
  EXPECT_EQ(d.delta_o, 0.0);
  const auto results = run_example(spec);
  const auto& r = results.at(0);
  EXPECT_EQ(r.mse_with, r.mse_without);
  const std::string text = session::sync_summary(spec.sync, results);
  for (const char* part :
       {"alpha_CM: C -> M async U(0, 4 ms)", "alpha_MS: M -> S sync delta(t - 8 ms)",
        "alpha_SS: S -> S sync delta(t - 8 ms)", "density on [16 ms, 20 ms], mean 18 ms", "rightmost mode 20 ms"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
  }
}

}  // namespace
}  // namespace rtcosim
