// A small harness for block tests: blocks made by the built-in registry,
// wired into a real Partition, external inputs from formulas.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tasks/block_registry.hpp"
#include "tasks/partition.hpp"

namespace rtcosim::tasks::testing {

struct RigBlock {
  std::string name;
  std::string type;
  BlockParams params;
};

// An external input: every signal of it is `value(t)`, wired to `targets`.
// A `per_step` input is held over each step at its value at the step's
// midpoint, so that a switch between two step boundaries is integrated
// exactly instead of being smeared by the integrator's stages.
struct RigInput {
  std::string name;
  std::vector<Endpoint> targets;
  std::function<double(double)> value;
  bool per_step = false;
  std::size_t width = 1;
};

/*
 * Rig: owns the partition and its input source. `step(h)` advances from the
 * partition's time; `step_at(k, h)` steps from exactly k * h so that long
 * runs do not accumulate rounding in the time grid (sample hits and input
 * switches then fall exactly on step boundaries).
 */
class Rig {
 public:
  Rig(const std::vector<RigBlock>& blocks, const std::vector<WireSpec>& wires, std::vector<RigInput> inputs,
      IntegratorKind kind = IntegratorKind::kRk4)
      : source_(std::move(inputs)) {
    const auto registry = BlockRegistry::with_builtins();
    std::vector<std::unique_ptr<Block>> made;
    for (const auto& b : blocks) made.push_back(registry.create(b.type, b.name, b.params));
    std::vector<ExternalInputSpec> externals;
    for (const auto& in : source_.inputs) externals.push_back({in.name, in.width, in.targets});
    partition_ = std::make_unique<Partition>("p", std::move(made), wires, std::move(externals), kind);
    partition_->refresh_outputs(source_);
  }

  void step(double h) { partition_->step(partition_->time(), h, source_); }
  void step_at(long k, double h) { partition_->step(static_cast<double>(k) * h, h, source_); }

  [[nodiscard]] double y(const std::string& block, const std::string& port = "y", std::size_t i = 0) const {
    return partition_->output(partition_->find_output({block, port}))[i];
  }
  [[nodiscard]] double dy(const std::string& block, const std::string& port = "y", std::size_t i = 0) const {
    return partition_->output_derivative(partition_->find_output({block, port}))[i];
  }
  [[nodiscard]] bool dy_known(const std::string& block, const std::string& port = "y", std::size_t i = 0) const {
    return partition_->output_derivative_valid(partition_->find_output({block, port}), i);
  }
  [[nodiscard]] double time() const noexcept { return partition_->time(); }
  [[nodiscard]] Partition& partition() noexcept { return *partition_; }

 private:
  struct Source final : InputSource {
    explicit Source(std::vector<RigInput> in) : inputs(std::move(in)) {}
    void begin_step(double t, double h) noexcept override { mid_step = t + 0.5 * h; }
    void sample(std::size_t input, double t, std::span<double> out) noexcept override {
      const RigInput& in = inputs[input];
      for (double& v : out) v = in.value(in.per_step ? mid_step : t);
    }
    std::vector<RigInput> inputs;
    double mid_step = 0.0;
  };
  Source source_;
  std::unique_ptr<Partition> partition_;
};

// The message of the BlockError that creating `type` with `params` throws.
inline std::string creation_error(const std::string& type, const BlockParams& params) {
  try {
    (void)BlockRegistry::with_builtins().create(type, "b", params);
  } catch (const BlockError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace rtcosim::tasks::testing
