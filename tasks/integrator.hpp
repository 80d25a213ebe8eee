#pragma once

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
 */
enum class IntegratorKind { kEuler, kAb2, kRk2, kRk4 };

std::optional<IntegratorKind> parse_integrator(std::string_view name);
std::string_view integrator_name(IntegratorKind kind) noexcept;
// Derivative evaluations per step (for cost estimates and docs).
int evaluations_per_step(IntegratorKind kind) noexcept;

}  // namespace rtcosim::tasks
