// Cost of one rtcosim tracepoint (frame_end: 5 fields) with no tracing
// session, and with a session recording it, beside a bare loop doing the
// same argument arithmetic. The recording case starts its own LTTng session
// (root or a tracing-group user, lttng-tools installed) and is skipped
// otherwise.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <unistd.h>

#include "runtime/trace.hpp"
#include "session/trace_session.hpp"

namespace {

using namespace rtcosim;

void BM_Baseline_BareLoop(benchmark::State& state) {
  std::uint64_t frame = 0;
  double sim = 0.0;
  for (auto _ : state) {
    ++frame;
    sim += 1e-3;
    benchmark::DoNotOptimize(frame);
    benchmark::DoNotOptimize(sim);
  }
}
BENCHMARK(BM_Baseline_BareLoop);

void BM_Tracepoint_NoSession(benchmark::State& state) {
  std::uint64_t frame = 0;
  double sim = 0.0;
  for (auto _ : state) {
    ++frame;
    sim += 1e-3;
    runtime::trace::frame_end(1, frame, 1234, 1e-3, sim);
  }
  state.SetLabel(runtime::trace::available() ? "lttng-ust" : "no-op build");
}
BENCHMARK(BM_Tracepoint_NoSession);

void BM_Tracepoint_Recording(benchmark::State& state) {
  const auto dir = std::filesystem::temp_directory_path() / ("rtcosim_trace_bench_" + std::to_string(getpid()));
  std::string why;
  auto session = runtime::trace::available() ? session::TraceSession::start(dir.string(), 2e6, &why) : nullptr;
  if (!session) {
    state.SkipWithError(("no tracing session: " + (why.empty() ? std::string("built without LTTng-UST") : why)).c_str());
    return;
  }
  std::uint64_t frame = 0;
  double sim = 0.0;
  for (auto _ : state) {
    ++frame;
    sim += 1e-3;
    runtime::trace::frame_end(1, frame, 1234, 1e-3, sim);
  }
  const auto discarded = session->stop();
  state.counters["discarded"] = static_cast<double>(discarded);
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_Tracepoint_Recording)->Iterations(2'000'000);

}  // namespace

BENCHMARK_MAIN();
