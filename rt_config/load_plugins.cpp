// Reads 'plugins' and, when the options allow it, loads them for the methods the rest of the file names.
#include <memory>

#include "coupling/plugin_loader.hpp"
#include "rt_config/load_context.hpp"
#include "rt_config/plugins.hpp"

namespace rtcosim::config::detail {

void GraphLoader::read_plugins(const yaml::Node& node) {
  if (!node) return;
  if (!node.IsSequence()) {
    in_.error(node, "'plugins' is " + Reader::kind(node) + " — expected a list of plugin ids, e.g. [sample_linear]");
    return;
  }
  // A file names plugins by id only; where they are loaded from is for
  // whoever runs the program to say (PluginPolicy), never for the file: a
  // file naming a directory would make us run any code it points at.
  std::vector<yaml::Node> nodes;
  for (const auto& d : node) {
    if (d.IsScalar() && is_plugin_id(d.Scalar())) {
      graph_.plugins.push_back(d.Scalar());
      nodes.push_back(d);
    } else if (d.IsScalar() && d.Scalar().find('/') != std::string::npos) {
      in_.error(d,
                "'plugins' names plugins by id, not by path — write the .so file's name without '.so' and "
                "allow its directory with --plugin-dir");
    } else {
      in_.error(d, "a plugin is " + Reader::kind(d) + " — expected a plugin id (letters, digits, '_', '-', '.')");
    }
  }
  if (graph_.plugins.empty()) return;
  if (!options_.plugins.load) {
    plugins_not_loaded_ = true;
    return;
  }
  // The methods the rest of the file may name: the given ones plus the
  // plugins'. A plugin that fails is a warning: the file may still work.
  with_plugins_ = std::make_unique<coupling::MethodRegistry>(*methods_);
  for (std::size_t i = 0; i < graph_.plugins.size(); ++i) {
    std::string why;
    const std::string file = find_plugin(graph_.plugins[i], options_.plugins.directories, &why);
    if (file.empty()) {
      in_.error(nodes[i], why);
      continue;
    }
    const auto d = coupling::load_plugin_file(*with_plugins_, file);
    if (!d.ok) in_.warning(location_of(nodes[i]), d.path + ": " + d.message);
  }
  methods_ = with_plugins_.get();
}

}  // namespace rtcosim::config::detail
