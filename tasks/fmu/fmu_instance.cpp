#include "tasks/fmu/fmu_instance.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <mutex>
#include <sstream>
#include <type_traits>

#include <boost/lockfree/spsc_queue.hpp>
#include <dlfcn.h>
#include <sys/stat.h>

#include "tasks/fmu/fmi_api.h"

namespace rtcosim::tasks::fmu {

namespace {

constexpr std::uint64_t kMaxDescriptionBytes = 64ull << 20;

// The instance whose RT function this thread is in: the allocateMemory
// callback carries no instance, so it charges this one.
thread_local FmuInstance* t_charged = nullptr;

class Charging {
 public:
  explicit Charging(FmuInstance* f) noexcept : previous_(t_charged) { t_charged = f; }
  ~Charging() { t_charged = previous_; }
  Charging(const Charging&) = delete;
  Charging& operator=(const Charging&) = delete;

 private:
  FmuInstance* previous_;
};

const char* status_name(int s) noexcept {
  static const char* const names[] = {"OK", "Warning", "Discard", "Error", "Fatal", "Pending"};
  return s >= 0 && s <= 5 ? names[s] : "?";
}

void copy_text(char* to, std::size_t size, const char* from) noexcept {
  if (!from) from = "";
  std::size_t n = 0;
  while (n + 1 < size && from[n] != '\0') {
    to[n] = from[n];
    ++n;
  }
  to[n] = '\0';
}

extern "C" void fmi2_logger(fmi2ComponentEnvironment env, fmi2String, fmi2Status status, fmi2String category,
                            fmi2String message, ...) {
  if (!env) return;
  va_list args;
  va_start(args, message);
  static_cast<FmuInstance*>(env)->log(static_cast<int>(status), category, message, &args);
  va_end(args);
}

extern "C" void fmi3_logger(fmi3InstanceEnvironment env, fmi3Status status, fmi3String category, fmi3String message) {
  if (env) static_cast<FmuInstance*>(env)->log(static_cast<int>(status), category, message, nullptr);
}

extern "C" void* fmi2_allocate(size_t nobj, size_t size) {
  if (t_charged) t_charged->count_allocation();
  return std::calloc(nobj, size);
}
extern "C" void fmi2_free(void* p) { std::free(p); }

std::string read_file(const std::string& path, std::uint64_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::string out;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    out.append(buf, static_cast<std::size_t>(in.gcount()));
    if (out.size() > limit) throw FmuError(path + ": larger than " + std::to_string(limit) + " bytes — refused");
  }
  return out;
}

ModelDescription read_description(const ExtractedArchive& archive, const std::string& fmu_path) {
  const std::string file = archive.directory() + "/modelDescription.xml";
  struct stat st;
  if (::lstat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    throw FmuError(fmu_path + ": the archive has no modelDescription.xml at its root — not an FMU");
  }
  return parse_model_description(read_file(file, kMaxDescriptionBytes), fmu_path);
}

std::string percent_encode(const std::string& path) {
  static const char* const hex = "0123456789ABCDEF";
  std::string out;
  for (const char ch : path) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
      out += ch;
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
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

float to_float(double v) noexcept {
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

std::vector<std::string> platforms_in(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/binaries", ec)) {
    if (e.is_directory(ec)) out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

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

namespace {

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

constexpr VarType kFmi3Typed[] = {VarType::kFloat32, VarType::kInt8,    VarType::kUInt8,  VarType::kInt16,
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

}  // namespace

struct FmuInstance::Ring {
  boost::lockfree::spsc_queue<FmuLogEntry, boost::lockfree::capacity<64>> queue;
  std::mutex consumer;  // the drain thread and flush_log() share the consumer side
};

const char* interface_name(FmuInterface i) noexcept {
  return i == FmuInterface::kModelExchange ? "model_exchange" : "co_simulation";
}

std::string binary_path(const ModelDescription& md, FmuInterface i) {
  const Interface& in = i == FmuInterface::kModelExchange ? md.model_exchange : md.co_simulation;
  return std::string("binaries/") + (md.fmi_major == 2 ? "linux64" : "x86_64-linux") + "/" + in.model_identifier +
         ".so";
}

namespace {

// dlopen and dlsym with one FmuError per problem. `optional` symbols may be missing.
class Library {
 public:
  Library(const std::string& dir, const std::string& fmu_path, const ModelDescription& md, FmuInterface i)
      : fmu_path_(fmu_path) {
    const std::string rel = binary_path(md, i);
    const std::string file = dir + "/" + rel;
    struct stat st;
    if (::lstat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      std::string have;
      for (const auto& p : platforms_in(dir)) have += (have.empty() ? "" : ", ") + p;
      throw FmuError(fmu_path + ": no " + rel + " for " + interface_name(i) + " — the FMU carries binaries for: " +
                     (have.empty() ? "no platform (a source-only FMU is not supported)" : have));
    }
    handle_ = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) throw FmuError(fmu_path + ": cannot load " + rel + ": " + ::dlerror());
  }
  ~Library() {
    if (handle_) ::dlclose(handle_);
  }
  void* release() noexcept {
    void* h = handle_;
    handle_ = nullptr;
    return h;
  }
  template <class T>
  void get(T*& fn, const char* name, bool optional = false) {
    fn = reinterpret_cast<T*>(::dlsym(handle_, name));
    if (!fn && !optional) throw FmuError(fmu_path_ + ": the binary does not export " + name + " — it is required");
  }

 private:
  std::string fmu_path_;
  void* handle_ = nullptr;
};

}  // namespace

FmuInfo inspect(const std::string& path) {
  ExtractedArchive archive(path);
  FmuInfo info;
  info.description = read_description(archive, path);
  info.platforms = platforms_in(archive.directory());
  auto probe = [&](FmuInterface i, std::string& problem) {
    const Interface& in =
        i == FmuInterface::kModelExchange ? info.description.model_exchange : info.description.co_simulation;
    if (!in.present) return;
    try {
      Library lib(archive.directory(), path, info.description, i);
      void* fn = nullptr;
      for (const char* name :
           info.description.fmi_major == 2
               ? std::vector<const char*>{"fmi2Instantiate",
                                          i == FmuInterface::kModelExchange ? "fmi2GetDerivatives" : "fmi2DoStep"}
               : std::vector<const char*>{
                     i == FmuInterface::kModelExchange ? "fmi3InstantiateModelExchange" : "fmi3InstantiateCoSimulation",
                     i == FmuInterface::kModelExchange ? "fmi3GetContinuousStateDerivatives" : "fmi3DoStep"}) {
        lib.get(fn, name);
      }
    } catch (const FmuError& e) {
      problem = e.what();
    }
  };
  probe(FmuInterface::kModelExchange, info.me_binary_problem);
  probe(FmuInterface::kCoSimulation, info.cs_binary_problem);
  return info;
}

FmuInstance::FmuInstance(const std::string& path, const FmuOptions& options)
    : path_(path), options_(options), api_(std::make_unique<Api>()), ring_(std::make_unique<Ring>()) {
  archive_ = std::make_unique<ExtractedArchive>(path);
  md_ = read_description(*archive_, path);
  interface_ = options_.interface.value_or(md_.model_exchange.present ? FmuInterface::kModelExchange
                                                                      : FmuInterface::kCoSimulation);
  const bool me = interface_ == FmuInterface::kModelExchange;
  const Interface& in = me ? md_.model_exchange : md_.co_simulation;
  if (!in.present) {
    throw FmuError(path + ": the FMU has no " + interface_name(interface_) + " interface — it offers " +
                       (me ? "co_simulation" : "model_exchange"),
                   "interface");
  }
  if (in.needs_execution_tool) {
    throw FmuError(
        path +
        ": the FMU needs its execution tool (needsExecutionTool) — a tool-coupling FMU cannot run in real time here");
  }
  Library lib(archive_->directory(), path, md_, interface_);
  Api& a = *api_;
  a.v2 = md_.fmi_major == 2;
  if (a.v2) {
    lib.get(a.instantiate2, "fmi2Instantiate");
    lib.get(a.free2, "fmi2FreeInstance");
    lib.get(a.setup2, "fmi2SetupExperiment");
    lib.get(a.enter_init2, "fmi2EnterInitializationMode");
    lib.get(a.exit_init2, "fmi2ExitInitializationMode");
    lib.get(a.terminate2, "fmi2Terminate");
    lib.get(a.reset2, "fmi2Reset");
    lib.get(a.get_real2, "fmi2GetReal");
    lib.get(a.set_real2, "fmi2SetReal");
    lib.get(a.set_int2, "fmi2SetInteger");
    lib.get(a.set_bool2, "fmi2SetBoolean");
    lib.get(a.get_int2, "fmi2GetInteger", true);
    lib.get(a.get_bool2, "fmi2GetBoolean", true);
    lib.get(a.get_state2, "fmi2GetFMUstate", true);
    lib.get(a.set_state2, "fmi2SetFMUstate", true);
    lib.get(a.free_state2, "fmi2FreeFMUstate", true);
    lib.get(a.state_size2, "fmi2SerializedFMUstateSize", true);
    lib.get(a.serialize2, "fmi2SerializeFMUstate", true);
    lib.get(a.deserialize2, "fmi2DeSerializeFMUstate", true);
    if (me) {
      lib.get(a.enter_event2, "fmi2EnterEventMode");
      lib.get(a.enter_ct2, "fmi2EnterContinuousTimeMode");
      lib.get(a.new_discrete2, "fmi2NewDiscreteStates");
      lib.get(a.completed2, "fmi2CompletedIntegratorStep");
      lib.get(a.set_time2, "fmi2SetTime");
      lib.get(a.set_x2, "fmi2SetContinuousStates");
      lib.get(a.get_dx2, "fmi2GetDerivatives");
      lib.get(a.get_z2, "fmi2GetEventIndicators");
      lib.get(a.get_x2, "fmi2GetContinuousStates");
      lib.get(a.dd2, "fmi2GetDirectionalDerivative", true);
    } else {
      lib.get(a.do_step2, "fmi2DoStep");
      lib.get(a.get_real_status2, "fmi2GetRealStatus", true);
      lib.get(a.get_bool_status2, "fmi2GetBooleanStatus", true);
      lib.get(a.get_dy2, "fmi2GetRealOutputDerivatives", true);
    }
    a.callbacks = fmi2CallbackFunctions{fmi2_logger, fmi2_allocate, fmi2_free, nullptr, this};
  } else {
    if (me) {
      lib.get(a.instantiate_me3, "fmi3InstantiateModelExchange");
    } else {
      lib.get(a.instantiate_cs3, "fmi3InstantiateCoSimulation");
    }
    lib.get(a.free3, "fmi3FreeInstance");
    lib.get(a.enter_init3, "fmi3EnterInitializationMode");
    lib.get(a.exit_init3, "fmi3ExitInitializationMode");
    lib.get(a.terminate3, "fmi3Terminate");
    lib.get(a.reset3, "fmi3Reset");
    lib.get(a.enter_config3, "fmi3EnterConfigurationMode", true);
    lib.get(a.exit_config3, "fmi3ExitConfigurationMode", true);
    lib.get(a.get_real3, "fmi3GetFloat64");
    lib.get(a.set_real3, "fmi3SetFloat64");
    for (const VarType t : kFmi3Typed) {
      with_fmi3_type<Api>(
          t,
          [&](auto get, auto set, auto*, const char* get_name, const char* set_name) {
            lib.get(a.*get, get_name, true);
            lib.get(a.*set, set_name, true);
          },
          [] {});
    }
    lib.get(a.get_state3, "fmi3GetFMUState", true);
    lib.get(a.set_state3, "fmi3SetFMUState", true);
    lib.get(a.free_state3, "fmi3FreeFMUState", true);
    lib.get(a.state_size3, "fmi3SerializedFMUStateSize", true);
    lib.get(a.serialize3, "fmi3SerializeFMUState", true);
    lib.get(a.deserialize3, "fmi3DeserializeFMUState", true);
    lib.get(a.enter_event3, "fmi3EnterEventMode");
    lib.get(a.update_discrete3, "fmi3UpdateDiscreteStates");
    if (me) {
      lib.get(a.enter_ct3, "fmi3EnterContinuousTimeMode");
      lib.get(a.completed3, "fmi3CompletedIntegratorStep");
      lib.get(a.set_time3, "fmi3SetTime");
      lib.get(a.set_x3, "fmi3SetContinuousStates");
      lib.get(a.get_dx3, "fmi3GetContinuousStateDerivatives");
      lib.get(a.get_z3, "fmi3GetEventIndicators");
      lib.get(a.get_x3, "fmi3GetContinuousStates");
      lib.get(a.dd3, "fmi3GetDirectionalDerivative", true);
    } else {
      lib.get(a.do_step3, "fmi3DoStep");
      lib.get(a.get_dy3, "fmi3GetOutputDerivatives", true);
    }
  }
  library_ = lib.release();
  drain_ = std::thread([this] {
    while (!stop_log_.load(std::memory_order_acquire)) {
      flush_log();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  if (options_.defer_start) return;
  try {
    resolve_sizes();
    instantiate();
    initialize_instance();
  } catch (...) {
    cleanup();  // the destructor does not run for an object whose constructor threw
    throw;
  }
}

void FmuInstance::start(std::vector<std::pair<std::string, std::vector<double>>> start) {
  options_.start = std::move(start);
  resolve_sizes();
  instantiate();
  initialize_instance();
}

void FmuInstance::cleanup() noexcept {
  Api& a = *api_;
  if (instance_) {
    if (a.v2) {
      if (saved_state_ && a.free_state2) a.free_state2(instance_, &saved_state_);
      if (!failed()) a.terminate2(instance_);
      a.free2(instance_);
    } else {
      if (saved_state_ && a.free_state3) a.free_state3(instance_, &saved_state_);
      if (!failed()) a.terminate3(instance_);
      a.free3(instance_);
    }
    instance_ = nullptr;
  }
  if (drain_.joinable()) {
    stop_log_.store(true, std::memory_order_release);
    drain_.join();
  }
  try {
    flush_log();
  } catch (...) {
  }
  if (library_) {
    ::dlclose(library_);
    library_ = nullptr;
  }
}

FmuInstance::~FmuInstance() { cleanup(); }

void FmuInstance::instantiate() {
  Api& a = *api_;
  const bool me = interface_ == FmuInterface::kModelExchange;
  const std::string resources = archive_->directory() + "/resources";
  if (a.v2) {
    // FMI 2.0 takes a URI: file:// and the absolute path, percent-encoded
    // (a $TMPDIR may hold spaces or other reserved characters).
    const std::string uri = "file://" + percent_encode(resources);
    instance_ = a.instantiate2(options_.instance_name.c_str(), me ? fmi2ModelExchange : fmi2CoSimulation,
                               md_.token.c_str(), uri.c_str(), &a.callbacks, 0, options_.logging ? 1 : 0);
  } else {
    const std::string dir = resources + "/";
    instance_ = me ? a.instantiate_me3(options_.instance_name.c_str(), md_.token.c_str(), dir.c_str(), false,
                                       options_.logging, this, fmi3_logger)
                   : a.instantiate_cs3(options_.instance_name.c_str(), md_.token.c_str(), dir.c_str(), false,
                                       options_.logging, false, false, nullptr, 0, this, fmi3_logger, nullptr);
  }
  if (!instance_) {
    std::string message = path_ + ": " +
                          (a.v2 ? "fmi2Instantiate"
                           : me ? "fmi3InstantiateModelExchange"
                                : "fmi3InstantiateCoSimulation") +
                          " returned no instance";
    if (last_error_[0]) message += ": " + std::string(last_error_);
    message += std::string(" (the ") + (a.v2 ? "GUID" : "instantiationToken") + " in modelDescription.xml is '" +
               md_.token + "')";
    throw FmuError(message);
  }
}

void FmuInstance::resolve_sizes() {
  structural_.clear();
  for (const auto& [name, values] : options_.start) {
    const Variable* v = md_.find(name);
    if (!v || v->causality != Causality::kStructuralParameter) continue;
    const double x = values.empty() ? -1.0 : values[0];
    if (values.size() != 1 || !(x >= 0.0) || x != std::floor(x) || x > 9007199254740992.0) {
      throw FmuError(path_ + ": the structural parameter '" + name +
                     "' takes one non-negative integer (it sizes arrays) — got " +
                     (values.size() == 1 ? std::to_string(x) : std::to_string(values.size()) + " values"));
    }
    structural_.emplace_back(v->value_reference, static_cast<std::uint64_t>(x));
  }
  sizes_.assign(md_.variables.size(), 1);
  for (std::size_t i = 0; i < md_.variables.size(); ++i) {
    if (!md_.variables[i].array) continue;
    try {
      sizes_[i] = static_cast<std::size_t>(element_count(md_, md_.variables[i], structural_));
    } catch (const FmuError& e) {
      // An array that is no state, indicator or port and whose size does
      // not resolve is never asked for: it stays unsized (0).
      const bool used = md_.variables[i].causality == Causality::kInput ||
                        md_.variables[i].causality == Causality::kOutput ||
                        std::find(md_.states.begin(), md_.states.end(), i) != md_.states.end() ||
                        std::find(md_.event_indicator_variables.begin(), md_.event_indicator_variables.end(), i) !=
                            md_.event_indicator_variables.end();
      if (used) throw FmuError(path_ + ": " + e.what());
      sizes_[i] = 0;
    }
  }
  // The description bounded the declared sizes; the block's structural
  // parameters may have made them larger.
  check_total_elements(md_, sizes_, path_, structural_);
  std::size_t nx = 0;
  for (const std::size_t s : md_.states) nx += sizes_[s];
  x0_.assign(nx, 0.0);
  // The state Jacobian from the FMU's directional derivatives: where it
  // says it provides them (model exchange) and every state and its
  // derivative is a scalar with a value reference, knowns the states and
  // unknowns the derivatives in the state vector's order.
  dd_states_.clear();
  dd_derivatives_.clear();
  if (interface_ == FmuInterface::kModelExchange && md_.model_exchange.provides_directional_derivatives &&
      md_.derivatives.size() == md_.states.size()) {
    for (std::size_t k = 0; k < md_.states.size(); ++k) {
      const Variable& x = md_.variables[md_.states[k]];
      const Variable& dx = md_.variables[md_.derivatives[k]];
      if (x.array || dx.array) {
        dd_states_.clear();
        dd_derivatives_.clear();
        break;
      }
      dd_states_.push_back(x.value_reference);
      dd_derivatives_.push_back(dx.value_reference);
    }
  }
  dd_seed_.assign(dd_states_.size(), 0.0);
  indicators_ = md_.event_indicators;
  if (md_.fmi_major == 3) {
    indicators_ = 0;
    for (const std::size_t z : md_.event_indicator_variables) indicators_ += sizes_[z];
  }
  orders_.assign(std::max<std::size_t>(md_.outputs.size(), 1), 1);
}

void FmuInstance::configure() {
  if (structural_.empty()) return;
  Api& a = *api_;
  if (!a.enter_config3 || !a.exit_config3) {
    throw FmuError(path_ +
                   ": the binary does not export fmi3EnterConfigurationMode and fmi3ExitConfigurationMode — "
                   "they are required to set a structural parameter");
  }
  if (!check(a.enter_config3(instance_), "fmi3EnterConfigurationMode")) throw FmuError(failure());
  for (const auto& [name, values] : options_.start) {
    const Variable* v = md_.find(name);
    if (!v || v->causality != Causality::kStructuralParameter) continue;
    require_type(v->type, name);
    const std::uint32_t vr = v->value_reference;
    std::uint64_t scratch = 0;
    if (!set_values(v->type, &vr, 1, values.data(), 1, &scratch)) {
      throw FmuError(failure() + " (setting the structural parameter '" + name + "')");
    }
  }
  if (!check(a.exit_config3(instance_), "fmi3ExitConfigurationMode")) throw FmuError(failure());
}

void FmuInstance::apply_start_values() {
  for (const auto& [name, values] : options_.start) {
    const Variable* v = md_.find(name);
    if (!v) throw FmuError(path_ + ": no variable '" + name + "'");
    if (v->causality == Causality::kStructuralParameter && !api_->v2) continue;  // set in configure()
    if (!is_port_type(v->type)) {
      throw FmuError(path_ + ": variable '" + name + "' is of type " + v->type_name +
                     " — a start value must be a number (Real/Float, Integer/Int/UInt, Boolean or Enumeration)");
    }
    require_type(v->type, name);
    const std::size_t size = sizes_[static_cast<std::size_t>(v - md_.variables.data())];
    if (values.size() != 1 && values.size() != size) {
      throw FmuError(path_ + ": the start value of '" + name + "' has " + std::to_string(values.size()) +
                     " elements — the variable has " + std::to_string(size));
    }
    // One value for an array: every element takes it.
    std::vector<double> all = values.size() == size ? values : std::vector<double>(size, values[0]);
    std::vector<std::uint64_t> scratch(size, 0);
    const std::uint32_t vr = v->value_reference;
    if (!set_values(v->type, &vr, 1, all.data(), size, scratch.data())) {
      throw FmuError(failure() + " (setting the start value of '" + name + "')");
    }
  }
}

void FmuInstance::initialize_instance() {
  Api& a = *api_;
  const bool me = interface_ == FmuInterface::kModelExchange;
  if (a.v2) {
    const auto& o = options_;
    if (!check(a.setup2(instance_, o.tolerance ? 1 : 0, o.tolerance.value_or(0.0), 0.0, o.stop_time ? 1 : 0,
                        o.stop_time.value_or(0.0)),
               "fmi2SetupExperiment"))
      throw FmuError(failure());
    apply_start_values();
    if (!check(a.enter_init2(instance_), "fmi2EnterInitializationMode")) throw FmuError(failure());
    if (!check(a.exit_init2(instance_), "fmi2ExitInitializationMode")) throw FmuError(failure());
  } else {
    configure();
    apply_start_values();
    const auto& o = options_;
    if (!check(a.enter_init3(instance_, o.tolerance.has_value(), o.tolerance.value_or(0.0), 0.0,
                             o.stop_time.has_value(), o.stop_time.value_or(0.0)),
               "fmi3EnterInitializationMode"))
      throw FmuError(failure());
    if (!check(a.exit_init3(instance_), "fmi3ExitInitializationMode")) throw FmuError(failure());
  }
  time_ = 0.0;
  next_event0_ = std::numeric_limits<double>::infinity();
  if (me) {
    // The instance is in event mode after initialisation: iterate, then continuous time.
    bool changed = false;
    if (!handle_event_iteration(&changed, &next_event0_)) throw FmuError(failure());
    std::fill(x0_.begin(), x0_.end(), 0.0);
    if (!get_states(x0_.data(), x0_.size())) throw FmuError(failure());
  }
  allocations_.store(0, std::memory_order_relaxed);
}

bool FmuInstance::reinitialize() noexcept {
  Api& a = *api_;
  failed_function_ = nullptr;
  last_error_[0] = '\0';
  terminated_.store(false, std::memory_order_relaxed);
  const int reset = a.v2 ? static_cast<int>(a.reset2(instance_)) : static_cast<int>(a.reset3(instance_));
  if (!check(reset, a.v2 ? "fmi2Reset" : "fmi3Reset")) return false;
  try {
    initialize_instance();
  } catch (...) {
    return false;
  }
  return true;
}

bool FmuInstance::check(int status, const char* function) noexcept {
  if (status == 0 || status == 1) return true;  // OK, Warning
  failed_function_ = function;
  failed_status_ = status;
  failed_time_ = time_;
  return false;
}

std::string FmuInstance::failure() const {
  if (!failed()) return {};
  std::ostringstream out;
  out << "FMU '" << options_.instance_name << "' (" << path_ << "): " << failed_function_ << " returned "
      << status_name(failed_status_) << " at t = " << failed_time_ << " s";
  if (last_error_[0]) out << ": " << last_error_;
  return out.str();
}

// Each RT function: once failed, nothing more is asked of the FMU.
#define RTCOSIM_FMU_CALL(v2call, v2name, v3call, v3name) \
  if (failed()) return false;                            \
  const Charging charge(this);                           \
  return api_->v2 ? check(v2call, v2name) : check(v3call, v3name)

bool FmuInstance::set_real(const std::uint32_t* vr, std::size_t n, const double* v) noexcept {
  if (n == 0) return !failed();
  RTCOSIM_FMU_CALL(api_->set_real2(instance_, vr, n, v), "fmi2SetReal", api_->set_real3(instance_, vr, n, v, n),
                   "fmi3SetFloat64");
}
bool FmuInstance::get_real(const std::uint32_t* vr, std::size_t n, double* v) noexcept {
  if (n == 0) return !failed();
  RTCOSIM_FMU_CALL(api_->get_real2(instance_, vr, n, v), "fmi2GetReal", api_->get_real3(instance_, vr, n, v, n),
                   "fmi3GetFloat64");
}
#undef RTCOSIM_FMU_CALL

namespace {

// The FMI function that gets (sets) `type`, for messages.
template <class Api>
const char* typed_function(VarType type, bool v2, bool set) noexcept {
  if (type == VarType::kReal) {
    return v2 ? (set ? "fmi2SetReal" : "fmi2GetReal") : (set ? "fmi3SetFloat64" : "fmi3GetFloat64");
  }
  if (v2 && (type == VarType::kInteger || type == VarType::kEnumeration))
    return set ? "fmi2SetInteger" : "fmi2GetInteger";
  if (v2 && type == VarType::kBoolean) return set ? "fmi2SetBoolean" : "fmi2GetBoolean";
  return with_fmi3_type<Api>(
      type, [set](auto, auto, auto*, const char* get_name, const char* set_name) { return set ? set_name : get_name; },
      [] { return "no function"; });
}

}  // namespace

void FmuInstance::require_type(VarType type, const std::string& variable) const {
  const Api& a = *api_;
  bool have = false;
  const bool v2_type =
      type == VarType::kReal || type == VarType::kInteger || type == VarType::kBoolean || type == VarType::kEnumeration;
  if (a.v2) {
    switch (type) {
      case VarType::kReal:
        have = true;
        break;
      case VarType::kInteger:
      case VarType::kEnumeration:
        have = a.get_int2 && a.set_int2;
        break;
      case VarType::kBoolean:
        have = a.get_bool2 && a.set_bool2;
        break;
      default:
        have = false;
    }
  } else {
    have = type == VarType::kReal ||
           with_fmi3_type<Api>(
               type, [&a](auto get, auto set, auto*, auto, auto) { return a.*get != nullptr && a.*set != nullptr; },
               [] { return false; });
  }
  if (have) return;
  const Variable* v = md_.find(variable);
  const std::string type_name = v ? v->type_name : "?";
  if (!is_port_type(type) || (a.v2 && !v2_type)) {
    throw FmuError(
        path_ + ": variable '" + variable + "' is of type " + type_name + " — rtcosim reads and writes " +
        (a.v2 ? "Real, Integer, Boolean and Enumeration" : "Float32/64, Int8 ... UInt64, Boolean and Enumeration") +
        " variables");
  }
  throw FmuError(path_ + ": the binary does not export " + typed_function<Api>(type, a.v2, false) + " and " +
                 typed_function<Api>(type, a.v2, true) + " — they are required for the " + type_name + " variable '" +
                 variable + "'");
}

bool FmuInstance::set_values(VarType type, const std::uint32_t* vr, std::size_t n, const double* v,
                             std::size_t n_values, std::uint64_t* scratch) noexcept {
  if (n == 0) return !failed();
  if (failed()) return false;
  const Charging charge(this);
  Api& a = *api_;
  const char* fn = typed_function<Api>(type, a.v2, true);
  int status = 3;
  if (a.v2) {
    switch (type) {
      case VarType::kReal:
        status = a.set_real2(instance_, vr, n, v);
        break;
      case VarType::kInteger:
      case VarType::kEnumeration:
        status = a.set_int2(instance_, vr, n, integers_from<fmi2Integer>(v, n, scratch));
        break;
      case VarType::kBoolean:
        status = a.set_bool2(instance_, vr, n, booleans_from<fmi2Boolean>(v, n, scratch));
        break;
      default:
        break;
    }
    return check(status, fn);
  }
  if (type == VarType::kReal) {
    status = a.set_real3(instance_, vr, n, v, n_values);
  } else {
    status = with_fmi3_type<Api>(
        type,
        [&](auto, auto set, auto* typed, auto, auto) {
          using T = std::remove_pointer_t<decltype(typed)>;
          return static_cast<int>((a.*set)(instance_, vr, n, values_as<T>(v, n_values, scratch), n_values));
        },
        [] { return 3; });
  }
  return check(status, fn);
}

bool FmuInstance::get_values(VarType type, const std::uint32_t* vr, std::size_t n, double* v, std::size_t n_values,
                             std::uint64_t* scratch) noexcept {
  if (n == 0) return !failed();
  if (failed()) return false;
  const Charging charge(this);
  Api& a = *api_;
  const char* fn = typed_function<Api>(type, a.v2, false);
  std::uint64_t inexact = 0;
  // Reads into the scratch as T, then widens into v.
  auto read = [&]<class T>(auto* getter, T*) noexcept {
    T* buf = words<T>(scratch);
    if (!check(getter(instance_, vr, n, buf, n_values), fn)) return false;
    inexact = to_doubles(buf, n_values, v);
    return true;
  };
  bool ok = false;
  if (a.v2) {
    switch (type) {
      case VarType::kReal:
        ok = check(a.get_real2(instance_, vr, n, v), fn);
        break;
      case VarType::kInteger:
      case VarType::kEnumeration:
      case VarType::kBoolean: {
        // fmi2Integer and fmi2Boolean are both int.
        fmi2Integer* buf = words<fmi2Integer>(scratch);
        ok = check(type == VarType::kBoolean ? a.get_bool2(instance_, vr, n, buf) : a.get_int2(instance_, vr, n, buf),
                   fn);
        if (ok) {
          for (std::size_t i = 0; i < n; ++i) v[i] = type == VarType::kBoolean ? (buf[i] != 0 ? 1.0 : 0.0) : buf[i];
        }
        break;
      }
      default:
        ok = check(3, fn);
    }
    return ok;
  }
  if (type == VarType::kReal) {
    ok = check(a.get_real3(instance_, vr, n, v, n_values), fn);
  } else {
    ok = with_fmi3_type<Api>(
        type, [&](auto get, auto, auto* typed, auto, auto) { return read(a.*get, typed); },
        [&] { return check(3, fn); });
  }
  if (inexact) inexact_reads_.fetch_add(inexact, std::memory_order_relaxed);
  return ok;
}

#define RTCOSIM_FMU_CALL(v2call, v2name, v3call, v3name) \
  if (failed()) return false;                            \
  const Charging charge(this);                           \
  return api_->v2 ? check(v2call, v2name) : check(v3call, v3name)

bool FmuInstance::set_time(double t) noexcept {
  time_ = t;
  RTCOSIM_FMU_CALL(api_->set_time2(instance_, t), "fmi2SetTime", api_->set_time3(instance_, t), "fmi3SetTime");
}
bool FmuInstance::set_states(const double* x, std::size_t n) noexcept {
  if (n == 0) return !failed();
  RTCOSIM_FMU_CALL(api_->set_x2(instance_, x, n), "fmi2SetContinuousStates", api_->set_x3(instance_, x, n),
                   "fmi3SetContinuousStates");
}
bool FmuInstance::get_states(double* x, std::size_t n) noexcept {
  if (n == 0) return !failed();
  RTCOSIM_FMU_CALL(api_->get_x2(instance_, x, n), "fmi2GetContinuousStates", api_->get_x3(instance_, x, n),
                   "fmi3GetContinuousStates");
}
bool FmuInstance::get_derivatives(double* dx, std::size_t n) noexcept {
  if (n == 0) return !failed();
  RTCOSIM_FMU_CALL(api_->get_dx2(instance_, dx, n), "fmi2GetDerivatives", api_->get_dx3(instance_, dx, n),
                   "fmi3GetContinuousStateDerivatives");
}
bool FmuInstance::has_state_jacobian() const noexcept {
  return !dd_states_.empty() && (api_->v2 ? api_->dd2 != nullptr : api_->dd3 != nullptr);
}

bool FmuInstance::state_jacobian(double* j) noexcept {
  if (!has_state_jacobian() || failed()) return false;
  const std::size_t n = dd_states_.size();
  const Charging charge(this);
  for (std::size_t c = 0; c < n; ++c) {
    dd_seed_[c] = 1.0;
    const bool ok =
        api_->v2
            ? check(api_->dd2(instance_, dd_derivatives_.data(), n, &dd_states_[c], 1, &dd_seed_[c], j + n * c),
                    "fmi2GetDirectionalDerivative")
            : check(api_->dd3(instance_, dd_derivatives_.data(), n, &dd_states_[c], 1, &dd_seed_[c], 1, j + n * c, n),
                    "fmi3GetDirectionalDerivative");
    dd_seed_[c] = 0.0;
    if (!ok) return false;
  }
  return true;
}

bool FmuInstance::get_event_indicators(double* z, std::size_t n) noexcept {
  if (n == 0) return !failed();
  RTCOSIM_FMU_CALL(api_->get_z2(instance_, z, n), "fmi2GetEventIndicators", api_->get_z3(instance_, z, n),
                   "fmi3GetEventIndicators");
}
#undef RTCOSIM_FMU_CALL

bool FmuInstance::completed_integrator_step(bool* enter_event_mode) noexcept {
  if (failed()) return false;
  const Charging charge(this);
  Api& a = *api_;
  if (a.v2) {
    fmi2Boolean enter = 0, terminate = 0;
    if (!check(a.completed2(instance_, 1, &enter, &terminate), "fmi2CompletedIntegratorStep")) return false;
    *enter_event_mode = enter != 0;
    if (terminate) end_simulation("fmi2CompletedIntegratorStep", time_);
  } else {
    fmi3Boolean enter = false, terminate = false;
    if (!check(a.completed3(instance_, true, &enter, &terminate), "fmi3CompletedIntegratorStep")) return false;
    *enter_event_mode = enter;
    if (terminate) end_simulation("fmi3CompletedIntegratorStep", time_);
  }
  return true;
}

bool FmuInstance::handle_event_iteration(bool* states_changed, double* next_event) noexcept {
  Api& a = *api_;
  *states_changed = false;
  *next_event = std::numeric_limits<double>::infinity();
  for (int round = 0; round < kMaxEventIterations; ++round) {
    bool again = false;
    if (a.v2) {
      fmi2EventInfo info{};
      if (!check(a.new_discrete2(instance_, &info), "fmi2NewDiscreteStates")) return false;
      again = info.newDiscreteStatesNeeded != 0;
      *states_changed = *states_changed || info.valuesOfContinuousStatesChanged != 0;
      *next_event = info.nextEventTimeDefined ? info.nextEventTime : std::numeric_limits<double>::infinity();
      if (info.terminateSimulation) end_simulation("fmi2NewDiscreteStates", time_);
    } else {
      fmi3Boolean need = false, terminate = false, nominals = false, values = false, defined = false;
      double t_next = 0.0;
      if (!check(a.update_discrete3(instance_, &need, &terminate, &nominals, &values, &defined, &t_next),
                 "fmi3UpdateDiscreteStates")) {
        return false;
      }
      again = need;
      *states_changed = *states_changed || values;
      *next_event = defined ? t_next : std::numeric_limits<double>::infinity();
      if (terminate) end_simulation("fmi3UpdateDiscreteStates", time_);
    }
    // A model that ended itself is asked nothing more (FMI: the importer
    // only terminates it then).
    if (terminated_) return true;
    if (!again) {
      return a.v2 ? check(a.enter_ct2(instance_), "fmi2EnterContinuousTimeMode")
                  : check(a.enter_ct3(instance_), "fmi3EnterContinuousTimeMode");
    }
  }
  // An FMU that never settles: stop it rather than loop in the frame.
  failed_function_ = a.v2 ? "fmi2NewDiscreteStates (no fixed point after 100 iterations)"
                          : "fmi3UpdateDiscreteStates (no fixed point after 100 iterations)";
  failed_status_ = 3;
  failed_time_ = time_;
  return false;
}

bool FmuInstance::enter_event_mode(double t) noexcept {
  if (failed()) return false;
  const Charging charge(this);
  time_ = t;
  Api& a = *api_;
  return a.v2 ? check(a.enter_event2(instance_), "fmi2EnterEventMode")
              : check(a.enter_event3(instance_), "fmi3EnterEventMode");
}

bool FmuInstance::event_iteration(bool* states_changed, double* next_event) noexcept {
  if (failed()) return false;
  const Charging charge(this);
  return handle_event_iteration(states_changed, next_event);
}

bool FmuInstance::handle_event(double t, bool* states_changed, double* next_event) noexcept {
  return enter_event_mode(t) && event_iteration(states_changed, next_event);
}

bool FmuInstance::do_step(double t, double h) noexcept {
  if (failed()) return false;
  if (terminated()) return true;
  const Charging charge(this);
  time_ = t;
  Api& a = *api_;
  if (a.v2) {
    const fmi2Status status = a.do_step2(instance_, t, h, 1);
    // Discard with fmi2Terminated: the model ended the simulation itself
    // (FMI 2.0.4, 4.2.3); its outputs at its last successful time are valid.
    if (status == fmi2Discard && a.get_bool_status2) {
      fmi2Boolean ended = 0;
      if (a.get_bool_status2(instance_, fmi2Terminated, &ended) == fmi2OK && ended) {
        fmi2Real last = t + h;
        if (!a.get_real_status2 || a.get_real_status2(instance_, fmi2LastSuccessfulTime, &last) != fmi2OK) last = t + h;
        end_simulation("fmi2DoStep (fmi2Terminated)", last);
        return true;
      }
    }
    return check(status, "fmi2DoStep");
  }
  fmi3Boolean event = false, terminate = false, early = false;
  double last = t + h;
  const int status = a.do_step3(instance_, t, h, true, &event, &terminate, &early, &last);
  // terminateSimulation: the model ended itself at lastSuccessfulTime, with
  // OK (FMI 3.0, 4.2.4) or, from some exporters, Discard.
  if (terminate && (status == 0 || status == 1 || status == 2)) {
    end_simulation("fmi3DoStep (terminateSimulation)", last);
    return true;
  }
  return check(status, "fmi3DoStep");
}

void FmuInstance::end_simulation(const char* function, double t) noexcept {
  if (terminated_.load(std::memory_order_relaxed)) return;
  terminated_function_ = function;
  terminated_time_ = t;
  terminated_.store(true, std::memory_order_release);
}

std::string FmuInstance::termination() const {
  if (!terminated()) return {};
  std::ostringstream out;
  out << "FMU '" << options_.instance_name << "' ended the simulation at t = " << terminated_time_ << " s ("
      << terminated_function_ << ")";
  return out.str();
}

bool FmuInstance::has_output_derivatives() const noexcept {
  return md_.co_simulation.max_output_derivative_order >= 1 &&
         (api_->v2 ? api_->get_dy2 != nullptr : api_->get_dy3 != nullptr);
}

bool FmuInstance::get_output_derivatives(const std::uint32_t* vr, std::size_t n, double* dy,
                                         std::size_t n_values) noexcept {
  if (failed()) return false;
  const Charging charge(this);
  if (n == 0) return true;
  if (n > orders_.size()) return check(3, api_->v2 ? "fmi2GetRealOutputDerivatives" : "fmi3GetOutputDerivatives");
  Api& a = *api_;
  if (a.v2) return check(a.get_dy2(instance_, vr, n, orders_.data(), dy), "fmi2GetRealOutputDerivatives");
  return check(a.get_dy3(instance_, vr, n, orders_.data(), dy, n_values), "fmi3GetOutputDerivatives");
}

bool FmuInstance::save_state() noexcept {
  Api& a = *api_;
  const Interface& in = interface_ == FmuInterface::kModelExchange ? md_.model_exchange : md_.co_simulation;
  if (failed() || !in.can_get_set_state) return false;
  if (a.v2) return a.get_state2 && check(a.get_state2(instance_, &saved_state_), "fmi2GetFMUstate");
  return a.get_state3 && check(a.get_state3(instance_, &saved_state_), "fmi3GetFMUState");
}

bool FmuInstance::restore_state() noexcept {
  Api& a = *api_;
  if (failed() || !saved_state_) return false;
  if (a.v2) return a.set_state2 && check(a.set_state2(instance_, saved_state_), "fmi2SetFMUstate");
  return a.set_state3 && check(a.set_state3(instance_, saved_state_), "fmi3SetFMUState");
}

bool FmuInstance::can_serialize_state() const noexcept {
  const Api& a = *api_;
  const Interface& in = interface_ == FmuInterface::kModelExchange ? md_.model_exchange : md_.co_simulation;
  const bool exported =
      a.v2 ? a.get_state2 && a.set_state2 && a.free_state2 && a.state_size2 && a.serialize2 && a.deserialize2
           : a.get_state3 && a.set_state3 && a.free_state3 && a.state_size3 && a.serialize3 && a.deserialize3;
  return in.can_get_set_state && in.can_serialize_state && exported;
}

void FmuInstance::require_serialization(const char* what) const {
  if (failed()) throw FmuError(failure() + " — cannot " + what + " the state of a failed FMU");
  if (can_serialize_state()) return;
  const bool v2 = api_->v2;
  const Interface& in = interface_ == FmuInterface::kModelExchange ? md_.model_exchange : md_.co_simulation;
  const char* element = interface_ == FmuInterface::kModelExchange ? "<ModelExchange>" : "<CoSimulation>";
  std::string why;
  if (!in.can_get_set_state || !in.can_serialize_state) {
    why = std::string("its ") + element + " does not declare " +
          (!in.can_get_set_state ? (v2 ? "canGetAndSetFMUstate=\"true\"" : "canGetAndSetFMUState=\"true\"")
                                 : (v2 ? "canSerializeFMUstate=\"true\"" : "canSerializeFMUState=\"true\"")) +
          " — only an FMU that declares both can be snapshotted to bytes";
  } else {
    why =
        std::string("it declares ") + (v2 ? "canSerializeFMUstate" : "canSerializeFMUState") +
        " but its binary does not export all of " +
        (v2 ? "fmi2GetFMUstate, fmi2SetFMUstate, fmi2FreeFMUstate, fmi2SerializedFMUstateSize, fmi2SerializeFMUstate, "
              "fmi2DeSerializeFMUstate"
            : "fmi3GetFMUState, fmi3SetFMUState, fmi3FreeFMUState, fmi3SerializedFMUStateSize, fmi3SerializeFMUState, "
              "fmi3DeserializeFMUState");
  }
  throw FmuError("FMU '" + options_.instance_name + "' (" + path_ + "): cannot " + what + " its state: " + why);
}

std::vector<std::uint8_t> FmuInstance::serialize_state() {
  require_serialization("serialize");
  Api& a = *api_;
  void* state = nullptr;
  std::size_t size = 0;
  std::vector<std::uint8_t> bytes;
  bool ok = a.v2 ? check(a.get_state2(instance_, &state), "fmi2GetFMUstate") &&
                       check(a.state_size2(instance_, state, &size), "fmi2SerializedFMUstateSize")
                 : check(a.get_state3(instance_, &state), "fmi3GetFMUState") &&
                       check(a.state_size3(instance_, state, &size), "fmi3SerializedFMUStateSize");
  std::string limit;
  if (ok && (size == 0 || size > kMaxSerializedBytes)) {
    limit = "FMU '" + options_.instance_name + "' (" + path_ +
            "): " + (a.v2 ? "fmi2SerializedFMUstateSize" : "fmi3SerializedFMUStateSize") + " gave " +
            std::to_string(size) + " bytes — expected 1 to " + std::to_string(kMaxSerializedBytes);
    ok = false;
  }
  if (ok) {
    bytes.resize(size);
    ok = a.v2 ? check(a.serialize2(instance_, state, reinterpret_cast<fmi2Byte*>(bytes.data()), size),
                      "fmi2SerializeFMUstate")
              : check(a.serialize3(instance_, state, bytes.data(), size), "fmi3SerializeFMUState");
  }
  if (state)
    (void)(a.v2 ? static_cast<int>(a.free_state2(instance_, &state))
                : static_cast<int>(a.free_state3(instance_, &state)));
  if (!limit.empty()) throw FmuError(limit);
  if (!ok) throw FmuError(failure());
  return bytes;
}

void FmuInstance::deserialize_state(std::span<const std::uint8_t> bytes) {
  require_serialization("deserialize");
  if (bytes.empty() || bytes.size() > kMaxSerializedBytes) {
    throw FmuError("FMU '" + options_.instance_name + "' (" + path_ + "): a serialized state of " +
                   std::to_string(bytes.size()) + " bytes — expected 1 to " + std::to_string(kMaxSerializedBytes));
  }
  Api& a = *api_;
  void* state = nullptr;
  const bool ok =
      a.v2 ? check(a.deserialize2(instance_, reinterpret_cast<const fmi2Byte*>(bytes.data()), bytes.size(), &state),
                   "fmi2DeSerializeFMUstate") &&
                 check(a.set_state2(instance_, state), "fmi2SetFMUstate")
           : check(a.deserialize3(instance_, bytes.data(), bytes.size(), &state), "fmi3DeserializeFMUState") &&
                 check(a.set_state3(instance_, state), "fmi3SetFMUState");
  if (state)
    (void)(a.v2 ? static_cast<int>(a.free_state2(instance_, &state))
                : static_cast<int>(a.free_state3(instance_, &state)));
  if (!ok) throw FmuError(failure());
}

void FmuInstance::log(int status, const char* category, const char* format, va_list* args) noexcept {
  FmuLogEntry e;
  e.status = status;
  copy_text(e.category, sizeof e.category, category);
  if (args) {
    // FMI 2.0 hands a printf format and its arguments, which only live
    // during the call: formatted here into the fixed entry.
    std::vsnprintf(e.message, sizeof e.message, format ? format : "", *args);
  } else {
    copy_text(e.message, sizeof e.message, format);
  }
  if (status >= 2) copy_text(last_error_, sizeof last_error_, e.message);
  if (!ring_->queue.push(e)) log_dropped_.fetch_add(1, std::memory_order_relaxed);
}

void FmuInstance::flush_log() {
  std::lock_guard<std::mutex> lock(ring_->consumer);
  FmuLogEntry e;
  while (ring_->queue.pop(e)) {
    std::string line = "fmu '" + options_.instance_name + "' [" + status_name(e.status) + "]" +
                       (e.category[0] ? " " + std::string(e.category) : std::string()) + ": " + e.message;
    if (options_.log_sink) {
      options_.log_sink(line);
    } else {
      std::cerr << line << '\n';
    }
  }
}

}  // namespace rtcosim::tasks::fmu
