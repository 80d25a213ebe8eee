#pragma once

#include <vector>

#include "coupling/registry.hpp"

/*
 * The plugin ABI. A coupling-method plugin is a shared library, built
 * against these headers with the same compiler, that exports one C-linkage
 * function:
 *
 *   extern "C" int rtcosim_register_coupling_methods(rtcosim::coupling::PluginRegistrar* registrar);
 *
 * which checks registrar->abi_version() and calls registrar->add(MethodInfo)
 * for each method it provides, returning 0 on success. The registrar only
 * records what it is given (nothing throws across the C boundary); the
 * loader then adds the methods to the registry and reports any clash. The
 * Extrapolators a plugin makes follow the same real-time rules as the
 * built-in ones: noexcept, no allocation after configure().
 */
namespace rtcosim::coupling {

inline constexpr int kPluginAbiVersion = 1;
inline constexpr const char* kPluginEntryPoint = "rtcosim_register_coupling_methods";

class PluginRegistrar {
 public:
  [[nodiscard]] int abi_version() const noexcept { return kPluginAbiVersion; }
  // Records a method; never throws (a failed allocation drops it and is
  // reported by the loader as a registration failure).
  void add(MethodInfo info) noexcept {
    try {
      methods_.push_back(std::move(info));
    } catch (...) {
      failed_ = true;
    }
  }
  [[nodiscard]] std::vector<MethodInfo>& methods() noexcept { return methods_; }
  [[nodiscard]] bool failed() const noexcept { return failed_; }

 private:
  std::vector<MethodInfo> methods_;
  bool failed_ = false;
};

using PluginEntryPoint = int (*)(PluginRegistrar*);

}  // namespace rtcosim::coupling

// For plugin authors: RTCOSIM_COUPLING_PLUGIN(registrar) { ...; return 0; }
#define RTCOSIM_COUPLING_PLUGIN(registrar) \
  extern "C" __attribute__((visibility("default"))) int rtcosim_register_coupling_methods( \
      rtcosim::coupling::PluginRegistrar* registrar)
