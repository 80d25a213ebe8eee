// The state synchronisation beside a running graph (docs/sync.md, "Live"):
// in virtual time, the motor example's measurement reaches the LiveSync
// through the recorder, u goes to the running drive task through its
// parameter inbox, and the u chosen equals `rtcosim sync`'s replay of the
// same recording (the same optimisation on the same measured columns).
#include "session/sync/sync_live.hpp"

#include <cmath>
#include <cstdlib>

#include <gtest/gtest.h>

#include "runtime/recorder.hpp"
#include "runtime/virtual_executor.hpp"
#include "tests/support/alloc_counter.hpp"
#include "tests/support/graphs.hpp"

namespace rtcosim {
namespace {

const tasks::BlockRegistry& registry() {
  static const auto r = tasks::BlockRegistry::with_builtins();
  return r;
}

TEST(LiveSync, VirtualRunPostsEachMacroStepsUAndTheRunningDriveFollowsTheMeasurement) {
  const auto spec = testing::load_example("motor_sync.yaml");
  auto graph = testing::build_graph(spec);
  runtime::Recorder::Options keep;
  keep.keep = runtime::Recorder::kKeepAll;
  runtime::Recorder recorder(*graph, keep);
  session::LiveSync live(spec, registry(), *graph, recorder, spec.duration);
  runtime::VirtualExecutor executor(*graph);
  std::size_t frames = 0;
  executor.run(spec.duration, [&](runtime::TaskRuntime& task, const runtime::FrameRecord&) {
    recorder.sample(task);
    if (++frames % 16 == 0) {
      recorder.drain();
      live.poll();
    }
  });
  recorder.finish(nullptr);
  live.poll(true);
  EXPECT_EQ(live.steps_done(), 500u);
  EXPECT_EQ(live.posted(), 500u);
  EXPECT_EQ(live.refused(), 0u);
  runtime::TaskRuntime* drive = nullptr;
  for (auto& t : graph->tasks()) {
    if (t->spec().name == "drive") drive = t.get();
  }
  ASSERT_NE(drive, nullptr);
  // Frames after the last post find it waiting; the last few posts come
  // after the drive's last frame (its data arrive with the run's end).
  EXPECT_LE(drive->parameters_applied(), 500u);
  EXPECT_GE(drive->parameters_applied(), 490u);
  const auto run = live.result();
  // The same optimisation as the replay: its u, step for step.
  const auto replay = session::run_state_sync(spec, registry(), spec.duration);
  ASSERT_EQ(run.u.at(0).size(), replay.u.at(0).size());
  for (std::size_t k = 0; k < replay.u[0].size(); ++k) {
    ASSERT_NEAR(run.u[0][k], replay.u[0][k], 1e-6 * (1.0 + std::abs(replay.u[0][k]))) << "macro step " << k;
  }
  EXPECT_EQ(run.n_ges, replay.n_ges);
  const auto& p = run.pairs.at(0);
  EXPECT_NEAR(p.mse_without, replay.pairs[0].mse_without, 1e-6 * replay.pairs[0].mse_without);
  // The running drive gets each u a few macro steps late, so it does not
  // follow as closely as the copy (0.057) but still by far better than
  // without synchronisation: 18.2 against 500.1 here.
  EXPECT_GE(p.mse_without / p.mse_with, 10.0) << p.mse_with;
  EXPECT_GT(p.mse_with, replay.pairs[0].mse_with);
  // max_time 0: each step's budget came from the frames' measured load.
  EXPECT_GE(live.totals().budget_last, 0.1 * 0.010);
  EXPECT_LE(live.totals().budget_last, 0.010);
  EXPECT_NE(live.status_json().find("\"budget_s\":"), std::string::npos);
  EXPECT_NE(live.summary().find("time budget per macro step: "), std::string::npos);
}

// The default budget: h less the busiest component CPU's share of the
// real-time frames (p99 execution time / period); unpinned tasks load every
// CPU; never below h/10.
TEST(LiveSync, TheDefaultTimeBudgetIsWhatTheFramesLeaveOfTheBusiestComponentCpu) {
  using session::TaskLoad;
  const double h = 0.010;
  // CPU 0: 100 us of 1 ms and 1 ms of 10 ms (0.2); CPU 1: 1 ms of 2 ms (0.5).
  std::vector<session::TaskLoad> tasks = {{0, 0.001, 100e-6, true}, {0, 0.010, 1e-3, false}, {1, 0.002, 1e-3, false}};
  EXPECT_DOUBLE_EQ(session::live_time_budget(h, tasks), h * 0.8);
  tasks[2].component = true;  // a component on the busier CPU
  EXPECT_DOUBLE_EQ(session::live_time_budget(h, tasks), h * 0.5);
  tasks.push_back({-1, 0.005, 1e-3, false});  // unpinned: 0.2 on every CPU
  EXPECT_DOUBLE_EQ(session::live_time_budget(h, tasks), h * 0.3);
  tasks.push_back({1, 0.001, 0.9e-3, false});  // CPU 1 now over-full
  EXPECT_DOUBLE_EQ(session::live_time_budget(h, tasks), h * 0.1);
  EXPECT_DOUBLE_EQ(session::live_time_budget(h, std::vector<session::TaskLoad>{}), h);  // no frames measured yet
  EXPECT_DOUBLE_EQ(session::live_time_budget(h, std::vector<session::TaskLoad>{{0, 0.001, 0.0, true}}), h);
}

// The daemon's case: no duration, running totals, bounded memory. 60 s of
// virtual time (the recording holds its last row after 5 s).
TEST(LiveSync, AnEndlessRunKeepsTotalsAndDropsWhatNoStepReads) {
  const auto spec = testing::load_example("motor_sync.yaml");
  auto graph = testing::build_graph(spec);
  runtime::Recorder::Options keep;
  keep.keep = 4096;  // as rtcosimd keeps
  runtime::Recorder recorder(*graph, keep);
  session::LiveSync live(spec, registry(), *graph, recorder, 0.0);
  runtime::VirtualExecutor executor(*graph);
  std::size_t frames = 0, most = 0;
  executor.run(60.0, [&](runtime::TaskRuntime& task, const runtime::FrameRecord&) {
    recorder.sample(task);
    if (++frames % 16 == 0) {
      recorder.drain();
      live.poll();
      most = std::max(most, live.retained_measurements());
    }
  });
  recorder.finish(nullptr);
  live.poll();
  // Every step whose measurement arrived: y^ up to 60 s (index 6000) covers
  // steps 0..5999 with the horizon 1.
  EXPECT_EQ(live.totals().steps, 6000u);
  EXPECT_EQ(live.posted(), 6000u);
  EXPECT_LE(most, 4096u + 100u);
  EXPECT_LT(live.retained_measurements(), 4200u);
  const std::string json = live.status_json();
  EXPECT_NE(json.find("\"steps\":6000,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"refused\":0,"), std::string::npos) << json;
  // After 5 s the load holds 0.5 N m and the drive 50 rad/s: u settles there.
  const auto u = json.find("\"u\":{\"load.value\":");
  ASSERT_NE(u, std::string::npos) << json;
  EXPECT_NEAR(std::strtod(json.c_str() + u + 18, nullptr), 0.5, 1e-3) << json;
  EXPECT_EQ(live.result().time.size(), 0u);  // no per-step series kept
}

TEST(LiveSync, ParameterUpdatesAreAppliedByTheNextFrameWithoutAllocating) {
  const auto spec = testing::load_example("motor_sync.yaml");
  auto graph = testing::build_graph(spec);
  runtime::TaskRuntime* drive = nullptr;
  for (auto& t : graph->tasks()) {
    if (t->spec().name == "drive") drive = t.get();
  }
  ASSERT_NE(drive, nullptr);
  std::size_t load = 0;
  while (drive->partition().block(load).name() != "load") ++load;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(drive->post_parameter(load, 0, 0.25 * (i + 1)));
  {
    testing::AllocationScope scope;
    drive->drain();
    drive->step(0.01);
    EXPECT_EQ(scope.count(), 0u);
  }
  EXPECT_EQ(drive->parameters_applied(), 3u);
  EXPECT_DOUBLE_EQ(drive->partition().block(load).tunable(0), 0.75);  // the last one posted
  // The inbox holds kParameterInbox updates; one more is refused, not lost silently.
  for (std::size_t i = 0; i < runtime::TaskRuntime::kParameterInbox; ++i)
    ASSERT_TRUE(drive->post_parameter(load, 0, 1.0));
  EXPECT_FALSE(drive->post_parameter(load, 0, 2.0));
}

}  // namespace
}  // namespace rtcosim
