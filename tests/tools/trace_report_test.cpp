// The trace reader and report on a small trace committed under tests/ (0.2 s
// of examples/two_task_sine.yaml recorded with 'rtcosim run --trace'), and
// on a live trace recorded by the test under a real lttng-sessiond.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <thread>

#include "rt_config/loader.hpp"
#include "runtime/rt_executor.hpp"
#include "runtime/trace.hpp"
#include "tools/rtcosim/trace_session.hpp"
#include "tools/trace/trace_report.hpp"

namespace rtcosim::trace_report {
namespace {

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
  EXPECT_EQ(d.tasks.at(0).frames.size(), 5u);   // 0.2 s at 40 ms
  EXPECT_EQ(d.tasks.at(1).frames.size(), 200u); // 0.2 s at 1 ms
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
  for (auto p = perfetto.find("\"name\":\"frame\""); p != std::string::npos; p = perfetto.find("\"name\":\"frame\"", p + 1)) {
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

// A live run under a real session daemon: the report and the runtime's own
// statistics agree on the same run.
TEST(TraceLive, ReportAgreesWithTheRuntimeStatistics) {
  if (!runtime::trace::available()) GTEST_SKIP() << "built without LTTng-UST";
  std::string out;
  if (tools::run_command({"lttng", "--version"}, &out) != 0) GTEST_SKIP() << "lttng-tools is not installed";
  const auto dir = std::filesystem::temp_directory_path() / ("rtcosim_live_trace_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  auto loaded = config::load_graph_file(std::string(RTCOSIM_EXAMPLES_DIR) + "/two_task_sine.yaml");
  ASSERT_TRUE(loaded.ok());
  loaded.graph.realtime = config::RealtimeMode::kOff;
  const auto blocks = tasks::BlockRegistry::with_builtins();
  const auto methods = coupling::MethodRegistry::with_builtins();
  auto graph = runtime::Graph::build(loaded.graph, blocks, methods);

  // Sized so that one CPU's buffers hold the whole run twice over: nothing
  // can be discarded, whatever the consumer daemon's pace. A frame emits at
  // most a start, an end, and a publish or drain per link end it owns
  // (bounded here by two per link of the graph), about 48 bytes each.
  constexpr double kSeconds = 0.5;
  double frames = 0.0;
  for (auto& t : graph->tasks()) frames += std::ceil(kSeconds / t->spec().period) + 1.0;
  const double bound_bytes = frames * (2.0 + 2.0 * static_cast<double>(graph->links().size())) * 48.0;
  std::string why;
  auto session = tools::TraceSession::start(dir.string(), 100000.0, &why);
  if (!session) GTEST_SKIP() << "lttng cannot run here: " << why;
  ASSERT_GE(4.0 * static_cast<double>(session->subbuffer_bytes()), 2.0 * bound_bytes);
  runtime::RealtimeExecutor executor(*graph, nullptr, runtime::RealtimeReport{});
  executor.start(kSeconds);
  executor.join();
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

}  // namespace
}  // namespace rtcosim::trace_report
