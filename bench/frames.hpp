#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "rt_config/loader.hpp"
#include "runtime/graph.hpp"

namespace rtcosim::bench {

// A producer and a consumer task at 1 ms exchanging 4 links x 16 signals
// (predictor): runtime_bench's and replay_bench's graph.
inline constexpr const char* kLinks4x16 = R"(
tasks:
  - {name: producer, period: 1ms, integrator: euler}
  - {name: consumer, period: 1ms, integrator: euler}
blocks:
  - {name: s1, type: constant, task: producer, params: {value: [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}}
  - {name: s2, type: constant, task: producer, params: {value: [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}}
  - {name: s3, type: constant, task: producer, params: {value: [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}}
  - {name: s4, type: constant, task: producer, params: {value: [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}}
  - {name: g1, type: gain, task: consumer, params: {gain: 2, width: 16}}
  - {name: g2, type: gain, task: consumer, params: {gain: 2, width: 16}}
  - {name: g3, type: gain, task: consumer, params: {gain: 2, width: 16}}
  - {name: g4, type: gain, task: consumer, params: {gain: 2, width: 16}}
wires:
  - {from: s1.y, to: g1.u, coupling: {method: predictor}}
  - {from: s2.y, to: g2.u, coupling: {method: predictor}}
  - {from: s3.y, to: g3.u, coupling: {method: predictor}}
  - {from: s4.y, to: g4.u, coupling: {method: predictor}}
)";

// A graph from YAML text, built with the built-in blocks and methods and
// reset, as the executors start it. `compiled` false: every partition block
// by block and a link per wire, as before the frame program
// (docs/frame-program.md), for a baseline in the same binary.
inline std::unique_ptr<runtime::Graph> make_graph(const std::string& text, bool compiled = true) {
  static const auto blocks = tasks::BlockRegistry::with_builtins();
  static const auto methods = coupling::MethodRegistry::with_builtins();
  config::LoadOptions options;
  options.max_file_bytes = 64u << 20;
  const auto loaded = config::load_graph_text(text, "bench", options);
  if (!loaded.ok()) throw std::runtime_error(loaded.diagnostics.front().str());
  auto g = runtime::Graph::build(loaded.graph, blocks, methods, compiled);
  if (!compiled) {
    for (auto& t : g->tasks()) t->partition().set_compiled(false);
  }
  g->reset();
  return g;
}

// A producer of S sines and a consumer of S first-order lags (AB-2, 1 ms
// each), each sine linked to its lag with `predictor`: the graph of
// signal_bench and frame_cost.
inline std::string sine_lag_graph(int signals) {
  std::string tasks =
      "tasks:\n  - {name: producer, period: 1ms, integrator: ab2}\n  - {name: consumer, period: 1ms, integrator: "
      "ab2}\n";
  std::string blocks = "blocks:\n", wires = "wires:\n";
  for (int k = 0; k < signals; ++k) {
    const std::string n = std::to_string(k);
    blocks +=
        "  - {name: s" + n + ", type: sine, task: producer, params: {frequency: " + std::to_string(1 + k % 7) + "}}\n";
    blocks += "  - {name: l" + n + ", type: first_order_lag, task: consumer, params: {time_constant: 0.05}}\n";
    wires += "  - {from: s" + n + ".y, to: l" + n + ".u, coupling: {method: predictor}}\n";
  }
  return tasks + blocks + wires;
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
