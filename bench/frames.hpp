#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "rt_config/loader.hpp"
#include "runtime/graph.hpp"

namespace rtcosim::bench {

// A graph from YAML text, built with the built-in blocks and methods and
// reset, as the executors start it.
inline std::unique_ptr<runtime::Graph> make_graph(const std::string& text) {
  static const auto blocks = tasks::BlockRegistry::with_builtins();
  static const auto methods = coupling::MethodRegistry::with_builtins();
  config::LoadOptions options;
  options.max_file_bytes = 64u << 20;
  const auto loaded = config::load_graph_text(text, "bench", options);
  if (!loaded.ok()) throw std::runtime_error(loaded.diagnostics.front().str());
  auto g = runtime::Graph::build(loaded.graph, blocks, methods);
  g->reset();
  return g;
}

// One frame of each task as the runtime runs it: drain the links, step,
// publish.
inline void frame_pair(runtime::TaskRuntime& producer, runtime::TaskRuntime& consumer, double h) noexcept {
  for (runtime::TaskRuntime* t : {&producer, &consumer}) {
    t->drain();
    t->step(h);
    t->publish();
  }
}

}  // namespace rtcosim::bench
