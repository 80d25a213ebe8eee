#include "tasks/integrator.hpp"

#include <algorithm>
#include <cmath>

namespace rtcosim::tasks {

std::optional<IntegratorKind> parse_integrator(std::string_view name) {
  if (name == "euler") return IntegratorKind::kEuler;
  if (name == "ab2") return IntegratorKind::kAb2;
  if (name == "rk2") return IntegratorKind::kRk2;
  if (name == "rk4") return IntegratorKind::kRk4;
  if (name == "ros1") return IntegratorKind::kRos1;
  if (name == "ros2") return IntegratorKind::kRos2;
  return std::nullopt;
}

std::string_view integrator_name(IntegratorKind kind) noexcept {
  switch (kind) {
    case IntegratorKind::kEuler:
      return "euler";
    case IntegratorKind::kAb2:
      return "ab2";
    case IntegratorKind::kRk2:
      return "rk2";
    case IntegratorKind::kRk4:
      return "rk4";
    case IntegratorKind::kRos1:
      return "ros1";
    case IntegratorKind::kRos2:
      return "ros2";
  }
  return "?";
}

double amplification(IntegratorKind kind, std::complex<double> z) noexcept {
  using C = std::complex<double>;
  switch (kind) {
    case IntegratorKind::kEuler:
      return std::abs(1.0 + z);
    case IntegratorKind::kRk2:
      return std::abs(1.0 + z + z * z / 2.0);
    case IntegratorKind::kRk4:
      return std::abs(1.0 + z * (1.0 + z * (1.0 / 2.0 + z * (1.0 / 6.0 + z / 24.0))));
    case IntegratorKind::kRos1:
      return std::abs(1.0 / (1.0 - z));
    case IntegratorKind::kRos2: {
      const double gamma = 1.0 + 1.0 / std::sqrt(2.0);
      const C d = 1.0 - gamma * z;
      return std::abs(1.0 + 2.0 * z / d + (0.5 * z * z - z) / (d * d));
    }
    case IntegratorKind::kAb2: {
      const C b = 1.0 + 1.5 * z, c = 0.5 * z;  // zeta^2 - b zeta + c = 0
      const C root = std::sqrt(b * b - 4.0 * c);
      return std::max(std::abs((b + root) / 2.0), std::abs((b - root) / 2.0));
    }
  }
  return 0.0;
}

int evaluations_per_step(IntegratorKind kind) noexcept {
  switch (kind) {
    case IntegratorKind::kEuler:
      return 1;
    case IntegratorKind::kAb2:
      return 2;
    case IntegratorKind::kRk2:
      return 2;
    case IntegratorKind::kRk4:
      return 4;
    case IntegratorKind::kRos1:
      return 1;
    case IntegratorKind::kRos2:
      return 2;
  }
  return 0;
}

}  // namespace rtcosim::tasks
