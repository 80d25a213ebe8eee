// The flight-control example in real time (5 s, SCHED_FIFO as root) against
// the same graph in virtual time: the real-time run's error against the
// reference solution stays within 1.5x of the virtual one, and both stay
// under absolute bounds, so that a defect both executors share fails too.
// Skipped where SCHED_FIFO is not permitted. Asserts on errors, never on
// times.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <sstream>
#include <thread>

#include "rt_config/loader.hpp"
#include "runtime/realtime.hpp"
#include "runtime/recorder.hpp"
#include "runtime/rt_executor.hpp"
#include "runtime/virtual_executor.hpp"
#include "tasks/diagram.hpp"

namespace rtcosim::runtime {
namespace {

std::vector<double> rms_errors(const Recorder& recorder, const tasks::ReferenceSolver& reference) {
  std::vector<double> out;
  for (const auto& s : recorder.series()) {
    double sum = 0.0;
    for (std::size_t k = 0; k < s.time.size(); ++k) {
      const double d = s.value[k] - reference.value(s.probe, s.time[k], s.element);
      sum += d * d;
    }
    out.push_back(std::sqrt(sum / static_cast<double>(std::max<std::size_t>(1, s.time.size()))));
  }
  return out;
}

TEST(FlightControl, RealTimeErrorStaysWithin1_5xOfVirtualTime) {
  if (geteuid() != 0) GTEST_SKIP() << "SCHED_FIFO needs root";
  auto loaded = config::load_graph_file(std::string(RTCOSIM_EXAMPLES_DIR) + "/flight_control.yaml");
  ASSERT_TRUE(loaded.ok());
  const auto& spec = loaded.graph;
  const auto blocks = tasks::BlockRegistry::with_builtins();
  const auto methods = coupling::MethodRegistry::with_builtins();
  tasks::ReferenceSolver reference(blocks, spec.diagram, 0.0005);
  reference.run(spec.duration, spec.record.signals);

  auto virtual_graph = Graph::build(spec, blocks, methods);
  Recorder virtual_recorder(*virtual_graph, {.keep = Recorder::kKeepAll});
  VirtualExecutor(*virtual_graph).run(spec.duration, [&](TaskRuntime& t, const FrameRecord&) { virtual_recorder.sample(t); });
  virtual_recorder.drain();

  auto report = prepare_process(config::RealtimeMode::kPreferred, 90);
  if (!report.fifo) GTEST_SKIP() << "SCHED_FIFO is not permitted here";
  auto graph = Graph::build(spec, blocks, methods);
  Recorder recorder(*graph, {.keep = Recorder::kKeepAll});
  RealtimeExecutor executor(*graph, &recorder, report);
  executor.start(spec.duration);
  while (!executor.finished()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    recorder.drain();
  }
  executor.join();
  recorder.drain();
  EXPECT_TRUE(executor.thread_errors().empty());

  // RMS errors of the virtual run against the reference (RK4 at 0.5 ms) when
  // this test was written, rounded up by 10 %: 0.00303, 0.0206, 0.0267.
  const std::map<std::string, double> bound = {
      {"airframe_pitch.y", 0.0034}, {"actuator.y", 0.023}, {"controller_gain.y", 0.030}};
  const auto virtual_errors = rms_errors(virtual_recorder, reference);
  const auto realtime_errors = rms_errors(recorder, reference);
  ASSERT_EQ(virtual_errors.size(), realtime_errors.size());
  ASSERT_EQ(virtual_errors.size(), bound.size());
  for (std::size_t i = 0; i < virtual_errors.size(); ++i) {
    const std::string& signal = recorder.series()[i].signal;
    ASSERT_EQ(bound.count(signal), 1u) << signal;
    EXPECT_GT(recorder.series()[i].time.size(), 0u);
    EXPECT_LE(virtual_errors[i], bound.at(signal)) << signal;
    EXPECT_LE(realtime_errors[i], 1.5 * virtual_errors[i]) << signal;
    EXPECT_LE(realtime_errors[i], 1.5 * bound.at(signal)) << signal;
  }
}

}  // namespace
}  // namespace rtcosim::runtime
