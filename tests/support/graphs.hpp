// Graphs for runtime tests: an example file or a YAML text, loaded (a
// diagnostic that is an error fails the test) and built with the built-in
// blocks and methods.
#pragma once

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "coupling/registry.hpp"
#include "rt_config/loader.hpp"
#include "runtime/graph.hpp"
#include "tasks/block_registry.hpp"

namespace rtcosim::testing {

inline config::GraphSpec checked(const config::LoadResult& r) {
  for (const auto& d : r.diagnostics) {
    if (d.severity == config::Diagnostic::Severity::kError) ADD_FAILURE() << d.str();
  }
  return r.graph;
}

inline config::GraphSpec load_example(const std::string& name) {
  return checked(config::load_graph_file(std::string(RTCOSIM_EXAMPLES_DIR) + "/" + name));
}

// `bundle_links` false: every wire a link of its own (Graph::build).
inline std::unique_ptr<runtime::Graph> build_graph(const config::GraphSpec& spec, bool bundle_links = true) {
  // The registries outlive every graph built from them.
  static const auto blocks = tasks::BlockRegistry::with_builtins();
  static const auto methods = coupling::MethodRegistry::with_builtins();
  return runtime::Graph::build(spec, blocks, methods, bundle_links);
}

}  // namespace rtcosim::testing
