#include "tasks/flight_control.hpp"

namespace rtcosim::tasks {

DiagramSpec flight_control_diagram(const FlightControlParameters& p) {
  DiagramSpec d;
  const double ts = p.controller_period;
  const double w2 = p.airframe_wn * p.airframe_wn;
  // Controller: c_k = K (theta_cmd,k - theta_k) - K tau_r (theta_k - theta_{k-1}) / T_sam,
  // both inputs sampled by A-to-D converters (zero-order holds) at T_sam.
  d.blocks = {
      {"pitch_command", "step", {{"final", p.command}, {"acceleration", p.command_acceleration}}, "controller"},
      {"adc_command", "zero_order_hold", {{"sample_time", ts}}, "controller"},
      {"adc_pitch", "zero_order_hold", {{"sample_time", ts}}, "controller"},
      {"pitch_error", "sum", {{"signs", std::string("+-")}}, "controller"},
      {"pitch_rate_estimate", "discrete_transfer_function",
       {{"num", Vector{p.rate_constant / ts, -p.rate_constant / ts}}, {"den", Vector{1.0, 0.0}}, {"sample_time", ts}},
       "controller"},
      {"control_law", "sum", {{"signs", std::string("+-")}}, "controller"},
      {"controller_gain", "gain", {{"gain", p.controller_gain}}, "controller"},
      // Actuator: delta'' = wn^2 (delta_c - delta) - 2 zeta wn delta'.
      {"actuator", "second_order", {{"wn", p.actuator_wn}, {"zeta", p.actuator_zeta}}, "actuator"},
      // Airframe: q/delta = K wn^2 (T s + 1) / (s^2 + 2 zeta wn s + wn^2), theta = integral of q.
      {"airframe_pitch_rate", "transfer_function",
       {{"num", Vector{p.airframe_gain * w2 * p.airframe_t_theta2, p.airframe_gain * w2}},
        {"den", Vector{1.0, 2.0 * p.airframe_zeta * p.airframe_wn, w2}}},
       "airframe"},
      {"airframe_pitch", "integrator", {}, "airframe"},
  };
  d.wires = {
      {{"pitch_command", "y"}, {"adc_command", "u"}},
      {{"airframe_pitch", "y"}, {"adc_pitch", "u"}},
      {{"adc_command", "y"}, {"pitch_error", "u1"}},
      {{"adc_pitch", "y"}, {"pitch_error", "u2"}},
      {{"adc_pitch", "y"}, {"pitch_rate_estimate", "u"}},
      {{"pitch_error", "y"}, {"control_law", "u1"}},
      {{"pitch_rate_estimate", "y"}, {"control_law", "u2"}},
      {{"control_law", "y"}, {"controller_gain", "u"}},
      {{"controller_gain", "y"}, {"actuator", "u"}},
      {{"actuator", "y"}, {"airframe_pitch_rate", "u"}},
      {{"airframe_pitch_rate", "y"}, {"airframe_pitch", "u"}},
  };
  return d;
}

}  // namespace rtcosim::tasks
