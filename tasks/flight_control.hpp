#pragma once

#include "tasks/diagram.hpp"

namespace rtcosim::tasks {

/*
 * The project's main example, the airframe pitch loop of the reference
 * (asynchronous multi-rate real-time simulation, section 10.5): a digital
 * autopilot at 100 Hz (task "controller") commands a second-order
 * control-surface actuator of 40 rad/s (task "actuator", the fast one,
 * nominal step 5 ms) that drives a short-period airframe of 5 rad/s (task
 * "airframe", the slow one, nominal step 20 ms), following an
 * acceleration-limited step of the pitch command. Parameter values and
 * their sources: docs/flight_control_example.md.
 */
struct FlightControlParameters {
  double airframe_wn = 5.0;         // rad/s, short-period undamped natural frequency (reference)
  double airframe_zeta = 0.5;       // short-period damping
  double airframe_t_theta2 = 0.5;   // s, lift time constant: the zero of q/delta
  double airframe_gain = 1.0;       // steady pitch rate per unit surface deflection, 1/s
  double actuator_wn = 40.0;        // rad/s (reference)
  double actuator_zeta = 0.7;
  double controller_period = 0.01;  // s, 100 Hz (reference)
  double controller_gain = 6.0;     // K
  double rate_constant = 0.1;       // s, tau_r of the backward-difference pitch-rate feedback
  double command = 1.0;             // rad, final pitch command
  double command_acceleration = 10.0;  // rad/s^2, limit of the command's second derivative
};

DiagramSpec flight_control_diagram(const FlightControlParameters& p = {});

}  // namespace rtcosim::tasks
