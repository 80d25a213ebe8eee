#pragma once

#include <utility>
#include <vector>

#include "coupling/registry.hpp"

/*
 * The coupling-method plugin ABI (see docs/plugins.md).
 *
 * A plugin is a shared library, built against these headers with the same
 * compiler and standard library as the host, that exports one C-linkage
 * function, kPluginEntryPoint:
 *
 *   extern "C" int rtcosim_register_coupling_methods(rtcosim::coupling::PluginRegistrar* registrar);
 *
 * It checks registrar->abi_version() against kPluginAbiVersion, calls
 * registrar->add(MethodInfo) once per method, and returns 0; any other value
 * is a failure and none of its methods are registered. Write it with
 * RTCOSIM_COUPLING_PLUGIN(registrar) { ... }, which also exports it.
 *
 * The plugin links against nothing of rtcosim: the Extrapolator base and the
 * registry types are resolved from the host executable, which exports them.
 * Every Extrapolator a plugin makes follows the real-time rules of
 * coupling/extrapolator.hpp: reset, push, evaluate and evaluate_mean are
 * noexcept and allocate, lock and block nothing; memory is sized in
 * do_configure.
 */
namespace rtcosim::coupling {

// Raised whenever PluginRegistrar, MethodInfo, ParamSpec, ParamValues or the
// Extrapolator interface change in a way a compiled plugin would notice.
inline constexpr int kPluginAbiVersion = 2;
inline constexpr const char* kPluginEntryPoint = "rtcosim_register_coupling_methods";

/*
 * PluginRegistrar: what the loader hands a plugin's entry point. It only
 * records the methods it is given; the loader validates them and adds them
 * to the registry afterwards, so no exception has to cross the C boundary.
 *
 * Ownership: the loader owns it for the duration of one entry-point call;
 * a plugin must not keep the pointer. Set-up code, never on the RT path.
 */
class PluginRegistrar {
 public:
  // Hosts construct it with their own version; a test may pass another to
  // see a plugin refuse it.
  explicit PluginRegistrar(int abi_version = kPluginAbiVersion) noexcept : abi_version_(abi_version) {}
  PluginRegistrar(const PluginRegistrar&) = delete;
  PluginRegistrar& operator=(const PluginRegistrar&) = delete;

  // The host's ABI version. It is read from the object, not from the
  // constant the plugin was compiled with, so a mismatch is visible.
  [[nodiscard]] int abi_version() const noexcept { return abi_version_; }

  // Records a method. Never throws: if recording fails (out of memory) the
  // whole plugin is reported as failed.
  void add(MethodInfo info) noexcept {
    try {
      methods_.push_back(std::move(info));
    } catch (...) {
      failed_ = true;
    }
  }

  // The loader's side.
  [[nodiscard]] std::vector<MethodInfo>& methods() noexcept { return methods_; }
  [[nodiscard]] bool failed() const noexcept { return failed_; }

 private:
  // First member, so that a plugin built for another layout still reads it
  // correctly before it refuses to go on.
  int abi_version_;
  bool failed_ = false;
  std::vector<MethodInfo> methods_;
};

// The type of the entry point, for dlsym.
using PluginEntryPoint = int (*)(PluginRegistrar*);

}  // namespace rtcosim::coupling

// Declared here so that a plugin defining the entry point with another
// signature fails to compile instead of failing at load time.
extern "C" __attribute__((visibility("default"))) int rtcosim_register_coupling_methods(
    rtcosim::coupling::PluginRegistrar* registrar);

// For plugin authors:
//   RTCOSIM_COUPLING_PLUGIN(registrar) {
//     if (registrar->abi_version() != rtcosim::coupling::kPluginAbiVersion) return 1;
//     registrar->add({...});
//     return 0;
//   }
#define RTCOSIM_COUPLING_PLUGIN(registrar)                                                  \
  extern "C" __attribute__((visibility("default"))) int rtcosim_register_coupling_methods( \
      rtcosim::coupling::PluginRegistrar* registrar)
