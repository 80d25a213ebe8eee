// ns per Partition::step: a 1000-state linear state_space partition for each
// integrator, beside its baseline in the same binary (the model's own math,
// one dense A*x + B*u product, evaluated as many times as the integrator
// evaluates the model per step), and each task of the flight-control
// example.
#include <cmath>

#include <Eigen/Dense>
#include <benchmark/benchmark.h>

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

// Steps of h from t = 0, one per iteration, with the constant inputs.
void steps(benchmark::State& state, Partition& partition, double h) {
  ConstantInputs inputs;
  double t = 0.0;
  for (auto _ : state) {
    partition.step(t, h, inputs);
    t += h;
  }
  benchmark::DoNotOptimize(partition.state().data());
}

void BM_StateSpace1000Step(benchmark::State& state) {
  const auto kind = static_cast<IntegratorKind>(state.range(0));
  auto partition = large_partition(kind);
  steps(state, *partition, 1e-3);
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
  steps(state, *partition, spec.task == "actuator" ? 0.005 : spec.task == "airframe" ? 0.02 : 0.01);
  state.SetLabel(spec.task + " (ab2, " + std::to_string(partition->block_count()) + " blocks)");
}
BENCHMARK(BM_FlightControlTaskStep)->DenseRange(0, 2);

// One task of N sine -> first_order_lag pairs wired inside the partition
// (no link), AB-2, 1 ms steps, declared alternately as a generated file
// would (issue 26): ns per pair per step. Compiled (the frame program) and
// block by block (Partition::set_compiled(false)), beside the same math on
// plain arrays in BM_Baseline_SineLagPairs.
std::unique_ptr<Partition> sine_lag_pairs(int pairs) {
  std::vector<BlockSpec> blocks;
  std::vector<WireSpec> wires;
  for (int k = 0; k < pairs; ++k) {
    const std::string n = std::to_string(k);
    blocks.push_back({"s" + n, "sine", {{"frequency", static_cast<double>(1 + k % 7)}}, ""});
    blocks.push_back({"l" + n, "first_order_lag", {{"time_constant", 0.05}}, ""});
    wires.push_back({{"s" + n, "y"}, {"l" + n, "u"}});
  }
  return build_partition(BlockRegistry::with_builtins(), "pairs", blocks, wires, {}, IntegratorKind::kAb2);
}

void sine_lag_steps(benchmark::State& state, bool compiled) {
  auto partition = sine_lag_pairs(static_cast<int>(state.range(0)));
  partition->set_compiled(compiled);
  steps(state, *partition, 1e-3);
  state.counters["ns_per_pair"] = benchmark::Counter(static_cast<double>(state.iterations() * state.range(0)),
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
void BM_SineLagPairs(benchmark::State& state) { sine_lag_steps(state, true); }
void BM_SineLagPairsBlockByBlock(benchmark::State& state) { sine_lag_steps(state, false); }
BENCHMARK(BM_SineLagPairs)->Arg(2048)->Arg(8192);
BENCHMARK(BM_SineLagPairsBlockByBlock)->Arg(2048)->Arg(8192);

// The same math on plain arrays: per pair the sine at the step's middle
// and end, one AB-2 step of the lag (the partition evaluates the sine where
// the lag's derivative and the outputs need it).
void BM_Baseline_SineLagPairs(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<double> omega(n), x(n, 0.0), f_prev(n, 0.0), y(n, 0.0);
  for (std::size_t k = 0; k < n; ++k) omega[k] = 2.0 * 3.141592653589793 * static_cast<double>(1 + k % 7);
  constexpr double h = 1e-3, tau = 0.05;
  double t = 0.0;
  for (auto _ : state) {
    for (std::size_t k = 0; k < n; ++k) {
      const double u = std::sin(omega[k] * (t + 0.5 * h));
      const double f = (u - x[k]) / tau;
      x[k] += h * (1.5 * f - 0.5 * f_prev[k]);
      f_prev[k] = f;
      y[k] = std::sin(omega[k] * (t + h));
    }
    t += h;
    benchmark::DoNotOptimize(x.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.counters["ns_per_pair"] = benchmark::Counter(static_cast<double>(state.iterations() * state.range(0)),
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_Baseline_SineLagPairs)->Arg(2048)->Arg(8192);

}  // namespace

BENCHMARK_MAIN();
