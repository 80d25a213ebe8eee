#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace rtcosim::tasks::fmu {

// A set-up error about an FMU: what was wrong (one message per problem),
// naming the file and, where it helps, what a valid FMU has instead.
// `option` names the option of the caller's that the error is about
// ("interface"), empty when it is about the file itself.
class FmuError : public std::runtime_error {
 public:
  explicit FmuError(const std::string& message, std::string option = {})
      : std::runtime_error(message), option_(std::move(option)) {}
  [[nodiscard]] const std::string& option() const noexcept { return option_; }

 private:
  std::string option_;
};

enum class Causality { kParameter, kCalculatedParameter, kInput, kOutput, kLocal, kIndependent, kStructuralParameter };
enum class Variability { kConstant, kFixed, kTunable, kDiscrete, kContinuous };
// Scalar types rtcosim reads and writes, carried as doubles on ports;
// anything else is kOther (listed, never used as a port). kReal is FMI 2.0
// Real and FMI 3.0 Float64, kInteger FMI 2.0 Integer and FMI 3.0 Int32;
// kEnumeration is set and read as an Integer (2.0) or an Int64 (3.0).
enum class VarType {
  kReal,
  kFloat32,
  kInt8,
  kUInt8,
  kInt16,
  kUInt16,
  kInteger,
  kUInt32,
  kInt64,
  kUInt64,
  kBoolean,
  kEnumeration,
  kString,
  kOther
};
// True for the types a port carries (every scalar but String and kOther).
bool is_port_type(VarType t) noexcept;
// True for the integer-valued types (Int8 ... UInt64, Boolean, Enumeration),
// whose variables are always discrete.
bool is_integer_type(VarType t) noexcept;
// True for Int64, UInt64 and an FMI 3.0 Enumeration (an Int64), whose
// values a double holds exactly only up to 2^53.
bool is_64_bit(VarType t, int fmi_major) noexcept;

// One <Dimension> of an FMI 3.0 array variable: a fixed size (`start`) or
// the value of a structural parameter or constant (`value_reference`).
struct Dimension {
  std::uint64_t start = 0;
  std::optional<std::uint32_t> value_reference;
};

struct Variable {
  std::string name;
  std::uint32_t value_reference = 0;
  Causality causality = Causality::kLocal;
  Variability variability = Variability::kContinuous;
  VarType type = VarType::kReal;
  std::string type_name;  // as written: Real, Integer, Float64, Int32, Boolean, ...
  std::string unit;
  std::string start;     // as written; empty when none
  std::string min, max;  // as written; empty when none
  std::string description;
  // The variable this one is the derivative of (index into variables), if any.
  std::optional<std::size_t> derivative_of;
  bool array = false;  // FMI 3.0: declares <Dimension>s (`dimensions`, outermost first)
  std::vector<Dimension> dimensions;
  bool clocked = false;  // FMI 3.0 Clock, or a variable with `clocks`: the FMU is refused as a block
};

struct Interface {
  bool present = false;
  std::string model_identifier;
  bool can_handle_variable_step = false;  // CoSimulation only
  bool can_get_set_state = false;
  bool can_serialize_state = false;  // canSerializeFMUstate (2.0) / canSerializeFMUState (3.0)
  bool provides_directional_derivatives = false;
  bool needs_execution_tool = false;
  bool can_be_instantiated_only_once = false;
  int max_output_derivative_order = 0;                // CoSimulation only
  bool completed_integrator_step_not_needed = false;  // ModelExchange only
};

/*
 * ModelDescription: what an FMU's modelDescription.xml declares, for FMI
 * 2.0 and 3.0 alike. `states` lists the continuous states in the order of
 * the FMU's state vector (FMI 2.0: the <Derivatives> list, FMI 3.0: the
 * <ContinuousStateDerivative> list), as indices into `variables`;
 * `output_dependencies[i]` are the input variables output i depends on
 * (nullopt: not declared, so every input). Plain data, set-up only.
 */
struct ModelDescription {
  int fmi_major = 0;  // 2 or 3
  std::string fmi_version;
  std::string model_name;
  std::string token;  // GUID (2.0) or instantiationToken (3.0)
  std::string description;
  std::string generation_tool;
  Interface model_exchange;
  Interface co_simulation;
  std::vector<Variable> variables;
  std::vector<std::size_t> states;
  std::vector<std::size_t> derivatives;  // derivatives[i] is d states[i] / dt
  std::vector<std::size_t> outputs;
  std::vector<std::optional<std::vector<std::size_t>>> output_dependencies;
  std::size_t event_indicators = 0;  // FMI 2.0: numberOfEventIndicators; 3.0: <EventIndicator>s (arrays count 1)
  std::vector<std::size_t> event_indicator_variables;  // FMI 3.0: the <EventIndicator>s' variables
  std::vector<std::string> unsupported;                // clocks, arrays, ...: named in `fmu info`, refused as ports
  double default_step = 0.0;                           // DefaultExperiment stepSize, 0 when absent

  [[nodiscard]] const Variable* find(const std::string& name) const noexcept;
};

// Parses the text of a modelDescription.xml; FmuError naming `where` (the
// file) and the offending element on anything malformed.
ModelDescription parse_model_description(const std::string& xml, const std::string& where);

// The most elements an array variable may have (an FMU is hostile input).
constexpr std::uint64_t kMaxArrayElements = std::uint64_t{1} << 20;

// The most elements all variables of an FMU may have together (a scalar
// counts one). Each array is bounded by kMaxArrayElements, and their sum by
// this: 200 outputs of 2^20 elements each made `rtcosim check` take 4.9 GB.
// 2^22 doubles are 32 MiB per copy of them.
constexpr std::uint64_t kMaxTotalElements = std::uint64_t{1} << 22;

// FmuError "WHERE: variable 'y3' (Float64[1048576]) brings the elements of
// the FMU's variables to 4194305 in all — more than the 4194304 (2^22) an
// FMU may declare — refused", naming the first variable at which the
// elements of md's variables (sizes[i] those of variables[i], as `values`
// sizes them) pass kMaxTotalElements. parse_model_description checks the
// declared sizes; an instance checks the sizes its structural parameters
// give.
void check_total_elements(const ModelDescription& md, const std::vector<std::uint64_t>& sizes, const std::string& where,
                          const std::vector<std::pair<std::uint32_t, std::uint64_t>>& values = {});

// The number of elements of `v` (1 for a scalar): the product of its
// dimensions, a dimension given by a value reference taking the value in
// `values` (value reference, value: structural parameters set by the
// caller) or else the referenced variable's declared start. FmuError
// naming the variable when a size is missing, zero or above
// kMaxArrayElements.
std::uint64_t element_count(const ModelDescription& md, const Variable& v,
                            const std::vector<std::pair<std::uint32_t, std::uint64_t>>& values = {});
// "[3]", "[n=3]", "[2][n=3]" (the sizes as element_count resolves them), or
// empty for a scalar; "[?]" for a size that does not resolve.
std::string dimensions_text(const ModelDescription& md, const Variable& v,
                            const std::vector<std::pair<std::uint32_t, std::uint64_t>>& values = {});
// The whitespace-separated items of a start attribute ("1 2 3").
std::vector<std::string> start_items(const std::string& start);

const char* causality_name(Causality c) noexcept;
const char* variability_name(Variability v) noexcept;

}  // namespace rtcosim::tasks::fmu
