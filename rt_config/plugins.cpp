#include "rt_config/plugins.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "coupling/plugin_loader.hpp"

namespace rtcosim::config {

namespace {

// Owned by root or by us, writable by no one else.
bool trustworthy(const std::string& path, bool directory, std::string* error) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    *error = path + ": " + std::strerror(errno);
    return false;
  }
  if (directory ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
    *error = path + " is not a " + (directory ? "directory" : "regular file");
    return false;
  }
  if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
    *error = path + " belongs to user " + std::to_string(st.st_uid) +
             " — a plugin and its directory must belong to root or to the user who runs rtcosim";
    return false;
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    *error = path + " is writable by " + ((st.st_mode & S_IWOTH) ? "everyone" : "its group") +
             " — a plugin and its directory must be writable only by their owner (chmod go-w)";
    return false;
  }
  return true;
}

}  // namespace

bool is_plugin_id(const std::string& id) {
  if (id.empty() || id.size() > 64 || id[0] == '.') return false;
  return id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") == std::string::npos;
}

std::string find_plugin(const std::string& id, const std::vector<std::string>& directories, std::string* error) {
  namespace fs = std::filesystem;
  if (!is_plugin_id(id)) {
    *error = "'" + id + "' is not a plugin id — expected the name of a .so file without '.so', e.g. sample_linear";
    return {};
  }
  if (directories.empty()) {
    *error = "plugin '" + id + "' cannot be loaded: no plugin directory is allowed — give one with --plugin-dir";
    return {};
  }
  for (const auto& dir : directories) {
    const fs::path candidate = fs::path(dir) / (id + ".so");
    std::error_code ec;
    if (!fs::exists(candidate, ec)) continue;
    // Check what will really be opened: the file a link leads to, and the
    // directory holding it, as well as the allowed directory itself.
    const fs::path real = fs::canonical(candidate, ec);
    if (ec) {
      *error = candidate.string() + ": " + ec.message();
      return {};
    }
    if (!trustworthy(dir, true, error) || !trustworthy(real.parent_path().string(), true, error) ||
        !trustworthy(real.string(), false, error)) {
      return {};
    }
    return real.string();
  }
  std::string list;
  for (const auto& dir : directories) list += (list.empty() ? "" : ", ") + dir;
  *error = "no plugin '" + id + "' (" + id + ".so) in the allowed plugin directories (" + list + ")";
  return {};
}

coupling::MethodRegistry plugin_registry(const GraphSpec& graph, const std::vector<std::string>& directories) {
  auto registry = coupling::MethodRegistry::with_builtins();
  for (const auto& id : graph.plugins) {
    std::string error;
    const std::string file = find_plugin(id, directories, &error);
    if (file.empty()) throw std::runtime_error(error);
    const auto d = coupling::load_plugin_file(registry, file);
    if (!d.ok) throw std::runtime_error(d.str());
  }
  return registry;
}

}  // namespace rtcosim::config
