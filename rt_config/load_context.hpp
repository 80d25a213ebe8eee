// No section of its own: what loader.cpp and the load_*.cpp section readers share. Internal to rtcosim_config.
// Not a public header: include it only from the library's own sources (it exposes yaml-cpp, linked privately).
// GraphLoader is one class whose members are defined one file per section, so that a section is read and
// changed without the others in view; the file of each member is named at its declaration.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/text.hpp"
#include "coupling/registry.hpp"
#include "rt_config/diagnostics.hpp"
#include "rt_config/graph_spec.hpp"
#include "rt_config/loader.hpp"
#include "rt_config/location.hpp"
#include "rt_config/yaml_tree.hpp"
#include "tasks/block_registry.hpp"
#include "tasks/params.hpp"
#include "tasks/partition.hpp"

namespace rtcosim::config::detail {

using Severity = Diagnostic::Severity;

// load_context.cpp
using base::join;
Location location_of(const yaml::Node& node);

// Walks one parsed document, collecting every problem it finds.
// Defined in load_context.cpp but for the diagnostics funnel (report, error, warning, note).
class Reader {
 public:
  Reader(std::string file, std::vector<Diagnostic>& diagnostics) : file_(std::move(file)), diagnostics_(diagnostics) {}

  void report(Severity severity, Location where, std::string message) {
    diagnostics_.push_back({severity, file_, where.line, where.column, std::move(message)});
  }
  void error(Location where, std::string message) { report(Severity::kError, where, std::move(message)); }
  void error(const yaml::Node& at, std::string message) { error(location_of(at), std::move(message)); }
  void warning(Location where, std::string message) { report(Severity::kWarning, where, std::move(message)); }
  void note(Location where, std::string message) { report(Severity::kNote, where, std::move(message)); }

  // A mapping whose keys must all be in `allowed`; unknown keys are
  // reported with a did-you-mean. Returns false when `node` is no mapping.
  bool mapping(const yaml::Node& node, const std::string& what, const std::vector<std::string>& allowed);

  // YAML parsers keep the first of two equal keys and drop the second
  // silently; a key written twice is almost always a mistake.
  void unique_keys(const yaml::Node& node, const std::string& what);

  static std::string kind(const yaml::Node& node);

  std::optional<std::string> text(const yaml::Node& parent, const std::string& key, const std::string& what,
                                  bool required);

  std::optional<double> duration(const yaml::Node& parent, const std::string& key, const std::string& what,
                                 bool required);

  std::optional<long long> integer(const yaml::Node& parent, const std::string& key, const std::string& what,
                                   long long min, long long max);

  std::optional<bool> boolean(const yaml::Node& parent, const std::string& key, const std::string& what);

  // One of `choices`, reported with a did-you-mean.
  std::optional<std::string> choice(const yaml::Node& parent, const std::string& key, const std::string& what,
                                    const std::vector<std::string>& choices);

  // A block parameter value: number, boolean, text, list of numbers, or a
  // matrix as a list of lists of numbers.
  std::optional<tasks::ParamValue> param_value(const yaml::Node& node, const std::string& what);

  std::optional<tasks::Vector> numbers(const yaml::Node& node, const std::string& what);

  // "block.port", split at the first dot (a block name has none, a port
  // name may: structured FMU names).
  std::optional<tasks::Endpoint> endpoint(const yaml::Node& node, const std::string& what);

 private:
  std::string file_;
  std::vector<Diagnostic>& diagnostics_;
};

struct BlockInfo {
  std::unique_ptr<tasks::Block> block;  // null when the block itself was invalid
  Location where;
  std::map<std::string, Location> param_locations;
  // Kept when the loop check takes `block` over (check_diagram), for check_fixed_steps.
  std::string fixed_step_reason;
  std::string type;
};

class GraphLoader {
  std::map<std::size_t, Location> host_locations_;  // task index -> its 'host' key

 public:
  GraphLoader(LoadResult& result, const LoadOptions& options, const tasks::BlockRegistry& blocks,
              const coupling::MethodRegistry& methods)
      : result_(result),
        graph_(result.graph),
        in_(graph_.file, result.diagnostics),
        options_(options),
        blocks_(blocks),
        methods_(&methods) {}

  // loader.cpp: the order of the sections and of the checks after them.
  void load(const yaml::Node& root);

  [[nodiscard]] const coupling::MethodRegistry& methods() const noexcept { return *methods_; }

 private:
  // load_tasks.cpp
  void read_tasks(const yaml::Node& list, const yaml::Node& root);
  void read_execution(const yaml::Node& node, const std::string& what, ExecutionTimes& out);
  void read_divergence(const yaml::Node& node, const std::string& what, TaskSpec::Divergence& out);
  void check_tasks();

  // load_hosts_dds.cpp
  void read_hosts(const yaml::Node& node);
  void read_dds(const yaml::Node& node);
  void check_security();
  void check_hosts();

  // load_files.cpp: the files that hosts, 'dds: security' and blocks' path parameters name.
  std::optional<std::string> graph_file(const std::string& text, Location at, const std::string& label);
  static std::string searched(const std::string& text, const std::string& beside);

  // load_blocks_wires.cpp: 'blocks', 'wires' and the couplings (the default one and each wire's).
  void read_blocks(const yaml::Node& list, const yaml::Node& root);
  bool takes_mapping(const std::string& type, const std::string& param) const;
  bool resolve_paths(const std::string& type, tasks::BlockParams& params,
                     const std::map<std::string, Location>& locations, const std::string& what);
  void check_fixed_steps();
  // load_stiffness.cpp: explicit integrators against their partitions' linear modes.
  void check_stiffness();
  std::optional<CouplingSpec> coupling_spec(const yaml::Node& node, const std::string& what);
  void read_wires(const yaml::Node& list);
  void check_diagram();
  void check_rim_link(const WireEntry& entry, const yaml::Node& node, const tasks::PortInfo& out,
                      const tasks::PortInfo& in);
  std::optional<tasks::PortInfo> find_port(const tasks::Endpoint& e, const yaml::Node& at, bool output);

  // load_record_trace.cpp
  void read_record(const yaml::Node& node);
  void read_trace(const yaml::Node& node);

  // load_sync.cpp
  void read_sync(const yaml::Node& node);
  void read_sync_optimise(const yaml::Node& node);
  void read_sync_delay(const yaml::Node& delay);

  // load_plugins.cpp
  void read_plugins(const yaml::Node& node);

  LoadResult& result_;
  GraphSpec& graph_;
  Reader in_;
  const LoadOptions& options_;
  const tasks::BlockRegistry& blocks_;
  const coupling::MethodRegistry* methods_;
  std::unique_ptr<coupling::MethodRegistry> with_plugins_;  // when the file's plugins are loaded
  bool plugins_not_loaded_ = false;
  std::map<std::string, std::size_t> block_index_;
  std::vector<BlockInfo> infos_;
  std::vector<yaml::Node> wire_nodes_;
  std::vector<yaml::Node> record_nodes_;
  std::string acquisition_;             // sync.delay.acquisition
  bool wires_unread_ = false;           // 'wires' missing or not a list
  std::set<std::string> wired_inputs_;  // inputs of wires dropped for another error
};

}  // namespace rtcosim::config::detail
