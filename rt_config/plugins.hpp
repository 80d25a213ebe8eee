#pragma once

#include <string>
#include <vector>

#include "coupling/registry.hpp"
#include "rt_config/graph_spec.hpp"

namespace rtcosim::config {

/*
 * PluginPolicy: where coupling-method plugins may come from. A task-graph
 * file is data, possibly from someone else: it names plugins only by id
 * (`plugins: [sample_linear]`), and an id is looked up as `<id>.so` in
 * `directories`, which only the one who runs the program sets (rtcosim's
 * --plugin-dir, rtcosimd's --plugin-dir in the unit). `load` false (the
 * default) loads nothing: no foreign code runs while a file is checked.
 */
struct PluginPolicy {
  std::vector<std::string> directories;
  bool load = false;
};

// True for a plugin id: 1 to 64 of letters, digits, '_', '-', '.', not
// starting with '.'.
bool is_plugin_id(const std::string& id);

// The library of plugin `id`: the first `<dir>/<id>.so` of `directories`
// that exists, once it and its directory are found trustworthy: owned by
// root or by this process's user and writable by nobody else (a file
// another user could replace would run as us). "" with `error` saying what
// and where otherwise.
std::string find_plugin(const std::string& id, const std::vector<std::string>& directories, std::string* error);

// The built-in methods plus the graph's plugins from `directories`. Throws
// std::runtime_error naming the plugin and the problem. Set-up code: loads
// foreign code.
coupling::MethodRegistry plugin_registry(const GraphSpec& graph, const std::vector<std::string>& directories);

}  // namespace rtcosim::config
