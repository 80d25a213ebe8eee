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
#include "tasks/fmu/fmu_instance_internal.hpp"

namespace rtcosim::tasks::fmu {

using namespace detail;

namespace {

constexpr std::uint64_t kMaxDescriptionBytes = 64ull << 20;

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

namespace {

// The FMI 2.0 functions the interface needs (a missing required one is an
// error here, at load, not a null call in a frame); `self` is the
// logger's and allocator's environment.
// Api is FmuInstance's (private: named by its members only).
template <class Api>
void bind_fmi2(Api& a, Library& lib, bool me, FmuInstance* self) {
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
  a.callbacks = fmi2CallbackFunctions{fmi2_logger, fmi2_allocate, fmi2_free, nullptr, self};
}

// The FMI 3.0 functions the interface needs, the typed getters and setters
// optional (an FMU without such variables need not export them).
template <class Api>
void bind_fmi3(Api& a, Library& lib, bool me) {
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

}  // namespace

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
    bind_fmi2(a, lib, me, this);
  } else {
    bind_fmi3(a, lib, me);
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

}  // namespace rtcosim::tasks::fmu
