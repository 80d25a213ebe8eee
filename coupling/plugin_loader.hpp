#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "coupling/registry.hpp"

namespace rtcosim::coupling {

// One outcome of loading plugins: a library that loaded (`ok`, with the
// methods it registered) or a problem naming the file or directory.
struct PluginDiagnostic {
  bool ok = false;
  std::string path;
  std::string message;
  std::vector<std::string> methods;
};

/*
 * Loads every `*.so` in `directories` (sorted by name) into `registry`:
 * dlopen, the entry point `rtcosim_register_coupling_methods`, then each
 * method it registered. Every failure (a directory that is missing, a file
 * that does not load, a missing entry point, a non-zero return, an ABI
 * mismatch, a method id that exists already) is a diagnostic naming the
 * file, and loading goes on with the next. Libraries that registered
 * methods stay loaded for the life of the process (the registry's
 * factories point into them). Set-up code.
 */
std::vector<PluginDiagnostic> load_plugins(MethodRegistry& registry, const std::vector<std::filesystem::path>& directories);
PluginDiagnostic load_plugin_file(MethodRegistry& registry, const std::filesystem::path& file);

// The built-in methods plus every plugin in `directories`; problems are
// appended to `diagnostics` (may be null).
MethodRegistry registry_with_plugins(const std::vector<std::string>& directories,
                                     std::vector<PluginDiagnostic>* diagnostics);

}  // namespace rtcosim::coupling
