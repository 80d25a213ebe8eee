#pragma once

#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tasks/fmu/fmu_archive.hpp"
#include "tasks/fmu/model_description.hpp"

namespace rtcosim::tasks::fmu {

enum class FmuInterface { kModelExchange, kCoSimulation };
const char* interface_name(FmuInterface i) noexcept;

// The binary an FMU needs on this platform, relative to the archive root.
std::string binary_path(const ModelDescription& md, FmuInterface i);

// What `rtcosim fmu info` prints: the description, the platform binaries
// the archive carries, and whether this platform's binary loads and
// exports the interface's functions (an error message when not).
struct FmuInfo {
  ModelDescription description;
  std::vector<std::string> platforms;                // directories under binaries/
  std::string me_binary_problem, cs_binary_problem;  // empty: loads
};
FmuInfo inspect(const std::string& path);

// One message from an FMU's logger, formatted into fixed storage so that
// the callback, which runs on whatever thread called the FMU, allocates
// nothing.
struct FmuLogEntry {
  int status = 0;  // 0 OK .. 4 Fatal
  char category[48] = {};
  char message[464] = {};
};

struct FmuOptions {
  // Which interface runs; none: model exchange when the FMU offers it.
  std::optional<FmuInterface> interface;
  std::string instance_name = "fmu";
  bool logging = false;  // the FMU's loggingOn
  // The experiment as fmi2SetupExperiment and fmi3EnterInitializationMode
  // take it (start time 0); none: undefined, the FMU's own defaults.
  std::optional<double> tolerance;
  std::optional<double> stop_time;
  // Variable name and value(s), checked by the caller: one value for a
  // scalar; for an array one value (every element takes it, as a single
  // start value in modelDescription.xml does) or one per element, in the
  // FMU's order (row-major). A structural parameter (FMI 3.0) is set in
  // Configuration Mode before the others and sizes the arrays.
  std::vector<std::pair<std::string, std::vector<double>>> start;
  // Where the drain thread writes log lines; stderr when empty.
  std::function<void(const std::string&)> log_sink;
  // True: the constructor stops after loading the binary, so that the
  // caller can check its start values against description() first; then
  // start() instantiates and initialises.
  bool defer_start = false;
};

/*
 * FmuInstance: one instantiated FMU (FMI 2.0 or 3.0, model exchange or
 * co-simulation). The constructor unpacks the archive into a private
 * directory, parses modelDescription.xml, dlopens this platform's binary,
 * resolves the functions, instantiates, applies the start values and
 * initialises at t = 0 (a model-exchange FMU is left in continuous-time
 * mode, a co-simulation FMU in step mode); every failure is one FmuError.
 * The destructor terminates and frees the instance and removes the files.
 *
 * RT-safe: the functions marked noexcept below call exactly one FMU
 * function each (handle_event: the event iteration, bounded) on buffers
 * the caller owns; they return false on a status other than OK or
 * Warning, after which `failed()` is true and every further call returns
 * false at once; `failure()` (not RT) then says which function, at what
 * time, with the FMU's last error message.
 *
 * Logging: the FMU's logger callback formats into a fixed-size lock-free
 * ring; a thread started here drains it every 20 ms to the sink. A full
 * ring drops (counted), never waits. One thread owns the instance's RT
 * functions at a time.
 */
class FmuInstance {
 public:
  FmuInstance(const std::string& path, const FmuOptions& options);
  ~FmuInstance();
  FmuInstance(const FmuInstance&) = delete;
  FmuInstance& operator=(const FmuInstance&) = delete;

  [[nodiscard]] const ModelDescription& description() const noexcept { return md_; }
  [[nodiscard]] FmuInterface interface() const noexcept { return interface_; }
  // Instantiates, applies `start` (replacing the options' start values) and
  // initialises; FmuError on failure. Only after a deferred construction.
  void start(std::vector<std::pair<std::string, std::vector<double>>> start);
  // Elements of variable `index` (into description().variables): 1 for a
  // scalar, an array's element count with the structural parameters as
  // set by the start values (or declared). Known once started.
  [[nodiscard]] std::size_t size_of(std::size_t index) const noexcept { return sizes_[index]; }
  // Continuous states and event indicators as the FMU's vectors hold them
  // (array variables count their elements).
  [[nodiscard]] std::size_t state_count() const noexcept { return x0_.size(); }
  [[nodiscard]] std::size_t indicator_count() const noexcept { return indicators_; }
  // The structural parameters set by the start values (value reference, value).
  [[nodiscard]] const std::vector<std::pair<std::uint32_t, std::uint64_t>>& structural_values() const noexcept {
    return structural_;
  }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  // Continuous states after initialisation (model exchange).
  [[nodiscard]] const std::vector<double>& initial_states() const noexcept { return x0_; }
  // The first time event after initialisation; +inf when none.
  [[nodiscard]] double initial_next_event() const noexcept { return next_event0_; }

  // Back to the state after construction (fmiReset, start values,
  // initialisation). Not RT; false with failure() set when the FMU fails.
  bool reinitialize() noexcept;

  // RT-safe (see above).
  bool set_real(const std::uint32_t* vr, std::size_t n, const double* v) noexcept;
  bool get_real(const std::uint32_t* vr, std::size_t n, double* v) noexcept;
  // Variables of any port type (model_description.hpp: is_port_type) as
  // doubles, through the FMU's own typed getters and setters (FMI 2.0
  // fmi2Get/SetInteger for Integer and Enumeration, fmi2Get/SetBoolean; FMI
  // 3.0 fmi3Get/SetFloat32 ... UInt64, Int64 for Enumeration,
  // fmi3Get/SetBoolean). All `n` variables are of `type` and hold
  // `n_values` values in all (FMI 3.0 arrays: their elements, row-major,
  // one variable after the other; n_values = n for scalars); `scratch`
  // holds at least n_values 8-byte words, the caller's, sized at set-up. Setting: integer
  // types take the nearest integer (halves away from zero), saturated at the
  // type's range, NaN as 0; a Boolean is true when the value is nonzero and
  // not NaN; a Float32 is the nearest float (beyond its range: infinite).
  // Reading is exact, except an Int64/UInt64 (FMI 3.0 Enumeration) value
  // beyond +-2^53: it becomes the nearest double and is counted in
  // inexact_reads().
  bool set_values(VarType type, const std::uint32_t* vr, std::size_t n, const double* v, std::size_t n_values,
                  std::uint64_t* scratch) noexcept;
  bool get_values(VarType type, const std::uint32_t* vr, std::size_t n, double* v, std::size_t n_values,
                  std::uint64_t* scratch) noexcept;
  // Scalars only: n values.
  bool set_values(VarType type, const std::uint32_t* vr, std::size_t n, const double* v,
                  std::uint64_t* scratch) noexcept {
    return set_values(type, vr, n, v, n, scratch);
  }
  bool get_values(VarType type, const std::uint32_t* vr, std::size_t n, double* v, std::uint64_t* scratch) noexcept {
    return get_values(type, vr, n, v, n, scratch);
  }
  [[nodiscard]] std::uint64_t inexact_reads() const noexcept { return inexact_reads_.load(std::memory_order_relaxed); }
  // Set-up: FmuError naming `variable` when `type` is not a port type or the
  // binary does not export its getter and setter.
  void require_type(VarType type, const std::string& variable) const;
  bool set_time(double t) noexcept;
  bool set_states(const double* x, std::size_t n) noexcept;
  bool get_states(double* x, std::size_t n) noexcept;
  bool get_derivatives(double* dx, std::size_t n) noexcept;
  // Model exchange, after set_time, set_states and the inputs of one
  // instant: d(state derivatives)/d(states), column-major, state_count()
  // squared, from fmiGetDirectionalDerivative (one call per column). Only
  // where has_state_jacobian(): the FMU provides directional derivatives
  // and its states are scalars.
  [[nodiscard]] bool has_state_jacobian() const noexcept;
  bool state_jacobian(double* j) noexcept;
  bool get_event_indicators(double* z, std::size_t n) noexcept;
  bool completed_integrator_step(bool* enter_event_mode) noexcept;
  // Event mode, discrete-state iteration (at most kMaxEventIterations
  // rounds), back to continuous-time mode. `states_changed` tells the
  // caller to re-read the continuous states; `next_event` is the next time
  // event (+inf: none).
  bool handle_event(double t, bool* states_changed, double* next_event) noexcept;
  // The same in two calls, so that discrete inputs can be set in Event
  // Mode between them (they may be set only there).
  bool enter_event_mode(double t) noexcept;
  bool event_iteration(bool* states_changed, double* next_event) noexcept;
  bool do_step(double t, double h) noexcept;
  [[nodiscard]] bool has_output_derivatives() const noexcept;
  // The first time derivatives of n Float64 outputs (n_values values in
  // all: an array output gives one per element; FMI 2.0: n_values = n).
  bool get_output_derivatives(const std::uint32_t* vr, std::size_t n, double* dy, std::size_t n_values) noexcept;
  bool get_output_derivatives(const std::uint32_t* vr, std::size_t n, double* dy) noexcept {
    return get_output_derivatives(vr, n, dy, n);
  }
  static constexpr int kMaxEventIterations = 100;

  // Serialised-state snapshots for rollback, outside the frame path
  // (canGetAndSetFMUstate). False when the FMU cannot.
  bool save_state() noexcept;
  bool restore_state() noexcept;

  // The FMU's state as bytes (GetFMUstate, SerializedFMUstateSize,
  // SerializeFMUstate), and such bytes back into this instance or another
  // instance of the same FMU (DeSerializeFMUstate, SetFMUstate): a snapshot
  // that outlives the instance and the process, for rollback and restart.
  // Not RT (the FMU allocates): outside the frame path, by the thread that
  // owns the instance. FmuError when the FMU does not declare
  // canGetAndSetFMUstate and canSerializeFMUstate for the running interface
  // (nothing is asked of it then), or when a call fails (then failed() is
  // true, as after any failed call: bytes the FMU rejects leave its state
  // undefined).
  [[nodiscard]] bool can_serialize_state() const noexcept;
  std::vector<std::uint8_t> serialize_state();
  void deserialize_state(std::span<const std::uint8_t> bytes);
  static constexpr std::size_t kMaxSerializedBytes = std::size_t{1} << 30;

  [[nodiscard]] bool failed() const noexcept { return failed_function_ != nullptr; }
  [[nodiscard]] std::string failure() const;
  // True once the model ended the simulation itself (FMI 2.0: fmi2DoStep
  // returned Discard with fmi2Terminated, or terminateSimulation from an
  // event iteration or a completed integrator step; FMI 3.0:
  // terminateSimulation from fmi3DoStep, fmi3UpdateDiscreteStates or
  // fmi3CompletedIntegratorStep). That is no failure: the call that said it
  // returns true, its outputs are valid, and do_step does nothing more.
  // `termination` (not RT) says which call and at what model time.
  [[nodiscard]] bool terminated() const noexcept { return terminated_.load(std::memory_order_acquire); }
  [[nodiscard]] std::string termination() const;
  // The model time at which it ended (FMI's last successful time).
  [[nodiscard]] double terminated_time() const noexcept { return terminated_time_; }
  // Heap blocks this FMU requested through the FMI 2.0 allocateMemory
  // callback from inside the RT functions above since it finished
  // initialising: an FMU that allocates while stepping shows here. The
  // callback carries no instance: each RT function names its instance to
  // the calling thread for the duration of the call, and the callback
  // charges that one. Not seen: FMI 3.0 FMUs (no allocation callback) and
  // FMUs that call malloc themselves.
  [[nodiscard]] std::uint64_t allocations() const noexcept { return allocations_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t log_dropped() const noexcept { return log_dropped_.load(std::memory_order_relaxed); }
  // Drains the log ring now (tests; the drain thread does it otherwise).
  void flush_log();

  // Called by the logger trampolines.
  void log(int status, const char* category, const char* format, va_list* args) noexcept;
  // Called by the allocation trampoline, on the thread in an RT function.
  void count_allocation() noexcept { allocations_.fetch_add(1, std::memory_order_relaxed); }

 private:
  struct Api;
  struct Ring;
  bool check(int status, const char* function) noexcept;
  void end_simulation(const char* function, double t) noexcept;
  void require_serialization(const char* what) const;
  void initialize_instance();  // start values, initialisation mode, first event iteration
  void instantiate();
  void apply_start_values();
  void resolve_sizes();  // sizes_, structural_, indicators_ from the start values
  void configure();      // FMI 3.0: structural parameters in Configuration Mode
  bool handle_event_iteration(bool* states_changed, double* next_event) noexcept;
  void cleanup() noexcept;

  std::string path_;
  FmuOptions options_;
  FmuInterface interface_ = FmuInterface::kModelExchange;
  std::unique_ptr<ExtractedArchive> archive_;
  ModelDescription md_;
  void* library_ = nullptr;
  std::unique_ptr<Api> api_;
  void* instance_ = nullptr;
  std::vector<double> x0_;
  std::vector<std::uint32_t> dd_states_, dd_derivatives_;  // directional derivatives: knowns, unknowns
  std::vector<double> dd_seed_;
  double next_event0_ = 0.0;
  double time_ = 0.0;
  void* saved_state_ = nullptr;
  std::vector<std::int32_t> orders_;  // all 1, sized for the outputs
  std::vector<std::size_t> sizes_;    // per variable: its elements
  std::vector<std::pair<std::uint32_t, std::uint64_t>> structural_;
  std::size_t indicators_ = 0;

  const char* failed_function_ = nullptr;
  int failed_status_ = 0;
  double failed_time_ = 0.0;
  char last_error_[464] = {};
  std::atomic<bool> terminated_{false};
  const char* terminated_function_ = nullptr;
  double terminated_time_ = 0.0;
  std::atomic<std::uint64_t> allocations_{0};
  std::atomic<std::uint64_t> log_dropped_{0};
  std::atomic<std::uint64_t> inexact_reads_{0};

  std::unique_ptr<Ring> ring_;
  std::atomic<bool> stop_log_{false};
  std::thread drain_;
};

}  // namespace rtcosim::tasks::fmu
