// The recorder and the frame log in virtual time: bounded memory over a
// long run, exact drop counts and markers, write errors, whole rows, CSV
// quoting and files that are only replaced by a finished run.
#include "runtime/recorder.hpp"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include "runtime/frame_log.hpp"
#include "runtime/record_file.hpp"
#include "runtime/virtual_executor.hpp"
#include "tests/support/graphs.hpp"
#include "tests/support/scratch.hpp"

namespace rtcosim::runtime {
namespace {

namespace fs = std::filesystem;

// One task, period 1 ms, fixed steps: sample k (from 1) is at t = k ms.
std::unique_ptr<Graph> one_task(const std::string& task = "a", const std::string& block = "wave") {
  const std::string yaml = "name: rec\nrealtime: off\ntasks:\n  - {name: " + task +
                           ", period: 1ms, step: fixed, integrator: rk4}\n"
                           "blocks:\n  - {name: " +
                           block + ", type: sine, task: " + task +
                           ", params: {frequency: 1}}\n"
                           "wires: []\nrecord: {signals: [" +
                           block + ".y], file: unused.csv}\n";
  return rtcosim::testing::build_graph(rtcosim::testing::checked(config::load_graph_text(yaml, "rec.yaml")));
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

long rss_kb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

fs::path scratch_dir() { return rtcosim::testing::test_scratch_dir("rtcosim_recorder_test"); }

// 10^6 frames: the recorder keeps what it was asked to keep and the
// executor keeps no frame list, so memory stays flat (the old recorder kept
// every sample, 16 MB here, and the executor every frame, ~70 MB).
TEST(Recorder, MemoryStaysBoundedOverAMillionFrames) {
  auto graph = one_task();
  Recorder none(*graph);
  Recorder window(*graph, {.keep = 8});
  VirtualExecutor executor(*graph);
  executor.run(0.01, [&](TaskRuntime& t, const FrameRecord&) {
    none.sample(t);
    window.sample(t);
  });  // warm-up: every lazily allocated piece exists before the measurement
  none.drain();
  window.drain();
  const long before = rss_kb();
  std::uint64_t frames = 0;
  double last_value = 0.0;
  executor.run(1000.0, [&](TaskRuntime& t, const FrameRecord&) {
    none.sample(t);
    window.sample(t);
    last_value = t.partition().output(t.partition().find_output({"wave", "y"}))[0];
    if (++frames % 4096 == 0) {
      none.drain();
      window.drain();
    }
  });
  none.drain();
  window.drain();
  const long after = rss_kb();
  EXPECT_EQ(frames, 1000000u);
  EXPECT_EQ(none.counts().at(0).samples, 10u + 1000000u);
  EXPECT_EQ(none.retained_samples(), 0u);
  const auto& s = window.series().at(0);
  EXPECT_GE(s.time.size(), 8u);
  EXPECT_LT(s.time.size(), 16u);
  EXPECT_DOUBLE_EQ(s.time.back(), 1000.0);
  EXPECT_DOUBLE_EQ(s.value.back(), last_value);
  EXPECT_DOUBLE_EQ(s.time.front(), 1000.0 - 0.001 * static_cast<double>(s.time.size() - 1));
#ifndef __SANITIZE_ADDRESS__  // ASan's quarantine holds every freed block: RSS grows by design there
  EXPECT_LT(after - before, 4096) << "VmRSS grew from " << before << " kB to " << after << " kB";
#else
  (void)before;
  (void)after;
#endif
  EXPECT_THROW((void)executor.frames(), std::logic_error);
}

// A ring of 4 samples drained every 6 frames: frames 5 and 6 of each 6 find
// it full. 20 frames: kept 1-4, 7-10, 13-16, 19-20 (14), dropped 5-6, 11-12,
// 17-18 (6); each gap is marked after the task's last sample before it.
TEST(Recorder, ATinyRingDropsAnExactCountAndMarksEachGap) {
  auto graph = one_task();
  Recorder recorder(*graph, {.samples_per_task = 4});
  std::vector<std::string> names{"a"};
  FrameLog frame_log(names, 4);
  const auto dir = scratch_dir();
  std::string why;
  auto csv = RecordFile::create((dir / "rec.csv").string(), &why);
  auto frames = RecordFile::create((dir / "frames.csv").string(), &why);
  ASSERT_TRUE(csv && frames) << why;
  recorder.write_header(*csv);
  FrameLog::write_header(*frames);
  VirtualExecutor executor(*graph);
  std::uint64_t n = 0;
  executor.run(0.02, [&](TaskRuntime& t, const FrameRecord& f) {
    recorder.sample(t);
    frame_log.add(0, FrameRow{f.frame, f.end, f.sim_time, f.step, 0, 0});
    if (++n % 6 == 0) {
      recorder.drain(csv.get());
      frame_log.drain(*frames);
    }
  });
  recorder.finish(csv.get());
  frame_log.finish(*frames);
  ASSERT_TRUE(csv->commit() && frames->commit());
  EXPECT_EQ(n, 20u);
  EXPECT_EQ(recorder.counts().at(0).samples, 14u);
  EXPECT_EQ(recorder.counts().at(0).dropped, 6u);
  EXPECT_EQ(frame_log.dropped_per_task(), std::vector<std::uint64_t>{6});
  EXPECT_EQ(csv->samples_written(), 14u);

  std::vector<std::string> markers, times;
  std::istringstream in(slurp(dir / "rec.csv"));
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "time_s,task,signal,value");
  while (std::getline(in, line)) {
    if (line.find(",#") != std::string::npos) markers.push_back(line);
    times.push_back(line.substr(0, line.find(',')));
  }
  EXPECT_EQ(markers, (std::vector<std::string>{"0.004,a,#dropped,2", "0.01,a,#dropped,2", "0.016,a,#dropped,2"}));
  EXPECT_EQ(times,
            (std::vector<std::string>{"0.001", "0.002", "0.003", "0.004", "0.004", "0.007", "0.008", "0.009", "0.01",
                                      "0.01", "0.013", "0.014", "0.015", "0.016", "0.016", "0.019", "0.02"}));
  const std::string frames_text = slurp(dir / "frames.csv");
  EXPECT_NE(frames_text.find("\na,3,0.003000000,0.004000000,0.001,0,0,\na,#dropped,2,,,,,\na,6,0.006000000,"),
            std::string::npos)
      << frames_text;
  fs::remove_all(dir);
}

// /dev/full fails every write with ENOSPC, deterministically: the recording
// ends with an error naming the file, the time reached and the samples lost;
// sampling goes on without blocking.
TEST(Recorder, AWriteErrorEndsTheRecordingWithFileTimeAndLoss) {
  auto graph = one_task();
  Recorder recorder(*graph);
  std::string why;
  auto file = RecordFile::create("/dev/full", &why);
  ASSERT_TRUE(file) << why;
  recorder.write_header(*file);
  VirtualExecutor executor(*graph);
  std::uint64_t n = 0;
  executor.run(0.05, [&](TaskRuntime& t, const FrameRecord&) {
    recorder.sample(t);
    if (++n % 10 == 0) recorder.drain(file.get());
  });
  recorder.finish(file.get());
  EXPECT_FALSE(file->commit());
  EXPECT_TRUE(file->failed());
  EXPECT_EQ(file->samples_written(), 0u);
  EXPECT_EQ(file->samples_lost(), 50u);
  EXPECT_EQ(recorder.counts().at(0).samples, 50u);
  EXPECT_EQ(file->error(),
            "recording to '/dev/full' failed at t = 0 s: write failed: No space left on device; 50 sample(s) lost");
}

// A batch that fails part-way on something that cannot be cut back (a pipe
// whose reader stalls; ftruncate refuses it) leaves a part of a row there:
// the error says so, where it used to claim only the lost samples.
TEST(Recorder, APartialBatchThatCannotBeCutBackIsNamedInTheError) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
  const int capacity = fcntl(p[1], F_GETPIPE_SZ);
  ASSERT_GT(capacity, 0);
  auto file = RecordFile::adopt(p[1], "pipe");
  file->rows().assign(static_cast<std::size_t>(capacity) * 4, 'x');
  file->sample(0.5);
  EXPECT_FALSE(file->flush());
  close(p[0]);
  EXPECT_EQ(file->error(),
            "recording to 'pipe' failed at t = 0 s: write failed: Resource temporarily unavailable; 1 "
            "sample(s) lost; the file ends in " +
                std::to_string(capacity) +
                " byte(s) of a partly written batch after byte 0 (cutting it back failed: Invalid "
                "argument)");
}

// A file size limit (RLIMIT_FSIZE) fails writes on a regular file part-way
// through a batch: what is on disk is whole batches of whole rows, the
// error's time is the last row's, and written + lost is every sample.
TEST(Recorder, APartialWriteIsCutBackToWholeRows) {
  const auto dir = scratch_dir();
  const auto target = dir / "rec.csv";
  std::ofstream(target) << "old\n";
  auto graph = one_task();
  Recorder recorder(*graph);
  std::string why;
  auto file = RecordFile::create(target.string(), &why);
  ASSERT_TRUE(file) << why;
  recorder.write_header(*file);
  rlimit old{};
  getrlimit(RLIMIT_FSIZE, &old);
  const auto old_handler = signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 10000;  // bytes: a few batches of ~ 30 rows each
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  VirtualExecutor executor(*graph);
  std::uint64_t n = 0;
  executor.run(1.0, [&](TaskRuntime& t, const FrameRecord&) {
    recorder.sample(t);
    if (++n % 37 == 0) recorder.drain(file.get());
  });
  recorder.finish(file.get());
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, old_handler);
  EXPECT_FALSE(file->commit());
  EXPECT_EQ(file->samples_written() + file->samples_lost(), 1000u);
  EXPECT_GT(file->samples_written(), 0u);
  EXPECT_EQ(file->samples_written() % 37, 0u);  // whole batches
  const std::string part = (dir / ("rec.csv." + std::to_string(getpid()) + ".part")).string();
  char reached[32];
  std::snprintf(reached, sizeof reached, "%.9g", 0.001 * static_cast<double>(file->samples_written()));
  EXPECT_NE(file->error().find(std::string("failed at t = ") + reached + " s: write failed: "), std::string::npos)
      << file->error();
  EXPECT_NE(file->error().find("File too large; " + std::to_string(file->samples_lost()) + " sample(s) lost; the " +
                               std::to_string(file->samples_written()) + " sample(s) written until then are in '" +
                               part + "', '" + target.string() + "' is as it was"),
            std::string::npos)
      << file->error();
  const std::uint64_t written = file->samples_written();
  file.reset();
  EXPECT_EQ(slurp(target), "old\n");
  const std::string rows = slurp(part);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows.back(), '\n');
  EXPECT_LE(rows.size(), 10000u);
  std::istringstream in(rows);
  std::string line;
  std::size_t count = 0;
  while (std::getline(in, line)) {
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), 3) << line;
    ++count;
  }
  EXPECT_EQ(count, 1 + written);
  fs::remove_all(dir);
}

// A file made by create() replaces its target only at commit: a run that
// fails (never commits) leaves an existing file as it was, and no
// temporary behind.
TEST(RecordFile, ReplacesItsTargetOnlyWhenCommitted) {
  const auto dir = scratch_dir();
  const auto target = dir / "out.csv";
  std::ofstream(target) << "old\n";
  std::string why;
  {
    auto file = RecordFile::create(target.string(), &why);
    ASSERT_TRUE(file) << why;
    file->rows() += "time_s,task,signal,value\n";
    ASSERT_TRUE(file->flush());
    EXPECT_EQ(slurp(target), "old\n");  // a SIGKILL now leaves the old file
  }
  EXPECT_EQ(slurp(target), "old\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  auto file = RecordFile::create(target.string(), &why);
  file->rows() += "new\n";
  ASSERT_TRUE(file->commit());
  EXPECT_EQ(slurp(target), "new\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  fs::remove_all(dir);
}

// Two files of one run with the same target (--record x --frames x) get
// temporaries of their own instead of writing into one another.
TEST(RecordFile, TwoFilesWithOneTargetGetTheirOwnTemporaries) {
  const auto dir = scratch_dir();
  const auto target = (dir / "x.csv").string();
  std::string why;
  auto a = RecordFile::create(target, &why);
  auto b = RecordFile::create(target, &why);
  ASSERT_TRUE(a && b) << why;
  a->rows() += "a\n";
  b->rows() += "b\n";
  ASSERT_TRUE(a->flush() && b->flush());
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 2);
  ASSERT_TRUE(a->commit() && b->commit());
  EXPECT_EQ(slurp(target), "b\n");  // the last one committed, whole
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  fs::remove_all(dir);
}

// Names with a comma, a quote and a line break are written as RFC 4180
// quoted fields, so that a CSV reader gets them back.
TEST(Recorder, NamesWithCommaQuoteOrNewlineAreQuoted) {
  const std::string yaml =
      "name: rec\nrealtime: off\ntasks:\n  - {name: \"t,1\", period: 1ms}\n"
      "blocks:\n  - {name: \"w,\\\"x\\\"\\ny\", type: sine, task: \"t,1\", params: {frequency: 1}}\n"
      "wires: []\nrecord: {signals: [\"w,\\\"x\\\"\\ny.y\"], file: unused.csv}\n";
  auto graph = rtcosim::testing::build_graph(rtcosim::testing::checked(config::load_graph_text(yaml, "rec.yaml")));
  Recorder recorder(*graph);
  const auto dir = scratch_dir();
  std::string why;
  auto file = RecordFile::create((dir / "q.csv").string(), &why);
  ASSERT_TRUE(file) << why;
  recorder.write_header(*file);
  VirtualExecutor executor(*graph);
  executor.run(0.002, [&](TaskRuntime& t, const FrameRecord&) { recorder.sample(t); });
  recorder.finish(file.get());
  ASSERT_TRUE(file->commit());
  const std::string text = slurp(dir / "q.csv");
  const std::string first = "time_s,task,signal,value\n0.001,\"t,1\",\"w,\"\"x\"\"\ny.y\",";
  ASSERT_EQ(text.substr(0, first.size()), first) << text;
  EXPECT_NEAR(std::stod(text.substr(first.size())), std::sin(2.0 * M_PI * 0.001), 1e-12);
  fs::remove_all(dir);
}

// Whatever the load, a virtual run ends at its duration: 1 ms of execution
// every 1 us period releases one frame per millisecond, 100 in 0.1 s.
TEST(VirtualExecutor, AnOverloadedRunStopsAtItsDuration) {
  const std::string yaml =
      "name: hog\nrealtime: off\ntasks:\n"
      "  - {name: a, period: 1us, step: fixed, execution: {nominal: 1ms}}\n"
      "blocks:\n  - {name: k, type: constant, task: a, params: {value: [1]}}\nwires: []\n";
  auto graph = rtcosim::testing::build_graph(rtcosim::testing::checked(config::load_graph_text(yaml, "hog.yaml")));
  VirtualExecutor executor(*graph);
  executor.run(0.1);
  EXPECT_EQ(graph->tasks()[0]->stats().frames.load(), 100u);
}

}  // namespace
}  // namespace rtcosim::runtime

namespace rtcosim::runtime {
namespace {

// 10^6 samples into an HDF5 and a MAT v7.3 file: at most kChunk values wait
// in each column's buffer, and memory stays flat while the file grows by
// the 16 MB of times and values (deflated).
TEST(ColumnFile, MemoryStaysBoundedOverAMillionSamples) {
  const auto dir = scratch_dir();
  for (const auto format : {RecordFormat::kHdf5, RecordFormat::kMat73}) {
    auto graph = one_task();
    Recorder recorder(*graph);
    std::string why;
    auto file = ColumnFile::create(format, (dir / (std::string("m.") + to_string(format))).string(),
                                   record_layout(*graph, recorder, "", false), &why);
    ASSERT_TRUE(file) << why;
    VirtualExecutor executor(*graph);
    std::size_t most = 0;
    std::uint64_t frames = 0;
    const auto step = [&](TaskRuntime& t, const FrameRecord&) {
      recorder.sample(t);
      if (++frames % 4096 == 0) {
        recorder.drain(*file);
        most = std::max(most, file->buffered_values());
      }
    };
    executor.run(20.0, step);  // warm-up: the library's caches and the first chunks exist
    const long before = rss_kb();
    executor.run(1000.0, step);
    recorder.finish(*file);
    const long after = rss_kb();
    ASSERT_TRUE(file->commit()) << file->error();
    EXPECT_EQ(file->samples_written(), 20000u + 1000000u);
    // Four columns (time, wave.y and the two of the gaps), each below a chunk.
    EXPECT_LE(most, 4 * ColumnFile::kChunk);
#ifndef __SANITIZE_ADDRESS__
    EXPECT_LT(after - before, 4096) << to_string(format) << ": VmRSS grew from " << before << " kB to " << after
                                    << " kB";
#else
    (void)before;
    (void)after;
#endif
    std::cout << to_string(format) << ": VmRSS " << before << " -> " << after << " kB over 10^6 samples, file "
              << fs::file_size(dir / (std::string("m.") + to_string(format))) << " bytes\n";
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rtcosim::runtime

namespace rtcosim::runtime {
namespace {

// A constant 1.5 into an integrator, 10 ms fixed steps; nothing recorded.
std::unique_ptr<Graph> ramp() {
  const std::string yaml =
      "name: probe\nrealtime: off\ntasks:\n  - {name: a, period: 10ms, step: fixed, integrator: rk4}\n"
      "blocks:\n  - {name: k, type: constant, task: a, params: {value: 1.5}}\n"
      "  - {name: i, type: integrator, task: a}\n"
      "wires:\n  - {from: k.y, to: i.u}\n";
  return rtcosim::testing::build_graph(rtcosim::testing::checked(config::load_graph_text(yaml, "probe.yaml")));
}

// Probes sample outputs that `record:` does not name, chosen while the
// graph is built and running: k.y is 1.5 at each of the 50 frames of 0.5 s
// (t = 10 ms .. 500 ms), i.y is 1.5 t; a freed slot samples nothing more,
// and a full ring drops and counts exactly what does not fit.
TEST(Recorder, ProbesSampleAnyOutputOfTheGraph) {
  auto graph = ramp();
  Recorder recorder(*graph, {.keep = 4096, .probes = 2, .probe_samples = 16});
  EXPECT_TRUE(recorder.empty());  // no record: signals
  std::vector<std::string> names;
  for (const auto& p : recorder.probeable()) names.push_back(p.signal);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"i.y", "k.y"}));
  EXPECT_EQ(recorder.find_probeable("nope.y"), Recorder::kNoProbe);
  EXPECT_FALSE(recorder.set_probe(2, 0));
  EXPECT_FALSE(recorder.set_probe(0, 2));
  ASSERT_TRUE(recorder.set_probe(0, recorder.find_probeable("k.y")));
  ASSERT_TRUE(recorder.set_probe(1, recorder.find_probeable("i.y")));

  VirtualExecutor executor(*graph);
  std::uint64_t frames = 0;
  executor.run(0.5, [&](TaskRuntime& t, const FrameRecord&) {
    recorder.sample(t);
    if (++frames % 10 == 0) recorder.drain();  // rings of 16: drained in time
  });
  recorder.drain();
  const auto& k = recorder.probes()[0];
  const auto& i = recorder.probes()[1];
  EXPECT_EQ(k.signal, "k.y");
  EXPECT_EQ(k.task, "a");
  ASSERT_EQ(k.time.size(), 50u);
  ASSERT_EQ(i.time.size(), 50u);
  for (std::size_t n = 0; n < 50; ++n) {
    EXPECT_NEAR(k.time[n], 0.01 * static_cast<double>(n + 1), 1e-12);
    EXPECT_EQ(k.value[n], 1.5);
    EXPECT_EQ(i.time[n], k.time[n]);
    EXPECT_NEAR(i.value[n], 1.5 * i.time[n], 1e-12);
  }
  EXPECT_EQ(recorder.probe_dropped(), 0u);

  // Slot 0 freed, slot 1 not drained for 0.5 s: 16 kept, 34 dropped.
  ASSERT_TRUE(recorder.set_probe(0, Recorder::kNoProbe));
  ASSERT_TRUE(recorder.set_probe(1, recorder.find_probeable("i.y")));
  executor.run(0.5, [&](TaskRuntime& t, const FrameRecord&) { recorder.sample(t); });
  recorder.drain();
  EXPECT_EQ(recorder.probes()[0].signal, "");
  EXPECT_EQ(recorder.probes()[0].time.size(), 0u);
  EXPECT_EQ(recorder.probes()[1].time.size(), 16u);
  EXPECT_EQ(recorder.probe_dropped(), 34u);
  EXPECT_NEAR(recorder.probes()[1].value.back(), 1.5 * 0.16, 1e-12);
}

}  // namespace
}  // namespace rtcosim::runtime
