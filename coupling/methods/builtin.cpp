// The built-in coupling methods and their parameters, in one table.
#include <memory>

#include "coupling/methods/ecd.hpp"
#include "coupling/methods/hermite.hpp"
#include "coupling/methods/interpolated.hpp"
#include "coupling/methods/newton.hpp"
#include "coupling/methods/polynomial.hpp"
#include "coupling/methods/predictor.hpp"
#include "coupling/methods/rim.hpp"
#include "coupling/methods/smoothed.hpp"
#include "coupling/methods/zoh.hpp"
#include "coupling/registry.hpp"

namespace rtcosim::coupling {

namespace {

using methods::kMaxOrder;

ParamSpec order_param(const char* name, const char* what) {
  return ParamSpec{name, ParamKind::kInteger, 1, kMaxOrder, 3, what};
}

ParamSpec macro_step_param() {
  return ParamSpec{
      "macro_step", ParamKind::kDuration,
      0.0,          3600.0,
      0.0,          "producer's step h_s used for predictions; 0 estimates it from the spacing of the newest tags"};
}

}  // namespace

MethodRegistry MethodRegistry::with_builtins() {
  MethodRegistry r;
  const auto order = order_param("order", "extrapolation order n_E: a polynomial through the newest n_E+1 blocks");
  const auto interp = order_param("interp_order", "interpolation order n through the newest n+1 predictions");
  const auto step = macro_step_param();

  r.add({"zoh", "zero-order hold: the newest value, held", false, {}, [](const ParamValues&) {
           return std::make_unique<methods::Zoh>(false);
         }});
  r.add({"zoh_average",
         "input averaging: the held signal's mean over the consumer's step (eq. 10.7)",
         false,
         {},
         [](const ParamValues&) { return std::make_unique<methods::Zoh>(true); }});
  r.add(
      {"polynomial", "Newton polynomial through the newest blocks (eq. 1-2)", false, {order}, [](const ParamValues& p) {
         return std::make_unique<methods::Polynomial>(p.get_int("order"));
       }});
  r.add(
      {"hermite", "confluent Hermite polynomial from values and derivatives", true, {order}, [](const ParamValues& p) {
         return std::make_unique<methods::Hermite>(p.get_int("order"));
       }});
  r.add({"interpolated",
         "integrated extrapolation (Knorr): interpolation through predictions, continuous",
         false,
         {order, interp, step},
         [](const ParamValues& p) {
           return std::make_unique<methods::Interpolated>(p.get_int("order"), p.get_int("interp_order"),
                                                          p.get("macro_step"), false);
         }});
  r.add({"smoothed",
         "smoothed extrapolation (Kossel): C2 blend of successive polynomials (eq. 3-7)",
         false,
         {order, step},
         [](const ParamValues& p) {
           return std::make_unique<methods::Smoothed>(p.get_int("order"), p.get("macro_step"));
         }});
  r.add({"ecd",
         "energy-conserving discontinuous (Benedikt): polynomial plus last step's error (eq. 8)",
         false,
         {order, step},
         [](const ParamValues& p) { return std::make_unique<methods::Ecd>(p.get_int("order"), p.get("macro_step")); }});
  r.add({"ecc",
         "energy-conserving continuous: interpolated plus correction and error total (eq. 9-12)",
         false,
         {order, interp, step},
         [](const ParamValues& p) {
           return std::make_unique<methods::Interpolated>(p.get_int("order"), p.get_int("interp_order"),
                                                          p.get("macro_step"), true);
         }});
  r.add({"predictor",
         "second-order predictor from values and derivatives (eq. 8.14, 10.5)",
         true,
         {},
         [](const ParamValues&) { return std::make_unique<methods::Predictor>(); }});
  r.add({"rim",
         "reduced interface model (issue 16): the newest model held for the receiving mechanical block "
         "(interface: rim) to integrate with its own; docs/rim.md",
         false,
         {ParamSpec{"order", ParamKind::kInteger, 0, 1, 1,
                    "0: hold the newest model; 1: interpolate and extrapolate lambda~, z, w, x linearly"}},
         [](const ParamValues& p) { return std::make_unique<methods::Rim>(p.get_int("order")); }});
  // A rim block is one structured payload (docs/rim.md): not per signal.
  for (const char* id :
       {"zoh", "zoh_average", "polynomial", "hermite", "interpolated", "smoothed", "ecd", "ecc", "predictor"}) {
    r.set_per_signal(id);
  }
  return r;
}

}  // namespace rtcosim::coupling
