// What a replay log may make a replay do (docs/replay.md, "What a log may
// claim"): a log's readings may claim no longer a run than its frames
// justify at the graph's periods (a small log claiming days is refused
// before any frame is computed), and only regular files are read, the first
// one and every file a chain goes on in (a FIFO would block the read for
// ever). The reference's stop: tests/tasks/diagram_test.cpp (ReferenceStop)
// and tests/tools/replay_interrupt_test.cpp.
#include <cstdint>
#include <filesystem>
#include <string>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/replay_executor.hpp"
#include "runtime/replay_log.hpp"
#include "tests/support/graphs.hpp"
#include "tests/support/replay_logs.hpp"
#include "tests/support/scratch.hpp"

namespace rtcosim::runtime {
namespace {

namespace fs = std::filesystem;
using rtcosim::testing::build_graph;
using rtcosim::testing::checked;
using rtcosim::testing::overrunning_cycles;
using rtcosim::testing::thrown_by;
using rtcosim::testing::write_replay_log;

std::unique_ptr<Graph> solo_graph(const fs::path& dir) {
  return build_graph(
      checked(config::load_graph_text(rtcosim::testing::solo_graph_text(), (dir / "solo.yaml").string())));
}

// Replays `log` on a fresh solo graph: "" or why it stopped or was
// refused; `frames` the frames the replay computed.
std::string replay_solo(const fs::path& dir, const fs::path& log, std::uint64_t* frames) {
  const ReplayRecord record = ReplayRecord::load(log.string());
  auto graph = solo_graph(dir);
  ReplayExecutor executor(*graph, record);
  std::string why;
  try {
    if (executor.run(nullptr, nullptr, &why)) why.clear();
  } catch (const std::runtime_error& e) {
    why = e.what();
  }
  *frames = graph->find_task("solo")->stats().frames.load();
  return why;
}

// ---------------------------------------------------------------------------
// The duration a log may claim.

// 80 kB of log (10 001 readings, 2 500 frames of a 10 ms task) whose cycles
// lie 40 s apart: 10 s per reading on average, which the reading check
// alone lets through, claims 27 hours — which `replay --plot` integrated
// the reference for, and a what-if with another period ran in virtual time.
// At 10 ms its cycles justify 10 periods each: 250 s. Refused before the
// first frame, naming the file, the claim, the frames and the bound.
TEST(ReplayBounds, ASmallLogClaimingDaysIsRefusedBeforeAnyFrame) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay_bounds");
  auto graph = solo_graph(dir);
  const fs::path log = write_replay_log(*graph, dir / "days.rpl", overrunning_cycles(2500, 40'000'000'000));
  EXPECT_LT(fs::file_size(log), 90'000u);
  const ReplayRecord record = ReplayRecord::load(log.string());  // the reading check lets it through
  ASSERT_EQ(record.words.size(), 1u);
  ASSERT_EQ(record.words[0].size(), 10'001u);
  EXPECT_GT(record.duration(), 99'999.0);
  std::uint64_t frames = 0;
  const std::string why = replay_solo(dir, log, &frames);
  EXPECT_EQ(frames, 0u) << why;
  EXPECT_NE(why.find(log.string()), std::string::npos) << why;
  EXPECT_NE(why.find("claim a run of 100000.0 s"), std::string::npos) << why;
  EXPECT_NE(why.find("2500 frames"), std::string::npos) << why;
  EXPECT_NE(why.find("at most 250.0 s"), std::string::npos) << why;
  EXPECT_NE(why.find("thread 'solo', every 10 ms"), std::string::npos) << why;
  fs::remove_all(dir);
}

// The rule at its edge: 2 500 cycles 99 ms apart (247.5 s) replay, every
// frame; 101 ms apart (252.5 s) are refused. And a log of the ordinary kind
// (the cycles 10 ms apart) replays all of its frames.
TEST(ReplayBounds, TheClaimMayReachTenPeriodsPerCycleAndNoMore) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay_bounds");
  auto graph = solo_graph(dir);
  std::uint64_t frames = 0;
  EXPECT_EQ(replay_solo(dir, write_replay_log(*graph, dir / "ok.rpl", overrunning_cycles(2500, 10'000'000)), &frames),
            "");
  EXPECT_EQ(frames, 2500u);
  EXPECT_EQ(
      replay_solo(dir, write_replay_log(*graph, dir / "under.rpl", overrunning_cycles(2500, 99'000'000)), &frames), "");
  EXPECT_EQ(frames, 2500u);
  const std::string over =
      replay_solo(dir, write_replay_log(*graph, dir / "over.rpl", overrunning_cycles(2500, 101'000'000)), &frames);
  EXPECT_EQ(frames, 0u);
  EXPECT_NE(over.find("claim a run of 252.5 s"), std::string::npos) << over;
  EXPECT_NE(over.find("at most 250.0 s"), std::string::npos) << over;
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------
// Only regular files.

// A FIFO opened for reading blocks until a writer comes; the first file of a
// log as a FIFO hung `rtcosim replay` for ever. Refused by what it is,
// without waiting; so are a directory and a device.
TEST(ReplayBounds, AFifoDirectoryOrDeviceAsTheLogIsRefusedByWhatItIs) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay_bounds");
  const fs::path fifo = dir / "fifo.rpl";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string why = thrown_by([&] { (void)ReplayRecord::load(fifo.string()); });
  EXPECT_NE(why.find("'" + fifo.string() + "'"), std::string::npos) << why;
  EXPECT_NE(why.find("a FIFO"), std::string::npos) << why;
  EXPECT_NE(why.find("not a regular file"), std::string::npos) << why;
  const std::string directory = thrown_by([&] { (void)ReplayRecord::load(dir.string()); });
  EXPECT_NE(directory.find("'" + dir.string() + "'"), std::string::npos) << directory;
  EXPECT_NE(directory.find("a directory"), std::string::npos) << directory;
  const std::string device = thrown_by([&] { (void)ReplayRecord::load("/dev/zero"); });
  EXPECT_NE(device.find("'/dev/zero'"), std::string::npos) << device;
  EXPECT_NE(device.find("a character device"), std::string::npos) << device;
  // A symbolic link to a log, given by hand, is followed.
  auto graph = solo_graph(dir);
  const fs::path log = write_replay_log(*graph, dir / "real.rpl", overrunning_cycles(3, 10'000'000));
  fs::create_symlink(log, dir / "latest.rpl");
  EXPECT_EQ(ReplayRecord::load((dir / "latest.rpl").string()).words.at(0).size(), 13u);
  fs::remove_all(dir);
}

// A chain goes on in the file its `next` record names, in the same
// directory: a FIFO there hung the read as well. Refused naming it and the
// file that names it; a symbolic link there (the writer makes none) too.
TEST(ReplayBounds, AFifoOrALinkAsTheFileAChainGoesOnInIsRefused) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay_bounds");
  auto graph = solo_graph(dir);
  const fs::path first = dir / "run.rpl", second = dir / "run.1.rpl";
  {
    ReplayLog log(*graph, first.string(), ReplayLog::Header{"solo.yaml", "sha", 0, "fake", "", {}});
    std::string why;
    ASSERT_TRUE(log.open(&why)) << why;
    const auto readings = overrunning_cycles(4, 10'000'000);
    for (std::size_t i = 0; i < 9; ++i) log.put(0, replay_word::time(readings[i]));
    const int fd = ::open(second.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    ASSERT_TRUE(log.rotate(fd, second.string(), &why)) << why;
    for (std::size_t i = 9; i < readings.size(); ++i) log.put(0, replay_word::time(readings[i]));
    ASSERT_TRUE(log.finish(&why)) << why;
  }
  ASSERT_EQ(ReplayRecord::load(first.string()).files.size(), 2u);  // the chain as written loads
  const fs::path kept = dir / "kept.rpl";
  fs::rename(second, kept);
  ASSERT_EQ(::mkfifo(second.c_str(), 0600), 0);
  const std::string why = thrown_by([&] { (void)ReplayRecord::load(first.string()); });
  EXPECT_NE(why.find("'" + second.string() + "'"), std::string::npos) << why;
  EXPECT_NE(why.find("a FIFO"), std::string::npos) << why;
  EXPECT_NE(why.find("(" + first.string() + " goes on in it)"), std::string::npos) << why;
  fs::remove(second);
  fs::create_symlink(kept.filename(), second);
  const std::string link = thrown_by([&] { (void)ReplayRecord::load(first.string()); });
  EXPECT_NE(link.find("'" + second.string() + "'"), std::string::npos) << link;
  EXPECT_NE(link.find("a symbolic link"), std::string::npos) << link;
  fs::remove(second);
  fs::rename(kept, second);
  EXPECT_EQ(ReplayRecord::load(first.string()).files.size(), 2u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rtcosim::runtime
