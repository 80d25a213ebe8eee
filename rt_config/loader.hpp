#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "coupling/registry.hpp"
#include "rt_config/diagnostics.hpp"
#include "rt_config/graph_spec.hpp"
#include "rt_config/plugins.hpp"
#include "tasks/block_registry.hpp"

namespace rtcosim::config {

struct LoadOptions {
  const tasks::BlockRegistry* blocks = nullptr;      // nullptr: the built-in blocks
  const coupling::MethodRegistry* methods = nullptr; // nullptr: the built-in methods
  int cpu_count = 0;                                 // 0: this machine's
  std::size_t max_file_bytes = 4u << 20;
  // Where the file's `plugins:` ids are looked up, and whether they are
  // loaded at all (by default not: checking a file runs no foreign code).
  PluginPolicy plugins = {};
  // When set, a block's path parameter (an FMU's `file`) must name a file
  // inside one of these directories (after following links and `..`);
  // the daemon sets it, so a graph a client reloads cannot make it load
  // a binary from anywhere. `file_roots_hint` ends the error: how to allow
  // another directory.
  std::optional<std::vector<std::string>> file_roots = std::nullopt;
  std::string file_roots_hint = {};
};

struct LoadResult {
  GraphSpec graph;
  std::vector<Diagnostic> diagnostics;
  [[nodiscard]] bool ok() const { return !has_errors(diagnostics); }
};

/*
 * Loads and validates a task-graph file. Every problem that can be known
 * before running is reported, all of them in one pass, each at its line
 * and column; the graph is usable only when `ok()`. Never throws for bad
 * input: unreadable files, binary junk, empty or huge files, deep nesting,
 * anchors and aliases all end as diagnostics. Set-up code.
 */
LoadResult load_graph_file(const std::string& path, const LoadOptions& options = {});
LoadResult load_graph_text(std::string_view text, const std::string& file_label, const LoadOptions& options = {});

}  // namespace rtcosim::config
