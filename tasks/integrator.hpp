#pragma once

#include <complex>
#include <optional>
#include <string>
#include <string_view>

namespace rtcosim::tasks {

/*
 * The integration methods a partition can use (reference: "Predictor-
 * integration methods").
 *   euler  x += h f(t, x)                                  inputs at t
 *   ab2    variable-step Adams-Bashforth 2 with the real-time (modified
 *          Euler) input term: inputs and time-dependent sources taken at
 *          mid-frame t + h/2, the AB-2 extrapolation applied to the
 *          state-dependent part only                       inputs at t + h/2
 *   rk2    Heun                                            inputs at t, t + h
 *   rk4    classical Runge-Kutta                           inputs at t, t + h/2, t + h
 * Linearly implicit (Rosenbrock), for stiff partitions: J = df/dx at
 * (t, x) by finite differences, one LU of W = I - gamma h J per step, and
 * f_t = df/dt by a difference in time where f can depend on time.
 *   ros1   linearly implicit Euler: W k = f(t, x) + h f_t, x += h k.
 *          Order 1, L-stable (R(z) = 1 / (1 - z)), gamma = 1  inputs at t
 *   ros2   ROS2 (Verwer, Spee, Blom, Hundsdorfer, "A second-order
 *          Rosenbrock method applied to photochemical dispersion
 *          problems"): W k1 = f(t, x) + gamma h f_t, W k2 = f(t + h, x +
 *          h k1) - 2 k1 - gamma h f_t, x += h (3/2 k1 + 1/2 k2). Order 2
 *          for any W (a W-method: an inexact J keeps the order), L-stable,
 *          gamma = 1 + 1/sqrt(2)                          inputs at t, t + h
 */
enum class IntegratorKind { kEuler, kAb2, kRk2, kRk4, kRos1, kRos2 };

// True for the Rosenbrock methods: they need the partition's Jacobian.
[[nodiscard]] constexpr bool linearly_implicit(IntegratorKind kind) noexcept {
  return kind == IntegratorKind::kRos1 || kind == IntegratorKind::kRos2;
}

std::optional<IntegratorKind> parse_integrator(std::string_view name);

// How much one step of the method multiplies a mode y' = lambda y, at
// z = h lambda: |R(z)| for the one-step methods (euler 1 + z, rk2 and rk4
// their Taylor polynomials, ros1 1/(1 - z), ros2 its rational R), the
// larger root's magnitude of zeta^2 - (1 + 3z/2) zeta + z/2 for ab2. Above
// 1 where the method is unstable for that mode.
double amplification(IntegratorKind kind, std::complex<double> z) noexcept;
std::string_view integrator_name(IntegratorKind kind) noexcept;
// Derivative evaluations per step (for cost estimates and docs); the
// Rosenbrock methods add one per state for their Jacobian.
int evaluations_per_step(IntegratorKind kind) noexcept;

}  // namespace rtcosim::tasks
