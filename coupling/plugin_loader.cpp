#include "coupling/plugin_loader.hpp"

#include <algorithm>
#include <exception>
#include <system_error>

#include <dlfcn.h>

#include "base/text.hpp"
#include "coupling/plugin_api.hpp"

namespace rtcosim::coupling {

namespace {

std::string dl_error_text() {
  const char* why = dlerror();
  return why ? why : "unknown error";
}

// Closes the library on every way out unless the load succeeded. Declared
// before anything that may hold code or data of the plugin (the registrar's
// std::function factories, a trial registry), so that those are destroyed
// while the library is still mapped.
class LibraryGuard {
 public:
  explicit LibraryGuard(void* handle) noexcept : handle_(handle) {}
  ~LibraryGuard() {
    if (handle_) dlclose(handle_);
  }
  LibraryGuard(const LibraryGuard&) = delete;
  LibraryGuard& operator=(const LibraryGuard&) = delete;
  void keep() noexcept { handle_ = nullptr; }

 private:
  void* handle_;
};

// Calls the entry point; a problem is returned as text while the library is
// still loaded, because an exception thrown by the plugin may be of a type
// whose code lives in it.
std::string call_entry_point(PluginEntryPoint entry, PluginRegistrar& registrar) {
  int rc = 0;
  try {
    rc = entry(&registrar);
  } catch (const std::exception& e) {
    return std::string("its entry point threw an exception: ") + e.what();
  } catch (...) {
    return "its entry point threw an exception";
  }
  if (rc != 0) {
    return "its entry point returned " + std::to_string(rc) + ", not 0 (this rtcosim's plugin ABI version is " +
           std::to_string(kPluginAbiVersion) + "; a plugin built for another one refuses to register)";
  }
  if (registrar.failed()) return "its entry point could not record a method (out of memory)";
  if (registrar.methods().empty()) return "its entry point registered no coupling method";
  return {};
}

void load_into(MethodRegistry& registry, const std::filesystem::path& file, PluginDiagnostic& d) {
  dlerror();  // a stale message must not be reported for this file
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    d.message = "cannot load plugin: " + dl_error_text();
    return;
  }
  LibraryGuard guard(handle);
  void* symbol = dlsym(handle, kPluginEntryPoint);
  if (!symbol) {
    d.message = std::string("not an rtcosim coupling plugin: it does not export '") + kPluginEntryPoint + "'";
    return;
  }
  PluginRegistrar registrar;
  if (std::string problem = call_entry_point(reinterpret_cast<PluginEntryPoint>(symbol), registrar); !problem.empty()) {
    d.message = std::move(problem);
    return;
  }
  // All or nothing, into a copy: a half-registered plugin would leave
  // factories pointing into a library the caller believes failed.
  MethodRegistry trial = registry;
  std::vector<std::string> ids;
  std::vector<std::string> problems;
  for (auto& info : registrar.methods()) {
    info.origin = d.path;
    std::string id = info.id;
    try {
      trial.add(std::move(info));
      ids.push_back(std::move(id));
    } catch (const CouplingError& e) {
      problems.emplace_back(e.what());
    }
  }
  if (!problems.empty()) {
    d.message = base::join(problems, "; ");
    if (!ids.empty()) d.message += " — so none of its methods was registered (" + base::join(ids, ", ") + " neither)";
    return;
  }
  registry = std::move(trial);
  guard.keep();
  d.ok = true;
  d.methods = std::move(ids);
}

}  // namespace

std::string PluginDiagnostic::str() const {
  if (ok) return path + ": registered " + base::join(methods, ", ");
  return path + ": " + message;
}

PluginDiagnostic load_plugin_file(MethodRegistry& registry, const std::filesystem::path& file) {
  PluginDiagnostic d;
  try {
    d.path = file.string();
    load_into(registry, file, d);
  } catch (const std::exception& e) {
    // Only the host's own code can get here (load_into catches the plugin's),
    // so the exception is safe to read after the library is closed.
    d.ok = false;
    d.methods.clear();
    d.message = std::string("cannot load plugin: ") + e.what();
  } catch (...) {
    d.ok = false;
    d.methods.clear();
    d.message = "cannot load plugin: unknown error";
  }
  return d;
}

std::vector<PluginDiagnostic> load_plugins(MethodRegistry& registry,
                                           const std::vector<std::filesystem::path>& directories) {
  std::vector<PluginDiagnostic> out;
  for (const auto& dir : directories) {
    std::error_code ec;
    const auto status = std::filesystem::status(dir, ec);
    if (status.type() == std::filesystem::file_type::not_found) {
      out.push_back({false, dir.string(), "plugin directory does not exist", {}});
      continue;
    }
    if (ec) {
      out.push_back({false, dir.string(), "cannot read the plugin directory: " + ec.message(), {}});
      continue;
    }
    if (!std::filesystem::is_directory(status)) {
      out.push_back({false, dir.string(), "plugin directory is not a directory", {}});
      continue;
    }
    // Iterated with error codes throughout: the range-for form throws from
    // operator++, which would end loading for every later directory.
    std::vector<std::filesystem::path> files;
    std::filesystem::directory_iterator it(dir, ec);
    for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
      std::error_code file_ec;
      if (it->path().extension() == ".so" && it->is_regular_file(file_ec)) files.push_back(it->path());
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
  const std::vector<std::filesystem::path> dirs(directories.begin(), directories.end());
  auto found = load_plugins(registry, dirs);
  if (diagnostics) diagnostics->insert(diagnostics->end(), found.begin(), found.end());
  return registry;
}

}  // namespace rtcosim::coupling
