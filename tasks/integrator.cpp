#include "tasks/integrator.hpp"

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
