// session::RealtimeRun (the threads of one real-time run) and
// session::Recording (its file in any format), on real threads and the real
// clock: timing varies on this machine, so the tests assert what the run
// makes of it — frames against each other, rows against the recorder's own
// series — never a duration.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "session/realtime_run.hpp"
#include "session/recording.hpp"
#include "tests/support/graphs.hpp"

namespace rtcosim::session {
namespace {

std::string temp_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("rtcosim_session_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::size_t lines_of(const std::string& path) {
  std::ifstream in(path);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// two_task_sine at `realtime: off` (no permission needed), 0.3 s.
config::GraphSpec two_task_sine() {
  auto spec = rtcosim::testing::load_example("two_task_sine.yaml");
  spec.realtime = config::RealtimeMode::kOff;
  return spec;
}

TEST(RealtimeRun, RunsToItsEndRecordingEverySampleAndStopsTwiceWithoutHarm) {
  const auto spec = two_task_sine();
  auto graph = rtcosim::testing::build_graph(spec);
  runtime::Recorder recorder(*graph, runtime::Recorder::Options{.keep = runtime::Recorder::kKeepAll});
  const std::string csv = temp_dir("run") + "/run.csv";
  std::string why;
  auto recording = Recording::open(runtime::RecordFormat::kCsv, csv, -1, *graph, recorder, "", false, &why);
  ASSERT_TRUE(recording) << why;
  EXPECT_EQ(recording->columns(), nullptr);

  RealtimeRun run(*graph, &recorder);
  ASSERT_TRUE(run.prepare().ok);
  EXPECT_FALSE(run.distributed());
  EXPECT_EQ(run.coordinate(), 0);  // one host: the executor chooses the epoch
  EXPECT_FALSE(run.started());
  run.start(0.3, 0);
  EXPECT_TRUE(run.started());
  while (!run.finished()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    // The second half stays in the rings (65536 samples deep): finish()
    // must write it.
    if (run.elapsed() < 0.15) recording->drain(recorder);
    const auto events = run.take_events();
    EXPECT_TRUE(events.lost_hosts.empty());
    EXPECT_TRUE(events.clock_warnings.empty());
  }
  EXPECT_EQ(run.stop(), "");  // no bridge: nothing to say about its thread
  EXPECT_FALSE(run.started());
  EXPECT_EQ(run.stop(), "");
  // What the tasks recorded, drained or still in the rings: finish writes
  // the rest.
  std::uint64_t samples = 0;
  for (const auto n : recorder.reachable()) samples += n;
  recording->finish(recorder);
  ASSERT_TRUE(recording->target().commit()) << recording->target().error();

  // Every sample is a row per recorded signal (all three are the fast
  // task's), after the header.
  EXPECT_GT(samples, 0u);
  EXPECT_EQ(recorder.dropped(), 0u);
  EXPECT_EQ(recording->target().samples_written(), samples);
  EXPECT_EQ(lines_of(csv), 1 + samples * spec.record.signals.size());
  std::size_t values = 0;
  for (const auto& s : recorder.series()) values += s.value.size();
  EXPECT_EQ(values, samples * spec.record.signals.size());
  // Frames ran on both tasks, each at its period: the fast task's frames
  // cover the slow task's time (whole cycles; the last may be cut).
  const auto fast = graph->find_task("fast")->stats().frames.load();
  const auto slow = graph->find_task("slow")->stats().frames.load();
  EXPECT_GT(slow, 0u);
  EXPECT_GT(fast, slow);
}

TEST(RealtimeRun, RequestStopEndsAnOpenEndedRunAtACycleBoundary) {
  auto graph = rtcosim::testing::build_graph(rtcosim::testing::load_example("overrun_virtual.yaml"));
  RealtimeRun run(*graph, nullptr);
  ASSERT_TRUE(run.prepare().ok);
  run.start(0.0, 0);  // until stopped
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_FALSE(run.finished());
  run.request_stop();
  while (!run.finished()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  (void)run.stop();
  // A rate group ends on a whole slow cycle: 8 fast frames per slow one.
  const auto fast = graph->find_task("actuator")->stats().frames.load();
  const auto slow = graph->find_task("airframe")->stats().frames.load();
  EXPECT_GT(slow, 0u);
  EXPECT_EQ(fast, 8 * slow);
}

TEST(RealtimeRun, ADistributedGraphWaitsForItsBridgeBeforeItCoordinates) {
  auto spec = rtcosim::testing::load_example("flight_control_two_hosts.yaml");
  auto graph = rtcosim::testing::build_graph(spec);
  graph->set_host(spec.hosts.front().name);
  RealtimeRun run(*graph, nullptr);
  EXPECT_TRUE(run.distributed());
  // Coordinating without the bridge would race with cancel_coordination.
  EXPECT_THROW((void)run.coordinate(), std::logic_error);
  run.cancel_coordination();  // nothing to cancel: harmless
  EXPECT_EQ(run.stop(), "");
}

TEST(Recording, OneFactoryWritesEveryFormatAndNamesWhatItCannotOpen) {
  const auto spec = two_task_sine();
  auto graph = rtcosim::testing::build_graph(spec);
  runtime::Recorder recorder(*graph);
  const std::string dir = temp_dir("formats");
  for (const auto format : {runtime::RecordFormat::kCsv, runtime::RecordFormat::kHdf5, runtime::RecordFormat::kMat73,
                            runtime::RecordFormat::kMat5}) {
    const std::string path = dir + "/r." + runtime::to_string(format);
    std::string why;
    auto r = Recording::open(format, path, -1, *graph, recorder, "name: x\n", false, &why);
    ASSERT_TRUE(r) << runtime::to_string(format) << ": " << why;
    EXPECT_EQ(r->columns() != nullptr, runtime::is_columnar(format)) << runtime::to_string(format);
    EXPECT_EQ(r->target().path(), path);
    r->finish(recorder);
    EXPECT_TRUE(r->target().commit()) << r->target().error();
    EXPECT_TRUE(std::filesystem::exists(path)) << path;
  }
  std::string why;
  EXPECT_EQ(
      Recording::open(runtime::RecordFormat::kCsv, dir + "/no/such/dir/r.csv", -1, *graph, recorder, "", false, &why),
      nullptr);
  EXPECT_NE(why.find("no/such/dir"), std::string::npos) << why;
}

// A CSV goes on across a reload with a marker row; a column file has no
// such row (the daemon ends it instead).
TEST(Recording, AReloadMarksACsvAndLeavesAColumnFileAlone) {
  const auto spec = two_task_sine();
  auto graph = rtcosim::testing::build_graph(spec);
  runtime::Recorder recorder(*graph);
  const std::string dir = temp_dir("reload");
  std::string why;
  auto csv = Recording::open(runtime::RecordFormat::kCsv, dir + "/r.csv", -1, *graph, recorder, "", false, &why);
  ASSERT_TRUE(csv) << why;
  csv->mark_reload(1);
  csv->finish(recorder);
  ASSERT_TRUE(csv->target().commit());
  EXPECT_EQ(lines_of(dir + "/r.csv"), 2u);  // the header and the marker
  auto h5 = Recording::open(runtime::RecordFormat::kHdf5, dir + "/r.h5", -1, *graph, recorder, "", false, &why);
  ASSERT_TRUE(h5) << why;
  const auto before = h5->target().samples_written();
  h5->mark_reload(1);
  EXPECT_EQ(h5->target().samples_written(), before);
  h5->finish(recorder);
  EXPECT_TRUE(h5->target().commit());
}

}  // namespace
}  // namespace rtcosim::session
