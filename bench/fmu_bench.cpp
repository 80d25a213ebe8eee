// ns per frame of a co-simulated FMU: fmi2DoStep + one output read for the
// mass-spring-damper test FMU (tests/fmus/msd2.c), three ways in one
// binary: a bare loop calling the FMU's C functions directly (the
// baseline), the same FMU as an `fmu` block stepped through
// Partition::step (what a task's frame does), and the same model as
// built-in blocks (state_space, RK4 at the frame step; the FMU integrates
// with RK4 at 1/20 of it, so this row is for scale, not a like-for-like).
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstdlib>

#include "tasks/block_registry.hpp"
#include "tasks/diagram.hpp"
#include "tasks/fmu/fmi_api.h"
#include "tasks/fmu/fmu_archive.hpp"

namespace {

using namespace rtcosim::tasks;

const std::string kFmu = std::string(RTCOSIM_FMU_DIR) + "/msd2.fmu";
constexpr double kStep = 0.001;

struct NoInputs final : InputSource {
  void sample(std::size_t, double, std::span<double>) noexcept override {}
};

void logger(fmi2ComponentEnvironment, fmi2String, fmi2Status, fmi2String, fmi2String, ...) {}

void BM_FmuDoStepDirect(benchmark::State& state) {
  fmu::ExtractedArchive archive(kFmu);
  void* lib = dlopen((archive.directory() + "/binaries/linux64/msd2.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    state.SkipWithError("cannot load msd2.so");
    return;
  }
  auto* instantiate = reinterpret_cast<fmi2InstantiateTYPE*>(dlsym(lib, "fmi2Instantiate"));
  auto* setup = reinterpret_cast<fmi2SetupExperimentTYPE*>(dlsym(lib, "fmi2SetupExperiment"));
  auto* enter = reinterpret_cast<fmi2ComponentFunctionTYPE*>(dlsym(lib, "fmi2EnterInitializationMode"));
  auto* exit = reinterpret_cast<fmi2ComponentFunctionTYPE*>(dlsym(lib, "fmi2ExitInitializationMode"));
  auto* do_step = reinterpret_cast<fmi2DoStepTYPE*>(dlsym(lib, "fmi2DoStep"));
  auto* set_real = reinterpret_cast<fmi2SetRealTYPE*>(dlsym(lib, "fmi2SetReal"));
  auto* get_real = reinterpret_cast<fmi2GetRealTYPE*>(dlsym(lib, "fmi2GetReal"));
  auto* free_instance = reinterpret_cast<fmi2FreeInstanceTYPE*>(dlsym(lib, "fmi2FreeInstance"));
  const fmi2CallbackFunctions callbacks{logger, std::calloc, std::free, nullptr, nullptr};
  fmi2Component c = instantiate("msd", fmi2CoSimulation, "{msd-2}", "", &callbacks, 0, 0);
  setup(c, 0, 0.0, 0.0, 0, 0.0);
  enter(c);
  exit(c);
  const fmi2ValueReference x = 0, f = 7;
  const double force = 0.0;
  double t = 0.0, y = 0.0;
  for (auto _ : state) {
    set_real(c, &f, 1, &force);
    do_step(c, t, kStep, 1);
    get_real(c, &x, 1, &y);
    benchmark::DoNotOptimize(y);
    t += kStep;
  }
  free_instance(c);
  dlclose(lib);
}
BENCHMARK(BM_FmuDoStepDirect);

// One partition step and one output read per iteration, as a frame does.
void step_and_read(benchmark::State& state, rtcosim::tasks::Partition& p, const rtcosim::tasks::OutputRef& x) {
  NoInputs in;
  double t = 0.0;
  for (auto _ : state) {
    p.step(t, kStep, in);
    benchmark::DoNotOptimize(p.output(x)[0]);
    t += kStep;
  }
}

void BM_FmuBlockPartitionStep(benchmark::State& state) {
  auto p = build_partition(BlockRegistry::with_builtins(), "plant",
                           {{"force", "constant", {{"value", 0.0}}, ""},
                            {"msd", "fmu", {{"file", kFmu}, {"interface", std::string("co_simulation")}}, ""}},
                           {{{"force", "y"}, {"msd", "F"}}}, {}, IntegratorKind::kEuler);
  const auto x = p->find_output({"msd", "x"});
  step_and_read(state, *p, x);
}
BENCHMARK(BM_FmuBlockPartitionStep);

void BM_BuiltinMsdPartitionStep(benchmark::State& state) {
  BlockParams params{{"A", Matrix{{0.0, 1.0}, {-4.0, -0.4}}}, {"B", Matrix{{0.0}, {1.0}}}, {"C", Matrix{{1.0, 0.0}}},
                     {"initial", Vector{1.0, 0.0}}};
  auto p = build_partition(BlockRegistry::with_builtins(), "plant",
                           {{"force", "constant", {{"value", 0.0}}, ""}, {"msd", "state_space", params, ""}},
                           {{{"force", "y"}, {"msd", "u"}}}, {}, IntegratorKind::kRk4);
  const auto x = p->find_output({"msd", "y"});
  step_and_read(state, *p, x);
}
BENCHMARK(BM_BuiltinMsdPartitionStep);

}  // namespace

BENCHMARK_MAIN();
