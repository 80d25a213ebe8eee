#include "coupling/evaluation.hpp"

#include <cmath>
#include <cstdint>
#include <numbers>

#include "coupling/data_block.hpp"

namespace rtcosim::coupling {

const std::vector<TestSignal>& test_signals() {
  static const std::vector<TestSignal> signals = {
      {"y1", "sin(2πt)", [](double t) { return std::sin(2.0 * std::numbers::pi * t); },
       [](double t) { return 2.0 * std::numbers::pi * std::cos(2.0 * std::numbers::pi * t); }},
      {"y2", "exp(-1.5t)·cos(3t)", [](double t) { return std::exp(-1.5 * t) * std::cos(3.0 * t); },
       [](double t) { return std::exp(-1.5 * t) * (-1.5 * std::cos(3.0 * t) - 3.0 * std::sin(3.0 * t)); }},
      {"y3", "(4t - t²)/3 for t < 3, else 1", [](double t) { return t < 3.0 ? (4.0 * t - t * t) / 3.0 : 1.0; },
       [](double t) { return t < 3.0 ? (4.0 - 2.0 * t) / 3.0 : 0.0; }},
  };
  return signals;
}

const TestSignal& test_signal(const std::string& id) {
  for (const auto& s : test_signals()) {
    if (s.id == id) return s;
  }
  throw CouplingError("unknown test signal '" + id + "' — expected y1, y2 or y3");
}

const std::vector<EvalVariant>& eval_variants() {
  static const std::vector<EvalVariant> variants = {{"A1", 0.040, 3}, {"A2", 0.040, 4}, {"A3", 0.075, 3}};
  return variants;
}

const std::vector<std::string>& eval_table_methods() {
  static const std::vector<std::string> methods = {"zoh", "polynomial", "hermite", "interpolated",
                                                   "smoothed", "ecd", "ecc", "predictor"};
  return methods;
}

ParamSettings variant_params(const MethodRegistry& registry, const std::string& method, const EvalVariant& variant) {
  ParamSettings params;
  for (const auto& spec : registry.get(method).params) {
    if (spec.name == "order") params.push_back({"order", std::to_string(variant.order)});
  }
  return params;
}

namespace {

// Uniform in [-0.5, 0.5), a fixed function of j (splitmix64).
double tag_offset(std::int64_t j) noexcept {
  auto z = static_cast<std::uint64_t>(j) + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53 - 0.5;
}

}  // namespace

EvalResult run_evaluation(const MethodRegistry& registry, const EvalSettings& settings) {
  if (!(settings.macro_step > 0.0) || !(settings.micro_step > 0.0) || !(settings.duration > 0.0)) {
    throw CouplingError("evaluation steps and duration must be positive");
  }
  if (settings.duration / settings.micro_step > 1e8) {
    throw CouplingError("evaluation would take more than 10^8 micro steps: shorten --duration or lengthen --micro");
  }
  if (!(settings.jitter >= 0.0 && settings.jitter < 1.0)) {
    throw CouplingError("evaluation jitter must be in [0, 1) macro steps (tags must stay in order)");
  }
  const TestSignal& signal = test_signal(settings.signal);
  auto extrapolator = registry.create(settings.method, settings.params, 1);

  // Whole nanoseconds keep "has block j arrived by step i" exact: 40 * 1 ms
  // must equal one 40 ms macro step, which floating-point products do not
  // guarantee.
  const auto macro_ns = static_cast<std::int64_t>(std::llround(settings.macro_step * 1e9));
  const auto micro_ns = static_cast<std::int64_t>(std::llround(settings.micro_step * 1e9));
  const auto steps = static_cast<std::int64_t>(std::llround(settings.duration / settings.micro_step));
  constexpr std::int64_t kHistoryBlocks = 20;  // more than any order plus interpolation order needs

  DataBlock block(1);
  std::int64_t next_block = -kHistoryBlocks;
  auto tag_ns = [&](std::int64_t j) -> std::int64_t {
    if (settings.jitter == 0.0) return j * macro_ns;
    return j * macro_ns + std::llround(settings.jitter * static_cast<double>(macro_ns) * tag_offset(j));
  };
  auto push_block = [&](std::int64_t j) {
    const double tag = static_cast<double>(tag_ns(j)) * 1e-9;
    block.tag = tag;
    block.sequence = static_cast<std::uint64_t>(j + kHistoryBlocks);
    block.producer_step = settings.macro_step;
    block.set(0, signal.value(tag), settings.with_derivatives ? signal.derivative(tag) : 0.0,
              settings.with_derivatives);
    extrapolator->push(block);
    return tag;
  };

  EvalResult result;
  if (settings.keep_trace) {
    result.time.reserve(static_cast<std::size_t>(steps));
    result.truth.reserve(static_cast<std::size_t>(steps));
    result.output.reserve(static_cast<std::size_t>(steps));
  }
  double sum = 0.0;
  double u = 0.0;
  for (std::int64_t i = 0; i < steps; ++i) {
    const std::int64_t now_ns = i * micro_ns;
    while (tag_ns(next_block) <= now_ns) {
      const double tag = push_block(next_block++);
      if (settings.keep_trace && tag >= 0.0) result.coupling_times.push_back(tag);
    }
    const double t = static_cast<double>(now_ns) * 1e-9;
    extrapolator->evaluate(t, std::span<double>(&u, 1));
    const double y = signal.value(t);
    sum += (y - u) * (y - u);
    if (settings.keep_trace) {
      result.time.push_back(t);
      result.truth.push_back(y);
      result.output.push_back(u);
    }
  }
  result.steps = static_cast<std::size_t>(steps);
  result.mse = sum / static_cast<double>(steps);
  result.derivative_fallback = extrapolator->used_derivative_fallback();
  return result;
}

}  // namespace rtcosim::coupling
