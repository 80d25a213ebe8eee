#include "tasks/block_registry.hpp"

#include "base/text.hpp"

namespace rtcosim::tasks {

void BlockRegistry::add(BlockTypeInfo info) {
  if (find(info.type)) throw BlockError("block type '" + info.type + "' is registered twice");
  types_.push_back(std::move(info));
}

const BlockTypeInfo* BlockRegistry::find(const std::string& type) const noexcept {
  for (const auto& t : types_) {
    if (t.type == type) return &t;
  }
  return nullptr;
}

std::vector<std::string> BlockRegistry::types() const {
  std::vector<std::string> out;
  for (const auto& t : types_) out.push_back(t.type);
  return out;
}

std::unique_ptr<Block> BlockRegistry::create(const std::string& type, const std::string& name,
                                             const BlockParams& params) const {
  const BlockTypeInfo* info = find(type);
  if (!info) {
    std::string list;
    for (const auto& t : types_) list += (list.empty() ? "" : ", ") + t.type;
    std::string message = "block '" + name + "': unknown block type '" + type + "' — expected one of: " + list;
    if (const auto guess = base::closest_match(type, types()); !guess.empty()) {
      message += " (did you mean '" + guess + "'?)";
    }
    throw BlockError(message, name);
  }
  if (!info->make) throw BlockError("block '" + name + "': block type '" + type + "' is " + info->summary, name);
  auto block = info->make(name, params);
  params.check_all_used(name, type);
  return block;
}

BlockTypeInfo left_out_block_type(std::string type, const std::string& part) {
  return {std::move(type), base::not_built(part), {}, nullptr};
}

}  // namespace rtcosim::tasks
