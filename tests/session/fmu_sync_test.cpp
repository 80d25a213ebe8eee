// The state synchronisation with an FMU component (docs/sync.md): every
// candidate re-runs the FMU from the macro step's snapshot, which for a
// co-simulation FMU lives inside the FMU (GetFMUstate/SetFMUstate through
// Block::save_state). The measured plant is the same FMU pushed by 0.5 N;
// the simulation starts with no force and follows it.
#include <cmath>
#include <memory>

#include <gtest/gtest.h>

#include "session/sync/state_sync.hpp"
#include "tasks/diagram.hpp"

namespace rtcosim::session::sync {

using namespace rtcosim::tasks;  // the partitions and blocks the optimiser drives
namespace {

constexpr double kStep = 0.01;
constexpr std::size_t kSteps = 200;

std::string fmu(const std::string& name) { return std::string(RTCOSIM_FMU_DIR) + "/" + name + ".fmu"; }

std::unique_ptr<Partition> plant(const std::string& file, double force, bool external_force) {
  std::vector<BlockSpec> blocks = {
      {"mass", "fmu", {{"file", fmu(file)}, {"interface", std::string("co_simulation")}}, ""}};
  std::vector<WireSpec> wires;
  std::vector<ExternalInputSpec> externals;
  if (external_force) {
    externals.push_back({"force.y", 1, {{"mass", "F"}}});
  } else {
    blocks.push_back({"force", "constant", {{"value", Vector{force}}}, ""});
    wires.push_back({{"force", "y"}, {"mass", "F"}});
  }
  return build_partition(BlockRegistry::with_builtins(), "plant", blocks, wires, externals, IntegratorKind::kRk4);
}

struct None final : InputSource {
  void sample(std::size_t, double, std::span<double>) noexcept override {}
};

// x of the FMU pushed by 0.5 N, every h from t = 0.
Measurements measured() {
  auto p = plant("msd2", 0.5, false);
  None none;
  p->reset(0.0);
  p->refresh_outputs(none);
  const auto x = p->find_output({"mass", "x"});
  Measurements m;
  m.columns.resize(1);
  for (std::size_t k = 0; k <= kSteps + 1; ++k) {
    m.columns[0].push_back(p->output(x)[0]);
    p->step(static_cast<double>(k) * kStep, kStep, none);
  }
  return m;
}

struct Outcome {
  std::vector<double> x, u;
  std::uint64_t n_ges = 0;
};

Outcome synchronise(const Measurements& m, bool reduce) {
  auto force = build_partition(BlockRegistry::with_builtins(), "force",
                               {{"force", "constant", {{"value", Vector{0.0}}}, ""}}, {}, {}, IntegratorKind::kRk4);
  auto mass = plant("msd2", 0.0, true);
  std::vector<Component> components = {
      {force.get(), {}}, {mass.get(), {{InputFeed::Kind::kComponent, 0, force->find_output({"force", "y"}), 0.0}}}};
  SyncSettings s;
  s.step = kStep;
  s.horizon = 2;  // T_D = 2: the force reaches the mass one macro step later
  s.reduce = reduce;
  StateSync sync(components, {{0, 0, 0, -5.0, 5.0, 0.0}}, {{1, mass->find_output({"mass", "x"}), 0, 1.0}}, m, s);
  Outcome o;
  for (std::size_t k = 0; k < kSteps; ++k) {
    (void)sync.synchronise();
    o.x.push_back(sync.output(0));
    o.u.push_back(sync.u()[0]);
  }
  o.n_ges = sync.partition_steps();
  return o;
}

TEST(FmuSync, AnFmuComponentIsReRunFromItsOwnSnapshotAndFollowsTheMeasurement) {
  const auto m = measured();
  const auto reduced = synchronise(m, true);
  const auto full = synchronise(m, false);
  // Reduced and full re-run the FMU from restored states: bit-identical.
  ASSERT_EQ(reduced.x.size(), kSteps);
  for (std::size_t k = 0; k < kSteps; ++k) {
    ASSERT_EQ(reduced.x[k], full.x[k]) << "step " << k;
    ASSERT_EQ(reduced.u[k], full.u[k]) << "step " << k;
  }
  // x follows the measurement: the force chosen each macro step makes up
  // for the plant's 0.5 N and for the one step its link adds (3.1e-12 m^2
  // here, against 2.3e-2 m^2 without synchronisation).
  double mse = 0.0, open_loop = 0.0;
  for (std::size_t k = 0; k < kSteps; ++k) {
    const double e = reduced.x[k] - m.columns[0][k + 1];
    mse += e * e;
  }
  // Without the force the mass (x0 = 1, k = 4) swings about 0 instead of 0.125.
  auto free = plant("msd2", 0.0, false);
  None none;
  free->reset(0.0);
  free->refresh_outputs(none);
  const auto x = free->find_output({"mass", "x"});
  for (std::size_t k = 0; k < kSteps; ++k) {
    free->step(static_cast<double>(k) * kStep, kStep, none);
    const double e = free->output(x)[0] - m.columns[0][k + 1];
    open_loop += e * e;
  }
  EXPECT_LT(mse / kSteps, 1e-9);
  EXPECT_LT(mse * 10.0, open_loop) << "with " << mse / kSteps << ", without " << open_loop / kSteps;
}

TEST(FmuSync, AnFmuThatCannotSaveItsStateIsRefusedByName) {
  const Measurements m = measured();
  auto ball = build_partition(BlockRegistry::with_builtins(), "ball", {{"ball", "fmu", {{"file", fmu("bball2")}}, ""}},
                              {}, {}, IntegratorKind::kRk4);
  auto gain = build_partition(BlockRegistry::with_builtins(), "g", {{"g", "gain", {{"gain", 1.0}}, ""}}, {},
                              {{"ball.h", 1, {{"g", "u"}}}}, IntegratorKind::kRk4);
  std::vector<Component> components = {
      {ball.get(), {}}, {gain.get(), {{InputFeed::Kind::kComponent, 0, ball->find_output({"ball", "h"}), 0.0}}}};
  try {
    StateSync sync(components, {{1, 0, 0, 0.0, 2.0, 1.0}}, {{1, gain->find_output({"g", "y"}), 0, 1.0}}, m, {});
    FAIL() << "expected a refusal";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("block 'ball' (fmu) of component 'ball' cannot save its state"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace rtcosim::session::sync
