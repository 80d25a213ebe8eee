// `rtcosim sync` (docs/sync.md, "From a task graph"): the motor example's
// YAML against the state synchronisation's own figures
// (tests/session/state_sync_test.cpp builds the same components by hand),
// the N_ges count against eq. 5.1 from the reported evaluations, and the
// loader's messages.
#include "tools/rtcosim/sync_command.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <sstream>

#include <gtest/gtest.h>

#include "rt_config/loader.hpp"
#include "session/sync/sync_run.hpp"
#include "tests/support/graphs.hpp"

namespace rtcosim {
namespace {

const tasks::BlockRegistry& registry() {
  static const auto r = tasks::BlockRegistry::with_builtins();
  return r;
}

std::uint64_t evaluations(const session::SyncRun& run) {
  return std::accumulate(run.steps.begin(), run.steps.end(), std::uint64_t{0},
                         [](std::uint64_t s, const auto& f) { return s + static_cast<std::uint64_t>(f.evaluations); });
}

std::uint64_t executions(const session::SyncRun& run) {
  std::uint64_t sum = 0;
  for (const auto& f : run.steps) {
    EXPECT_EQ(f.executions.size(), static_cast<std::size_t>(f.evaluations));
    for (const auto e : f.executions) sum += e;
  }
  return sum;
}

// Thesis eq. 5.1 as docs/sync.md counts it: per macro step n T_P (the
// nominal pass) + the candidates' executions + n; those are at most
// E |R| T_P (E evaluations, |R| components re-run) and fewer where Ansatz 2
// reuses one.
std::uint64_t expected_n_ges(const session::SyncRun& run, int horizon) {
  const std::uint64_t n = run.components.size(), steps = run.macro_steps, h = static_cast<std::uint64_t>(horizon);
  EXPECT_LE(executions(run), evaluations(run) * run.rerun.size() * h);
  return n * h * steps + executions(run) + n * steps;
}

TEST(SyncCommand, MotorExampleKeepsTheSimulationInStepAsTheHandBuiltComponentsDo) {
  const auto spec = testing::load_example("motor_sync.yaml");
  const auto run = session::run_state_sync(spec, registry(), spec.duration);
  EXPECT_EQ(run.components, (std::vector<std::string>{"torque_in", "drive", "thermal"}));
  EXPECT_EQ(run.measurement_tasks, (std::vector<std::string>{"measure"}));
  EXPECT_EQ(run.rerun, (std::vector<std::string>{"drive"}));  // thermal feeds nothing compared
  EXPECT_EQ(run.distance, 1);
  EXPECT_DOUBLE_EQ(run.step, 0.01);
  ASSERT_EQ(run.macro_steps, 500u);
  ASSERT_EQ(run.pairs.size(), 1u);
  const auto& p = run.pairs[0];
  EXPECT_EQ(p.instants, 500u);
  // docs/sync.md's table (StateSync.HorizonsAndSchemesForTheDocs): 500.1 and
  // 0.05697 from the same plant recording, read here through a plant block.
  EXPECT_NEAR(p.mse_without, 500.1, 0.05);
  EXPECT_NEAR(p.mse_with, 0.05697, 0.00001);
  EXPECT_GE(p.mse_without / p.mse_with, 10.0);
  EXPECT_EQ(run.n_ges_without, 3u * 500u);
  EXPECT_EQ(run.n_ges, expected_n_ges(run, 1));
  // T_P = 1, static: a candidate steps drive once unless its u is the
  // current one (which the pass before ran) or an earlier candidate's.
  std::uint64_t moved = 0;
  for (std::size_t k = 0; k < run.steps.size(); ++k) {
    const auto& c = run.steps[k].candidates;
    for (std::size_t i = 0; i < c.size(); ++i) {
      const double current = k == 0 ? 0.0 : run.u[0][k - 1];
      const bool known = c[i] == current || std::find(c.begin(), c.begin() + static_cast<long>(i), c[i]) !=
                                                c.begin() + static_cast<long>(i);
      moved += known ? 0 : 1;
    }
  }
  EXPECT_EQ(executions(run), moved);
  EXPECT_EQ(run.n_ges, 5720u);
  // Each step's first candidate is the current u and costs 0: the mean over
  // the later ones is the executions over their count (a step that needed
  // no optimisation has no candidate at all).
  std::uint64_t later = 0;
  for (const auto& f : run.steps) later += f.executions.empty() ? 0 : f.executions.size() - 1;
  EXPECT_DOUBLE_EQ(session::executions_per_evaluation(run, true),
                   static_cast<double>(moved) / static_cast<double>(later));
  EXPECT_DOUBLE_EQ(session::executions_per_evaluation(run, false),
                   static_cast<double>(moved) / static_cast<double>(evaluations(run)));
  // The held-out MSE at T_P = 1 is the mean objective before the
  // optimisation (one pair, weight 1), over every macro step; the MSE with
  // synchronisation is an in-sample fit, far below it.
  double before = 0.0;
  std::size_t on_bound = 0;
  for (const auto& f : run.steps) {
    before += f.objective_before;
    on_bound += f.on_bound ? 1 : 0;
  }
  EXPECT_EQ(p.held_out_instants, 500u);
  EXPECT_NEAR(p.mse_held_out, before / 500.0, 1e-12 * p.mse_held_out);
  EXPECT_GT(p.mse_held_out, 2.0 * p.mse_with);
  const std::string summary = session::sync_run_summary(run, spec);
  EXPECT_NE(summary.find("held out speed.y: MSE 0.2745"), std::string::npos) << summary;
  EXPECT_NE(summary.find("u on a bound in " + std::to_string(on_bound)), std::string::npos) << summary;
  // At the end the load absorbs 0.5 N m of load; the inertia error is gone
  // once the speed is steady (50 rad/s: the torque carries load + damping).
  EXPECT_NEAR(run.u.at(0).back(), 0.5, 1e-3);
  // The measured column is the recording: row 300 (t = 3 s) of motor_plant.csv.
  std::ifstream csv(RTCOSIM_EXAMPLES_DIR "/data/motor_plant.csv");
  std::string line;
  for (int i = 0; i <= 301; ++i) std::getline(csv, line);
  double t = 0, torque = 0, speed = 0;
  ASSERT_EQ(std::sscanf(line.c_str(), "%lf,%lf,%lf", &t, &torque, &speed), 3) << line;
  EXPECT_DOUBLE_EQ(t, 3.0);
  EXPECT_NEAR(p.measured_values.at(299), speed, 1e-9);  // t_k = k h, k = 300
}

// A measurement delay of 30 ms (3 macro steps): the simulation at t_k is
// compared with the measurement of t_k + Delta_o (docs/sync.md), so the
// report's measured value of instant k is the recording's row k + 3.
TEST(SyncCommand, AGivenDelayComparesWithTheMeasurementThatManyStepsLater) {
  auto spec = testing::load_example("motor_sync.yaml");
  spec.sync.delay = 0.03;
  spec.sync.optimise.max_evaluations = 10;
  const auto run = session::run_state_sync(spec, registry(), 1.0);
  ASSERT_EQ(run.delay_steps, 3);
  ASSERT_EQ(run.macro_steps, 100u);
  std::ifstream csv(RTCOSIM_EXAMPLES_DIR "/data/motor_plant.csv");
  std::string line;
  std::getline(csv, line);
  std::vector<double> speed;
  while (std::getline(csv, line)) {
    double t = 0, torque = 0, v = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), "%lf,%lf,%lf", &t, &torque, &v), 3) << line;
    speed.push_back(v);
  }
  const auto& p = run.pairs.at(0);
  ASSERT_EQ(p.measured_values.size(), 100u);
  for (std::size_t k = 1; k <= 100; ++k) EXPECT_EQ(p.measured_values[k - 1], speed.at(k + 3)) << "k " << k;
}

TEST(SyncCommand, DynamicHorizonOfFiveCountsEveryExecutionAndStillFitsTenfold) {
  auto spec = testing::load_example("motor_sync.yaml");
  spec.sync.optimise.horizon = 5;
  spec.sync.optimise.dynamic = true;
  spec.sync.optimise.max_evaluations = 20;
  const auto run = session::run_state_sync(spec, registry(), 1.0);
  ASSERT_EQ(run.macro_steps, 100u);
  EXPECT_EQ(run.n_ges, expected_n_ges(run, 5));
  std::size_t exhausted = 0;
  for (const auto& s : run.steps) {
    EXPECT_LE(s.evaluations, 20);
    EXPECT_LE(s.objective_after, s.objective_before);
    exhausted += s.budget_exhausted ? 1 : 0;
  }
  EXPECT_GT(exhausted, 0u);  // 5 variables per step do not settle in 20 evaluations
  EXPECT_GE(run.pairs[0].mse_without / run.pairs[0].mse_with, 10.0);
}

std::string errors_of(const std::string& optimise) {
  const std::string text =
      "tasks:\n  - {name: m, period: 10ms}\n  - {name: s, period: 10ms}\n"
      "blocks:\n  - {name: meas, type: step, task: m}\n  - {name: g, type: gain, task: s, params: {gain: 2}}\n"
      "  - {name: k, type: constant, task: s, params: {value: [1, 2]}}\n"
      "wires:\n  - {from: meas.y, to: g.u}\n"
      "record: {signals: [meas.y, g.y], file: x.csv}\n"
      "sync:\n  delay: 0s\n  compare: [{simulated: g.y, measured: meas.y}]\n  optimise:\n" +
      optimise;
  const auto r = config::load_graph_text(text, "sync.yaml");
  std::string all;
  for (const auto& d : r.diagnostics) all += d.str() + "\n";
  return all;
}

TEST(SyncCommand, LoaderNamesWhatIsWrongInTheOptimiseSection) {
  EXPECT_EQ(errors_of("    variables: [{parameter: g.gain, lower: 0, upper: 4, start: 2}]\n"), "");
  const auto vector_constant = errors_of("    variables: [{parameter: k.value, lower: 0, upper: 4, start: 2}]\n");
  EXPECT_NE(vector_constant.find("sync.yaml:15:29: error: block 'k' (constant) has no tunable parameter 'value' — it "
                                 "has none"),
            std::string::npos)
      << vector_constant;
  const auto wrong_name = errors_of("    variables: [{parameter: g.k, lower: 0, upper: 4, start: 2}]\n");
  EXPECT_NE(wrong_name.find("has no tunable parameter 'k' — expected one of: gain"), std::string::npos) << wrong_name;
  const auto bounds = errors_of("    variables: [{parameter: g.gain, lower: 4, upper: 0, start: 2}]\n");
  EXPECT_NE(bounds.find("sync.yaml:15:17: error: decision variable 'g.gain': lower 4, start 2, upper 0 — expected "
                        "lower < upper"),
            std::string::npos)
      << bounds;
  const auto no_vars = errors_of("    horizon: 0\n");
  EXPECT_NE(no_vars.find("'horizon' is '0' — expected an integer from 1 to 1000"), std::string::npos) << no_vars;
  EXPECT_NE(no_vars.find("needs 'variables'"), std::string::npos) << no_vars;
  const auto solver =
      errors_of("    solver: newton\n    variables: [{parameter: g.gain, lower: 0, upper: 4, start: 2}]\n");
  EXPECT_NE(solver.find("newton"), std::string::npos) << solver;
}

TEST(SyncCommand, AMeasuredDelayIsLoadedAndAReplayRefusesItSayingWhy) {
  auto spec = testing::load_example("motor_sync.yaml");
  spec.sync.measured = true;
  try {
    (void)session::run_state_sync(spec, registry(), 0.1);
    FAIL() << "expected a refusal";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("which a replay has none of — give the delay"), std::string::npos) << e.what();
  }
  const std::string text =
      "tasks:\n  - {name: m, period: 10ms}\nblocks:\n  - {name: s, type: step, task: m}\n  - {name: g, type: gain, "
      "task: m, params: {gain: 2}}\n"
      "wires:\n  - {from: s.y, to: g.u}\n"
      "record: {signals: [s.y], file: x.csv}\n"
      "sync: {delay: measured, compare: [{simulated: s.y, measured: s.y}]}\n";
  const auto r = config::load_graph_text(text, "m.yaml");
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.graph.sync.measured);
}

TEST(SyncCommand, MeasuredTaskCannotBeSynchronisedAndTheMessageSaysWhere) {
  auto spec = testing::load_example("motor_sync.yaml");
  spec.sync.optimise.tasks = {"measure", "drive"};
  try {
    (void)session::run_state_sync(spec, registry(), 0.1);
    FAIL() << "expected a refusal";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("motor_sync.yaml:58:5: task 'measure' holds a measured signal"),
              std::string::npos)
        << e.what();
  }
}

// Thesis table 4.2 counts the executions of a candidate from the second
// optimiser iteration on; the summary prints that figure beside T_P x n and
// the mean over every candidate (each step's free first included) with its
// own label. Figure 4.4a's counts: 0 for each step's first, 3 for the rest.
TEST(SyncCommand, TheThesisFigureCountsOnlyTheCandidatesAfterEachStepsFirst) {
  const auto spec = testing::load_example("motor_sync.yaml");
  auto run = session::run_state_sync(spec, registry(), 0.05);
  ASSERT_EQ(run.steps.size(), 5u);
  for (auto& s : run.steps) s.executions = {0, 3, 3, 3};
  run.steps.back().executions = {0, 3};
  EXPECT_DOUBLE_EQ(session::executions_per_evaluation(run, true), 3.0);
  EXPECT_DOUBLE_EQ(session::executions_per_evaluation(run, false), 39.0 / 18.0);
  const std::string summary = session::sync_run_summary(run, spec);
  EXPECT_NE(summary.find("executions per candidate after each step's first (thesis table 4.2) mean 3.00, without "
                         "reduction T_P x 3 = 3; per candidate, each step's first (the current u, free) included: "
                         "mean 2.17"),
            std::string::npos)
      << summary;
  const std::string json = session::sync_run_json(run);
  EXPECT_NE(json.find("\"executions_per_evaluation_after_first\":3,"), std::string::npos) << json;
}

TEST(SyncCommand, CliWritesTheSeriesAndTheSummaryItPrinted) {
  const std::string dir = ::testing::TempDir();
  const std::string csv = dir + "/sync_cli.csv", json = dir + "/sync_cli.json";
  ::testing::internal::CaptureStdout();
  const int code = tools::run_sync_command(
      {RTCOSIM_EXAMPLES_DIR "/motor_sync.yaml", "--duration", "1s", "--csv", csv, "--json", json, "--quiet"});
  const std::string out = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("N_ges"), std::string::npos) << out;
  std::ifstream in(csv);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header,
            "time_s,plant.speed_rad_s,speed.y_without,speed.y_with,load.value,evaluations,optimiser_s,objective_before,"
            "objective_after,budget_exhausted");
  std::size_t rows = 0;
  for (std::string line; std::getline(in, line);) ++rows;
  EXPECT_EQ(rows, 100u);
  std::ifstream j(json);
  std::stringstream text;
  text << j.rdbuf();
  EXPECT_NE(text.str().find("\"macro_steps\":100,"), std::string::npos) << text.str();
  EXPECT_EQ(tools::run_sync_command({RTCOSIM_EXAMPLES_DIR "/sync_delay.yaml"}), 2);  // no optimise section
}

}  // namespace
}  // namespace rtcosim
