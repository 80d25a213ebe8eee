// The trace reader and report on a small trace committed under tests/ (0.2 s
// of examples/two_task_sine.yaml recorded with 'rtcosim run --trace'), and
// on a live trace recorded by the test under a real lttng-sessiond.
#include "session/report/trace/trace_report.hpp"

#include <array>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_config/loader.hpp"
#include "runtime/rt_executor.hpp"
#include "runtime/trace.hpp"
#include "session/trace_session.hpp"
#include "tests/support/graphs.hpp"
#include "tools/rtcosim/trace_command.hpp"

extern char** environ;

namespace rtcosim::trace_report {
namespace {

// Another user's process registering with the session daemon during a
// session leaves an empty trace (empty metadata) beside ours; babeltrace2
// refused the whole directory ("holds no CTF trace babeltrace2 can open").
TEST(TraceReader, AnEmptyTraceBesideOursIsPassedOver) {
  const auto dir = std::filesystem::temp_directory_path() / ("rtcosim_trace_empty_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::copy(RTCOSIM_TRACE_DIR, dir, std::filesystem::copy_options::recursive);
  const auto other = dir / "ust" / "uid" / "65534" / "64-bit";
  std::filesystem::create_directories(other / "index");
  std::ofstream(other / "metadata").close();
  std::ofstream(other / "rtcosim_0").close();
  TraceData d;
  std::string why;
  EXPECT_TRUE(read_trace(dir.string(), d, &why)) << why;
  EXPECT_EQ(d.tasks.at(1).frames.size(), 200u);
  std::filesystem::remove_all(dir);
}

TEST(TraceReader, ReadsTheCommittedTrace) {
  TraceData d;
  std::string why;
  ASSERT_TRUE(read_trace(RTCOSIM_TRACE_DIR, d, &why)) << why;
  EXPECT_EQ(d.discarded_events, 0u);
  ASSERT_EQ(d.tasks.size(), 2u);
  EXPECT_EQ(d.tasks.at(0).name, "slow");
  EXPECT_EQ(d.tasks.at(1).name, "fast");
  EXPECT_EQ(d.tasks.at(0).cpu, 0);
  EXPECT_EQ(d.tasks.at(1).priority, 80);
  EXPECT_DOUBLE_EQ(d.tasks.at(0).period_s, 0.04);
  EXPECT_EQ(d.tasks.at(0).frames.size(), 5u);    // 0.2 s at 40 ms
  EXPECT_EQ(d.tasks.at(1).frames.size(), 200u);  // 0.2 s at 1 ms
  for (const auto& [id, t] : d.tasks) {
    for (std::size_t k = 0; k < t.frames.size(); ++k) {
      EXPECT_EQ(t.frames[k].frame, k);  // consecutive, none lost
      EXPECT_TRUE(t.frames[k].ended);
      EXPECT_DOUBLE_EQ(t.frames[k].step_s, t.period_s);  // fixed steps
      EXPECT_NEAR(t.frames[k].sim_s, static_cast<double>(k + 1) * t.period_s, 1e-12);
    }
  }
  // Each slow frame publishes on every link, plus the initial block; the
  // fast task drains every link once per frame.
  ASSERT_EQ(d.links.size(), 3u);
  for (const auto& [id, l] : d.links) {
    EXPECT_EQ(l.published, 6u) << l.source;
    EXPECT_EQ(l.dropped, 0u);
    EXPECT_EQ(l.drains, 200u);
    EXPECT_EQ(l.consumer, "fast");
  }
  EXPECT_EQ(d.links.at(0).method, "hermite");
}

TEST(TraceReport, JsonAndPerfettoHaveTheDocumentedShape) {
  TraceData d;
  ASSERT_TRUE(read_trace(RTCOSIM_TRACE_DIR, d, nullptr));
  const std::string json = json_report(d);
  for (const char* key : {"{\"tasks\":[{\"name\":\"slow\",\"frames\":5,\"latency_ns\":{\"p50\":", "\"p999\":",
                          "\"exec_ns\":{", "\"deadline_misses\":0", "\"links\":[", "\"discarded_events\":0}"}) {
    EXPECT_NE(json.find(key), std::string::npos) << key << "\n" << json;
  }
  const std::string perfetto = perfetto_json(d);
  EXPECT_EQ(perfetto.rfind("{\"traceEvents\":[", 0), 0u);
  std::size_t frames = 0;
  for (auto p = perfetto.find("\"name\":\"frame\""); p != std::string::npos;
       p = perfetto.find("\"name\":\"frame\"", p + 1)) {
    ++frames;
  }
  EXPECT_EQ(frames, 205u);
}

TEST(TraceReport, QuantilesAreNearestRank) {
  const auto q = quantiles({5, 1, 4, 2, 3, 6, 7, 8, 9, 10});
  EXPECT_EQ(q.p50, 5);
  EXPECT_EQ(q.p99, 10);
  EXPECT_EQ(q.max, 10);
  EXPECT_EQ(quantiles({}).max, 0);
}

TEST(TraceReader, NamesWhatIsWrongWithABadDirectory) {
  TraceData d;
  std::string why;
  EXPECT_FALSE(read_trace("/nonexistent/trace", d, &why));
  EXPECT_NE(why.find("not a directory"), std::string::npos) << why;
  const auto empty = std::filesystem::temp_directory_path() / "rtcosim_empty_trace";
  std::filesystem::create_directories(empty);
  EXPECT_FALSE(read_trace(empty.string(), d, &why));
  EXPECT_NE(why.find("no CTF trace"), std::string::npos) << why;
  std::filesystem::remove_all(empty);
}

// A report file the disk refuses is an error, not "report written": a
// report smaller than the stream's buffer meets the full disk only at close
// (here a link to /dev/full, in a directory the command may write).
TEST(TraceReport, AReportTheDiskRefusesIsAnError) {
  const auto dir = std::filesystem::temp_directory_path() / ("rtcosim_trace_full_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto full = dir / "report.json";
  std::filesystem::create_symlink("/dev/full", full);
  for (const char* option : {"--json", "--perfetto"}) {
    std::stringstream err;
    auto* old = std::cerr.rdbuf(err.rdbuf());
    std::stringstream out;
    auto* old_out = std::cout.rdbuf(out.rdbuf());
    const int rc = tools::run_trace_command({"report", RTCOSIM_TRACE_DIR, option, full.string()});
    std::cout.rdbuf(old_out);
    std::cerr.rdbuf(old);
    EXPECT_EQ(rc, 1) << option;
    EXPECT_NE(err.str().find("cannot write '" + full.string() + "': No space left on device"), std::string::npos)
        << option << ": " << err.str();
    EXPECT_EQ(out.str().find("written to"), std::string::npos) << option << ": " << out.str();
  }
  // An SVG directory that cannot be made is named as such.
  TraceData d;
  ASSERT_TRUE(read_trace(RTCOSIM_TRACE_DIR, d, nullptr));
  std::string why;
  EXPECT_FALSE(write_svgs(d, (full / "svg").string(), &why));
  EXPECT_NE(why.find("cannot create the directory '" + (full / "svg").string() + "'"), std::string::npos) << why;
  std::filesystem::remove_all(dir);
}

// A command that cannot be run says why in its output (its callers pass the
// output on); it used to be empty.
TEST(TraceSession, ACommandThatCannotRunSaysWhy) {
  std::string out = "stale";
  EXPECT_EQ(session::run_command({"/nonexistent/lttng", "list"}, &out), -1);
  EXPECT_EQ(out, "cannot run '/nonexistent/lttng': No such file or directory");
}

// The bars and markers of an SVG: (x, y, width, height) of each
// class="bar" rect, x of each class="marker" line.
struct SvgShapes {
  std::vector<std::array<double, 4>> bars;
  std::vector<double> markers;
};

// The number in name="..." of one SVG element (std::regex is avoided:
// GCC 12 warns falsely inside <regex> under ASan, and warnings are errors).
double attribute(const std::string& element, const std::string& name) {
  const std::string key = " " + name + "=\"";
  const auto at = element.find(key);
  return at == std::string::npos ? std::nan("") : std::stod(element.substr(at + key.size()));
}

SvgShapes shapes_of(const std::string& svg) {
  SvgShapes out;
  for (auto at = svg.find("<rect class=\"bar\""); at != std::string::npos;
       at = svg.find("<rect class=\"bar\"", at + 1)) {
    const std::string element = svg.substr(at, svg.find('>', at) - at);
    out.bars.push_back(
        {attribute(element, "x"), attribute(element, "y"), attribute(element, "width"), attribute(element, "height")});
  }
  for (auto at = svg.find("<line class=\"marker\""); at != std::string::npos;
       at = svg.find("<line class=\"marker\"", at + 1)) {
    out.markers.push_back(attribute(svg.substr(at, svg.find('>', at) - at), "x1"));
  }
  return out;
}

TraceData trace_with_latencies(const std::vector<std::pair<std::int64_t, int>>& latency_counts) {
  TraceData d;
  TracedTask& t = d.tasks[0];
  t.name = "t";
  for (const auto& [ns, n] : latency_counts) {
    for (int i = 0; i < n; ++i) t.frames.push_back({t.frames.size(), 0, ns, 1000, 0.001, 0.0, true});
  }
  return d;
}

// cyclictest's plot: one bar per microsecond at a linear x, heights linear
// in log10(count), the largest latency marked where it is (not at its
// bucket's edge).
TEST(TraceReport, LatencyHistogramHasOneBarPerMicrosecondOnALogCountAxis) {
  const auto d = trace_with_latencies({{20'300, 10}, {21'700, 100}, {22'100, 1000}, {25'000, 3}, {47'900, 1}});
  const plot::Figure figure = latency_histogram(d);
  EXPECT_NE(figure.x_label.find("one bar per 1 us bucket"), std::string::npos) << figure.x_label;
  const SvgShapes svg = shapes_of(plot::render_svg(figure));
  const std::vector<double> bucket_us = {20, 21, 22, 25, 47};
  const std::vector<double> counts = {10, 100, 1000, 3, 1};
  ASSERT_EQ(svg.bars.size(), bucket_us.size());
  // Pixels per microsecond from the outer bars; every bar is where a linear
  // axis puts it and one microsecond wide (coordinates are printed to 0.01).
  const double px_per_us = (svg.bars[4][0] - svg.bars[0][0]) / (47.0 - 20.0);
  ASSERT_GT(px_per_us, 0.0);
  const double log_px = (svg.bars[2][3] - svg.bars[4][3]) / 3.0;  // per decade, from counts 1000 and 1
  ASSERT_GT(log_px, 0.0);
  for (std::size_t i = 0; i < svg.bars.size(); ++i) {
    const auto& [x, y, width, height] = svg.bars[i];
    EXPECT_NEAR(x, svg.bars[0][0] + px_per_us * (bucket_us[i] - 20.0), 0.02) << i;
    EXPECT_NEAR(width, px_per_us, 0.02) << i;
    EXPECT_NEAR(height, svg.bars[4][3] + log_px * std::log10(counts[i]), 0.02) << i;
    EXPECT_NEAR(y + height, svg.bars[0][1] + svg.bars[0][3], 0.02) << i;  // one floor
  }
  EXPECT_GT(svg.bars[4][3], 0.0);  // a single frame still shows
  ASSERT_EQ(svg.markers.size(), 1u);
  EXPECT_NEAR(svg.markers[0], svg.bars[0][0] + px_per_us * (47.9 - 20.0), 0.02);
  ASSERT_EQ(figure.panels.size(), 1u);
  EXPECT_EQ(figure.panels[0].marker_label, "max 47.9 us");
}

TEST(TraceReport, LatencyHistogramWidensItsBucketsBeyondAThousandMicroseconds) {
  // 2.5 ms would be 2500 one-microsecond buckets: 2 us is still too narrow
  // (1250), 5 us gives 500.
  const auto d = trace_with_latencies({{10'000, 2}, {12'000, 1}, {2'500'000, 1}});
  const plot::Figure figure = latency_histogram(d);
  EXPECT_NE(figure.x_label.find("one bar per 5 us bucket"), std::string::npos) << figure.x_label;
  const SvgShapes svg = shapes_of(plot::render_svg(figure));
  ASSERT_EQ(svg.bars.size(), 2u);  // 10 and 12 us share the bucket [10, 15) us
  const double px_per_us = (svg.bars[1][0] - svg.bars[0][0]) / (2500.0 - 10.0);
  EXPECT_NEAR(svg.bars[0][2], 5.0 * px_per_us, 0.02);
  EXPECT_GT(svg.bars[0][3], svg.bars[1][3]);  // 3 frames against 1
  ASSERT_EQ(svg.markers.size(), 1u);
  EXPECT_NEAR(svg.markers[0], svg.bars[0][0] + px_per_us * (2500.0 - 10.0), 0.02);
}

// A live session in a fresh directory, its sub-buffers sized for
// `events_per_second` (~50 ms of them each), or the reason why lttng cannot
// run here (the tests then skip).
std::unique_ptr<session::TraceSession> live_session(const std::filesystem::path& dir, std::string* skip,
                                                    double events_per_second = 3000.0) {
  std::string out;
  if (!runtime::trace::available()) {
    *skip = "built without LTTng-UST";
  } else if (session::run_command({"lttng", "--version"}, &out) != 0) {
    *skip = "lttng-tools is not installed";
  } else {
    std::filesystem::remove_all(dir);
    auto session = session::TraceSession::start(dir.string(), events_per_second, skip);
    if (session) return session;
    *skip = "lttng cannot run here: " + *skip;
  }
  return nullptr;
}

std::unique_ptr<runtime::Graph> two_task_sine() {
  auto spec = rtcosim::testing::load_example("two_task_sine.yaml");
  spec.realtime = config::RealtimeMode::kOff;
  return rtcosim::testing::build_graph(spec);
}

void run_realtime(runtime::Graph& graph, double seconds) {
  runtime::RealtimeExecutor executor(graph, nullptr, runtime::RealtimeReport{});
  executor.start(seconds);
  executor.join();
}

// A live run under a real session daemon: the report and the runtime's own
// statistics agree on the same run.
TEST(TraceLive, ReportAgreesWithTheRuntimeStatistics) {
  const auto dir = std::filesystem::temp_directory_path() / ("rtcosim_live_trace_" + std::to_string(getpid()));
  auto graph = two_task_sine();
  // Sized so that one CPU's buffers hold the whole run twice over: nothing
  // can be discarded, whatever the consumer daemon's pace. A frame emits at
  // most a start, an end, and a publish or drain per link end it owns
  // (bounded here by two per link of the graph), about 48 bytes each.
  constexpr double kSeconds = 0.5;
  double frames = 0.0;
  for (auto& t : graph->tasks()) frames += std::ceil(kSeconds / t->spec().period) + 1.0;
  const double bound_bytes = frames * (2.0 + 2.0 * static_cast<double>(graph->links().size())) * 48.0;
  std::string why;
  auto session = live_session(dir, &why, 100000.0);
  if (!session) GTEST_SKIP() << why;
  ASSERT_GE(4.0 * static_cast<double>(session->subbuffer_bytes()), 2.0 * bound_bytes);
  run_realtime(*graph, kSeconds);
  const auto discarded = session->stop();

  // This process's per-UID buffers. Another user's process that registers
  // with the session daemon during the run (a test dropped to nobody, a
  // daemon) adds an empty trace under ust/uid/<its uid>, which the reader
  // cannot open beside ours (reported; not this test's subject).
  const auto own = dir / "ust" / "uid" / std::to_string(::geteuid());
  TraceData d;
  ASSERT_TRUE(read_trace(own.string(), d, &why)) << why;
  EXPECT_EQ(discarded, 0u);
  EXPECT_EQ(d.discarded_events, 0u);
  ASSERT_EQ(d.tasks.size(), graph->tasks().size());
  for (auto& t : graph->tasks()) {
    const TracedTask& traced = d.tasks.at(t->id());
    EXPECT_EQ(traced.name, t->spec().name);
    EXPECT_EQ(traced.frames.size(), t->stats().frames.load()) << traced.name;
    // Percentiles agree within one bucket (1.6 %) of the runtime's histogram.
    std::vector<std::int64_t> lat;
    for (const auto& f : traced.frames) {
      if (f.latency_ns >= 0) lat.push_back(f.latency_ns);
    }
    EXPECT_EQ(lat.size(), t->stats().wakeup_latency_ns.count()) << traced.name;
    const auto q = quantiles(lat);
    using H = runtime::LogHistogram;
    for (auto [exact, p] : {std::pair{q.p50, 0.5}, std::pair{q.p99, 0.99}}) {
      const int traced_bucket = H::bucket_of(exact);
      const int runtime_bucket = H::bucket_of(t->stats().wakeup_latency_ns.percentile(p));
      EXPECT_LE(std::abs(traced_bucket - runtime_bucket), 1) << traced.name << " p" << p;
    }
  }
  std::filesystem::remove_all(dir);
}

// The system calls of each thread of an `strace -f` log that sleeps with
// TIMER_ABSTIME (the task threads), between its first and last such sleep:
// the frame loop. Resumptions of interrupted calls are not counted twice.
std::map<int, std::map<std::string, int>> frame_loop_syscalls(const std::filesystem::path& log) {
  std::map<int, std::vector<std::pair<std::string, bool>>> calls;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    int tid = 0;
    std::string call;
    if (!(words >> tid >> call) || call.rfind("<...", 0) == 0) continue;
    const auto paren = call.find('(');
    if (paren == std::string::npos) continue;
    const std::string name = call.substr(0, paren);
    calls[tid].push_back({name, name == "clock_nanosleep" && line.find("TIMER_ABSTIME") != std::string::npos});
  }
  std::map<int, std::map<std::string, int>> out;
  for (const auto& [tid, seq] : calls) {
    std::size_t first = seq.size(), last = 0;
    for (std::size_t k = 0; k < seq.size(); ++k) {
      if (!seq[k].second) continue;
      first = std::min(first, k);
      last = k;
    }
    if (first >= last) continue;
    for (std::size_t k = first; k <= last; ++k) ++out[tid][seq[k].first];
  }
  return out;
}

// With --trace, a task thread that fills a sub-buffer must not wake the
// consumer daemon itself (sigpending, sigprocmask, write on a pipe): the
// channel's read timer lets the consumer poll. strace, attached to this
// process while the tasks run, sees nothing but the sleeps in the frames.
TEST(TraceLive, FramesMakeNoSystemCallButTheSleep) {
  std::string out;
  if (session::run_command({"strace", "-V"}, &out) != 0) GTEST_SKIP() << "strace is not installed";
  const auto dir = std::filesystem::temp_directory_path() / ("rtcosim_strace_trace_" + std::to_string(getpid()));
  std::string why;
  auto session = live_session(dir, &why);
  if (!session) GTEST_SKIP() << why;
  auto graph = two_task_sine();

  const auto log = dir.string() + ".strace";
  const std::string pid = std::to_string(getpid());
  std::vector<std::string> argv = {"strace", "-f", "-qq", "-o", log, "-p", pid};
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t strace = 0;
  ASSERT_EQ(posix_spawnp(&strace, "strace", nullptr, nullptr, args.data(), environ), 0);
  auto traced = [] {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("TracerPid:", 0) == 0) return std::stoi(line.substr(10)) != 0;
    }
    return false;
  };
  for (int i = 0; i < 500 && !traced(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!traced()) {
    kill(strace, SIGKILL);
    waitpid(strace, nullptr, 0);
    GTEST_SKIP() << "strace cannot attach to this process (ptrace not permitted)";
  }
  run_realtime(*graph, 0.5);
  kill(strace, SIGINT);  // attached with -p: detaches and exits
  waitpid(strace, nullptr, 0);
  session->stop();

  // The check means something only if a sub-buffer filled during the run:
  // a stream file holds whole sub-buffers plus the final flush.
  bool switched = false;
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir)) {
    if (f.is_regular_file() && f.path().filename().string().rfind("rtcosim_", 0) == 0 &&
        f.path().extension() != ".idx") {
      switched = switched || f.file_size() > session->subbuffer_bytes();
    }
  }
  EXPECT_TRUE(switched) << "no sub-buffer filled in 0.5 s; the run proves nothing";
  const auto syscalls = frame_loop_syscalls(log);
  EXPECT_EQ(syscalls.size(), graph->tasks().size());  // one thread per task
  for (const auto& [tid, counts] : syscalls) {
    for (const auto& [name, n] : counts) {
      if (name != "clock_nanosleep") ADD_FAILURE() << "task thread " << tid << ": " << n << " x " << name;
    }
    EXPECT_GT(counts.at("clock_nanosleep"), 10) << tid;
  }
  std::filesystem::remove(log);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rtcosim::trace_report
