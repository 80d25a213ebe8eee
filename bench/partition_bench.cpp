// ns per Partition::step: a 1000-state linear state_space partition for each
// integrator, beside its baseline in the same binary (the model's own math,
// one dense A*x + B*u product, evaluated as many times as the integrator
// evaluates the model per step), and each task of the flight-control
// example.
#include <benchmark/benchmark.h>

#include <Eigen/Dense>
#include <cmath>

#include "tasks/block_registry.hpp"
#include "tasks/diagram.hpp"
#include "tasks/flight_control.hpp"

namespace {

using namespace rtcosim::tasks;

class ConstantInputs final : public InputSource {
 public:
  void sample(std::size_t, double t, std::span<double> out) noexcept override {
    for (double& v : out) v = 0.5 + 0.1 * t;
  }
};

constexpr Eigen::Index kStates = 1000;

// A stable, dense system: -I plus a small coupling, so that long runs stay finite.
Matrix coupling_matrix() {
  Matrix a(kStates, std::vector<double>(kStates, 0.0));
  for (Eigen::Index i = 0; i < kStates; ++i) {
    for (Eigen::Index j = 0; j < kStates; ++j) {
      a[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] =
          (i == j ? -1.0 : 0.0) + 1e-4 * std::sin(static_cast<double>(i * 7 + j * 3));
    }
  }
  return a;
}

std::unique_ptr<Partition> large_partition(IntegratorKind kind) {
  const auto registry = BlockRegistry::with_builtins();
  BlockParams params{{"A", coupling_matrix()},
                     {"B", Matrix(kStates, std::vector<double>{1.0})},
                     {"C", Matrix{std::vector<double>(kStates, 1.0 / kStates)}}};
  std::vector<BlockSpec> blocks = {{"plant", "state_space", params, ""}};
  return build_partition(registry, "large", blocks, {}, {{"u", 1, {{"plant", "u"}}}}, kind);
}

void BM_StateSpace1000Step(benchmark::State& state) {
  const auto kind = static_cast<IntegratorKind>(state.range(0));
  auto partition = large_partition(kind);
  ConstantInputs inputs;
  double t = 0.0;
  for (auto _ : state) {
    partition->step(t, 1e-3, inputs);
    t += 1e-3;
  }
  benchmark::DoNotOptimize(partition->state().data());
  state.SetLabel(std::string(integrator_name(kind)));
}
BENCHMARK(BM_StateSpace1000Step)
    ->Arg(static_cast<int>(IntegratorKind::kEuler))
    ->Arg(static_cast<int>(IntegratorKind::kAb2))
    ->Arg(static_cast<int>(IntegratorKind::kRk2))
    ->Arg(static_cast<int>(IntegratorKind::kRk4));

// Baseline: the bare model math, dx = A x + B u, once.
void BM_Baseline_DenseMatVec1000(benchmark::State& state) {
  Eigen::MatrixXd a(kStates, kStates);
  const Matrix m = coupling_matrix();
  for (Eigen::Index i = 0; i < kStates; ++i) {
    for (Eigen::Index j = 0; j < kStates; ++j) a(i, j) = m[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
  }
  Eigen::VectorXd b = Eigen::VectorXd::Ones(kStates), x = Eigen::VectorXd::Ones(kStates), dx(kStates);
  for (auto _ : state) {
    dx.noalias() = a * x;
    dx.noalias() += b * 0.5;
    benchmark::DoNotOptimize(dx.data());
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_Baseline_DenseMatVec1000);

void BM_FlightControlTaskStep(benchmark::State& state) {
  const auto registry = BlockRegistry::with_builtins();
  const auto tasks = split_by_task(registry, flight_control_diagram());
  const auto& spec = tasks.at(static_cast<std::size_t>(state.range(0)));
  auto partition = build_partition(registry, spec.task, spec.blocks, spec.wires, spec.externals, IntegratorKind::kAb2);
  ConstantInputs inputs;
  const double h = spec.task == "actuator" ? 0.005 : spec.task == "airframe" ? 0.02 : 0.01;
  double t = 0.0;
  for (auto _ : state) {
    partition->step(t, h, inputs);
    t += h;
  }
  benchmark::DoNotOptimize(partition->state().data());
  state.SetLabel(spec.task + " (ab2, " + std::to_string(partition->block_count()) + " blocks)");
}
BENCHMARK(BM_FlightControlTaskStep)->DenseRange(0, 2);

}  // namespace

BENCHMARK_MAIN();
