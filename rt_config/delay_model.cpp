#include "rt_config/delay_model.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace rtcosim::config {
namespace {

// A density is a vector of grid cells and a path is built by repeated convolution, so a fine grid or a long
// dead time costs memory and time before the loader can answer: these bound both (a config is outside input).
constexpr double kMaxCells = 1 << 20;
constexpr double kMaxPathWork = 2e6;  // multiply-adds per path: ~2 ms, ~50 ms under the sanitizers

// n such that value = n * unit, or a DelayModelError naming what.
long grid_count(double value, double unit, const std::string& what) {
  if (!(unit > 0.0) || !std::isfinite(unit)) {
    throw DelayModelError("delay model: grid step " + std::to_string(unit) + " s must be positive and finite");
  }
  if (!(value >= 0.0) || !std::isfinite(value)) {
    throw DelayModelError("delay model: " + what + " = " + std::to_string(value) + " s must be finite and >= 0");
  }
  const double n = value / unit;
  if (n > kMaxCells) {
    std::ostringstream message;
    message << "delay model: " << what << " = " << value << " s needs " << n << " cells of the grid step " << unit
            << " s; at most " << static_cast<long>(kMaxCells) << " — choose a coarser 'sync.delay.grid'";
    throw DelayModelError(message.str());
  }
  const double rounded = std::round(n);
  if (std::abs(n - rounded) > 1e-6 * std::max(1.0, rounded)) {
    std::ostringstream message;
    message << "delay model: " << what << " = " << value << " s is not a multiple of the grid step " << unit
            << " s; choose a grid step that divides every dead time and cycle time";
    throw DelayModelError(message.str());
  }
  return static_cast<long>(rounded);
}

}  // namespace

DelayDensity DelayDensity::dirac(double at, double dt) {
  DelayDensity d;
  d.dt_ = dt;
  d.half_offset_ = grid_count(at, dt / 2.0, "dead time");
  d.masses_ = {1.0};
  return d;
}

DelayDensity DelayDensity::uniform(double width, double dt) {
  const long n = grid_count(width, dt, "cycle time");
  if (n == 0) return dirac(0.0, dt);  // theta = 0: no waiting
  DelayDensity d;
  d.dt_ = dt;
  d.half_offset_ = 1;  // cell centres: dt/2, 3dt/2, ...
  d.masses_.assign(static_cast<std::size_t>(n), 1.0 / static_cast<double>(n));
  return d;
}

DelayDensity DelayDensity::convolve(const DelayDensity& other) const {
  if (dt_ != other.dt_) {
    throw DelayModelError("delay model: densities on different grids (" + std::to_string(dt_) + " s and " +
                          std::to_string(other.dt_) + " s) cannot be convolved");
  }
  DelayDensity out;
  out.dt_ = dt_;
  out.half_offset_ = half_offset_ + other.half_offset_;
  out.masses_.assign(masses_.size() + other.masses_.size() - 1, 0.0);
  for (std::size_t i = 0; i < masses_.size(); ++i) {
    for (std::size_t j = 0; j < other.masses_.size(); ++j) out.masses_[i + j] += masses_[i] * other.masses_[j];
  }
  return out;
}

double DelayDensity::total_mass() const {
  double sum = 0.0;
  for (double m : masses_) sum += m;
  return sum;
}

double DelayDensity::mean() const {
  double sum = 0.0;
  for (std::size_t i = 0; i < masses_.size(); ++i) sum += masses_[i] * position(i);
  return sum / total_mass();
}

double DelayDensity::rightmost_mode() const {
  const double peak = *std::max_element(masses_.begin(), masses_.end());
  const double tolerance = 1e-9 * peak;
  std::size_t last = 0;
  for (std::size_t i = 0; i < masses_.size(); ++i) {
    if (masses_[i] >= peak - tolerance) last = i;
  }
  const bool plateau = last > 0 && masses_[last - 1] >= peak - tolerance;
  const bool jump = last + 1 == masses_.size() || masses_[last + 1] == 0.0;
  return position(last) + (plateau && jump ? dt_ / 2.0 : 0.0);
}

DelayDensity hop_density(const Hop& hop, double dt) {
  if (hop.kind == HopKind::synchronous) {
    return DelayDensity::dirac(hop.from.dead_time + hop.to.dead_time, dt);
  }
  return DelayDensity::uniform(hop.to.cycle, dt);
}

DelayDensity path_density(std::span<const Hop> path, double dt) {
  DelayDensity density = DelayDensity::dirac(0.0, dt);
  double work = 0.0;
  for (const Hop& hop : path) {
    const DelayDensity one = hop_density(hop, dt);
    for (int i = 0; i < hop.repeat; ++i) {
      work += static_cast<double>(density.masses().size()) * static_cast<double>(one.masses().size());
      if (work > kMaxPathWork || static_cast<double>(density.masses().size() + one.masses().size()) > kMaxCells) {
        std::ostringstream message;
        message << "delay model: the path through " << describe(hop) << " needs more than " << kMaxPathWork
                << " grid operations; choose a coarser 'sync.delay.grid' or fewer repeats";
        throw DelayModelError(message.str());
      }
      density = density.convolve(one);
    }
  }
  return density;
}

std::string describe(const Hop& hop) {
  auto ms = [](double seconds) {
    std::ostringstream o;
    o << seconds * 1e3 << " ms";
    return o.str();
  };
  std::ostringstream o;
  o << "alpha";
  if (hop.repeat != 1) o << '^' << hop.repeat;
  o << '_' << hop.from.name << hop.to.name << ": " << hop.from.name << " -> " << hop.to.name << ' '
    << (hop.kind == HopKind::synchronous ? "sync delta(t - " + ms(hop.from.dead_time + hop.to.dead_time) + ")"
                                         : "async U(0, " + ms(hop.to.cycle) + ")");
  return o.str();
}

OutputDelay output_delay(std::span<const Hop> measurement_path, std::span<const Hop> simulation_path, double dt) {
  OutputDelay out{path_density(measurement_path, dt), path_density(simulation_path, dt)};
  out.measurement_mode = out.measurement.rightmost_mode();
  out.simulation_mode = out.simulation.rightmost_mode();
  out.delta_o = out.measurement_mode - out.simulation_mode;
  return out;
}

double input_delay(std::span<const Hop> plant_path, std::span<const Hop> simulation_path, double dt) {
  return path_density(plant_path, dt).rightmost_mode() - path_density(simulation_path, dt).rightmost_mode();
}

}  // namespace rtcosim::config
