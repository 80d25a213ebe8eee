#pragma once

// Private to the FMU instance: what its set-up (fmu_instance.cpp: loading,
// instantiation, initialisation, inspection) and its calls
// (fmu_instance_calls.cpp: the real-time get/set, steps and events, state
// and the log) share. Not for other code.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <type_traits>

#include <boost/lockfree/spsc_queue.hpp>

#include "tasks/fmu/fmi_api.h"
#include "tasks/fmu/fmu_instance.hpp"

namespace rtcosim::tasks::fmu::detail {

// The instance whose RT function this thread is in: the allocateMemory
// callback carries no instance, so it charges this one.
inline thread_local FmuInstance* t_charged = nullptr;

class Charging {
 public:
  explicit Charging(FmuInstance* f) noexcept : previous_(t_charged) { t_charged = f; }
  ~Charging() { t_charged = previous_; }
  Charging(const Charging&) = delete;
  Charging& operator=(const Charging&) = delete;

 private:
  FmuInstance* previous_;
};

inline const char* status_name(int s) noexcept {
  static const char* const names[] = {"OK", "Warning", "Discard", "Error", "Fatal", "Pending"};
  return s >= 0 && s <= 5 ? names[s] : "?";
}

inline void copy_text(char* to, std::size_t size, const char* from) noexcept {
  if (!from) from = "";
  std::size_t n = 0;
  while (n + 1 < size && from[n] != '\0') {
    to[n] = from[n];
    ++n;
  }
  to[n] = '\0';
}

// Conversions between the doubles on ports and an FMU's typed values.
template <class T>
T to_integer(double v) noexcept {
  if (std::isnan(v)) return 0;
  const double r = std::round(v);
  const double upper = std::ldexp(1.0, std::numeric_limits<T>::digits);  // 2^31, 2^63, 2^64, ...: exact
  const double lower = std::numeric_limits<T>::is_signed ? -upper : 0.0;
  if (r >= upper) return std::numeric_limits<T>::max();
  if (r < lower) return std::numeric_limits<T>::min();
  return static_cast<T>(r);
}

inline float to_float(double v) noexcept {
  const double top = static_cast<double>(std::numeric_limits<float>::max());
  if (std::isfinite(v) && std::fabs(v) > top) {
    return v > 0.0 ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
  }
  return static_cast<float>(v);
}

template <class T>
T* words(std::uint64_t* scratch) noexcept {
  static_assert(sizeof(T) <= sizeof(std::uint64_t) && alignof(T) <= alignof(std::uint64_t));
  return reinterpret_cast<T*>(scratch);
}

template <class T>
T* integers_from(const double* v, std::size_t n, std::uint64_t* scratch) noexcept {
  T* out = words<T>(scratch);
  for (std::size_t i = 0; i < n; ++i) out[i] = to_integer<T>(v[i]);
  return out;
}

template <class T>
T* booleans_from(const double* v, std::size_t n, std::uint64_t* scratch) noexcept {
  T* out = words<T>(scratch);
  for (std::size_t i = 0; i < n; ++i) out[i] = (!std::isnan(v[i]) && v[i] != 0.0) ? T(1) : T(0);
  return out;
}

// Copies n typed values into v; returns how many lie beyond +-2^53 (64-bit only).
template <class T>
std::uint64_t to_doubles(const T* from, std::size_t n, double* v) noexcept {
  std::uint64_t inexact = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (sizeof(T) == 8 && std::is_integral_v<T>) {
      constexpr T limit = T{1} << 53;
      if constexpr (std::is_signed_v<T>) {
        if (from[i] > limit || from[i] < -limit) ++inexact;
      } else {
        if (from[i] > limit) ++inexact;
      }
    }
    v[i] = static_cast<double>(from[i]);
  }
  return inexact;
}

}  // namespace rtcosim::tasks::fmu::detail

namespace rtcosim::tasks::fmu {

// The FMU's functions, resolved once; the ones marked optional may be null.
struct FmuInstance::Api {
  bool v2 = true;
  // FMI 2.0
  fmi2InstantiateTYPE* instantiate2 = nullptr;
  fmi2FreeInstanceTYPE* free2 = nullptr;
  fmi2SetupExperimentTYPE* setup2 = nullptr;
  fmi2ComponentFunctionTYPE *enter_init2 = nullptr, *exit_init2 = nullptr, *terminate2 = nullptr, *reset2 = nullptr;
  fmi2GetRealTYPE* get_real2 = nullptr;
  fmi2SetRealTYPE* set_real2 = nullptr;
  fmi2SetIntegerTYPE* set_int2 = nullptr;
  fmi2SetBooleanTYPE* set_bool2 = nullptr;
  fmi2GetIntegerTYPE* get_int2 = nullptr;
  fmi2GetBooleanTYPE* get_bool2 = nullptr;
  fmi2GetFMUstateTYPE* get_state2 = nullptr;              // optional
  fmi2SetFMUstateTYPE* set_state2 = nullptr;              // optional
  fmi2FreeFMUstateTYPE* free_state2 = nullptr;            // optional
  fmi2SerializedFMUstateSizeTYPE* state_size2 = nullptr;  // optional
  fmi2SerializeFMUstateTYPE* serialize2 = nullptr;        // optional
  fmi2DeSerializeFMUstateTYPE* deserialize2 = nullptr;    // optional
  fmi2ComponentFunctionTYPE *enter_event2 = nullptr, *enter_ct2 = nullptr;
  fmi2NewDiscreteStatesTYPE* new_discrete2 = nullptr;
  fmi2CompletedIntegratorStepTYPE* completed2 = nullptr;
  fmi2SetTimeTYPE* set_time2 = nullptr;
  fmi2SetContinuousStatesTYPE* set_x2 = nullptr;
  fmi2GetRealVectorTYPE *get_dx2 = nullptr, *get_z2 = nullptr, *get_x2 = nullptr;
  fmi2GetDirectionalDerivativeTYPE* dd2 = nullptr;  // optional
  fmi2DoStepTYPE* do_step2 = nullptr;
  fmi2GetRealStatusTYPE* get_real_status2 = nullptr;     // optional: why a step was discarded
  fmi2GetBooleanStatusTYPE* get_bool_status2 = nullptr;  // optional
  fmi2GetRealOutputDerivativesTYPE* get_dy2 = nullptr;   // optional
  fmi2CallbackFunctions callbacks{};

  // FMI 3.0
  fmi3InstantiateModelExchangeTYPE* instantiate_me3 = nullptr;
  fmi3InstantiateCoSimulationTYPE* instantiate_cs3 = nullptr;
  fmi3FreeInstanceTYPE* free3 = nullptr;
  fmi3EnterInitializationModeTYPE* enter_init3 = nullptr;
  fmi3InstanceFunctionTYPE *exit_init3 = nullptr, *terminate3 = nullptr, *reset3 = nullptr;
  fmi3InstanceFunctionTYPE *enter_config3 = nullptr, *exit_config3 = nullptr;  // optional: structural parameters
  fmi3GetFloat64TYPE* get_real3 = nullptr;
  fmi3SetFloat64TYPE* set_real3 = nullptr;
  // Typed access: optional, required by require_type for the types in use.
  fmi3GetFloat32TYPE* get_f32 = nullptr;
  fmi3SetFloat32TYPE* set_f32 = nullptr;
  fmi3GetInt8TYPE* get_i8 = nullptr;
  fmi3SetInt8TYPE* set_i8 = nullptr;
  fmi3GetUInt8TYPE* get_u8 = nullptr;
  fmi3SetUInt8TYPE* set_u8 = nullptr;
  fmi3GetInt16TYPE* get_i16 = nullptr;
  fmi3SetInt16TYPE* set_i16 = nullptr;
  fmi3GetUInt16TYPE* get_u16 = nullptr;
  fmi3SetUInt16TYPE* set_u16 = nullptr;
  fmi3GetInt32TYPE* get_int3 = nullptr;
  fmi3SetInt32TYPE* set_int3 = nullptr;
  fmi3GetUInt32TYPE* get_u32 = nullptr;
  fmi3SetUInt32TYPE* set_u32 = nullptr;
  fmi3GetInt64TYPE* get_i64 = nullptr;
  fmi3SetInt64TYPE* set_i64 = nullptr;
  fmi3GetUInt64TYPE* get_u64 = nullptr;
  fmi3SetUInt64TYPE* set_u64 = nullptr;
  fmi3GetBooleanTYPE* get_bool3 = nullptr;
  fmi3SetBooleanTYPE* set_bool3 = nullptr;
  fmi3GetFMUStateTYPE* get_state3 = nullptr;              // optional
  fmi3SetFMUStateTYPE* set_state3 = nullptr;              // optional
  fmi3FreeFMUStateTYPE* free_state3 = nullptr;            // optional
  fmi3SerializedFMUStateSizeTYPE* state_size3 = nullptr;  // optional
  fmi3SerializeFMUStateTYPE* serialize3 = nullptr;        // optional
  fmi3DeserializeFMUStateTYPE* deserialize3 = nullptr;    // optional
  fmi3InstanceFunctionTYPE *enter_event3 = nullptr, *enter_ct3 = nullptr;
  fmi3UpdateDiscreteStatesTYPE* update_discrete3 = nullptr;
  fmi3CompletedIntegratorStepTYPE* completed3 = nullptr;
  fmi3SetTimeTYPE* set_time3 = nullptr;
  fmi3SetContinuousStatesTYPE* set_x3 = nullptr;
  fmi3GetFloat64VectorTYPE *get_dx3 = nullptr, *get_z3 = nullptr, *get_x3 = nullptr;
  fmi3GetDirectionalDerivativeTYPE* dd3 = nullptr;  // optional
  fmi3DoStepTYPE* do_step3 = nullptr;
  fmi3GetOutputDerivativesTYPE* get_dy3 = nullptr;  // optional
};

struct FmuInstance::Ring {
  boost::lockfree::spsc_queue<FmuLogEntry, boost::lockfree::capacity<64>> queue;
  std::mutex consumer;  // the drain thread and flush_log() share the consumer side
};

}  // namespace rtcosim::tasks::fmu

namespace rtcosim::tasks::fmu::detail {

// The FMI 3 typed access of every variable type but Float64 (always there,
// read and written without scratch): its getter and setter in Api, its C
// type and the functions' names. Every typed switch (loading, require_type,
// set_values, get_values, the messages) goes through it, so that a type is
// one line here. `f(get, set, T*, get_name, set_name)` for a typed variable,
// `otherwise()` for any other.
// Api is FmuInstance's (private: named by its members only).
template <class Api, class F, class G>
auto with_fmi3_type(VarType type, F&& f, G&& otherwise) {
#define RTCOSIM_FMI3_TYPE(T, get, set, name) \
  return f(&Api::get, &Api::set, static_cast<T*>(nullptr), "fmi3Get" name, "fmi3Set" name)
  switch (type) {
    case VarType::kFloat32:
      RTCOSIM_FMI3_TYPE(float, get_f32, set_f32, "Float32");
    case VarType::kInt8:
      RTCOSIM_FMI3_TYPE(std::int8_t, get_i8, set_i8, "Int8");
    case VarType::kUInt8:
      RTCOSIM_FMI3_TYPE(std::uint8_t, get_u8, set_u8, "UInt8");
    case VarType::kInt16:
      RTCOSIM_FMI3_TYPE(std::int16_t, get_i16, set_i16, "Int16");
    case VarType::kUInt16:
      RTCOSIM_FMI3_TYPE(std::uint16_t, get_u16, set_u16, "UInt16");
    case VarType::kInteger:
      RTCOSIM_FMI3_TYPE(std::int32_t, get_int3, set_int3, "Int32");
    case VarType::kUInt32:
      RTCOSIM_FMI3_TYPE(std::uint32_t, get_u32, set_u32, "UInt32");
    case VarType::kInt64:
    case VarType::kEnumeration:
      RTCOSIM_FMI3_TYPE(std::int64_t, get_i64, set_i64, "Int64");
    case VarType::kUInt64:
      RTCOSIM_FMI3_TYPE(std::uint64_t, get_u64, set_u64, "UInt64");
    case VarType::kBoolean:
      RTCOSIM_FMI3_TYPE(bool, get_bool3, set_bool3, "Boolean");
    default:
      return otherwise();
  }
#undef RTCOSIM_FMI3_TYPE
}

inline constexpr VarType kFmi3Typed[] = {VarType::kFloat32, VarType::kInt8,    VarType::kUInt8,  VarType::kInt16,
                                         VarType::kUInt16,  VarType::kInteger, VarType::kUInt32, VarType::kInt64,
                                         VarType::kUInt64,  VarType::kBoolean};

// `n` doubles as the FMI 3 type T in the scratch: saturated integers,
// booleans (NaN false), floats (beyond its range: infinite).
template <class T>
T* values_as(const double* v, std::size_t n, std::uint64_t* scratch) noexcept {
  if constexpr (std::is_same_v<T, bool>) {
    return booleans_from<bool>(v, n, scratch);
  } else if constexpr (std::is_same_v<T, float>) {
    float* f = words<float>(scratch);
    for (std::size_t i = 0; i < n; ++i) f[i] = to_float(v[i]);
    return f;
  } else {
    return integers_from<T>(v, n, scratch);
  }
}

}  // namespace rtcosim::tasks::fmu::detail
