#pragma once

#include <cstddef>

#include "rt_config/delay_model.hpp"

namespace rtcosim::testing {

using config::DelayElement;
using config::Hop;
using config::HopKind;
using config::OutputDelay;

/*
 * The thesis's simulative validation of the time synchronisation (5.7): the
 * second-order system of eq. 5.6 (x1' = x2, x2' = -x1/T^2 - 2d x2/T + K u/T^2)
 * is both the "physical" plant and the simulated plant; a step of u at
 * step_time runs through the measurement and simulation paths of the delay
 * model, and the simulated outputs y_k (one per simulation cycle) are
 * compared with the measured outputs y^ as the data acquisition holds them,
 * once at the same instant and once at the instant shifted by Delta_o.
 *
 * Timing (every hop as in DelayModel's table 5.16 case):
 *  - the plant takes u synchronously from the communication, tau_C + tau_P
 *    after the step, and is integrated by RK4 at its cycle theta_P;
 *  - its output reaches the communication tau_P + tau_C later and the data
 *    acquisition samples it every theta_M (zero-order hold: "the next datum
 *    available");
 *  - the data acquisition samples u every theta_M (the asynchronous wait
 *    U(0, theta_M): phase 0, so a step on the grid waits 0) and hands it to
 *    the simulation tau_M + tau_S later; the simulation holds u over its
 *    cycle theta_S and integrates by RK4 with `substeps` steps per cycle.
 * Metrics (thesis 5.3, eqs. 5.2/5.3): MSE = mean of (y_k - y^)^2 and MAX =
 * max |y_k - y^| over the simulation instants t_k = k theta_S in
 * [0, duration - Delta_o]. Set-up/offline code: allocates, not for a frame.
 */
struct SecondOrderPlant {
  double T = 0.125;
  double K = 1.0;
  double d = 0.225;
};

struct TimeSyncTiming {
  DelayElement control{"R", 0.0001, 0.032};
  DelayElement communication{"C", 0.0, 0.008};
  DelayElement plant{"P", 0.010, 0.0001};
  DelayElement acquisition{"M", 0.004, 0.004};
  DelayElement simulation{"S", 0.004, 0.004};
};

struct TimeSyncSettings {
  SecondOrderPlant plant;
  TimeSyncTiming timing;
  double step_time = 1.0;
  double step_value = 1.0;
  double duration = 5.0;
  double grid = 0.0001;  // of the delay densities
  int substeps = 40;     // RK4 steps per simulation cycle
};

struct Metrics {
  double mse = 0.0;
  double max = 0.0;
};

struct TimeSyncResult {
  OutputDelay delay;
  Metrics without_compensation;
  Metrics with_compensation;
  std::size_t compared = 0;  // instants t_k in each metric
};

TimeSyncResult run_time_sync_experiment(const TimeSyncSettings& settings);

// The measurement and simulation paths of the experiment's timing.
std::vector<Hop> measurement_path(const TimeSyncTiming& timing);
std::vector<Hop> simulation_path(const TimeSyncTiming& timing);

// Closed-form unit-step response of eq. 5.6 (0 < d < 1), 0 for t < 0: the
// independent reference of the tests.
double second_order_step_response(const SecondOrderPlant& plant, double t);

}  // namespace rtcosim::testing
