#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tasks/block.hpp"
#include "tasks/params.hpp"

namespace rtcosim::tasks {

// One parameter of a block type, for validation messages, `--help`-style
// listings and the configuration reference.
struct BlockParamDoc {
  std::string name;
  std::string type;      // "number", "positive number", "list of numbers", "matrix", "text", "boolean"
  std::string fallback;  // default as text, empty when required
  std::string description;
};

using BlockFactory = std::function<std::unique_ptr<Block>(const std::string& name, const BlockParams& params)>;

struct BlockTypeInfo {
  std::string type;
  std::string summary;
  std::vector<BlockParamDoc> params;
  BlockFactory make;
};

/*
 * BlockRegistry: block types by name. `create` builds a block from its
 * parameters and rejects parameters the type does not know, so every
 * mistake is a BlockError naming the block, the parameter and what is
 * expected. Set-up phase only.
 */
class BlockRegistry {
 public:
  static BlockRegistry with_builtins();

  void add(BlockTypeInfo info);  // BlockError on a duplicate type
  [[nodiscard]] const BlockTypeInfo* find(const std::string& type) const noexcept;
  [[nodiscard]] std::vector<std::string> types() const;
  [[nodiscard]] const std::vector<BlockTypeInfo>& all() const noexcept { return types_; }

  [[nodiscard]] std::unique_ptr<Block> create(const std::string& type, const std::string& name,
                                              const BlockParams& params) const;

 private:
  std::vector<BlockTypeInfo> types_;
};

// The factory of a block class constructed as T(name, params).
template <typename T>
BlockFactory make_factory() {
  return [](const std::string& name, const BlockParams& params) -> std::unique_ptr<Block> {
    return std::make_unique<T>(name, params);
  };
}

// A block type of a part this build left out (RTCOSIM_WITHOUT, e.g. the
// quick start's build): listed, and refused by create() with the part's
// name and how to build it.
BlockTypeInfo left_out_block_type(std::string type, const std::string& part);

// Each file in tasks/blocks/ registers its block types through one of these.
void register_source_blocks(BlockRegistry& registry);  // constant, step, ramp, sine, chirp
void register_math_blocks(BlockRegistry& registry);    // gain, sum, product, switch, mux, demux
void register_continuous_blocks(
    BlockRegistry& registry);  // integrator, state_space, transfer_function, first_order_lag, second_order
void register_nonlinear_blocks(BlockRegistry& registry);   // saturation, dead_zone, rate_limiter, lookup_1d
void register_controller_blocks(BlockRegistry& registry);  // pid
void register_discrete_blocks(BlockRegistry& registry);    // discrete_transfer_function, zero_order_hold, unit_delay
void register_utility_blocks(BlockRegistry& registry);     // cpu_load
void register_fmu_blocks(BlockRegistry& registry);         // fmu (tasks/fmu/)
void register_mechanics_blocks(BlockRegistry& registry);   // mass_chain, planar_arm
void register_plant_blocks(BlockRegistry& registry);       // plant (tasks/plant/)

}  // namespace rtcosim::tasks
