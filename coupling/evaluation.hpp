#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "coupling/registry.hpp"

namespace rtcosim::coupling {

/*
 * The evaluation protocol of the multi-rate methods paper (section 4), which
 * `rtcosim eval` runs: a slow side samples a test signal y(t) every macro
 * step h_s into data blocks (with exact derivatives), a fast side evaluates
 * the coupling method every micro step h_f over [0, duration), and the result
 * is the mean squared error against the true signal. The slow side has been
 * running before t = 0, so history blocks at -h_s, -2h_s, ... are pushed
 * first. Set-up code: allocates, throws CouplingError on bad settings.
 */
struct TestSignal {
  std::string id;       // y1, y2, y3
  std::string formula;  // for help texts and plot titles
  std::function<double(double)> value;
  std::function<double(double)> derivative;
};

// y1 = sin(2 pi t), y2 = exp(-1.5 t) cos(3 t), y3 = (4t - t^2)/3 for t < 3, else 1.
const std::vector<TestSignal>& test_signals();
const TestSignal& test_signal(const std::string& id);  // throws CouplingError naming the known ids

// The paper's variants (table 2): A1 h_s 40 ms n_E 3, A2 40 ms n_E 4, A3 75 ms n_E 3.
struct EvalVariant {
  std::string id;
  double macro_step;
  int order;
};
const std::vector<EvalVariant>& eval_variants();

// The methods of the paper's table, in its column order, plus `predictor`.
const std::vector<std::string>& eval_table_methods();

struct EvalSettings {
  std::string signal = "y1";
  std::string method = "polynomial";
  ParamSettings params;        // passed to the registry as written
  double macro_step = 0.040;   // h_s
  double micro_step = 0.001;   // h_f
  double duration = 5.0;
  bool with_derivatives = true;  // false: blocks carry no derivatives
  // Tags off the grid by up to +-jitter/2 macro steps (uniform, the same
  // pseudo-random sequence every run), so that tag spacing varies within
  // h_s (1 +- jitter); a block arrives at its tag. 0: the paper's grid.
  double jitter = 0.0;
  bool keep_trace = false;
};

struct EvalResult {
  double mse = 0.0;
  std::size_t steps = 0;
  bool derivative_fallback = false;
  // With keep_trace: the fast side's times, the true signal, the method's
  // output, and the tags of the blocks taken during [0, duration).
  std::vector<double> time, truth, output, coupling_times;
};

EvalResult run_evaluation(const MethodRegistry& registry, const EvalSettings& settings);

// The parameter settings the table uses for a method in a variant: `order`
// = n_E where the method has an order.
ParamSettings variant_params(const MethodRegistry& registry, const std::string& method, const EvalVariant& variant);

}  // namespace rtcosim::coupling
