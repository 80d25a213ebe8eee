// The plant block's CSV replay against the analytic signals the recordings
// were written from.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numbers>

#include <gtest/gtest.h>

#include "tasks/plant/csv_table.hpp"
#include "tasks/plant/live_feed.hpp"
#include "tests/support/alloc_counter.hpp"
#include "tests/support/scratch.hpp"
#include "tests/tasks/block_rig.hpp"

namespace rtcosim::tasks {
namespace {

using testing::Rig;
using testing::RigBlock;

constexpr double kOmega = 2.0 * std::numbers::pi * 0.5;  // 0.5 Hz

// sin(w t) and cos(w t) sampled every dt from 0 to t_end, with all digits.
std::string write_sine(const std::filesystem::path& dir, double dt, double t_end) {
  const auto path = (dir / "sine.csv").string();
  std::ofstream out(path);
  out << "time,s,c\n";
  char line[128];
  for (long k = 0; static_cast<double>(k) * dt <= t_end + 1e-12; ++k) {
    const double t = static_cast<double>(k) * dt;
    std::snprintf(line, sizeof line, "%.17g,%.17g,%.17g\n", t, std::sin(kOmega * t), std::cos(kOmega * t));
    out << line;
  }
  return path;
}

std::string write(const std::filesystem::path& dir, const std::string& name, const std::string& text) {
  const auto path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

TEST(PlantCsv, LinearReplayMatchesTheSignalItWasWrittenFrom) {
  const auto dir = rtcosim::testing::test_scratch_dir("plant_csv");
  const double dt = 0.01;
  const auto file = write_sine(dir, dt, 4.0);
  Rig rig({{"p", "plant", {{"file", file}}}}, {}, {});
  // Linear interpolation of sin errs by at most dt^2/8 * max|y''| = dt^2 w^2 / 8.
  const double bound = dt * dt * kOmega * kOmega / 8.0;
  double worst = 0.0;
  const double h = 0.0037;  // off the rows' grid
  for (long k = 1; k <= 1000; ++k) {
    rig.step_at(k - 1, h);
    const double t = static_cast<double>(k) * h;
    worst = std::max(worst, std::fabs(rig.y("p", "s") - std::sin(kOmega * t)));
    EXPECT_NEAR(rig.y("p", "c"), std::cos(kOmega * t), bound);
    // The derivative is the segment's slope: within dt/2 * max|y''| of the exact one.
    EXPECT_NEAR(rig.dy("p", "s"), kOmega * std::cos(kOmega * t), dt * kOmega * kOmega);
  }
  EXPECT_LE(worst, bound);
  EXPECT_GT(worst, bound / 10.0);  // it does interpolate: a held value would err by ~w dt
}

TEST(PlantCsv, StartOffsetAndRateMapSimulationTimeToFileTime) {
  const auto dir = rtcosim::testing::test_scratch_dir("plant_csv");
  const auto file = write(dir, "ramp.csv", "t,y\n0,0\n10,20\n");  // y = 2 * file time
  Rig rig({{"p", "plant", {{"file", file}, {"start", 3.0}, {"rate", 0.5}}}}, {}, {});
  for (long k = 1; k <= 10; ++k) {
    rig.step_at(k - 1, 0.25);
    const double t = 0.25 * static_cast<double>(k);
    EXPECT_DOUBLE_EQ(rig.y("p"), 2.0 * (3.0 + 0.5 * t));
    EXPECT_DOUBLE_EQ(rig.dy("p"), 2.0 * 0.5);
  }
}

TEST(PlantCsv, HoldAndOnChangeSignalsKeepTheLastValueAtTheFrameTimes) {
  const auto dir = rtcosim::testing::test_scratch_dir("plant_csv");
  // 'on' is event-like: a value only where it changed, empty cells between.
  const auto file = write(dir, "ev.csv",
                          "# recorded on-change\n"
                          "time,x,on\n"
                          "0.0,0,\n"
                          "0.1,1,1\n"
                          "0.2,2,\n"
                          "0.35,3,0\n"
                          "0.5,4,\n");
  Rig rig({{"p", "plant", {{"file", file}, {"events", std::string("on")}}}}, {}, {});
  // Frame times 0.05, 0.1, ..., 0.6; expected values computed by hand.
  const double on[] = {0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0};
  for (long k = 1; k <= 12; ++k) {
    rig.step_at(k - 1, 0.05);
    const double t = 0.05 * static_cast<double>(k);
    EXPECT_EQ(rig.y("p", "on"), on[k - 1]) << "t = " << t;
    EXPECT_EQ(rig.dy("p", "on"), 0.0);
    const double x = t < 0.2 ? t * 10.0 : t < 0.35 ? 2.0 + (t - 0.2) / 0.15 : t < 0.5 ? 3.0 + (t - 0.35) / 0.15 : 4.0;
    EXPECT_NEAR(rig.y("p", "x"), x, 1e-12) << "t = " << t;
  }
  Rig held({{"p", "plant", {{"file", file}, {"events", std::string("on")}, {"interpolation", std::string("hold")}}}},
           {}, {});
  held.step_at(0, 0.3);
  EXPECT_EQ(held.y("p", "x"), 2.0);
}

// The input files of the FMI Cross-Check, FMPy and fmusim (issue 40): a
// header in double quotes, and a time written on two rows for a step at
// that instant. u rises 0 -> 1 over [0, 1], steps to 5 at t = 1 and rises
// to 6 at t = 2; n steps 0 -> 1 at t = 1. At t = 1 the value is the one from
// then on, the derivative the next segment's slope, and the outputs are
// flagged as jumping there (the links restart their methods), nowhere else.
TEST(PlantCsv, AQuotedHeaderAndATimeWrittenTwiceMarkAStepAtThatInstant) {
  const auto dir = rtcosim::testing::test_scratch_dir("plant_csv");
  const auto file = write(dir, "step.csv", "\"time\",\"u\", \"n\"\n0,0,0\n1,1,0\n1,5,1\n2,6,1\n");
  Rig rig({{"p", "plant", {{"file", file}}}}, {}, {});
  const auto& part = rig.partition();
  const double u[] = {0.25, 0.5, 0.75, 5.0, 5.25, 5.5, 5.75, 6.0};
  for (long k = 1; k <= 8; ++k) {
    rig.step_at(k - 1, 0.25);
    const double t = 0.25 * static_cast<double>(k);
    EXPECT_EQ(rig.y("p", "u"), u[k - 1]) << "t = " << t;
    EXPECT_EQ(rig.y("p", "n"), t < 1.0 ? 0.0 : 1.0) << "t = " << t;
    EXPECT_EQ(rig.dy("p", "u"), t < 2.0 ? 1.0 : 0.0) << "t = " << t;
    EXPECT_EQ(part.output_jumped(part.find_output({"p", "u"})), k == 4) << "t = " << t;
  }
}

TEST(PlantCsv, SteadyStateFramesAllocateNothing) {
  const auto dir = rtcosim::testing::test_scratch_dir("plant_csv");
  const auto file = write_sine(dir, 0.001, 20.0);
  Rig rig({{"p", "plant", {{"file", file}, {"events", std::string("c")}}}}, {}, {});
  rig.step_at(0, 0.001);
  rtcosim::testing::AllocationScope scope;
  for (long k = 1; k <= 5000; ++k) rig.step_at(k, 0.001);
  EXPECT_EQ(scope.count(), 0u);
}

// The block layer has no receivers of its own (io::PlantReceivers, which
// this test does not link): a live source is refused at its creation, with
// the parameter and what to run instead, and nothing is opened.
TEST(PlantLive, WithoutInstalledReceiversALiveSourceIsRefusedByName) {
  ASSERT_EQ(plant::installed_receivers(), nullptr);
  const std::string udp = testing::creation_error(
      "plant", {{"source", std::string("udp")}, {"port", 40001.0}, {"signals", std::string("a")}});
  EXPECT_NE(udp.find("block 'b' (plant): live sources need the plant receivers of io/"), std::string::npos) << udp;
  EXPECT_NE(udp.find("run the graph with rtcosim or rtcosimd"), std::string::npos) << udp;
  const std::string out = testing::creation_error("udp_out", {{"port", 40001.0}, {"signals", std::string("a")}});
  EXPECT_NE(out.find("block 'b' (udp_out): live sources need the plant receivers"), std::string::npos) << out;
  EXPECT_TRUE(plant::live_status().empty());
}

TEST(PlantCsv, AWrongRecordingIsRefusedNamingLineAndColumn) {
  const auto dir = rtcosim::testing::test_scratch_dir("plant_csv");
  auto error = [&](const std::string& text, BlockParams params = {}) {
    const auto file = write(dir, "bad.csv", text);
    params.set("file", file);
    const std::string m = testing::creation_error("plant", params);
    return m.substr(m.find("bad.csv") + 7);
  };
  EXPECT_EQ(error("t,a\n1,1\n0,2\n"),
            ":3:1: time 0 is not after the row before — expected increasing times (one written twice marks a step)");
  EXPECT_EQ(error("t,a\n0,1\n0,2\n0,3\n"),
            ":4:1: time 0 appears a third time — a time may be written twice, to mark a step (the value before and "
            "after)");
  EXPECT_EQ(error("\"t\",\"a b\"\n0,1\n"),
            ":1:6: signal name 'a b' — expected letters, digits, '_' and the '.', '[]', '()' of structured names, not "
            "starting with a digit or '.'");
  EXPECT_EQ(error("t,a,b\n0,1,2\n1, 1\n"), ":3:4: 2 cells — expected 3 (the time and one per signal of the header)");
  EXPECT_EQ(error("t,a\n0,1\n1,nan\n"), ":3:3: value of 'a' 'nan' — expected a finite number");
  EXPECT_EQ(error("t,a\n0,1\n1,\n"), ":3:3: value of 'a' '' — expected a finite number");
  // Each value finite, their step not: 1.7e308 to -1.7e308 in 1 s, and a
  // step of 1 in 1e-320 s.
  EXPECT_EQ(error("t,a\n0,1.7e308\n1,-1.7e308\n"),
            ":3:1: value of 'a' steps from the row before with a slope beyond the largest double — expected values "
            "and times that linear interpolation can span");
  EXPECT_NE(error("t,a\n0,0\n1e-320,1\n").find(":3:1: value of 'a' steps"), std::string::npos);
  EXPECT_EQ(error("t,a;b\n"),
            ":1:3: signal name 'a;b' — expected letters, digits, '_' and the '.', '[]', '()' of structured names, not "
            "starting with a digit or '.'");
  EXPECT_EQ(error("t,a,a\n0,1,1\n"), ":1:5: signal 'a' is named twice — expected unique names");
  EXPECT_EQ(error("t,a\n"), ":1:1: no rows after the header — expected at least one");
  EXPECT_EQ(error("t,a\n0,1\n", {{"events", std::string("b")}}),
            ":1:1: 'events' names 'b', which the header does not have");
  // Larger than max_file_size (MiB) is refused before it is read.
  const std::string big = "t,a\n" + std::string(2 << 20, '#') + "\n0,1\n";
  EXPECT_NE(error(big, {{"max_file_size", 1.0}}).find("bytes — more than the limit of 1048576"), std::string::npos);
  EXPECT_NE(testing::creation_error("plant", {{"file", std::string("/dev/zero")}}).find("not a regular file"),
            std::string::npos);
  // Followed: the header must be complete (its newline written) when the graph is built.
  EXPECT_NE(error("time,a", {{"follow", true}}).find("no header line yet"), std::string::npos);
  // Followed, too: a device would never give a header line.
  EXPECT_NE(testing::creation_error("plant", {{"file", std::string("/dev/zero")}, {"follow", true}})
                .find("not a regular file"),
            std::string::npos);
}

}  // namespace
}  // namespace rtcosim::tasks
