#include "tools/rtcosim/graph_file.hpp"

#include <iostream>

namespace rtcosim::tools {

std::optional<config::GraphSpec> load_graph_or_report(const std::string& file, const config::LoadOptions& options) {
  auto loaded = config::load_graph_file(file, options);
  for (const auto& d : loaded.diagnostics) std::cerr << d.str() << '\n';
  if (!loaded.ok()) {
    std::cerr << config::count(loaded.diagnostics, config::Diagnostic::Severity::kError) << " error(s) in " << file
              << "; nothing was run\n";
    return std::nullopt;
  }
  return std::move(loaded.graph);
}

}  // namespace rtcosim::tools
