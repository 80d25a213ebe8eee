#pragma once

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace rtcosim::config {

/*
 * The delay model of the time synchronisation (thesis 4.6, eqs. 4.14-4.16):
 * every element along a signal chain (control function R, communication C,
 * plant P, data acquisition M, simulation S) has a dead time tau and a cycle
 * time theta. A hop from element a to element b delays a datum by
 *   delta(t - (tau_a + tau_b))  if a and b share a time base (synchronous),
 *   U(t; 0, theta_b)            otherwise (asynchronous: it waits for b's next cycle),
 * and the delay of a chain is the convolution of its hops' densities. The
 * output delay is Delta_o = mode(measurement path) - mode(simulation path),
 * taking the rightmost modal value where the mode is not unique (thesis 5.7).
 *
 * Densities are held on a grid of step dt as cell masses: a uniform
 * U(0, theta) is theta/dt equal masses at the cell centres, a dirac one mass.
 * Because every cycle time is a multiple of dt, that is exact, not a
 * discretisation: U(0, theta) is the sum of theta/dt boxes one cell wide, so
 * a path of k uniforms (and any diracs) is the sum over its cells of mass x
 * the cardinal B-spline of order k centred on the cell. The modes are taken
 * of that continuous density (to 1/128 of a cell), so a uniform one cell
 * wide has its mode at its right end and three equal uniforms theirs at
 * 1.5 theta, as the continuous densities do. Set-up code: allocates, throws
 * DelayModelError on values that do not lie on the grid. Nothing here runs in
 * a real-time frame.
 */
class DelayModelError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct DelayElement {
  std::string name;        // for error messages: "C", "plant", ...
  double dead_time = 0.0;  // tau, seconds
  double cycle = 0.0;      // theta, seconds
};

enum class HopKind { synchronous, asynchronous };

struct Hop {
  DelayElement from;
  DelayElement to;
  HopKind kind = HopKind::asynchronous;
  int repeat = 1;  // n: the hop's density convolved with itself n times (eq. 4.15's alpha^n_CM)
};

// "alpha^n_CM: C -> M async U(0, 4 ms)", for a printed chain.
std::string describe(const Hop& hop);

// A probability density as point masses at offset + i * dt.
class DelayDensity {
 public:
  static DelayDensity dirac(double at, double dt);
  static DelayDensity uniform(double width, double dt);  // U(0, width), width a multiple of dt

  DelayDensity convolve(const DelayDensity& other) const;

  double dt() const { return dt_; }
  double position(std::size_t i) const {
    return (static_cast<double>(half_offset_) + 2.0 * static_cast<double>(i)) * dt_ / 2.0;
  }
  const std::vector<double>& masses() const { return masses_; }
  double total_mass() const;
  double mean() const;
  // Sub-divisions of a cell in which the modes are found and Delta_o is
  // counted (so that equal modes give a Delta_o of exactly 0).
  static constexpr long kTicksPerCell = 128;
  // The continuous density's rightmost maximum (within 1e-12 relative), in
  // ticks of dt / kTicksPerCell from 0: a dirac's position; the right end of
  // a uniform's plateau (U(0, theta): theta, also when theta = dt); otherwise
  // the rightmost maximum of the B-spline sum, found on the tick grid.
  long rightmost_mode_ticks() const;
  double rightmost_mode() const { return static_cast<double>(rightmost_mode_ticks()) * dt_ / kTicksPerCell; }
  // The continuous density at `ticks` (per second).
  double density_at(long ticks) const;
  int order() const { return order_; }  // uniforms convolved into this density

 private:
  // Cell i's centre (i may lie outside the masses: the scan's end cells).
  long centre_ticks(long i) const { return half_offset_ * (kTicksPerCell / 2) + i * kTicksPerCell; }
  double dt_ = 0.0;
  long half_offset_ = 0;  // position of masses_[0] in units of dt/2
  int order_ = 0;
  std::vector<double> masses_;
};

DelayDensity hop_density(const Hop& hop, double dt);              // eq. 4.16
DelayDensity path_density(std::span<const Hop> path, double dt);  // convolution of the hops

// Eq. 4.15 from the two paths' rightmost modes. An empty path is delta(0).
struct OutputDelay {
  DelayDensity measurement;
  DelayDensity simulation;
  double measurement_mode = 0.0;
  double simulation_mode = 0.0;
  double delta_o = 0.0;
};
OutputDelay output_delay(std::span<const Hop> measurement_path, std::span<const Hop> simulation_path, double dt);

// Eq. 4.14: Delta_i = mode(u reaches the plant) - mode(u reaches the simulation).
double input_delay(std::span<const Hop> plant_path, std::span<const Hop> simulation_path, double dt);

}  // namespace rtcosim::config
