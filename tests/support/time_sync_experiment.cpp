#include "tests/support/time_sync_experiment.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace rtcosim::testing {
namespace {

using State = std::array<double, 2>;

State derivative(const SecondOrderPlant& p, const State& x, double u) {
  return {x[1], -x[0] / (p.T * p.T) - 2.0 * p.d * x[1] / p.T + p.K * u / (p.T * p.T)};
}

State rk4(const SecondOrderPlant& p, const State& x, double u, double h) {
  auto add = [](const State& a, const State& b, double s) { return State{a[0] + s * b[0], a[1] + s * b[1]}; };
  const State k1 = derivative(p, x, u);
  const State k2 = derivative(p, add(x, k1, h / 2), u);
  const State k3 = derivative(p, add(x, k2, h / 2), u);
  const State k4 = derivative(p, add(x, k3, h), u);
  return {x[0] + h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]),
          x[1] + h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])};
}

// Index of the first cycle instant i * cycle at or after t (a tolerance keeps
// on-grid instants on the grid despite rounding).
long first_cycle_at_or_after(double t, double cycle) { return static_cast<long>(std::ceil(t / cycle - 1e-9)); }

// Samples at i * cycle, i = 0..n-1, held: value at t is the last sample at or before t.
double held(const std::vector<double>& samples, double cycle, double t) {
  if (t < 0.0) return samples.front();
  const auto i = static_cast<std::size_t>(std::floor(t / cycle + 1e-9));
  return samples[std::min(i, samples.size() - 1)];
}

}  // namespace

std::vector<Hop> measurement_path(const TimeSyncTiming& t) {
  return {Hop{t.communication, t.plant, HopKind::synchronous}, Hop{t.plant, t.communication, HopKind::synchronous}};
}

std::vector<Hop> simulation_path(const TimeSyncTiming& t) {
  return {Hop{t.communication, t.acquisition, HopKind::asynchronous},
          Hop{t.acquisition, t.simulation, HopKind::synchronous}};
}

double second_order_step_response(const SecondOrderPlant& p, double t) {
  if (t < 0.0) return 0.0;
  const double w0 = 1.0 / p.T;
  const double root = std::sqrt(1.0 - p.d * p.d);
  const double wd = w0 * root;
  return p.K * (1.0 - std::exp(-p.d * w0 * t) * (std::cos(wd * t) + p.d / root * std::sin(wd * t)));
}

TimeSyncResult run_time_sync_experiment(const TimeSyncSettings& s) {
  const TimeSyncTiming& tm = s.timing;
  TimeSyncResult result;
  const auto meas = measurement_path(tm);
  const auto sim = simulation_path(tm);
  result.delay = output_delay(meas, sim, s.grid);

  // The plant: u from step_time + tau_C + tau_P, output to the communication
  // tau_P + tau_C after it is computed, sampled by the acquisition.
  const double plant_input_time = s.step_time + tm.communication.dead_time + tm.plant.dead_time;
  const double output_dead_time = tm.plant.dead_time + tm.communication.dead_time;
  const double h_p = tm.plant.cycle;
  const auto plant_steps = static_cast<std::size_t>(std::llround(s.duration / h_p));
  std::vector<double> plant_y(plant_steps + 1);
  State x{0.0, 0.0};
  for (std::size_t i = 0; i <= plant_steps; ++i) {
    plant_y[i] = x[0];
    const double t = static_cast<double>(i) * h_p;
    const double u = t >= plant_input_time - 1e-9 ? s.step_value : 0.0;
    x = rk4(s.plant, x, u, h_p);
  }
  const double h_m = tm.acquisition.cycle;
  const auto m_samples = static_cast<std::size_t>(std::floor(s.duration / h_m + 1e-9)) + 1;
  std::vector<double> measured(m_samples);
  for (std::size_t j = 0; j < m_samples; ++j) {
    measured[j] = held(plant_y, h_p, static_cast<double>(j) * h_m - output_dead_time);
  }

  // The simulation: u sampled by the acquisition, tau_M + tau_S later at the
  // simulation, held from the next simulation cycle on.
  const double acquired = static_cast<double>(first_cycle_at_or_after(s.step_time, h_m)) * h_m;
  const double arrives = acquired + tm.acquisition.dead_time + tm.simulation.dead_time;
  const double h_s = tm.simulation.cycle;
  const auto sim_steps = static_cast<std::size_t>(std::floor(s.duration / h_s + 1e-9));
  std::vector<double> y(sim_steps + 1);
  x = {0.0, 0.0};
  for (std::size_t k = 0; k <= sim_steps; ++k) {
    y[k] = x[0];
    const double t = static_cast<double>(k) * h_s;
    const double u = t >= arrives - 1e-9 ? s.step_value : 0.0;
    for (int i = 0; i < s.substeps; ++i) x = rk4(s.plant, x, u, h_s / s.substeps);
  }

  const double delta_o = result.delay.delta_o;
  double sum_without = 0.0, sum_with = 0.0;
  for (std::size_t k = 0; k <= sim_steps; ++k) {
    const double t = static_cast<double>(k) * h_s;
    if (t + delta_o > s.duration + 1e-9) break;
    const double e0 = y[k] - held(measured, h_m, t);
    const double e1 = y[k] - held(measured, h_m, t + delta_o);
    sum_without += e0 * e0;
    sum_with += e1 * e1;
    result.without_compensation.max = std::max(result.without_compensation.max, std::abs(e0));
    result.with_compensation.max = std::max(result.with_compensation.max, std::abs(e1));
    ++result.compared;
  }
  result.without_compensation.mse = sum_without / static_cast<double>(result.compared);
  result.with_compensation.mse = sum_with / static_cast<double>(result.compared);
  return result;
}

}  // namespace rtcosim::testing
