// The replay log and its executor without real time: a run of the real-time
// loop (run_unit) on deterministic fake clocks, one wake-up of one thread
// 6 ms late, logged through LoggedClock; then ReplayExecutor on a fresh
// graph must give every statistic, every recorded sample and every CSV byte
// of that run back, bit for bit. Logs that do not fit the graph, damaged
// files and the graphs that cannot be logged are refused with a reason.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <gtest/gtest.h>

#include "coupling/data_block.hpp"
#include "io/plant_datagram.hpp"
#include "io/plant_receivers.hpp"
#include "runtime/frame_log.hpp"
#include "runtime/record_file.hpp"
#include "runtime/recorder.hpp"
#include "runtime/replay_executor.hpp"
#include "runtime/replay_log.hpp"
#include "runtime/unit_loop.hpp"
#include "runtime/virtual_executor.hpp"
#include "tasks/plant/live_feed.hpp"
#include "tests/support/files.hpp"
#include "tests/support/graphs.hpp"
#include "tests/support/replay_logs.hpp"
#include "tests/support/scratch.hpp"
#include "tests/support/udp_port.hpp"

namespace rtcosim::runtime {
namespace {

// The live sources' threads and sockets, as a front end installs them.
io::PlantReceivers g_receivers;

namespace fs = std::filesystem;
using rtcosim::testing::build_graph;
using rtcosim::testing::checked;
using rtcosim::testing::fake_clock_header;
using rtcosim::testing::load_example;
using rtcosim::testing::slurp;
using rtcosim::testing::solo_graph_text;
using rtcosim::testing::spit;
using rtcosim::testing::thrown_by;
using rtcosim::testing::write_replay_log;
using namespace std::chrono_literals;

std::string example_text(const std::string& name) { return slurp(fs::path(RTCOSIM_EXAMPLES_DIR) / name); }

// An example's text with each `from` replaced by its `to` everywhere,
// loaded as if it were the example (relative data paths resolve beside it).
std::unique_ptr<Graph> edited_example(const std::string& name,
                                      const std::vector<std::pair<std::string, std::string>>& edits) {
  std::string text = example_text(name);
  for (const auto& [from, to] : edits) {
    std::size_t n = 0;
    for (auto p = text.find(from); p != std::string::npos; p = text.find(from, p + to.size()), ++n) {
      text.replace(p, from.size(), to);
    }
    EXPECT_GT(n, 0u) << "'" << from << "' is not in " << name;
  }
  return build_graph(checked(config::load_graph_text(text, std::string(RTCOSIM_EXAMPLES_DIR) + "/" + name)));
}

// ---------------------------------------------------------------------------
// The words.

TEST(ReplayWord, TimesDrainsAndDropsRoundTrip) {
  namespace w = replay_word;
  const std::int64_t times[] = {0,
                                1,
                                -1,
                                -1'000'000,  // set-up before the epoch
                                999'999'999,
                                3600LL * 1'000'000'000,
                                -3600LL * 1'000'000'000,
                                w::kTimeBias - 1,  // the largest a word holds
                                -w::kTimeBias};    // the smallest
  for (const std::int64_t t : times) {
    const std::uint64_t word = w::time(t);
    EXPECT_EQ(w::kind(word), w::kTime) << t;
    EXPECT_EQ(w::time_of(word), t);
  }
  static_assert(w::time_of(w::time(-5)) == -5 && w::kind(w::time(-5)) == w::kTime);

  const struct {
    std::size_t member, index;
    std::uint32_t count;
  } drains[] = {{0, 0, 1}, {1, 2, 3}, {4095, 65535, 0xffffffffu}, {17, 255, 65536}, {0, 0, 0}};
  for (const auto& d : drains) {
    const std::uint64_t word = w::drain(d.member, d.index, d.count);
    EXPECT_EQ(w::kind(word), w::kDrain);
    EXPECT_EQ(w::member_of(word), d.member);
    EXPECT_EQ(w::index_of(word), d.index);
    EXPECT_EQ(w::count_of(word), d.count);
    const std::uint64_t drop = w::drop(d.member, d.index);
    EXPECT_EQ(w::kind(drop), w::kDrop);
    EXPECT_EQ(w::member_of(drop), d.member);
    EXPECT_EQ(w::index_of(drop), d.index);
    EXPECT_EQ(w::count_of(drop), 0u);
  }
  // The limits the header states are the fields' widths.
  EXPECT_EQ(w::member_of(w::drain(w::kMemberLimit - 1, 0, 0)), w::kMemberLimit - 1);
  EXPECT_EQ(w::index_of(w::drop(0, w::kIndexLimit - 1)), w::kIndexLimit - 1);
}

// ---------------------------------------------------------------------------
// A run on fake clocks.

// The threads of a run on fake clocks, one at a time: the one whose clock
// reads earliest goes on (ties: the lower index), every other one waits in
// its clock. A discrete-event schedule, whatever the OS does with the
// threads: a frame drains exactly the blocks published before it in fake
// time, and the run is the same every time. Every `drain_every_ns` of fake
// time the thread that holds the turn drains the recording, as the run's
// drainer does every 50 ms.
class Lockstep {
 public:
  Lockstep(std::size_t threads, std::int64_t start_ns, std::int64_t drain_every_ns, std::function<void()> drainer)
      : time_(threads, start_ns),
        done_(threads, false),
        drain_every_ns_(drain_every_ns),
        next_drain_ns_(start_ns + drain_every_ns),
        drainer_(std::move(drainer)) {
    turn_ = earliest();
  }

  void begin(std::size_t i) {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return turn_ == i; });
  }
  // Thread i's clock reads t: the earliest thread runs on.
  void at(std::size_t i, std::int64_t t) {
    std::unique_lock lock(mutex_);
    time_[i] = t;
    hand_over();
    cv_.wait(lock, [&] { return turn_ == i; });
  }
  void done(std::size_t i) {
    std::unique_lock lock(mutex_);
    done_[i] = true;
    hand_over();
  }
  [[nodiscard]] std::uint64_t drains() const noexcept { return drains_; }

 private:
  static constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  std::size_t earliest() const {
    std::size_t best = kNone;
    for (std::size_t k = 0; k < time_.size(); ++k) {
      if (!done_[k] && (best == kNone || time_[k] < time_[best])) best = k;
    }
    return best;
  }
  void hand_over() {
    const std::size_t next = earliest();
    if (next != kNone && time_[next] >= next_drain_ns_) {
      drainer_();
      ++drains_;
      while (next_drain_ns_ <= time_[next]) next_drain_ns_ += drain_every_ns_;
    }
    if (next != turn_) {
      turn_ = next;
      cv_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::int64_t> time_;
  std::vector<bool> done_;
  std::size_t turn_ = kNone;
  std::int64_t drain_every_ns_, next_drain_ns_;
  std::function<void()> drainer_;
  std::uint64_t drains_ = 0;
};

// A frame's work on the fake clock: what the file scripts (`execution:`),
// else a tenth of the task's period plus up to 12 us that vary from frame
// to frame (so that measured steps vary too).
std::int64_t work_ns(const TaskRuntime& task, std::uint64_t frame) {
  if (task.spec().execution.declared) return seconds_to_ns(execution_time(task.spec(), frame));
  return seconds_to_ns(task.spec().period) / 10 + static_cast<std::int64_t>((frame * 7919) % 13) * 1000;
}

constexpr std::int64_t kWakeNs = 20'000;      // every wake-up this late
constexpr std::int64_t kDelayNs = 6'000'000;  // and one wake-up of one thread this much more

// Time stands still except where the thread sleeps (to its deadline, then
// kWakeNs, and on one chosen wake-up kDelayNs more) and where a frame does
// its scripted work; every reading waits for the thread's turn.
struct ScriptedClock {
  Lockstep& steps;
  std::size_t unit;
  std::int64_t t;
  std::uint64_t delayed_wake = 0;  // the wake-up (1: the first) that comes kDelayNs later; 0: none
  std::uint64_t wakes = 0;

  std::int64_t now() noexcept {
    steps.at(unit, t);
    return t;
  }
  void sleep_until(std::int64_t deadline_ns) noexcept {
    ++wakes;
    t = std::max(t, deadline_ns) + kWakeNs + (wakes == delayed_wake ? kDelayNs : 0);
  }
  void before_integration(const TaskRuntime& task, std::uint64_t frame) noexcept { t += work_ns(task, frame); }
};

std::vector<std::string> task_names(Graph& graph) {
  std::vector<std::string> names;
  for (const auto& t : graph.tasks()) names.push_back(t->spec().name);
  return names;
}

// A run's recording and frame table, as `rtcosim run --record --frames`
// writes them (tools/rtcosim/run_command.cpp, Outputs), every sample kept.
struct Sinks {
  Recorder recorder;
  FrameLog frames;
  fs::path csv_path, frames_path;
  std::unique_ptr<RecordFile> csv, frames_csv;

  Sinks(Graph& graph, const fs::path& dir, const std::string& stem, std::size_t ring = 1u << 16)
      : recorder(graph, Recorder::Options{.samples_per_task = ring, .keep = Recorder::kKeepAll}),
        frames(task_names(graph), ring),
        csv_path(dir / (stem + ".csv")),
        frames_path(dir / (stem + "_frames.csv")) {
    std::string why;
    csv = RecordFile::create(csv_path.string(), &why);
    EXPECT_TRUE(csv) << why;
    recorder.write_header(*csv);
    frames_csv = RecordFile::create(frames_path.string(), &why);
    EXPECT_TRUE(frames_csv) << why;
    FrameLog::write_header(*frames_csv);
  }
  // The run's drainer: the rings to the files, then the batch mark.
  void drain(ReplayLog& log) {
    recorder.drain(csv.get());
    frames.drain(frames_csv.get(), nullptr);
    std::vector<std::uint64_t> recorded;
    for (const auto& c : recorder.counts()) recorded.push_back(c.samples);
    log.drain(recorded, frames.rows_drained());
  }
  // A replay's: the run's batches.
  void drain(const ReplayRecord::Batch& batch) {
    recorder.drain(csv.get(), batch.recorded);
    frames.drain(frames_csv.get(), nullptr, batch.frame_rows);
  }
  void finish() {
    recorder.finish(csv.get());
    frames.finish(frames_csv.get(), nullptr);
    EXPECT_TRUE(csv->commit()) << csv->error();
    EXPECT_TRUE(frames_csv->commit()) << frames_csv->error();
  }
};

struct Script {
  double duration = 1.0;
  std::int64_t epoch_ns = 5'000'000'000;  // the fake clocks start 1 ms before it
  std::size_t delayed_unit = 0;
  std::uint64_t delayed_wake = 0;                    // 0: no late wake-up
  std::uint64_t rotate_every = 0;                    // drains per log file, as the daemon rotates (0: one file)
  std::size_t sink_ring = 1u << 16;                  // the run's recording and frame-table rings (a small one drops)
  std::function<void(std::uint64_t)> at_drain = {};  // called at each drain (its number), the threads held
};

// The name rtcosimd gives a rotated file: run.rpl, run.1.rpl, run.2.rpl, ...
fs::path rotated(const fs::path& first, std::uint64_t n) {
  return first.parent_path() / (first.stem().string() + "." + std::to_string(n) + first.extension().string());
}

// Runs every thread of the graph on its scripted clock through LoggedClock,
// as RealtimeExecutor does with a replay log, and writes the log to
// `log_path`.
std::unique_ptr<Sinks> run_logged(Graph& graph, const fs::path& dir, const fs::path& log_path, const Script& s) {
  // The log first, as `rtcosim run` makes it before the executor starts:
  // the resets' takes of a live source are the run's first words.
  ReplayLog log(graph, log_path.string(),
                ReplayLog::Header{"fake.yaml", "not-a-sha", seconds_to_ns(s.duration), "fake clock", graph.host(), {}});
  std::string why;
  EXPECT_TRUE(log.open(&why)) << why;
  // As `rtcosim run` and rtcosimd do: a reset for the link warnings after
  // the log exists (its takes are no frame's, and not logged), then the
  // executor's.
  (void)graph.link_warnings();
  log.tap_sources();
  graph.reset();
  log.tap_links();
  auto units = thread_units(graph);
  const std::int64_t end_ns = s.epoch_ns + seconds_to_ns(s.duration);
  for (auto& u : units) u.reset(s.epoch_ns, end_ns);
  auto sinks = std::make_unique<Sinks>(graph, dir, "run", s.sink_ring);
  sinks->recorder.sample_start(graph);  // as RealtimeExecutor::start: the t = 0 sample
  const std::int64_t start_ns = s.epoch_ns - 1'000'000;
  std::uint64_t drains = 0, files = 1;
  Lockstep steps(units.size(), start_ns, 50'000'000, [&] {
    if (s.at_drain) s.at_drain(drains + 1);
    sinks->drain(log);
    if (s.rotate_every > 0 && ++drains % s.rotate_every == 0) {
      const fs::path next = rotated(log_path, files++);
      const int fd = ::open(next.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      std::string rotate_why;
      EXPECT_TRUE(log.rotate(fd, next.string(), &rotate_why)) << rotate_why;
    }
  });
  const std::atomic<bool> running{true};
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < units.size(); ++i) {
    threads.emplace_back([&, i] {
      steps.begin(i);
      ScriptedClock clock{steps, i, start_ns, i == s.delayed_unit ? s.delayed_wake : 0};
      LoggedClock<ScriptedClock> logged{clock, log, i, s.epoch_ns};
      run_unit(units[i], logged, s.epoch_ns, end_ns, running, UnitSinks{&sinks->recorder, &sinks->frames});
      steps.done(i);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_GT(steps.drains(), 5u);  // the batches are exercised
  // As `rtcosim run` ends: the recording, then the log.
  sinks->finish();
  EXPECT_TRUE(log.finish(&why)) << why;
  EXPECT_EQ(log.dropped(), 0u);
  return sinks;
}

std::unique_ptr<Sinks> replay(Graph& graph, const ReplayRecord& record, const fs::path& dir, const std::string& stem) {
  auto sinks = std::make_unique<Sinks>(graph, dir, stem);
  ReplayExecutor executor(graph, record);
  std::string why;
  EXPECT_TRUE(executor.run(&sinks->recorder, &sinks->frames, &why)) << why;
  for (const auto& b : record.batches) sinks->drain(b);
  sinks->finish();
  return sinks;
}

// A double as its exact bits, readable.
std::string exact(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%a", v);
  return text;
}

void add_histogram(std::vector<std::string>& out, const std::string& name, const LogHistogram& h) {
  out.push_back(name + ".count=" + std::to_string(h.count()));
  out.push_back(name + ".min=" + std::to_string(h.min()));
  out.push_back(name + ".max=" + std::to_string(h.max()));
  out.push_back(name + ".mean=" + exact(h.mean()));
  std::string buckets;
  for (int i = 0; i < LogHistogram::kBuckets; ++i) {
    if (h.bucket(i) != 0) buckets += std::to_string(i) + ":" + std::to_string(h.bucket(i)) + " ";
  }
  out.push_back(name + ".buckets=" + buckets);
}

void add_range(std::vector<std::string>& out, const std::string& name, const RunningRange& r) {
  out.push_back(name + ".count=" + std::to_string(r.count()));
  out.push_back(name + ".min=" + exact(r.min()));
  out.push_back(name + ".max=" + exact(r.max()));
  out.push_back(name + ".mean=" + exact(r.mean()));  // sum / count: the sum, exactly
  out.push_back(name + ".last=" + exact(r.last()));
}

// Everything a task reports, exactly.
std::vector<std::string> figures(const TaskRuntime& t) {
  const TaskStats& s = t.stats();
  std::vector<std::string> out{
      "frames=" + std::to_string(s.frames.load()),        "cycles=" + std::to_string(s.cycles.load()),
      "overruns=" + std::to_string(s.overruns.load()),    "missed_periods=" + std::to_string(s.missed_periods.load()),
      "lost_real_time=" + exact(s.lost_real_time.load()), "sim_time=" + exact(t.partition().time()),
  };
  add_histogram(out, "wakeup_latency", s.wakeup_latency_ns);
  add_histogram(out, "start_lateness", s.start_lateness_ns);
  add_histogram(out, "execution", s.execution_ns);
  add_histogram(out, "cycle", s.cycle_ns);
  add_range(out, "step", s.step);
  add_range(out, "lag", s.lag);
  add_range(out, "truncation_error", s.truncation_error);
  return out;
}

std::vector<std::uint64_t> bits(const std::vector<double>& v) {
  std::vector<std::uint64_t> out;
  for (const double d : v) out.push_back(std::bit_cast<std::uint64_t>(d));
  return out;
}

// The replay's graph, recording and frame table against the run's.
void expect_same(Graph& run_graph, const Sinks& run, Graph& replay_graph, const Sinks& replayed) {
  ASSERT_EQ(run_graph.tasks().size(), replay_graph.tasks().size());
  for (std::size_t i = 0; i < run_graph.tasks().size(); ++i) {
    const TaskRuntime& a = *run_graph.tasks()[i];
    const TaskRuntime& b = *replay_graph.tasks()[i];
    if (!a.local()) continue;  // another host's
    EXPECT_GT(a.stats().frames.load(), 0u) << a.spec().name;
    EXPECT_EQ(figures(b), figures(a)) << "task '" << a.spec().name << "'";
  }
  const auto& sa = run.recorder.series();
  const auto& sb = replayed.recorder.series();
  ASSERT_EQ(sb.size(), sa.size());
  ASSERT_FALSE(sa.empty());
  for (std::size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sb[i].task, sa[i].task);
    EXPECT_EQ(sb[i].signal, sa[i].signal);
    EXPECT_GT(sa[i].time.size(), 10u) << sa[i].signal;
    EXPECT_EQ(bits(sb[i].time), bits(sa[i].time)) << sa[i].signal;
    EXPECT_EQ(bits(sb[i].value), bits(sa[i].value)) << sa[i].signal;
  }
  // The run's drops, no more: a replay's own rings wait for room.
  EXPECT_EQ(replayed.recorder.dropped(), run.recorder.dropped());
  EXPECT_EQ(replayed.frames.dropped(), run.frames.dropped());
  // The files byte for byte, batch markers and all.
  const std::string csv = slurp(run.csv_path), frames = slurp(run.frames_path);
  EXPECT_GT(frames.size(), 1000u);
  EXPECT_TRUE(slurp(replayed.csv_path) == csv) << "the recordings differ";
  EXPECT_TRUE(slurp(replayed.frames_path) == frames) << "the frame tables differ";
}

// flight_control: three threads in a loop of links (controller -> actuator
// -> airframe -> controller), measured steps on two of them. The actuator's
// 41st wake-up (its release at 200 ms) comes 6 ms late: that cycle ends
// after its deadline.
TEST(ReplayRoundTrip, FlightControlWithALateWakeUpIsReproducedBitForBit) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay");
  const fs::path log_path = dir / "run.rpl";
  auto run_graph = build_graph(load_example("flight_control.yaml"));
  ASSERT_EQ(thread_units(*run_graph)[1].owner().spec().name, "actuator");
  auto run = run_logged(*run_graph, dir, log_path, Script{.delayed_unit = 1, .delayed_wake = 41});

  // The delay is in the run: the actuator's worst wake-up is it plus what
  // every wake-up adds, its one overrun that cycle; the others never wait.
  const TaskStats& actuator = run_graph->find_task("actuator")->stats();
  EXPECT_EQ(actuator.wakeup_latency_ns.max(), kDelayNs + kWakeNs);
  EXPECT_EQ(actuator.wakeup_latency_ns.min(), kWakeNs);
  EXPECT_EQ(actuator.start_lateness_ns.max(), kDelayNs + kWakeNs);
  EXPECT_EQ(actuator.overruns.load(), 1u);
  for (const char* other : {"controller", "airframe"}) {
    const TaskStats& s = run_graph->find_task(other)->stats();
    EXPECT_EQ(s.wakeup_latency_ns.max(), kWakeNs) << other;
    EXPECT_EQ(s.overruns.load(), 0u) << other;
  }
  EXPECT_EQ(run_graph->find_task("controller")->stats().frames.load(), 100u);

  const ReplayRecord record = ReplayRecord::load(log_path.string());
  EXPECT_EQ(record.header.graph_file, "fake.yaml");
  EXPECT_EQ(record.header.mode, "fake clock");
  EXPECT_EQ(record.duration(), 1.0);
  ASSERT_EQ(record.unit_tasks.size(), 3u);
  EXPECT_EQ(record.unit_tasks[1], std::vector<std::string>{"actuator"});
  EXPECT_GT(record.batches.size(), 5u);
  // The first reading, 1 ms before the epoch, is negative in the log.
  ASSERT_FALSE(record.words[0].empty());
  EXPECT_EQ(replay_word::time_of(record.words[0][0]), -1'000'000);
  std::size_t drains = 0;
  for (const auto& w : record.words) {
    drains +=
        std::count_if(w.begin(), w.end(), [](std::uint64_t x) { return replay_word::kind(x) == replay_word::kDrain; });
  }
  EXPECT_GT(drains, 100u);

  auto replay_graph = build_graph(load_example("flight_control.yaml"));
  auto replayed = replay(*replay_graph, record, dir, "replay");
  expect_same(*run_graph, *run, *replay_graph, *replayed);
  fs::remove_all(dir);
}

// The same executor replays again on the same graph: `run` resets it.
TEST(ReplayRoundTrip, ASecondReplayOnTheSameGraphGivesTheSameRun) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay");
  const fs::path log_path = dir / "run.rpl";
  auto run_graph = build_graph(load_example("flight_control.yaml"));
  auto run = run_logged(*run_graph, dir, log_path, Script{.duration = 0.5, .delayed_unit = 2, .delayed_wake = 7});
  const ReplayRecord record = ReplayRecord::load(log_path.string());
  auto replay_graph = build_graph(load_example("flight_control.yaml"));
  ReplayExecutor executor(*replay_graph, record);
  std::string why;
  for (const char* stem : {"first", "second"}) {
    Sinks sinks(*replay_graph, dir, stem);
    ASSERT_TRUE(executor.run(&sinks.recorder, &sinks.frames, &why)) << why;
    for (const auto& b : record.batches) sinks.drain(b);
    sinks.finish();
    SCOPED_TRACE(stem);
    expect_same(*run_graph, *run, *replay_graph, sinks);
  }
  fs::remove_all(dir);
}

// four_task: four threads, five links, measured and fixed steps; the
// plant's (1 ms) 300th wake-up is late, so it catches up frames back to
// back. overrun_virtual: a rate group (8 actuator frames, then one airframe
// frame) whose scripted execution times overrun every cycle.
TEST(ReplayRoundTrip, FourTasksAndARateGroupAreReproducedBitForBit) {
  const struct {
    const char* example;
    Script script;
    const char* delayed_task;
  } cases[] = {
      {"four_task.yaml", Script{.duration = 0.6, .delayed_unit = 2, .delayed_wake = 300}, "plant"},
      {"overrun_virtual.yaml", Script{.duration = 0.5}, nullptr},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.example);
    const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay");
    const fs::path log_path = dir / "run.rpl";
    auto run_graph = build_graph(load_example(c.example));
    auto run = run_logged(*run_graph, dir, log_path, c.script);
    if (c.delayed_task) {
      const TaskStats& s = run_graph->find_task(c.delayed_task)->stats();
      EXPECT_EQ(s.wakeup_latency_ns.max(), kDelayNs + kWakeNs);
      EXPECT_GT(s.overruns.load(), 0u);
    } else {
      EXPECT_GT(run_graph->find_task("airframe")->stats().overruns.load(), 0u);
    }
    const ReplayRecord record = ReplayRecord::load(log_path.string());
    auto replay_graph = build_graph(load_example(c.example));
    auto replayed = replay(*replay_graph, record, dir, "replay");
    expect_same(*run_graph, *run, *replay_graph, *replayed);
    fs::remove_all(dir);
  }
}

// ---------------------------------------------------------------------------
// Logs that do not fit.

// A log of flight_control (0.5 s, fake clocks) in `dir`.
fs::path flight_control_log(const fs::path& dir) {
  const fs::path log_path = dir / "run.rpl";
  auto graph = build_graph(load_example("flight_control.yaml"));
  (void)run_logged(*graph, dir, log_path, Script{.duration = 0.5, .delayed_unit = 1, .delayed_wake = 20});
  return log_path;
}

TEST(ReplayMismatch, AGraphWithOtherThreadsOrTasksIsRefusedByName) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay");
  const ReplayRecord record = ReplayRecord::load(flight_control_log(dir).string());
  // Four threads against three.
  auto four = build_graph(load_example("four_task.yaml"));
  const std::string threads = thrown_by([&] { ReplayExecutor executor(*four, record); });
  EXPECT_NE(threads.find("had 3 thread(s), this graph has 4"), std::string::npos) << threads;
  // Three threads, the third's task renamed.
  auto renamed = edited_example("flight_control.yaml", {{"{name: airframe,", "{name: pitch,"},
                                                        {"task: airframe,", "task: pitch,"},
                                                        {"task: airframe}", "task: pitch}"}});
  ASSERT_NE(renamed->find_task("pitch"), nullptr);
  const std::string tasks = thrown_by([&] { ReplayExecutor executor(*renamed, record); });
  EXPECT_NE(tasks.find("thread 3 ran [airframe] in the log, this graph has [pitch]"), std::string::npos) << tasks;
  // The same tasks, the airframe fed by the controller instead of the
  // actuator: a link the run did not have (the controller's thread comes
  // first).
  auto rewired = edited_example("flight_control.yaml", {{"{from: actuator.y, to: airframe_pitch_rate.u}",
                                                         "{from: controller_gain.y, to: airframe_pitch_rate.u}"}});
  const std::string links = thrown_by([&] { ReplayExecutor executor(*rewired, record); });
  EXPECT_NE(links.find("task 'controller' writes controller_gain.y to task 'airframe' here but not in the logged run"),
            std::string::npos)
      << links;
  // The same tasks with another controller gain: a what-if, accepted.
  auto what_if = edited_example("flight_control.yaml", {{"gain: 6.0", "gain: 5.0"}});
  EXPECT_NO_THROW({ ReplayExecutor executor(*what_if, record); });
  fs::remove_all(dir);
}

TEST(ReplayMismatch, TruncatedAndForeignFilesAreRefusedNamingTheFile) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay");
  const std::string bytes = slurp(flight_control_log(dir));
  ASSERT_GT(bytes.size(), 1000u);
  const fs::path cut = dir / "cut.rpl";
  // Inside the magic, the header, a chunk of words, a batch mark, the
  // trailer; and a file that stops right before its trailer.
  const std::size_t trailer = 4 + 4 + 3 * 8;  // tag, thread count, a lost count per thread
  for (const std::size_t keep :
       {std::size_t{0}, std::size_t{5}, std::size_t{8}, std::size_t{14}, std::size_t{40}, bytes.size() / 3,
        bytes.size() / 2, bytes.size() - trailer, bytes.size() - 9, bytes.size() - 1}) {
    spit(cut, bytes.substr(0, keep));
    const std::string why = thrown_by([&] { (void)ReplayRecord::load(cut.string()); });
    EXPECT_NE(why.find(cut.string()), std::string::npos) << "cut to " << keep << " bytes: " << why;
    EXPECT_NE(why, "(nothing thrown)") << "cut to " << keep << " bytes";
  }
  // The whole file loads.
  spit(cut, bytes);
  EXPECT_NO_THROW((void)ReplayRecord::load(cut.string()));
  // Another magic: not a replay log at all.
  const fs::path foreign = dir / "foreign.rpl";
  std::string other = bytes;
  other[0] = 'X';
  spit(foreign, other);
  const std::string why = thrown_by([&] { (void)ReplayRecord::load(foreign.string()); });
  EXPECT_NE(why.find(foreign.string()), std::string::npos) << why;
  EXPECT_NE(why.find("not a replay log"), std::string::npos) << why;
  // A file that is not there.
  const std::string missing = thrown_by([&] { (void)ReplayRecord::load((dir / "none.rpl").string()); });
  EXPECT_NE(missing.find((dir / "none.rpl").string()), std::string::npos) << missing;
  fs::remove_all(dir);
}

// Replays a copy of `record` whose words `edit` changed; returns why it
// stopped ("" when it did not).
std::string replay_edited(const ReplayRecord& record, const std::function<void(ReplayRecord&)>& edit) {
  ReplayRecord edited = record;
  edit(edited);
  auto graph = build_graph(load_example("flight_control.yaml"));
  Recorder recorder(*graph, Recorder::Options{.samples_per_task = 1u << 16});
  FrameLog frames(task_names(*graph), 1u << 16);
  ReplayExecutor executor(*graph, edited);
  std::string why;
  const bool ok = executor.run(&recorder, &frames, &why);
  EXPECT_EQ(ok, why.empty()) << why;
  return ok ? "" : why;
}

// The index of the last word of `kind` in a thread's words.
std::size_t last_of(const std::vector<std::uint64_t>& words, replay_word::Kind kind) {
  for (std::size_t i = words.size(); i-- > 0;) {
    if (replay_word::kind(words[i]) == kind) return i;
  }
  ADD_FAILURE() << "no word of kind " << kind;
  return 0;
}

// A frame that asks for more blocks than its producer ever publishes waits
// for them; the replay's watchdog (5 s without progress in any thread) stops
// it and says which input.
TEST(ReplayMismatch, ADrainOfBlocksNeverPublishedStopsTheReplay) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay");
  const ReplayRecord record = ReplayRecord::load(flight_control_log(dir).string());
  EXPECT_EQ(replay_edited(record, [](ReplayRecord&) {}), "");  // unedited, it fits
  const std::string why = replay_edited(record, [](ReplayRecord& r) {
    auto& words = r.words[1];  // the actuator's last drain, of the controller's blocks
    const std::size_t i = last_of(words, replay_word::kDrain);
    words[i] = replay_word::drain(replay_word::member_of(words[i]), replay_word::index_of(words[i]), 1'000'000);
  });
  EXPECT_NE(why.find("that the replay never publishes"), std::string::npos) << why;
  EXPECT_NE(why.find("waits for"), std::string::npos) << why;
  fs::remove_all(dir);
}

// Each bundle takes its own logged counts, not those of another bundle
// between the same two tasks: in real time a drain can fall between two of
// the producer's publishes. two_task_sine carries three bundles from slow to
// fast (hermite, polynomial, zoh); one block of the second, moved to a later
// drain in the log, changes the replay.
TEST(ReplayRoundTrip, EachBundleBetweenTwoTasksKeepsItsOwnCounts) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay");
  const fs::path log_path = dir / "sine.rpl";
  {
    auto graph = build_graph(load_example("two_task_sine.yaml"));
    (void)run_logged(*graph, dir, log_path, Script{.duration = 0.5});
  }
  const ReplayRecord record = ReplayRecord::load(log_path.string());
  auto replayed_csv = [&](const ReplayRecord& r, const std::string& stem) {
    auto graph = build_graph(load_example("two_task_sine.yaml"));
    return slurp(replay(*graph, r, dir, stem)->csv_path);
  };
  ReplayRecord edited = record;
  bool moved = false;
  for (auto& words : edited.words) {
    std::size_t from = words.size();
    for (std::size_t i = 0; i < words.size() && !moved; ++i) {
      if (replay_word::kind(words[i]) != replay_word::kDrain || replay_word::index_of(words[i]) != 1) continue;
      if (from == words.size() && replay_word::count_of(words[i]) == 1 && i > words.size() / 4) {
        from = i;
      } else if (from != words.size()) {
        words[i] = replay_word::drain(replay_word::member_of(words[i]), 1, replay_word::count_of(words[i]) + 1);
        words.erase(words.begin() + static_cast<std::ptrdiff_t>(from));
        moved = true;
      }
    }
  }
  ASSERT_TRUE(moved);
  EXPECT_NE(replayed_csv(edited, "edited"), replayed_csv(record, "unedited"));
  fs::remove_all(dir);
}

// A real drain that overlapped its producer's publishes takes blocks
// published into the room it had just freed: more than its ring holds. The
// replay takes them as they arrive (it once waited for all of them first,
// while the producer waited for room: a stall). The controller -> actuator
// ring holds 4 blocks; the actuator's first four drains folded into one of
// five blocks must replay to the end.
TEST(ReplayRoundTrip, ADrainOfMoreBlocksThanTheRingHoldsTakesThemAsTheyArrive) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay");
  const ReplayRecord record = ReplayRecord::load(flight_control_log(dir).string());
  EXPECT_EQ(replay_edited(record,
                          [](ReplayRecord& r) {
                            auto& words = r.words[1];
                            std::size_t seen = 0, taken = 0;
                            for (std::size_t i = 0; i < words.size() && seen < 5;) {
                              if (replay_word::kind(words[i]) != replay_word::kDrain) {
                                ++i;
                                continue;
                              }
                              taken += replay_word::count_of(words[i]);
                              if (++seen < 5) {
                                words.erase(words.begin() + static_cast<std::ptrdiff_t>(i));
                              } else {
                                words[i] = replay_word::drain(replay_word::member_of(words[i]),
                                                              replay_word::index_of(words[i]),
                                                              static_cast<std::uint32_t>(taken));
                              }
                            }
                            ASSERT_GT(taken, 4u);
                          }),
            "");
  fs::remove_all(dir);
}

TEST(ReplayMismatch, WordsOutOfPlaceStopTheReplayWithAReason) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay");
  const ReplayRecord record = ReplayRecord::load(flight_control_log(dir).string());
  // A drain of an input bundle beyond any a task can have (256) and of
  // another task of the thread.
  std::string why = replay_edited(record, [](ReplayRecord& r) {
    auto& words = r.words[1];
    const std::size_t i = last_of(words, replay_word::kDrain);
    words[i] = replay_word::drain(replay_word::member_of(words[i]), 300, 1);
  });
  EXPECT_NE(why.find("task 'actuator' meets a drain of another task or bundle 300 in the log"), std::string::npos)
      << why;
  why = replay_edited(record, [](ReplayRecord& r) {
    auto& words = r.words[1];
    const std::size_t i = last_of(words, replay_word::kDrain);
    words[i] = replay_word::drain(1, replay_word::index_of(words[i]), 1);
  });
  EXPECT_NE(why.find("task 'actuator' meets a drain of another task or bundle"), std::string::npos) << why;
  // A drain of a bundle the logged task did not have (the actuator has one
  // input): below 256, so only the log's own link lists can tell.
  why = replay_edited(record, [](ReplayRecord& r) {
    auto& words = r.words[1];
    const std::size_t i = last_of(words, replay_word::kDrain);
    words[i] = replay_word::drain(replay_word::member_of(words[i]), 200, 1);
  });
  EXPECT_NE(why.find("task 'actuator' meets a drain of another task or bundle 200 in the log"), std::string::npos)
      << why;
  // A drop of an output bundle beyond any a task can have.
  why = replay_edited(record, [](ReplayRecord& r) {
    auto& words = r.words[0];
    const std::size_t i = last_of(words, replay_word::kDrain);  // the controller's drain, then its frame's drops
    words.insert(words.begin() + static_cast<std::ptrdiff_t>(i) + 2, replay_word::drop(0, 4000));
  });
  EXPECT_NE(why.find("task 'controller' meets a drop of another task or bundle 4000 in the log"), std::string::npos)
      << why;
  // A drop where the loop's first reading should be.
  why = replay_edited(record, [](ReplayRecord& r) { r.words[0].insert(r.words[0].begin(), replay_word::drop(0, 0)); });
  EXPECT_NE(why.find("reads the clock where the log has a drop"), std::string::npos) << why;
  EXPECT_NE(why.find("controller"), std::string::npos) << why;
  // A reading more than the run's loop took.
  why = replay_edited(record, [](ReplayRecord& r) { r.words[2].push_back(r.words[2].back()); });
  EXPECT_NE(why.find("holds 1 word(s) more"), std::string::npos) << why;
  EXPECT_NE(why.find("airframe"), std::string::npos) << why;
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------
// Graphs that cannot be logged.

// The daemon's rotation: the log goes on in run.1.rpl, run.2.rpl, ...
// (the threads' words cut wherever a drain found them); read from its first
// file the chain is the one run, bit for bit. A chain with a file missing,
// out of place, or from another run is refused naming the file.
TEST(ReplayRoundTrip, ARotatedLogIsReplayedAcrossItsFiles) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay");
  const fs::path log_path = dir / "run.rpl";
  auto run_graph = build_graph(load_example("flight_control.yaml"));
  auto run = run_logged(*run_graph, dir, log_path, Script{.delayed_unit = 1, .delayed_wake = 41, .rotate_every = 4});
  // 20 drains of 50 ms in the 1 s run: a file every 4.
  ASSERT_TRUE(fs::exists(rotated(log_path, 4)));
  ASSERT_FALSE(fs::exists(rotated(log_path, 6)));
  const ReplayRecord record = ReplayRecord::load(log_path.string());
  ASSERT_GE(record.files.size(), 5u);
  EXPECT_EQ(record.files[2], rotated(log_path, 2).string());
  auto replay_graph = build_graph(load_example("flight_control.yaml"));
  auto replayed = replay(*replay_graph, record, dir, "replay");
  expect_same(*run_graph, *run, *replay_graph, *replayed);

  // Out of place: file 3 where file 2 belongs.
  const std::string second = slurp(rotated(log_path, 2)), third = slurp(rotated(log_path, 3));
  spit(rotated(log_path, 2), third);
  std::string why = thrown_by([&] { (void)ReplayRecord::load(log_path.string()); });
  EXPECT_NE(why.find(rotated(log_path, 2).string() +
                     ": not a complete replay log (file 4 of its log where file 3 "
                     "belongs (after " +
                     rotated(log_path, 1).string() + "))"),
            std::string::npos)
      << why;
  // Missing.
  fs::remove(rotated(log_path, 2));
  why = thrown_by([&] { (void)ReplayRecord::load(log_path.string()); });
  EXPECT_NE(why.find("cannot open the replay log '" + rotated(log_path, 2).string() + "'"), std::string::npos) << why;
  EXPECT_NE(why.find("(" + rotated(log_path, 1).string() + " goes on in it)"), std::string::npos) << why;
  // Another run's file: the four_task graph's second file.
  const fs::path other = dir / "other" / "run.rpl";
  fs::create_directories(other.parent_path());
  auto four = build_graph(load_example("four_task.yaml"));
  (void)run_logged(*four, other.parent_path(), other, Script{.duration = 0.5, .rotate_every = 4});
  fs::copy_file(rotated(other, 1), rotated(log_path, 2));
  why = thrown_by([&] { (void)ReplayRecord::load(log_path.string()); });
  EXPECT_NE(why.find(rotated(log_path, 2).string() + ": not a complete replay log (it does not continue " +
                     rotated(log_path, 1).string()),
            std::string::npos)
      << why;
  // The same graph's second file from another run: the run ids differ.
  const fs::path again = dir / "again" / "run.rpl";
  fs::create_directories(again.parent_path());
  auto same_graph = build_graph(load_example("flight_control.yaml"));
  (void)run_logged(*same_graph, again.parent_path(), again,
                   Script{.delayed_unit = 1, .delayed_wake = 41, .rotate_every = 4});
  fs::copy_file(rotated(again, 2), rotated(log_path, 2), fs::copy_options::overwrite_existing);
  why = thrown_by([&] { (void)ReplayRecord::load(log_path.string()); });
  EXPECT_NE(why.find(rotated(log_path, 2).string() + ": not a complete replay log (it does not continue " +
                     rotated(log_path, 1).string() + ": another run of the graph)"),
            std::string::npos)
      << why;
  // Put back, it loads again.
  spit(rotated(log_path, 2), second);
  EXPECT_EQ(ReplayRecord::load(log_path.string()).files.size(), record.files.size());
  fs::remove_all(dir);
}

// The log's size, exactly: a thread of one task without links logs its
// first reading, then per cycle the reading after its sleep, three per
// frame (start, integration point, end) and the one after its frames —
// 1 + 5 × 100 words for 100 cycles of 10 ms in 1 s. `rtcosim run` prints
// the log's bytes over the run's frames (docs/replay.md, "Cost"): the words
// plus 12 bytes per chunk, the batch marks, the header and the trailer.
TEST(ReplayLogSize, OneTaskWithoutLinksLogsFiveWordsPerCycle) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay");
  const fs::path log_path = dir / "run.rpl";
  auto graph = build_graph(checked(config::load_graph_text(solo_graph_text(), (dir / "solo.yaml").string())));
  auto run = run_logged(*graph, dir, log_path, Script{.duration = 1.0});
  EXPECT_EQ(graph->find_task("solo")->stats().frames.load(), 100u);
  const ReplayRecord record = ReplayRecord::load(log_path.string());
  ASSERT_EQ(record.words.size(), 1u);
  EXPECT_EQ(record.words[0].size(), 501u);
  // The header: magic 8, three texts (4 + 9, 4 + 9, 4 + 10), end 8, thread
  // count 4; the thread: task count 4, name 4 + 4, two bundle counts 4 + 4;
  // the run's id: tag 4 + 8.
  const std::uint64_t header = 8 + 13 + 13 + 14 + 8 + 4 + 4 + 8 + 8 + 12;
  // Per drain: a chunk (tag, thread, count: 12) when the thread logged
  // anything since, and a batch mark (tag 4, count 4 + 8 per recorded task,
  // count 4 + 8 per frame-table task); the trailer 4 + 4 + 8.
  const std::uint64_t drains = record.batches.size();
  EXPECT_EQ(drains, 19u);  // every 50 ms of the lockstep's time before the end
  const std::uint64_t chunks = (fs::file_size(log_path) - header - 8 * 501 - drains * 28 - 16) / 12;
  EXPECT_EQ(fs::file_size(log_path), header + 8 * 501 + chunks * 12 + drains * 28 + 16);
  EXPECT_GE(chunks, drains - 1);
  EXPECT_LE(chunks, drains + 1);
  fs::remove_all(dir);
}

// A what-if with another period runs in virtual time on the logged timing
// mapped by time: a frame starting at t works as long as the task's logged
// frame that started last at or before t did until its integration point;
// a thread released at r wakes as late as its logged cycle released last at
// or before r. One task, 10 ms, every wake-up 20 us late and the 41st
// 6 ms more: replayed at 10 ms every frame's work and latency are the
// logged ones; at 5 ms frame j takes logged frame j / 2's.
TEST(ReplayWhatIf, AnotherPeriodRunsOnTheLoggedTimingMappedByTime) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay");
  const fs::path log_path = dir / "run.rpl";
  auto solo = [&](const std::string& period) {
    return build_graph(checked(config::load_graph_text(solo_graph_text(period), (dir / "solo.yaml").string())));
  };
  auto run_graph = solo("10ms");
  (void)run_logged(*run_graph, dir, log_path, Script{.duration = 1.0, .delayed_unit = 0, .delayed_wake = 41});
  const ReplayRecord record = ReplayRecord::load(log_path.string());
  auto logged_graph = solo("10ms");
  ReplayExecutor logged(*logged_graph, record);
  logged.keep_timings(true);
  std::string why;
  ASSERT_TRUE(logged.run(nullptr, nullptr, &why)) << why;
  const TaskRuntime& task = *logged_graph->find_task("solo");
  const auto& frames = logged.timings().frames.at("solo");
  const auto& cycles = logged.timings().cycles.at("solo");
  ASSERT_EQ(frames.size(), 100u);
  ASSERT_EQ(cycles.size(), 100u);
  for (std::size_t k = 0; k < 100; ++k) {
    const std::int64_t late = kWakeNs + (k == 40 ? kDelayNs : 0);
    EXPECT_EQ(cycles[k].at_ns, static_cast<std::int64_t>(k) * 10'000'000) << k;
    EXPECT_EQ(cycles[k].ns, late) << k;
    EXPECT_EQ(frames[k].at_ns, static_cast<std::int64_t>(k) * 10'000'000 + late) << k;
    EXPECT_EQ(frames[k].ns, work_ns(task, k)) << k;
  }
  // The same period: the logged work and wake-ups, frame by frame.
  auto same = solo("10ms");
  VirtualExecutor again(*same, true);
  again.set_timing(logged.logged_timing());
  again.run(1.0);
  ASSERT_EQ(again.frames().size(), 100u);
  for (std::size_t k = 0; k < 100; ++k) {
    const FrameRecord& f = again.frames()[k];
    EXPECT_EQ(f.latency_ns, cycles[k].ns) << k;
    EXPECT_EQ(std::llround((f.end - f.start) * 1e9), work_ns(task, k)) << k;
  }
  // Half the period: frame j starts 20 us after 5 ms j, after logged frame
  // j / 2 started; the cycle released at 400 ms wakes 6 ms late.
  auto fast = solo("5ms");
  VirtualExecutor faster(*fast, true);
  faster.set_timing(logged.logged_timing());
  faster.run(1.0);
  ASSERT_GT(faster.frames().size(), 81u);
  for (std::size_t j = 0; j < 80; ++j) {
    const FrameRecord& f = faster.frames()[j];
    EXPECT_EQ(f.latency_ns, kWakeNs) << j;
    EXPECT_EQ(std::llround(f.start * 1e9), static_cast<std::int64_t>(j) * 5'000'000 + kWakeNs) << j;
    EXPECT_EQ(std::llround((f.end - f.start) * 1e9), work_ns(task, j / 2)) << j;
  }
  EXPECT_EQ(faster.frames()[80].latency_ns, kWakeNs + kDelayNs);
  fs::remove_all(dir);
}

// The run's recording and frame-table rings overflow (8 entries, drained
// every 50 ms): each lost sample and row is a word of the log, and the
// replay, whose rings are large, drops exactly those (the #dropped rows of
// both CSV files are the run's).
TEST(ReplayRoundTrip, SamplesAndRowsTheRunsFullRingsDroppedAreDroppedAgain) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay");
  const fs::path log_path = dir / "run.rpl";
  auto run_graph = build_graph(load_example("flight_control.yaml"));
  auto run = run_logged(*run_graph, dir, log_path, Script{.sink_ring = 8});
  EXPECT_GT(run->recorder.dropped(), 20u);
  EXPECT_GT(run->frames.dropped(), 20u);
  const ReplayRecord record = ReplayRecord::load(log_path.string());
  std::uint64_t samples = 0, rows = 0;
  for (const auto& w : record.words) {
    for (const std::uint64_t x : w) {
      if (replay_word::kind(x) != replay_word::kLost) continue;
      (replay_word::index_of(x) == replay_word::kLostSample ? samples : rows) += 1;
    }
  }
  EXPECT_EQ(samples, run->recorder.dropped());
  EXPECT_EQ(rows, run->frames.dropped());
  ASSERT_NE(slurp(run->csv_path).find("#dropped"), std::string::npos);
  auto replay_graph = build_graph(load_example("flight_control.yaml"));
  auto replayed = replay(*replay_graph, record, dir, "replay");
  expect_same(*run_graph, *run, *replay_graph, *replayed);
  // A replay without a frame table (no --frames) passes the run's lost rows
  // by, and one without a recorder its lost samples.
  auto bare_graph = build_graph(load_example("flight_control.yaml"));
  ReplayExecutor bare(*bare_graph, record);
  std::string why;
  EXPECT_TRUE(bare.run(nullptr, nullptr, &why)) << why;
  fs::remove_all(dir);
}

// A log the disk refuses says why (the errno of the write that failed), not
// only that it failed: here its header already meets a full device.
TEST(ReplayMismatch, ALogTheDiskRefusesNamesTheError) {
  auto graph = build_graph(load_example("flight_control.yaml"));
  ReplayLog log(*graph, "/dev/full", ReplayLog::Header{"fake.yaml", "sha", 0, "fake", "", {}});
  const int fd = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  std::string why;
  EXPECT_FALSE(log.adopt(fd, "/dev/full", &why));
  EXPECT_EQ(why, "cannot write the replay log '/dev/full': No space left on device");
}

// A log that no run could have written: readings that go back, or jump so
// far that the replay (and its reference) would run for years; a batch
// larger than the log's frames. Refused when read, naming the file.
TEST(ReplayMismatch, ImpossibleReadingsAndBatchesAreRefusedWhenRead) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay");
  auto graph = build_graph(load_example("flight_control.yaml"));
  auto write = [&](const std::string& name, const std::vector<std::int64_t>& readings, std::uint64_t batch) {
    const std::uint64_t counts[3] = {batch, 0, 0};
    return write_replay_log(*graph, dir / name, readings, fake_clock_header(), counts).string();
  };
  const std::string back = write("back.rpl", {0, 5'000'000, 4'000'000}, 0);
  EXPECT_NE(thrown_by([&] {
              (void)ReplayRecord::load(back);
            }).find(back + ": not a replay log of a run (thread 1's readings go back in time at word 2)"),
            std::string::npos);
  const std::string far = write("far.rpl", {0, 1, std::int64_t{1} << 58}, 0);
  EXPECT_NE(thrown_by([&] { (void)ReplayRecord::load(far); }).find("3 readings span 288230376 s"), std::string::npos)
      << thrown_by([&] { (void)ReplayRecord::load(far); });
  const std::string big = write("big.rpl", {0, 1, 2}, std::uint64_t{1} << 40);
  EXPECT_NE(thrown_by([&] { (void)ReplayRecord::load(big); }).find("a batch of 1099511627776 entries"),
            std::string::npos);
  // The same readings within bounds load.
  EXPECT_EQ(ReplayRecord::load(write("fine.rpl", {0, 5'000'000, 9'000'000}, 2)).last_ns, 9'000'000);
  fs::remove_all(dir);
}

// A live UDP plant source: datagrams arrive (here between two drains of the
// lockstep, each delivered to the source's ring before the frames go on),
// the frames take them, the log holds each row a take popped; the replay's
// takes get exactly those rows, and the run is reproduced bit for bit.
TEST(ReplayRoundTrip, TheRowsALiveUdpSourceTookAreReplayedBitForBit) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay");
  const fs::path log_path = dir / "run.rpl";
  const int port = rtcosim::testing::free_udp_port();
  auto run_graph = edited_example("live/plant_receiver.yaml", {{"port: 47015", "port: " + std::to_string(port)}});
  const std::string key = "udp:127.0.0.1:" + std::to_string(port);
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::uint64_t sequence = 0;
  auto good = [&] {
    for (const auto& st : tasks::plant::live_status()) {
      if (st.key == key) return st.good;
    }
    return std::uint64_t{0};
  };
  // Every 50 ms drain: five rows 10 ms apart for the next 50 ms, one of
  // them out of order every fourth drain (a frame drops it: counted, and
  // the same in the replay).
  auto send = [&](std::uint64_t drain) {
    const std::uint64_t before = good();
    std::uint64_t sent = 0;
    for (int j = 0; j < 5; ++j) {
      const double t = static_cast<double>(drain) * 0.05 + (drain % 4 == 0 && j == 0 ? -0.2 : 0.01 * j);
      const double values[2] = {std::sin(7.0 * t), std::cos(3.0 * t)};
      unsigned char bytes[io::kMaxDatagram];
      const std::size_t n = io::encode_datagram(++sequence, t, values, bytes);
      sent += ::sendto(fd, bytes, n, 0, reinterpret_cast<const sockaddr*>(&to), sizeof to) == static_cast<ssize_t>(n);
    }
    for (int wait = 0; wait < 2000 && good() < before + sent; ++wait) std::this_thread::sleep_for(1ms);
    EXPECT_EQ(good(), before + sent) << "drain " << drain;
  };
  auto run = run_logged(*run_graph, dir, log_path, Script{.duration = 1.0, .at_drain = send});
  ::close(fd);
  const ReplayRecord record = ReplayRecord::load(log_path.string());
  ASSERT_EQ(record.sources.size(), 1u);
  EXPECT_EQ(record.sources[0].block, "plant");
  EXPECT_EQ(record.sources[0].signals, 2u);
  std::size_t rows = 0, takes = 0;
  for (const auto& w : record.words) {
    for (const std::uint64_t x : w) {
      rows += replay_word::kind(x) == replay_word::kRow && replay_word::count_of(x) == 3;
      takes += replay_word::kind(x) == replay_word::kTaken;
    }
  }
  EXPECT_GE(rows, 90u);    // 5 rows per drain, 19 or 20 drains
  EXPECT_GT(takes, 200u);  // every output evaluation of the 5 ms frames takes
  // The plant's rows reached the model: measured.y is not 0 throughout.
  const auto& series = run->recorder.series();
  const auto measured =
      std::find_if(series.begin(), series.end(), [](const auto& x) { return x.signal == "measured.y"; });
  ASSERT_NE(measured, series.end());
  EXPECT_GT(std::count_if(measured->value.begin(), measured->value.end(), [](double v) { return v != 0.0; }), 500);

  // Replayed on a graph of its own: its source is the same one (the port's),
  // fed by no one now; the rows come from the log.
  auto replay_graph = edited_example("live/plant_receiver.yaml", {{"port: 47015", "port: " + std::to_string(port)}});
  auto replayed = replay(*replay_graph, record, dir, "replay");
  expect_same(*run_graph, *run, *replay_graph, *replayed);
  fs::remove_all(dir);
}

// One host's part of a graph across hosts: the blocks its links from the
// other host brought (here published by the test between the lockstep's
// drains, as the DDS listener would, two or three at a time) are logged as
// its frames drained them; the link to the other host is emptied as the
// sending thread would. The replay publishes the logged blocks into the
// links and reproduces the run bit for bit, with no DDS at all.
TEST(ReplayRoundTrip, TheBlocksFromAnotherHostAreReplayedBitForBit) {
  const auto dir = rtcosim::testing::test_scratch_dir("rtcosim_replay");
  const fs::path log_path = dir / "run.rpl";
  auto plant_pc = [] {
    auto g = build_graph(load_example("flight_control_two_hosts.yaml"));
    g->set_host("plant-pc");
    return g;
  };
  auto run_graph = plant_pc();
  auto wire = [&](Graph& g, const std::string& producer, const std::string& consumer) {
    for (const auto& l : g.links()) {
      if (l->producer == producer && l->consumer == consumer) return l.get();
    }
    ADD_FAILURE() << producer << " -> " << consumer;
    return static_cast<GraphLink*>(nullptr);
  };
  GraphLink* in = wire(*run_graph, "controller", "actuator");
  GraphLink* out = wire(*run_graph, "airframe", "controller");
  ASSERT_TRUE(in && out && !in->producer_local && !out->consumer_local);
  std::uint64_t sequence = 0, sent = 0;
  coupling::DataBlock block(in->link->signal_count());
  auto other_host = [&](std::uint64_t drain) {
    // The controller's 10 ms frames since the last drain, some lost (a
    // sequence gap every seventh block).
    for (int k = 0; k < 5; ++k) {
      ++sequence;
      if (sequence % 7 == 0) continue;
      block.tag = static_cast<double>(drain - 1) * 0.05 + 0.01 * (k + 1);
      block.sequence = sequence;
      block.producer_step = 0.01;
      for (std::size_t i = 0; i < block.signal_count(); ++i) {
        block.set(i, std::sin(3.0 * block.tag + static_cast<double>(i)), 3.0 * std::cos(3.0 * block.tag));
      }
      sent += in->link->publish(block);
    }
    out->link->drain_to([](const coupling::DataBlock&) noexcept {});
  };
  auto run = run_logged(*run_graph, dir, log_path, Script{.duration = 1.0, .at_drain = other_host});
  EXPECT_GT(sent, 60u);
  // All but those the last drain published, which no frame came to take.
  EXPECT_GE(in->link->consumed() + 5, sent);
  const ReplayRecord record = ReplayRecord::load(log_path.string());
  ASSERT_EQ(record.unit_tasks.size(), 2u);  // actuator and airframe: the controller is the other host's
  std::size_t blocks = 0;
  for (const auto& w : record.words) {
    blocks +=
        std::count_if(w.begin(), w.end(), [](std::uint64_t x) { return replay_word::kind(x) == replay_word::kBlock; });
  }
  // Every one the frames drained; the reset's drain took the controller's
  // initial block, which this process computes (and a replay again).
  EXPECT_EQ(blocks + 1, in->link->consumed());

  auto replay_graph = plant_pc();
  auto replayed = replay(*replay_graph, record, dir, "replay");
  expect_same(*run_graph, *run, *replay_graph, *replayed);
  // The airframe published as many blocks to the other host as in the run.
  EXPECT_EQ(wire(*replay_graph, "airframe", "controller")->link->published(), out->link->published());
  fs::remove_all(dir);
}

TEST(ReplayRefusal, LiveSynchronisationIsNamedAndLiveSourcesAreTapped) {
  auto flight_control = build_graph(load_example("flight_control.yaml"));
  EXPECT_EQ(replay_log_refusal(*flight_control), "");
  // A plant replaying a finished CSV file is data the graph holds.
  auto csv_plant = build_graph(load_example("plant_replay.yaml"));
  EXPECT_EQ(replay_log_refusal(*csv_plant), "");
  // UDP datagrams (on a free port: building the graph binds it) and a CSV
  // file still being written: the log holds the rows their frames took.
  const int port = rtcosim::testing::free_udp_port();
  auto udp = edited_example("live/plant_receiver.yaml", {{"port: 47015", "port: " + std::to_string(port)}});
  EXPECT_EQ(replay_log_refusal(*udp), "");
  ASSERT_EQ(replay_sources(*udp).size(), 1u);
  EXPECT_EQ(replay_sources(*udp)[0].block, "plant");
  auto followed = edited_example("plant_replay.yaml", {{"events: u}", "events: u, follow: true}"}});
  EXPECT_EQ(replay_log_refusal(*followed), "");
  EXPECT_EQ(replay_sources(*followed).size(), 1u);
  EXPECT_EQ(replay_sources(*csv_plant).size(), 0u);
  // The live synchronisation posts parameters on the wall clock.
  auto sync = build_graph(load_example("motor_sync.yaml"));
  const std::string sync_why = replay_log_refusal(*sync);
  EXPECT_NE(sync_why.find("sync.optimise"), std::string::npos) << sync_why;
}

}  // namespace
}  // namespace rtcosim::runtime
