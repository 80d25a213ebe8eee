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
// Uniforms in one path: each is a B-spline order of the density, whose modes
// cost order^3 per point; a path of more hops than this is no chain of
// elements but a typo (`^1000`).
constexpr int kMaxOrder = 32;

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

// The cardinal B-spline of order k (degree k - 1, support [0, k]) at t: the
// density of the sum of k boxes of width 1 (Cox-de Boor recursion).
double cardinal_bspline(int k, double t) {
  if (!(t > 0.0) || !(t < static_cast<double>(k))) return 0.0;
  // b[i] = N_m(t - i), from m = 1 up.
  double b[kMaxOrder + 1] = {};
  const auto cell = static_cast<int>(t);
  b[cell] = 1.0;
  for (int m = 2; m <= k; ++m) {
    for (int i = 0; i <= k - m; ++i) {
      const double u = t - i;
      b[i] = (u * b[i] + (static_cast<double>(m) - u) * b[i + 1]) / static_cast<double>(m - 1);
    }
  }
  return b[0];
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
  d.order_ = 1;
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
  out.order_ = order_ + other.order_;
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

double DelayDensity::density_at(long ticks) const {
  if (order_ == 0 || masses_.empty()) return 0.0;
  const long half_support = order_ * (kTicksPerCell / 2);
  const long first_centre = centre_ticks(0);
  const long lo = std::max<long>(0, (ticks - half_support - first_centre) / kTicksPerCell);
  const long hi =
      std::min<long>(static_cast<long>(masses_.size()) - 1, (ticks + half_support - first_centre) / kTicksPerCell + 1);
  double sum = 0.0;
  for (long i = lo; i <= hi; ++i) {
    const double t = static_cast<double>(ticks - centre_ticks(i) + half_support) / static_cast<double>(kTicksPerCell);
    sum += masses_[static_cast<std::size_t>(i)] * cardinal_bspline(order_, t);
  }
  return sum / dt_;
}

long DelayDensity::rightmost_mode_ticks() const {
  constexpr double kTolerance = 1e-12;
  const double peak = *std::max_element(masses_.begin(), masses_.end());
  std::size_t last = 0;
  for (std::size_t i = 0; i < masses_.size(); ++i) {
    if (masses_[i] >= peak * (1.0 - kTolerance)) last = i;
  }
  // A dirac (and diracs convolved) has no density: its mode is its mass.
  if (order_ == 0) return centre_ticks(static_cast<long>(last));
  // One uniform: a plateau, whose rightmost point is its right end.
  if (order_ == 1) return centre_ticks(static_cast<long>(last)) + kTicksPerCell / 2;
  // Two or more: a continuous density, scanned tick by tick over the ticks
  // nearest each cell's centre (cells -w and n - 1 + w cover the support's
  // ends). The density at x is an average of the masses of the cells whose
  // splines cover x (the splines sum to one), all within w cells of x: only
  // ticks near a cell at least as heavy as the density sought need a look.
  const auto n = static_cast<long>(masses_.size());
  const long w = order_ / 2 + 1;
  auto mass = [&](long i) { return i < 0 || i >= n ? 0.0 : masses_[static_cast<std::size_t>(i)]; };
  auto heaviest_near = [&](long i) {
    double m = 0.0;
    for (long j = i - w; j <= i + w; ++j) m = std::max(m, mass(j));
    return m;
  };
  // First the maximum, from the heaviest cells down, until no cell left can
  // hold more ...
  std::vector<long> heaviest(masses_.size());
  for (long i = 0; i < n; ++i) heaviest[static_cast<std::size_t>(i)] = i;
  std::sort(heaviest.begin(), heaviest.end(), [&](long a, long b) { return mass(a) > mass(b); });
  std::vector<bool> seen(static_cast<std::size_t>(n + 2 * w), false);
  double best = 0.0;
  for (long i : heaviest) {
    if (mass(i) / dt_ <= best * (1.0 + kTolerance)) break;
    for (long j = i - w; j <= i + w; ++j) {
      if (seen[static_cast<std::size_t>(j + w)]) continue;
      seen[static_cast<std::size_t>(j + w)] = true;
      for (long x = centre_ticks(j) - kTicksPerCell / 2; x < centre_ticks(j) + kTicksPerCell / 2; ++x)
        best = std::max(best, density_at(x));
    }
  }
  // ... then its rightmost point, from the right.
  const double threshold = best * (1.0 - kTolerance);
  for (long j = n - 1 + w; j >= -w; --j) {
    if (heaviest_near(j) / dt_ < threshold) continue;
    for (long x = centre_ticks(j) + kTicksPerCell / 2 - 1; x >= centre_ticks(j) - kTicksPerCell / 2; --x) {
      if (density_at(x) >= threshold) return x;
    }
  }
  return centre_ticks(static_cast<long>(last));  // not reached: the maximum was found above
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
      if (density.order() + one.order() > kMaxOrder) {
        std::ostringstream message;
        message << "delay model: the path through " << describe(hop) << " convolves more than " << kMaxOrder
                << " asynchronous hops; a chain of elements has a few — check the repeat counts ('^n')";
        throw DelayModelError(message.str());
      }
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
  // Counted in ticks, so that equal modes give exactly 0.
  out.delta_o = static_cast<double>(out.measurement.rightmost_mode_ticks() - out.simulation.rightmost_mode_ticks()) *
                dt / DelayDensity::kTicksPerCell;
  return out;
}

double input_delay(std::span<const Hop> plant_path, std::span<const Hop> simulation_path, double dt) {
  return static_cast<double>(path_density(plant_path, dt).rightmost_mode_ticks() -
                             path_density(simulation_path, dt).rightmost_mode_ticks()) *
         dt / DelayDensity::kTicksPerCell;
}

}  // namespace rtcosim::config
