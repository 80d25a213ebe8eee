// The flexible_arm block through the runtime (issue 16): a clamped beam
// rings at its analytic frequency, and the paper's near-singular reach
// (examples/rim_arm_contact_flexible.yaml against
// examples/rim_arm_contact_stretched.yaml): the flexible RIM follows the
// monolithic solution where the rigid one diverges. Set
// RTCOSIM_RIM_REPORT=DIR to write the table and the plot of docs/rim.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include <gtest/gtest.h>

#include "rt_config/loader.hpp"
#include "runtime/virtual_executor.hpp"
#include "session/report/svg_plot.hpp"
#include "tasks/diagram.hpp"
#include "tests/support/alloc_counter.hpp"
#include "tests/support/graphs.hpp"

namespace rtcosim {
namespace {

using rtcosim::testing::build_graph;
using rtcosim::testing::checked;

config::GraphSpec spec_of(const std::string& yaml) { return checked(config::load_graph_text(yaml, "flex.yaml")); }

// One flexible link, joint locked, no tip mass, one mode, RK4 at 1 ms: the
// modal coordinate oscillates at the clamped-free beam's first frequency
// w_1 = 1.875104^2 sqrt(EI / (rhoA L^4)) = 11.118 rad/s for L = 1 m,
// EI = 10 N m^2, rhoA = 1 kg/m (RK4's phase error at w h = 0.011 is
// (w h)^4 / 120 ~ 1e-10); the undamped energy stays.
TEST(RimFlexible, ALockedBeamRingsAtTheCantileverFrequency) {
  const double l = 1.0, ei = 10.0, rho = 1.0;
  const std::string yaml =
      "name: beam\nduration: 10s\nrealtime: off\ntasks:\n  - {name: t, period: 1ms, integrator: rk4}\n"
      "blocks:\n  - {name: arm, type: flexible_arm, task: t, params: {lengths: [1.0], masses: [0], "
      "bending_stiffness: 10, mass_per_length: 1, gravity: 0, locked_joints: [0], interface: none, "
      "q0: [0.2, 0.01]}}\nwires: []\n";
  auto graph = build_graph(spec_of(yaml));
  auto* task = graph->find_task("t");
  const auto q = task->partition().find_output({"arm", "q"});
  const auto energy = task->partition().find_output({"arm", "energy"});
  std::vector<double> t, eta;
  double e0 = NAN, worst_e = 0.0, worst_lock = 0.0;
  runtime::VirtualExecutor(*graph).run(10.0, [&](runtime::TaskRuntime& tk, const runtime::FrameRecord&) {
    const auto& p = tk.partition();
    t.push_back(p.time());
    eta.push_back(p.output(q)[1]);
    const double e = p.output(energy)[0];
    if (std::isnan(e0)) e0 = e;
    worst_e = std::max(worst_e, std::fabs(e - e0));
    worst_lock = std::max(worst_lock, std::fabs(p.output(q)[0] - 0.2));
  });
  std::vector<double> crossings;
  for (std::size_t k = 1; k < t.size(); ++k) {
    if (eta[k - 1] < 0.0 && eta[k] >= 0.0) {
      crossings.push_back(t[k - 1] + (t[k] - t[k - 1]) * (-eta[k - 1]) / (eta[k] - eta[k - 1]));
    }
  }
  ASSERT_GE(crossings.size(), 10u);
  const double period = (crossings.back() - crossings.front()) / static_cast<double>(crossings.size() - 1);
  const double omega = 1.875104068711961 * 1.875104068711961 * std::sqrt(ei / (rho * std::pow(l, 4)));
  const double expected = 2 * M_PI / omega;
  std::printf("locked beam: period %.7f s, cantilever theory %.7f s; energy drift %.2g J (of %.3g); lock moved %.2g\n",
              period, expected, worst_e, e0, worst_lock);
  // Zero crossings interpolated linearly over 1 ms: a few 1e-7 s.
  EXPECT_NEAR(period / expected, 1.0, 1e-6);
  EXPECT_LT(worst_e, 1e-9 * e0);
  EXPECT_LT(worst_lock, 1e-12);
}

// The frames of both tasks of the flexible example (the arm's model and
// RIM, the payload's rim solve through it) allocate nothing once running.
TEST(RimFlexible, FramesOfTheFlexibleExampleAllocateNothing) {
  auto graph = build_graph(rtcosim::testing::load_example("rim_arm_contact_flexible.yaml"));
  graph->reset();
  const auto one_round = [&] {
    for (auto& t : graph->tasks()) {
      t->drain();
      t->step(t->spec().period);
      t->publish();
    }
  };
  for (int i = 0; i < 10; ++i) one_round();  // warm-up
  rtcosim::testing::AllocationScope scope;
  for (int i = 0; i < 200; ++i) one_round();
  EXPECT_EQ(scope.count(), 0u);
}

// One example run: the payload's x at its frames (co-simulation) and the
// merged diagram's (RK4, 0.1 ms) at the same times, and the condition of
// the arm's RIM at the arm's frames.
struct Reach {
  double wall = 0.0;
  std::vector<double> t, x, ref;
  std::vector<double> t_arm, condition, ref_condition;
};

Reach run_reach(const std::string& example) {
  const auto spec = rtcosim::testing::load_example(example);
  Reach r;
  for (const auto& b : spec.diagram.blocks) {
    if (b.name == "load") r.wall = b.params.number("load", "wall_x");
  }
  auto graph = build_graph(spec);
  runtime::TaskRuntime* payload = graph->find_task("payload");
  runtime::TaskRuntime* arm = graph->find_task("arm");
  const auto x_out = payload->partition().find_output({"load", "x"});
  const auto rim_out = arm->partition().find_output({"robot", "rim"});
  runtime::VirtualExecutor(*graph).run(spec.duration, [&](runtime::TaskRuntime& tk, const runtime::FrameRecord&) {
    if (&tk == payload) {
      r.t.push_back(tk.partition().time());
      r.x.push_back(tk.partition().output(x_out)[0]);
    } else if (&tk == arm) {
      r.t_arm.push_back(tk.partition().time());
      r.condition.push_back(tk.partition().output(rim_out)[3]);
    }
  });
  static const auto blocks = tasks::BlockRegistry::with_builtins();
  tasks::ReferenceSolver ref(blocks, spec.diagram, 1e-4);
  ref.run(spec.duration, {{"load", "x"}, {"robot", "rim"}});
  for (double t : r.t) r.ref.push_back(ref.value(0, t, 0));
  for (double t : r.t_arm) r.ref_condition.push_back(ref.value(1, t, 3));
  return r;
}

struct Figures {
  double rms = 0.0, max_error = 0.0;  // of the distance to the wall, up to `fails`
  double fails = NAN;                 // first time the error exceeds 0.1 m or is not finite
  double penetration = 0.0, ref_penetration = 0.0;
  double max_condition = 0.0, ref_max_condition = 0.0;  // arm's RIM, before `fails`
};

Figures figures(const Reach& r) {
  Figures f;
  double sum = 0.0;
  std::size_t n = 0;
  for (std::size_t k = 0; k < r.t.size(); ++k) {
    const double e = r.x[k] - r.ref[k];
    if (!std::isfinite(e) || std::fabs(e) > 0.1) {
      f.fails = r.t[k];
      break;
    }
    sum += e * e;
    ++n;
    f.max_error = std::max(f.max_error, std::fabs(e));
    f.penetration = std::max(f.penetration, r.x[k] - r.wall);
  }
  f.rms = std::sqrt(sum / static_cast<double>(std::max<std::size_t>(n, 1)));
  for (std::size_t k = 0; k < r.ref.size(); ++k) f.ref_penetration = std::max(f.ref_penetration, r.ref[k] - r.wall);
  for (std::size_t k = 0; k < r.t_arm.size(); ++k) {
    if (!std::isnan(f.fails) && r.t_arm[k] >= f.fails) break;
    f.max_condition = std::max(f.max_condition, r.condition[k]);
  }
  for (double c : r.ref_condition) f.ref_max_condition = std::max(f.ref_max_condition, c);
  return f;
}

// The paper's figure 1b in small: the arm reaches almost straight at the
// wall with its shoulder locked. The rigid arm's RIM has an effective mass
// along the arm that grows without bound near the stretched configuration;
// the co-simulation diverges right at the impact although the monolithic
// solution is harmless. The flexible arm's RIM stays well conditioned (the
// beam's bending gives the tip the direction the rigid links cannot) and
// its co-simulation follows its monolithic solution.
TEST(RimFlexible, FlexibleRimFollowsTheReachWhereTheRigidRimDiverges) {
  const Reach flex = run_reach("rim_arm_contact_flexible.yaml");
  const Reach rigid = run_reach("rim_arm_contact_stretched.yaml");
  const Figures ff = figures(flex);
  const Figures fr = figures(rigid);
  std::ostringstream table;
  char row[400];
  table << "| arm | RMS distance error | max distance error | diverges at | max penetration (co-sim / monolithic) | "
           "largest RIM condition (co-sim / monolithic) |\n|---|---|---|---|---|---|\n";
  for (const auto& [name, f] : {std::pair{"flexible", ff}, std::pair{"rigid", fr}}) {
    std::snprintf(row, sizeof row, "| %s | %.3g mm | %.3g mm | %s | %.3g mm / %.3g mm | %.3g / %.3g |\n", name,
                  f.rms * 1e3, f.max_error * 1e3,
                  std::isnan(f.fails) ? "never" : (std::to_string(f.fails) + " s").c_str(), f.penetration * 1e3,
                  f.ref_penetration * 1e3, f.max_condition, f.ref_max_condition);
    table << row;
  }
  std::printf("%s", table.str().c_str());
  EXPECT_TRUE(std::isnan(ff.fails));
  EXPECT_LT(ff.rms, 1e-2);
  EXPECT_LT(ff.max_condition, 1e3);
  EXPECT_GT(ff.ref_penetration, 1e-3);  // it does hit the wall
  EXPECT_NEAR(ff.penetration, ff.ref_penetration, 0.5 * ff.ref_penetration);
  // The rigid co-simulation diverges within the first second, at a RIM
  // condition above 1e4; its own monolithic solution stays near the wall.
  EXPECT_LT(fr.fails, 1.0);
  EXPECT_GT(fr.max_condition, 1e4);
  for (double x : rigid.ref) {
    ASSERT_TRUE(std::isfinite(x));
    EXPECT_LT(x, rigid.wall + 0.05);
  }

  if (const char* dir = std::getenv("RTCOSIM_RIM_REPORT")) {
    std::ofstream(std::string(dir) + "/rim_arm_flexible.md") << table.str();
    plot::Figure fig;
    fig.title = "near-singular reach: payload distance to the wall, rigid and flexible arm RIM against the monolithic";
    fig.x_label = "time (s)";
    const auto distance = [](const Reach& r, const std::vector<double>& x, double fails) {
      std::vector<double> d;
      for (std::size_t k = 0; k < x.size(); ++k)
        d.push_back(r.t[k] < fails || std::isnan(fails) ? (r.wall - x[k]) * 1e3 : NAN);
      return d;
    };
    plot::Panel p1;
    p1.y_label = "wall - x (mm)";
    p1.series.push_back({"rigid arm: monolithic", rigid.t, distance(rigid, rigid.ref, NAN), "#ff9896", 1.5, true});
    p1.series.push_back(
        {"rigid arm: RIM co-simulation", rigid.t, distance(rigid, rigid.x, fr.fails), "#d62728", 2.0, false});
    p1.series.push_back({"flexible arm: monolithic", flex.t, distance(flex, flex.ref, NAN), "#9ecae1", 1.5, true});
    p1.series.push_back(
        {"flexible arm: RIM co-simulation", flex.t, distance(flex, flex.x, NAN), "#1f77b4", 2.0, false});
    if (!std::isnan(fr.fails)) {
      p1.markers.push_back(fr.fails);
      p1.marker_label = "rigid co-simulation diverges";
    }
    fig.panels.push_back(p1);
    plot::Panel pe;
    pe.y_label = "distance error vs monolithic (mm)";
    const auto error = [](const Reach& r, double fails) {
      std::vector<double> e;
      for (std::size_t k = 0; k < r.x.size(); ++k) {
        e.push_back(std::isnan(fails) || r.t[k] < fails ? (r.ref[k] - r.x[k]) * 1e3 : NAN);
      }
      return e;
    };
    pe.series.push_back({"rigid arm (until it diverges)", rigid.t, error(rigid, fr.fails), "#d62728", 2.0, false});
    pe.series.push_back({"flexible arm", flex.t, error(flex, NAN), "#1f77b4", 2.0, false});
    fig.panels.push_back(pe);
    plot::Panel p2;
    p2.y_label = "log10 condition of the arm's RIM";
    const auto log_cond = [](const Reach& r, const std::vector<double>& c, double fails) {
      std::vector<double> y;
      for (std::size_t k = 0; k < c.size(); ++k) {
        y.push_back(std::isnan(fails) || r.t_arm[k] < fails ? std::log10(std::max(1.0, c[k])) : NAN);
      }
      return y;
    };
    p2.series.push_back(
        {"rigid arm: monolithic", rigid.t_arm, log_cond(rigid, rigid.ref_condition, NAN), "#ff9896", 1.5, true});
    p2.series.push_back(
        {"rigid arm: co-simulation", rigid.t_arm, log_cond(rigid, rigid.condition, fr.fails), "#d62728", 2.0, false});
    p2.series.push_back(
        {"flexible arm: co-simulation", flex.t_arm, log_cond(flex, flex.condition, NAN), "#1f77b4", 2.0, false});
    fig.panels.push_back(p2);
    std::string why;
    EXPECT_TRUE(plot::write_svg(fig, std::string(dir) + "/rim_arm_flexible.svg", &why)) << why;
  }
}

}  // namespace
}  // namespace rtcosim
