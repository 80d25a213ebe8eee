// The replay log's cost on the frame path (runtime/replay_log.hpp): ns per
// frame of run_unit, the real-time loop, on a deterministic fake clock
// (BM_Plain) against the same loop with the clock wrapped in
// LoggedClock<FakeClock> (BM_Logged), which pushes every reading and drain
// count into the log's ring; the figure is the ratio. Graphs:
// examples/flight_control.yaml (three threads at 5, 10, 20 ms) and the
// runtime_bench graph (4 links x 16 signals, two 1 ms threads).
// BM_Logged also reports the log's bytes and words per frame.
//
// All threads run in this one thread, one after the other, each for a
// window of whole hyperperiods as long as every link's ring holds what its
// producer publishes in it (no block is ever dropped: the bench fails if
// one is). Each window is one run_unit call per thread, so both variants
// pay a call's set-up per window and the log holds one extra reading per
// call; a consumer that runs after its producer in a window takes the
// window's blocks in one drain word, not one per frame.
// The log's file I/O belongs to its drainer thread, not to a frame: the
// rings are drained into /tmp outside the timed region, every so many
// windows, well before they could fill; the plain variant pauses at the
// same cadence so that both loops have the same shape.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <unistd.h>

#include "bench/frames.hpp"
#include "runtime/replay_log.hpp"
#include "runtime/unit_loop.hpp"

namespace {

using namespace rtcosim;

// The example beside this source, so that the bench follows the example as
// it changes rather than a copy of it.
std::optional<std::string> example_text(const char* name) {
  const auto path = std::filesystem::path(__FILE__).parent_path().parent_path() / "examples" / name;
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Each reading a microsecond after the last: a frame's few readings stay
// far below any period, so no cycle overruns and every cycle sleeps, as in
// a healthy run.
struct FakeClock {
  std::int64_t t = 0;
  std::int64_t now() noexcept { return t += 1'000; }
  void sleep_until(std::int64_t deadline_ns) noexcept { t = std::max(t, deadline_ns); }
  void before_integration(const runtime::TaskRuntime&, std::uint64_t) noexcept {}
};

std::int64_t period_ns(const runtime::TaskRuntime& t) { return runtime::seconds_to_ns(t.spec().period); }

// Whole hyperperiods in which no producer publishes more blocks than its
// links' rings hold (every consumer drains them all once per window).
std::int64_t window_ns(runtime::Graph& graph, const std::vector<runtime::ThreadUnit>& units) {
  std::int64_t hyper = 1;
  for (const auto& u : units) hyper = std::lcm(hyper, period_ns(u.owner()));
  std::int64_t k = 1 << 20;
  for (const auto& t : graph.tasks()) {
    const std::int64_t published = hyper / period_ns(*t);
    for (const auto& o : t->outputs_view()) {
      k = std::min(k, static_cast<std::int64_t>(o.bundle->link->capacity_blocks()) / published);
    }
  }
  return hyper * std::max<std::int64_t>(k, 1);
}

// At most what a window logs: the bound ReplayLog sizes its rings by, per
// cycle, plus the reading that starts each run_unit call.
std::int64_t words_per_window(const std::vector<runtime::ThreadUnit>& units, std::int64_t window) {
  std::int64_t words = 0;
  for (const auto& u : units) {
    std::size_t per_cycle = 4;
    for (std::size_t m = 0; m < u.members.size(); ++m) {
      per_cycle +=
          u.frames_per_cycle[m] * (3 + u.members[m]->inputs().bundles().size() + u.members[m]->outputs_view().size());
    }
    words += window / period_ns(u.owner()) * static_cast<std::int64_t>(per_cycle) + 1;
  }
  return words;
}

std::uint64_t frames(runtime::Graph& graph) {
  std::uint64_t n = 0;
  for (const auto& t : graph.tasks()) n += t->stats().frames.load(std::memory_order_relaxed);
  return n;
}

std::uint64_t link_drops(runtime::Graph& graph) {
  std::uint64_t n = 0;
  for (const auto& t : graph.tasks()) {
    for (const auto& o : t->outputs_view()) n += o.bundle->link->dropped();
  }
  return n;
}

enum class GraphId { kFlightControl, kLinks4x16 };

template <bool kLogged>
void run_frames(benchmark::State& state, GraphId id) {
  std::string text = bench::kLinks4x16;
  if (id == GraphId::kFlightControl) {
    const auto example = example_text("flight_control.yaml");
    if (!example) {
      state.SkipWithError("examples/flight_control.yaml not found beside the bench's source");
      return;
    }
    text = *example;
  }
  auto graph = bench::make_graph(text);
  auto units = runtime::thread_units(*graph);
  const std::int64_t epoch = 1'000'000'000, window = window_ns(*graph, units);
  std::vector<FakeClock> clocks(units.size(), FakeClock{epoch - 1'000'000});
  const std::atomic<bool> running{true};

  const std::string path = "/tmp/rtcosim_replay_bench_" + std::to_string(getpid()) + ".rpl";
  std::optional<runtime::ReplayLog> replay;
  if constexpr (kLogged) {
    replay.emplace(*graph, path, runtime::ReplayLog::Header{text, "", 0, "other", "", {}});
    std::string why;
    if (!replay->open(&why)) {
      state.SkipWithError(why.c_str());
      return;
    }
  }

  std::int64_t start = epoch;
  auto run_window = [&]() noexcept {
    const std::int64_t end = start + window;
    for (std::size_t i = 0; i < units.size(); ++i) {
      units[i].reset(start, end);
      if constexpr (kLogged) {
        runtime::LoggedClock<FakeClock> logged{clocks[i], *replay, i, epoch};
        runtime::run_unit(units[i], logged, epoch, end, running, runtime::UnitSinks{});
      } else {
        runtime::run_unit(units[i], clocks[i], epoch, end, running, runtime::UnitSinks{});
      }
    }
    start = end;
  };

  // A quarter of the smallest ring the log makes (2^13 words) between
  // drains: far from a full ring, and the same cadence in both variants.
  const std::int64_t windows_per_drain = std::max<std::int64_t>(1, (1 << 11) / words_per_window(units, window));
  // One window first, untimed, so that the timed ones start warm.
  run_window();

  const std::uint64_t frames_before = frames(*graph);
  std::int64_t since_drain = 0;
  for (auto _ : state) {
    run_window();
    if (++since_drain == windows_per_drain) {
      state.PauseTiming();
      if constexpr (kLogged) replay->drain();
      since_drain = 0;
      state.ResumeTiming();
    }
  }
  const std::uint64_t timed = frames(*graph) - frames_before;

  if (link_drops(*graph) != 0) {
    state.SkipWithError("a link ring overflowed: the window is longer than the rings hold");
    return;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(timed));
  state.counters["ns_per_frame"] =
      benchmark::Counter(static_cast<double>(timed), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["frames_per_window"] =
      static_cast<double>(timed) / static_cast<double>(std::max<benchmark::IterationCount>(state.iterations(), 1));
  if constexpr (kLogged) {
    std::string why;
    const bool complete = replay->finish(&why);
    std::filesystem::remove(path);
    if (!complete) {
      state.SkipWithError(why.c_str());
      return;
    }
    const double all = static_cast<double>(frames(*graph));
    state.counters["bytes_per_frame"] = static_cast<double>(replay->bytes()) / all;
    state.counters["words_per_frame"] = static_cast<double>(replay->words()) / all;
  }
}

void BM_Plain(benchmark::State& state, GraphId id) { run_frames<false>(state, id); }
void BM_Logged(benchmark::State& state, GraphId id) { run_frames<true>(state, id); }

BENCHMARK_CAPTURE(BM_Plain, flight_control, GraphId::kFlightControl);
BENCHMARK_CAPTURE(BM_Logged, flight_control, GraphId::kFlightControl);
BENCHMARK_CAPTURE(BM_Plain, links4x16, GraphId::kLinks4x16);
BENCHMARK_CAPTURE(BM_Logged, links4x16, GraphId::kLinks4x16);

}  // namespace

BENCHMARK_MAIN();
