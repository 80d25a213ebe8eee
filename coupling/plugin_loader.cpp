#include "coupling/plugin_loader.hpp"

#include <dlfcn.h>

#include <algorithm>

#include "coupling/plugin_api.hpp"

namespace rtcosim::coupling {

PluginDiagnostic load_plugin_file(MethodRegistry& registry, const std::filesystem::path& file) {
  PluginDiagnostic d;
  d.path = file.string();
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    d.message = std::string("cannot load plugin: ") + (why ? why : "unknown error");
    return d;
  }
  auto entry = reinterpret_cast<PluginEntryPoint>(dlsym(handle, kPluginEntryPoint));
  if (!entry) {
    d.message = std::string("not an rtcosim plugin: it does not export '") + kPluginEntryPoint + "'";
    dlclose(handle);
    return d;
  }
  PluginRegistrar registrar;
  int rc = -1;
  try {
    rc = entry(&registrar);
  } catch (...) {
    d.message = "the plugin's registration threw an exception";
    dlclose(handle);
    return d;
  }
  if (rc != 0 || registrar.failed()) {
    d.message = "the plugin's registration failed (returned " + std::to_string(rc) + ")";
    dlclose(handle);
    return d;
  }
  std::vector<std::string> problems;
  for (auto& info : registrar.methods()) {
    info.origin = d.path;
    const std::string id = info.id;
    try {
      registry.add(std::move(info));
      d.methods.push_back(id);
    } catch (const CouplingError& e) {
      problems.push_back(e.what());
    }
  }
  if (d.methods.empty()) {
    // Nothing of it is referenced: it may go.
    dlclose(handle);
  }
  if (!problems.empty()) {
    d.message = problems.front();
    for (std::size_t i = 1; i < problems.size(); ++i) d.message += "; " + problems[i];
    return d;
  }
  if (d.methods.empty()) {
    d.message = "the plugin registered no method";
    return d;
  }
  d.ok = true;
  return d;
}

std::vector<PluginDiagnostic> load_plugins(MethodRegistry& registry, const std::vector<std::filesystem::path>& directories) {
  std::vector<PluginDiagnostic> out;
  for (const auto& dir : directories) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
      out.push_back({false, dir.string(), "plugin directory does not exist or is not a directory", {}});
      continue;
    }
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      if (entry.path().extension() == ".so") files.push_back(entry.path());
    }
    if (ec) out.push_back({false, dir.string(), "cannot read the plugin directory: " + ec.message(), {}});
    std::sort(files.begin(), files.end());
    for (const auto& f : files) out.push_back(load_plugin_file(registry, f));
  }
  return out;
}

MethodRegistry registry_with_plugins(const std::vector<std::string>& directories,
                                     std::vector<PluginDiagnostic>* diagnostics) {
  MethodRegistry registry = MethodRegistry::with_builtins();
  std::vector<std::filesystem::path> dirs(directories.begin(), directories.end());
  auto found = load_plugins(registry, dirs);
  if (diagnostics) diagnostics->insert(diagnostics->end(), found.begin(), found.end());
  return registry;
}

}  // namespace rtcosim::coupling
