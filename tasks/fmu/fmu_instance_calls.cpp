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
#include "tasks/fmu/fmu_instance.hpp"
#include "tasks/fmu/fmu_instance_internal.hpp"

namespace rtcosim::tasks::fmu {

using namespace detail;

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
