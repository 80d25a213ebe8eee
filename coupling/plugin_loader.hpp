#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "coupling/registry.hpp"

namespace rtcosim::coupling {

/*
 * PluginDiagnostic: one outcome of loading plugins. `ok` is an informational
 * entry: the library at `path` loaded and registered `methods` (in the order
 * it added them). Otherwise it is a problem with the file or directory at
 * `path`, `message` says what, and `methods` is empty: a plugin is
 * registered whole or not at all.
 */
struct PluginDiagnostic {
  bool ok = false;
  std::string path;
  std::string message;
  std::vector<std::string> methods;

  // "PATH: MESSAGE", or "PATH: registered a, b" for a library that loaded.
  [[nodiscard]] std::string str() const;
};

/*
 * Plugin loading. Set-up code: it allocates, and it calls into foreign code
 * (dlopen, the plugins' entry points); never on the real-time path.
 *
 * load_plugin_file: dlopen(RTLD_NOW | RTLD_LOCAL) one library, call its
 * entry point (plugin_api.hpp), then add every method it recorded to
 * `registry` with `origin` = the file's path. Nothing throws: a library that
 * does not load, lacks the entry point, throws or returns non-zero, records
 * no method, or records one the registry refuses (an id that exists, with
 * the origin that registered it first; an invalid id; no factory) yields a
 * diagnostic naming the file and the reason, and leaves `registry` as it
 * was. A library that registered methods stays loaded for the life of the
 * process, because the registry's factories point into it; a failed one is
 * closed.
 *
 * load_plugins: load_plugin_file for each `*.so` regular file (or link to
 * one) of each directory, in sorted order, plus a diagnostic for each
 * directory that does not exist or cannot be read. One diagnostic per file,
 * so a caller can both warn about the failures and list what loaded.
 */
PluginDiagnostic load_plugin_file(MethodRegistry& registry, const std::filesystem::path& file);
std::vector<PluginDiagnostic> load_plugins(MethodRegistry& registry,
                                           const std::vector<std::filesystem::path>& directories);

// The built-in methods plus every plugin in `directories`; the diagnostics
// of load_plugins are appended to `diagnostics` (may be null).
MethodRegistry registry_with_plugins(const std::vector<std::string>& directories,
                                     std::vector<PluginDiagnostic>* diagnostics);

}  // namespace rtcosim::coupling
