// The state synchronisation (issue 15; docs/sync.md) on the motor-like
// example after thesis 5.4: a speed-controlled drive whose "plant" recording
// (examples/data/motor_plant.csv) comes from our own simulation with the
// right inertia and a load step, and a simulation started with a wrong
// inertia and no load, kept in step through its load-torque parameter.
// Set RTCOSIM_SYNC_REPORT=1 to print the table of docs/sync.md; set
// RTCOSIM_WRITE_MOTOR_CSV=PATH to write the recording again.
#include "session/sync/state_sync.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include <gtest/gtest.h>

#include "tasks/block_registry.hpp"

namespace rtcosim::session::sync {

using namespace rtcosim::tasks;  // the partitions and blocks the optimiser drives
namespace {

constexpr double kTrueInertia = 0.05;   // kg m^2
constexpr double kWrongInertia = 0.08;  // the simulation's
constexpr double kDamping = 0.01;       // N m s
constexpr double kMacro = 0.01;         // s
constexpr double kDuration = 5.0;

const BlockRegistry& registry() {
  static const auto r = BlockRegistry::with_builtins();
  return r;
}

std::unique_ptr<Block> make(const std::string& type, const std::string& name, const BlockParams& p) {
  return registry().create(type, name, p);
}

// motor: J w' = torque - load - b w, blocks appended to `blocks`, wires to `wires`.
void add_motor(std::vector<std::unique_ptr<Block>>& blocks, std::vector<WireSpec>& wires, double inertia,
               const std::string& torque, const std::string& load) {
  blocks.push_back(make("sum", "net", {{"signs", std::string("+--")}}));
  blocks.push_back(make("gain", "inv_inertia", {{"gain", 1.0 / inertia}}));
  blocks.push_back(make("integrator", "speed", {}));
  blocks.push_back(make("gain", "damping", {{"gain", kDamping}}));
  wires.push_back({{torque.substr(0, torque.find('.')), torque.substr(torque.find('.') + 1)}, {"net", "u1"}});
  wires.push_back({{load.substr(0, load.find('.')), load.substr(load.find('.') + 1)}, {"net", "u2"}});
  wires.push_back({{"damping", "y"}, {"net", "u3"}});
  wires.push_back({{"net", "y"}, {"inv_inertia", "u"}});
  wires.push_back({{"inv_inertia", "y"}, {"speed", "u"}});
  wires.push_back({{"speed", "y"}, {"damping", "u"}});
}

// The plant: a PI speed controller (Kp 0.5, Ki 2) following 100 rad/s from
// 0.1 s and 50 rad/s from 3 s, the motor with the right inertia, a load of
// 0.5 N m from 2 s; RK4 at 1 ms, sampled every 10 ms: t, torque, speed.
std::vector<std::array<double, 3>> plant_recording() {
  std::vector<std::unique_ptr<Block>> blocks;
  std::vector<WireSpec> wires;
  blocks.push_back(make("step", "ref_up", {{"time", 0.1}, {"final", 100.0}}));
  blocks.push_back(make("step", "ref_down", {{"time", 3.0}, {"final", -50.0}}));
  blocks.push_back(make("sum", "error", {{"signs", std::string("++-")}}));
  blocks.push_back(make("gain", "kp", {{"gain", 0.5}}));
  blocks.push_back(make("integrator", "error_integral", {}));
  blocks.push_back(make("gain", "ki", {{"gain", 2.0}}));
  blocks.push_back(make("sum", "torque", {}));
  blocks.push_back(make("step", "load", {{"time", 2.0}, {"final", 0.5}}));
  wires = {{{"ref_up", "y"}, {"error", "u1"}},        {{"ref_down", "y"}, {"error", "u2"}},
           {{"speed", "y"}, {"error", "u3"}},         {{"error", "y"}, {"kp", "u"}},
           {{"error", "y"}, {"error_integral", "u"}}, {{"error_integral", "y"}, {"ki", "u"}},
           {{"kp", "y"}, {"torque", "u1"}},           {{"ki", "y"}, {"torque", "u2"}}};
  add_motor(blocks, wires, kTrueInertia, "torque.y", "load.y");
  Partition plant("plant", std::move(blocks), wires, {}, IntegratorKind::kRk4);
  struct None final : InputSource {
    void sample(std::size_t, double, std::span<double>) noexcept override {}
  } none;
  plant.reset(0.0);
  plant.refresh_outputs(none);
  const auto torque = plant.find_output({"torque", "y"});
  const auto speed = plant.find_output({"speed", "y"});
  std::vector<std::array<double, 3>> rows;
  const int per_sample = 10;
  const auto samples = static_cast<int>(std::lround(kDuration / kMacro));
  for (int k = 0; k <= samples; ++k) {
    rows.push_back({k * kMacro, plant.output(torque)[0], plant.output(speed)[0]});
    for (int i = 0; i < per_sample && k < samples; ++i) {
      plant.step((k * per_sample + i) * 0.001, 0.001, none);
    }
  }
  return rows;
}

const char* kCsv = RTCOSIM_EXAMPLES_DIR "/data/motor_plant.csv";

Measurements read_recording() {
  std::ifstream in(kCsv);
  EXPECT_TRUE(in) << kCsv;
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "time_s,torque_Nm,speed_rad_s");
  Measurements m;
  m.columns.resize(2);
  while (std::getline(in, line)) {
    double t = 0, torque = 0, speed = 0;
    EXPECT_EQ(std::sscanf(line.c_str(), "%lf,%lf,%lf", &t, &torque, &speed), 3) << line;
    m.columns[0].push_back(torque);
    m.columns[1].push_back(speed);
  }
  return m;
}

// The simulation: torque_in (passes the measured torque on), drive (the
// motor with the wrong inertia and a tunable load), thermal (a winding
// temperature lag driven by the speed: influenced by u, compared with nothing).
struct Simulation {
  std::vector<std::unique_ptr<Partition>> parts;
  std::vector<Component> components;
  OutputRef speed;
  std::size_t load_block = 0;

  Simulation() {
    {
      std::vector<std::unique_ptr<Block>> blocks;
      blocks.push_back(make("gain", "pass", {{"gain", 1.0}}));
      parts.push_back(std::make_unique<Partition>("torque_in", std::move(blocks), std::vector<WireSpec>{},
                                                  std::vector<ExternalInputSpec>{{"torque", 1, {{"pass", "u"}}}},
                                                  IntegratorKind::kRk4));
    }
    {
      std::vector<std::unique_ptr<Block>> blocks;
      std::vector<WireSpec> wires;
      blocks.push_back(make("constant", "load", {{"value", Vector{0.0}}}));
      blocks.push_back(make("gain", "torque", {{"gain", 1.0}}));
      add_motor(blocks, wires, kWrongInertia, "torque.y", "load.y");
      parts.push_back(std::make_unique<Partition>("drive", std::move(blocks), wires,
                                                  std::vector<ExternalInputSpec>{{"torque", 1, {{"torque", "u"}}}},
                                                  IntegratorKind::kRk4));
    }
    {
      std::vector<std::unique_ptr<Block>> blocks;
      blocks.push_back(make("first_order_lag", "winding", {{"time_constant", 2.0}, {"gain", 0.3}}));
      parts.push_back(std::make_unique<Partition>("thermal", std::move(blocks), std::vector<WireSpec>{},
                                                  std::vector<ExternalInputSpec>{{"speed", 1, {{"winding", "u"}}}},
                                                  IntegratorKind::kRk4));
    }
    speed = parts[1]->find_output({"speed", "y"});
    const auto pass = parts[0]->find_output({"pass", "y"});
    for (std::size_t i = 0; i < parts[1]->block_count(); ++i) {
      if (parts[1]->block(i).name() == "load") load_block = i;
    }
    components = {{parts[0].get(), {{InputFeed::Kind::kMeasured, 0, {}, 0.0}}},
                  {parts[1].get(), {{InputFeed::Kind::kComponent, 0, pass, 0.0}}},
                  {parts[2].get(), {{InputFeed::Kind::kComponent, 1, speed, 0.0}}}};
  }
};

struct Outcome {
  double mse = 0.0;
  std::uint64_t n_ges = 0;
  std::vector<double> speed, load;
  std::vector<StepFigures> figures;
};

Outcome run(const Measurements& m, bool synchronise, SyncSettings s) {
  Simulation sim;
  s.step = kMacro;
  StateSync sync(sim.components, {{1, sim.load_block, 0, -40.0, 40.0, 0.0}}, {{1, sim.speed, 1, 1.0}}, m, s);
  Outcome o;
  const std::size_t steps = m.columns[1].size() - 1;
  double sum = 0.0;
  for (std::size_t k = 0; k < steps; ++k) {
    if (synchronise) {
      o.figures.push_back(sync.synchronise());
    } else {
      sync.advance();
    }
    const double e = sync.output(0) - m.columns[1][k + 1];
    sum += e * e;
    o.speed.push_back(sync.output(0));
    o.load.push_back(sync.u()[0]);
  }
  o.mse = sum / static_cast<double>(steps);
  o.n_ges = sync.partition_steps();
  return o;
}

TEST(StateSync, ShippedRecordingIsOurPlantSimulation) {
  const auto rows = plant_recording();
  if (const char* path = std::getenv("RTCOSIM_WRITE_MOTOR_CSV")) {
    std::ofstream out(path);
    out << "time_s,torque_Nm,speed_rad_s\n";
    out.precision(17);
    for (const auto& r : rows) out << r[0] << ',' << r[1] << ',' << r[2] << '\n';
  }
  const auto m = read_recording();
  ASSERT_EQ(m.columns[1].size(), rows.size());
  for (std::size_t k = 0; k < rows.size(); ++k) {
    EXPECT_EQ(m.columns[0][k], rows[k][1]) << k;
    EXPECT_EQ(m.columns[1][k], rows[k][2]) << k;
  }
  // The controller holds 100 rad/s before the load step and 50 rad/s at the
  // end: the steady state of a PI loop.
  EXPECT_NEAR(m.columns[1][199], 100.0, 0.5);
  EXPECT_NEAR(m.columns[1].back(), 50.0, 0.5);
  // At the end the torque carries the load and the damping: 0.5 + 0.01 * 50.
  EXPECT_NEAR(m.columns[0].back(), 1.0, 0.02);
}

TEST(StateSync, SynchronisationCutsTheSpeedErrorTenfold) {
  const auto m = read_recording();
  SyncSettings s;
  const auto free = run(m, false, s);
  const auto synced = run(m, true, s);
  EXPECT_GT(free.mse, 10.0 * synced.mse) << free.mse << " vs " << synced.mse;
  // Without sync the simulation, driven open-loop by the measured torque
  // with the wrong inertia and no load, drifts far from the plant.
  EXPECT_GT(free.mse, 100.0);
  for (const auto& f : synced.figures) EXPECT_LE(f.objective_after, f.objective_before);
}

// The held-out error is the prediction of the measurement T_P steps ahead
// made before the optimiser saw it: at T_P = 1 (weight 1, one pair) exactly
// the objective before the optimisation, J(u_{k-1}) = e^2; at T_P = 5 the
// last of J's five terms, so e^2 <= J, and known while y^_{k+5} is. A step
// is on a bound when the load chosen is -40 or 40 N m.
TEST(StateSync, HeldOutErrorIsThePredictionBeforeTheMeasurementWasUsed) {
  const auto m = read_recording();
  for (const int horizon : {1, 5}) {
    SyncSettings s;
    s.horizon = horizon;
    s.max_evaluations = 30;
    const auto synced = run(m, true, s);
    std::size_t known = 0, bound = 0;
    for (std::size_t k = 0; k < synced.figures.size(); ++k) {
      const auto& f = synced.figures[k];
      ASSERT_EQ(f.held_out.size(), 1u);
      const bool measured = k + static_cast<std::size_t>(horizon) < m.columns[1].size();
      ASSERT_EQ(!std::isnan(f.held_out[0]), measured) << "step " << k;
      if (!measured) continue;
      ++known;
      const double e2 = f.held_out[0] * f.held_out[0];
      if (horizon == 1) {
        EXPECT_EQ(e2, f.objective_before) << "step " << k;
      } else {
        EXPECT_LE(e2, f.objective_before) << "step " << k;
      }
      EXPECT_EQ(f.on_bound, std::abs(synced.load[k]) >= 40.0 * (1.0 - 1e-9)) << "step " << k;
      bound += f.on_bound ? 1 : 0;
    }
    EXPECT_EQ(known, synced.figures.size() - static_cast<std::size_t>(horizon) + 1) << "T_P " << horizon;
    if (horizon == 1) {
      EXPECT_GT(bound, 0u);
    }
  }
}

TEST(StateSync, ReducedAndFullSchemesAreBitIdenticalAndCountedExactly) {
  const auto m = read_recording();
  for (const int horizon : {1, 5}) {
    for (const bool dynamic : {false, true}) {
      SyncSettings s;
      s.horizon = horizon;
      s.dynamic = dynamic;
      s.max_evaluations = 30;
      s.reduce = true;
      const auto reduced = run(m, true, s);
      s.reduce = false;
      const auto full = run(m, true, s);
      ASSERT_EQ(reduced.speed.size(), full.speed.size());
      for (std::size_t k = 0; k < full.speed.size(); ++k) {
        ASSERT_EQ(reduced.speed[k], full.speed[k]) << "T_P " << horizon << " step " << k;
        ASSERT_EQ(reduced.load[k], full.load[k]) << "T_P " << horizon << " step " << k;
      }
      // N_ges: per macro step a pass of all 3 components over T_P steps (J
      // before), the evaluations' executions, and the committed step of all
      // 3. Full: each evaluation runs 3 components over T_P steps. Reduced:
      // only drive (T_D = 1, Gamma = T_P), and of its T_P steps only those
      // after the longest prefix of u that the current u (the pass before)
      // or an earlier candidate of the macro step shares (Ansatz 2).
      std::uint64_t expected_reduced = 0, expected_full = 0;
      const std::size_t width = dynamic ? static_cast<std::size_t>(horizon) : 1;
      for (std::size_t k = 0; k < reduced.figures.size(); ++k) {
        const auto& f = reduced.figures[k];
        const auto e = static_cast<std::uint64_t>(f.evaluations);
        EXPECT_EQ(e, static_cast<std::uint64_t>(full.figures[k].evaluations));
        ASSERT_EQ(f.executions.size(), e);
        ASSERT_EQ(f.candidates.size(), e * width);
        // u at horizon step j of candidate i (-1: the current u, held).
        const double current = k == 0 ? 0.0 : reduced.load[k - 1];
        auto u_at = [&](long i, int j) {
          return i < 0 ? current
                       : f.candidates[static_cast<std::size_t>(i) * width + std::min<std::size_t>(j, width - 1)];
        };
        for (std::size_t i = 0; i < f.executions.size(); ++i) {
          int shared = 0;
          for (long earlier = -1; earlier < static_cast<long>(i); ++earlier) {
            int same = 0;
            while (same < horizon && u_at(earlier, same) == u_at(static_cast<long>(i), same)) ++same;
            shared = std::max(shared, same);
          }
          EXPECT_EQ(f.executions[i], static_cast<std::uint32_t>(horizon - shared))
              << "step " << k << " candidate " << i;
          EXPECT_EQ(full.figures[k].executions[i], 3u * horizon);
          expected_reduced += f.executions[i];
        }
        expected_reduced += 3u * horizon + 3u;
        expected_full += 3u * horizon + e * 3u * horizon + 3u;
      }
      EXPECT_EQ(reduced.n_ges, expected_reduced);
      EXPECT_EQ(full.n_ges, expected_full);
      EXPECT_LT(reduced.n_ges, full.n_ges);
    }
  }
}

// A measurement delay Delta_o of d macro steps: the speed sensor's value at
// index i is the plant's at i - d (docs/sync.md: the comparison shifts the
// simulation's output by +Delta_o). The same recording delayed by d = 3
// (three copies of the first value in front) and synchronised with
// delay_steps = 3 must give, step for step, bit for bit, what the undelayed
// recording gives with delay 0; a shift of the wrong sign compares with
// values 2d steps away.
TEST(StateSync, AMeasurementDelayShiftsTheComparisonByItsSteps) {
  const auto m = read_recording();
  Measurements late = m;
  late.columns[1].insert(late.columns[1].begin(), 3, m.columns[1].front());
  for (const int horizon : {1, 4}) {
    SyncSettings s;
    s.horizon = horizon;
    s.max_evaluations = 20;
    const auto on_time = run(m, true, s);
    s.delay_steps = 3;
    const auto delayed = run(late, true, s);
    ASSERT_GE(delayed.speed.size(), on_time.speed.size());
    for (std::size_t k = 0; k < on_time.speed.size(); ++k) {
      ASSERT_EQ(delayed.speed[k], on_time.speed[k]) << "T_P " << horizon << " step " << k;
      ASSERT_EQ(delayed.load[k], on_time.load[k]) << "T_P " << horizon << " step " << k;
    }
  }
}

TEST(StateSync, HorizonShorterThanTheDistanceIsRefused) {
  const auto m = read_recording();
  Simulation sim;
  SyncSettings s;
  s.horizon = 1;
  // u in torque_in, compared in drive: T_D = 2 > T_P = 1. torque_in's gain is tunable.
  try {
    StateSync sync(sim.components, {{0, 0, 0, 0.0, 2.0, 1.0}}, {{1, sim.speed, 1, 1.0}}, m, s);
    FAIL() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("T_P = 1 is shorter than the distance T_D = 2"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(StateSync(sim.components, {{1, sim.load_block, 0, 1.0, -1.0, 0.0}}, {{1, sim.speed, 1, 1.0}}, m, s),
               std::invalid_argument);
}

TEST(StateSync, GainAndConstantAreTunable) {
  auto gain = make("gain", "g", {{"gain", 2.0}});
  ASSERT_EQ(gain->tunable_parameters().size(), 1u);
  EXPECT_STREQ(gain->tunable_parameters()[0], "gain");
  EXPECT_TRUE(gain->set_tunable(0, 3.5));
  EXPECT_EQ(gain->tunable(0), 3.5);
  EXPECT_FALSE(gain->set_tunable(1, 1.0));
  auto matrix = make("gain", "m", {{"gain", Matrix{{1.0, 2.0}}}});
  EXPECT_TRUE(matrix->tunable_parameters().empty());
  auto constant = make("constant", "c", {{"value", Vector{1.0}}});
  EXPECT_TRUE(constant->set_tunable(0, -4.0));
  EXPECT_EQ(constant->tunable(0), -4.0);
}

// Every solver keeps the 10x; a budget of 3 evaluations per macro step is
// never exceeded and is reported as exhausted exactly when NLopt stopped on it.
TEST(StateSync, SolversAndBudget) {
  const auto m = read_recording();
  SyncSettings s;
  const auto free = run(m, false, s);
  for (const Solver solver : {Solver::kNelderMead, Solver::kBobyqa, Solver::kSbplx}) {
    s.solver = solver;
    s.max_evaluations = 60;
    EXPECT_GT(free.mse, 10.0 * run(m, true, s).mse) << static_cast<int>(solver);
    s.max_evaluations = 3;
    const auto tight = run(m, true, s);
    int exhausted = 0;
    for (const auto& f : tight.figures) {
      EXPECT_LE(f.evaluations, 3);
      if (f.budget_exhausted) {
        EXPECT_EQ(f.evaluations, 3);
        ++exhausted;
      }
      EXPECT_LE(f.objective_after, f.objective_before);
      EXPECT_GE(f.seconds, 0.0);
    }
    EXPECT_GT(exhausted, 0) << static_cast<int>(solver);
  }
}

// docs/sync.md's table (RTCOSIM_SYNC_REPORT=1 prints it).
TEST(StateSync, HorizonsAndSchemesForTheDocs) {
  const auto m = read_recording();
  SyncSettings s;
  const auto free = run(m, false, s);
  const bool print = std::getenv("RTCOSIM_SYNC_REPORT") != nullptr;
  if (print)
    std::printf(
        "| T_P | optimisation | MSE speed | ratio | held-out MSE | u on a bound (steps) | N_ges reduced | N_ges full | "
        "evaluations/step | budget exhausted |\n");
  if (print)
    std::printf("| - | none | %.4g | 1 | - | - | %llu | %llu | - | - |\n", free.mse,
                static_cast<unsigned long long>(free.n_ges), static_cast<unsigned long long>(free.n_ges));
  for (const int horizon : {1, 5}) {
    for (const bool dynamic : {false, true}) {
      s.horizon = horizon;
      s.dynamic = dynamic;
      s.reduce = true;
      const auto reduced = run(m, true, s);
      s.reduce = false;
      const auto full = run(m, true, s);
      double evaluations = 0, held_out = 0;
      int exhausted = 0, bound = 0, predictions = 0;
      for (const auto& f : reduced.figures) {
        evaluations += f.evaluations;
        exhausted += f.budget_exhausted ? 1 : 0;
        bound += f.on_bound ? 1 : 0;
        if (!std::isnan(f.held_out[0])) {
          held_out += f.held_out[0] * f.held_out[0];
          ++predictions;
        }
      }
      EXPECT_GT(free.mse, 10.0 * reduced.mse) << "T_P " << horizon << (dynamic ? " dynamic" : " static");
      if (print) {
        std::printf("| %d | %s | %.4g | %.0f | %.4g | %d | %llu | %llu | %.1f | %d |\n", horizon,
                    dynamic ? "dynamic" : "static", reduced.mse, free.mse / reduced.mse, held_out / predictions, bound,
                    static_cast<unsigned long long>(reduced.n_ges), static_cast<unsigned long long>(full.n_ges),
                    evaluations / static_cast<double>(reduced.figures.size()), exhausted);
      }
    }
  }
}

}  // namespace
}  // namespace rtcosim::session::sync
