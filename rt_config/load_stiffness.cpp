// The check that a task's explicit integrator is stable for the linear
// modes its partition starts with (docs/config.md, "Integrators").
#include <complex>
#include <cstdio>

#include "base/duration.hpp"
#include "rt_config/load_context.hpp"
#include "tasks/diagram.hpp"
#include "tasks/linear_solver.hpp"

namespace rtcosim::config::detail {

namespace {

// Past these the check costs more than it tells (a partition is built again
// for it, and its eigenvalues are O(n^3)): large graphs go unchecked.
constexpr std::size_t kMaxBlocks = 2000;
constexpr std::size_t kMaxStates = 400;

// The longest step at most `period` at which `kind` does not amplify the
// mode lambda (bisection on the ray h lambda; the stable part of each
// explicit method's region along a ray from 0 into Re z < 0 is one interval).
double longest_stable_step(tasks::IntegratorKind kind, std::complex<double> lambda, double period) {
  double lo = 0.0, hi = period;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (tasks::amplification(kind, mid * lambda) <= 1.0 + 1e-12 ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace

void GraphLoader::check_stiffness() {
  if (has_errors(result_.diagnostics) || graph_.diagram.blocks.size() > kMaxBlocks) return;
  std::vector<tasks::TaskPartitionSpec> parts;
  try {
    parts = tasks::split_by_task(blocks_, graph_.diagram);
  } catch (const std::exception&) {
    return;  // the diagram's own checks have said what is wrong with it
  }
  for (const TaskSpec& t : graph_.tasks) {
    if (tasks::linearly_implicit(t.integrator) || !(t.period > 0.0)) continue;
    const tasks::TaskPartitionSpec* part = nullptr;
    for (const auto& p : parts) part = p.task == t.name ? &p : part;
    if (part == nullptr) continue;
    std::vector<std::complex<double>> lambdas;
    try {
      auto p = tasks::build_partition(blocks_, t.name, part->blocks, part->wires, part->externals, t.integrator);
      const std::size_t n = p->state_size();
      if (n == 0 || n > kMaxStates) continue;
      const std::vector<double> j = p->linearisation();
      lambdas = tasks::eigenvalues(j.data(), n);
    } catch (const std::exception&) {
      continue;
    }
    // The longest step the task takes: its period, or with a measured
    // step its max_step (4 periods unless set).
    const double h = t.step == StepPolicy::kMeasured ? (t.max_step > 0.0 ? t.max_step : 4.0 * t.period) : t.period;
    // The fastest mode that decays, which the integrator makes grow, and
    // the longest step at which none of those grows. A mode whose damping
    // is within the differences' rounding of none (an undamped
    // oscillator's) is no such mode.
    std::complex<double> worst;
    double growth = 0.0, stable = h;
    for (const auto& l : lambdas) {
      if (!(l.real() < -1e-6 * std::abs(l))) continue;
      const double a = tasks::amplification(t.integrator, h * l);
      if (!(a > 1.0 + 1e-9)) continue;
      stable = std::min(stable, longest_stable_step(t.integrator, l, h));
      if (std::abs(l) > std::abs(worst)) {
        worst = l;
        growth = a;
      }
    }
    if (growth == 0.0) continue;
    char figures[256];
    if (worst.imag() == 0.0) {
      std::snprintf(figures, sizeof figures, "a mode at %.4g 1/s (h |lambda| = %.3g)", worst.real(),
                    h * std::abs(worst));
    } else {
      std::snprintf(figures, sizeof figures, "a mode at %.4g %+.4gi 1/s (h |lambda| = %.3g)", worst.real(),
                    std::fabs(worst.imag()), h * std::abs(worst));
    }
    char grows[64];
    std::snprintf(grows, sizeof grows, "%.3g", growth);
    const std::string name(tasks::integrator_name(t.integrator));
    const std::string step =
        t.step == StepPolicy::kMeasured ? "max_step " + base::format_duration(h) : "period " + base::format_duration(h);
    in_.warning(t.where, "task '" + t.name + "' (integrator " + name + ", " + step +
                             "): its partition's linearisation at the start has " + figures + ", beyond " + name +
                             "'s stability at that step: each step multiplies it by " + grows +
                             " where it should decay, so the run diverges once it is excited — use integrator: ros2 "
                             "(linearly implicit, L-stable), or a " +
                             (t.step == StepPolicy::kMeasured ? "max_step" : "period") + " of at most " +
                             base::format_duration(stable) + " (where no decaying mode grows)");
  }
}

}  // namespace rtcosim::config::detail
