// libFuzzer target for the task-graph loader: any byte string must end in a
// LoadResult (diagnostics or a graph), never a crash, a hang or a leak.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rt_config/loader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  rtcosim::config::LoadOptions options;
  options.cpu_count = 2;
  const auto result = rtcosim::config::load_graph_text(text, "fuzz.yaml", options);
  // Every diagnostic must render: that walks all of their strings.
  std::size_t total = 0;
  for (const auto& d : result.diagnostics) total += d.str().size();
  return total == static_cast<std::size_t>(-1) ? 1 : 0;
}
