// The thesis's motor validation case (Zipper 2021, section 5.4; docs/sync.md,
// "The thesis's motor case"): the recording of the "physical" motor
// (examples/data/motor_thesis_plant.csv) is examples/motor_thesis_plant.yaml
// stepped at 1 ms and sampled every 10 ms, the model is held against the
// equilibria of its equations, and examples/motor_thesis.yaml's
// synchronisation through the friction coefficient d cuts the speed error
// with the reduced and the full scheme giving the same run.
// RTCOSIM_WRITE_MOTOR_THESIS_CSV=PATH writes the recording again;
// RTCOSIM_MOTOR_THESIS_REPORT=1 prints table 5.5's scenarios as we run them.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "session/sync/sync_run.hpp"
#include "tasks/diagram.hpp"
#include "tests/support/graphs.hpp"

namespace rtcosim {
namespace {

const tasks::BlockRegistry& registry() {
  static const auto r = tasks::BlockRegistry::with_builtins();
  return r;
}

const char* kCsv = RTCOSIM_EXAMPLES_DIR "/data/motor_thesis_plant.csv";
constexpr double kMacro = 0.01;  // s, the thesis's macro step
constexpr double kTick = 0.001;  // s, the plant's step (the thesis's tstep)
constexpr int kSamples = 1400;   // 14 s: rows 0..1400

struct PlantRow {
  double t, brake, speed;
};

// The physical motor: examples/motor_thesis_plant.yaml, RK4 at 1 ms,
// sampled every 10 ms. `probe` (optional) collects further outputs.
std::vector<PlantRow> plant_recording(const std::vector<tasks::Endpoint>& extra = {},
                                      std::vector<std::vector<double>>* extra_values = nullptr) {
  const auto spec = testing::load_example("motor_thesis_plant.yaml");
  const auto split = tasks::split_by_task(registry(), spec.diagram);
  EXPECT_EQ(split.size(), 1u);
  const auto& p = split.at(0);
  auto part =
      tasks::build_partition(registry(), p.task, p.blocks, p.wires, p.externals, spec.find_task(p.task)->integrator);
  struct None final : tasks::InputSource {
    void sample(std::size_t, double, std::span<double>) noexcept override {}
  } none;
  part->reset(0.0);
  part->refresh_outputs(none);
  const auto brake = part->find_output({"brake", "y"});
  const auto speed = part->find_output({"omega", "y"});
  std::vector<tasks::OutputRef> probes;
  for (const auto& e : extra) probes.push_back(part->find_output(e));
  if (extra_values) extra_values->assign(extra.size(), {});
  std::vector<PlantRow> rows;
  const int per_sample = static_cast<int>(std::lround(kMacro / kTick));
  for (int k = 0; k <= kSamples; ++k) {
    // k / 100 is the double nearest k h, written "1.31" rather than 131 * 0.01's "1.3100000000000001".
    rows.push_back({static_cast<double>(k) / 100.0, part->output(brake)[0], part->output(speed)[0]});
    for (std::size_t i = 0; i < probes.size() && extra_values; ++i) {
      (*extra_values)[i].push_back(part->output(probes[i])[0]);
    }
    for (int i = 0; i < per_sample && k < kSamples; ++i) part->step((k * per_sample + i) * kTick, kTick, none);
  }
  EXPECT_FALSE(part->failed());
  return rows;
}

std::vector<PlantRow> shipped() {
  std::ifstream in(kCsv);
  EXPECT_TRUE(in) << kCsv;
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "time_s,brake_Nm,speed_rad_s");
  std::vector<PlantRow> rows;
  while (std::getline(in, line)) {
    PlantRow r{};
    EXPECT_EQ(std::sscanf(line.c_str(), "%lf,%lf,%lf", &r.t, &r.brake, &r.speed), 3) << line;
    rows.push_back(r);
  }
  return rows;
}

TEST(MotorThesis, ShippedRecordingIsThePlantGraphSteppedAtOneMillisecond) {
  const auto rows = plant_recording();
  if (const char* path = std::getenv("RTCOSIM_WRITE_MOTOR_THESIS_CSV")) {
    std::ofstream out(path);
    out << "time_s,brake_Nm,speed_rad_s\n";
    // The shortest text that reads back as the same double.
    auto text = [](double v) {
      std::array<char, 32> buf{};
      const auto end = std::to_chars(buf.data(), buf.data() + buf.size(), v).ptr;
      return std::string(buf.data(), end);
    };
    for (const auto& r : rows) out << text(r.t) << ',' << text(r.brake) << ',' << text(r.speed) << '\n';
  }
  const auto file = shipped();
  ASSERT_EQ(file.size(), rows.size());
  ASSERT_EQ(file.size(), 1401u);
  for (std::size_t k = 0; k < rows.size(); ++k) {
    EXPECT_EQ(file[k].t, rows[k].t) << k;
    EXPECT_EQ(file[k].brake, rows[k].brake) << k;
    EXPECT_EQ(file[k].speed, rows[k].speed) << k;
  }
}

// The plant against its own equations' equilibria and the flux's closed
// form, each independent of the integration: the PI loop holds the set point
// 2 pi 10 Hz with and without the brake (the integral takes the load), the
// current then carries brake and friction, Isq = (Mw + d w) / (1.2 Psi_rd),
// and the rotor flux rises as Lh Isd (1 - exp(-t / Tr)) to Lh Isd = 0.5 Vs.
TEST(MotorThesis, PlantModelMeetsTheEquilibriaOfItsEquations) {
  std::vector<std::vector<double>> v;
  const auto rows = plant_recording({{"isq", "y"}, {"psird", "y"}, {"ref", "y"}}, &v);
  const auto& isq = v.at(0);
  const auto& flux = v.at(1);
  const auto& ref = v.at(2);
  const double set_point = 2.0 * M_PI * 10.0;  // rad/s, Zp = 1
  const double tr = 0.025 / 2.0, lh_isd = 0.02 * (0.5 / 0.02);
  EXPECT_NEAR(flux[1], lh_isd * (1.0 - std::exp(-0.01 / tr)), 1e-7);  // RK4 at 1 ms against the closed form
  EXPECT_NEAR(flux.back(), lh_isd, 1e-12);
  // The ramp: 12 Hz/s from 0.5 s, 10 Hz from 0.5 + 10/12 s.
  EXPECT_NEAR(ref[100], 2.0 * M_PI * 12.0 * 0.5, 1e-9);
  EXPECT_DOUBLE_EQ(ref[200], set_point);
  for (const std::size_t k : {290u, 1390u}) {  // unbraked, settled
    EXPECT_EQ(rows[k].brake, 0.0);
    EXPECT_NEAR(rows[k].speed, set_point, 1e-4) << k;
    EXPECT_NEAR(isq[k], 0.0031 * rows[k].speed / (1.2 * lh_isd), 1e-4) << k;
  }
  for (const std::size_t k : {540u, 990u}) {  // braked with 1 and 0.5 N m for 2 s, settled
    EXPECT_GT(rows[k].brake, 0.49) << k;
    EXPECT_NEAR(rows[k].speed, set_point, 1e-4) << k;
    EXPECT_NEAR(isq[k], (rows[k].brake + 0.0031 * rows[k].speed) / (1.2 * lh_isd), 1e-4) << k;
  }
  // The brake pulls the speed down before the integral catches up: a dip,
  // and an overshoot when it is released.
  double low = set_point, high = 0.0;
  for (std::size_t k = 300; k < rows.size(); ++k) {
    low = std::min(low, rows[k].speed);
    high = std::max(high, rows[k].speed);
  }
  EXPECT_LT(low, set_point - 0.5);
  EXPECT_GT(high, set_point + 0.5);
}

session::SyncRun run_thesis(bool reduce) {
  auto spec = testing::load_example("motor_thesis.yaml");
  spec.sync.optimise.reduce = reduce;
  return session::run_state_sync(spec, registry(), spec.duration);
}

// Figure 5.4 with the wrong inertia, synchronised through d at T_P = 1
// (table 5.5's a and b): the speed error drops (13.35x here, 1.824 to
// 0.1366 (rad/s)^2), and the reduced scheme gives the same run with fewer
// component executions (17201 against 38190).
TEST(MotorThesis, SynchronisingTheFrictionCoefficientCutsTheSpeedError) {
  const auto full = run_thesis(false);
  const auto fast = run_thesis(true);
  for (const auto* run : {&full, &fast}) {
    EXPECT_EQ(run->components, (std::vector<std::string>{"regler", "motor", "csv"}));
    EXPECT_EQ(run->measurement_tasks, (std::vector<std::string>{"measure"}));
    EXPECT_EQ(run->distance, 1);  // k_input = k_output = Motor
    ASSERT_EQ(run->macro_steps, 1400u);
    EXPECT_EQ(run->n_ges_without, 3u * 1400u);
    const auto& p = run->pairs.at(0);
    EXPECT_EQ(p.instants, 1400u);
    // Without synchronisation the heavy motor lags the ramp and sags under the brake.
    EXPECT_NEAR(p.mse_without, 1.824, 0.001);
    EXPECT_NEAR(p.max_without, 7.232, 0.001);
    EXPECT_GE(p.mse_without / p.mse_with, 10.0) << p.mse_without << " / " << p.mse_with;
    EXPECT_LT(p.max_with, p.max_without);
  }
  // CSV does not depend on u: never re-run per candidate with the reduction.
  EXPECT_EQ(fast.rerun, (std::vector<std::string>{"regler", "motor"}));
  ASSERT_EQ(fast.u.at(0).size(), full.u.at(0).size());
  for (std::size_t k = 0; k < full.u[0].size(); ++k) {
    ASSERT_EQ(fast.u[0][k], full.u[0][k]) << k;
    ASSERT_EQ(fast.pairs[0].with[k], full.pairs[0].with[k]) << k;
  }
  EXPECT_EQ(fast.pairs[0].mse_with, full.pairs[0].mse_with);
  EXPECT_LT(fast.n_ges, full.n_ges);
  EXPECT_LT(static_cast<double>(fast.n_ges), 0.6 * static_cast<double>(full.n_ges)) << fast.n_ges << " " << full.n_ges;
  if (std::getenv("RTCOSIM_MOTOR_THESIS_REPORT")) {
    std::cout << "without: MSE " << full.pairs[0].mse_without << " MAX " << full.pairs[0].max_without << "\n"
              << "a (full): MSE " << full.pairs[0].mse_with << " MAX " << full.pairs[0].max_with << " N_ges "
              << full.n_ges << "\nb (reduced): N_ges " << fast.n_ges << "\n";
  }
}

}  // namespace
}  // namespace rtcosim
