// Issue 41: the configuration check warns when a task's explicit integrator
// is unstable, at the task's period, for a decaying linear mode of its
// partition (its linearisation at the start), with the growth per step and
// the longest stable period; never for the linearly implicit integrators,
// a resolved mode or an undamped one.
#include <gtest/gtest.h>

#include "rt_config/loader.hpp"

namespace rtcosim::config {
namespace {

// x1' = x2, x2' = -1e4 x1 - 10001 x2: eigenvalues -1 and -1e4.
std::string stiff_graph(const std::string& integrator, const std::string& period,
                        const std::string& a = "[[0, 1], [-1e4, -10001]]") {
  return "name: stiff\nduration: 1s\ntasks:\n  - {name: plant, period: " + period +
         ", cpu: 0, integrator: " + integrator +
         ", step: fixed}\nblocks:\n  - {name: sys, type: state_space, task: plant, params: {A: " + a +
         ", B: [[0], [1]], C: [[1, 0]], initial: [1, 0]}}\n"
         "  - {name: u, type: constant, task: plant, params: {value: 0}}\nwires:\n  - {from: u.y, to: sys.u}\n";
}

std::vector<Diagnostic> warnings(const std::string& text) {
  const LoadResult r = load_graph_text(text, "stiff.yaml");
  EXPECT_TRUE(r.ok());
  std::vector<Diagnostic> out;
  for (const auto& d : r.diagnostics) {
    if (d.severity == Diagnostic::Severity::kWarning) out.push_back(d);
  }
  return out;
}

TEST(StiffnessCheck, WarnsAtTheTaskWithTheModeItsGrowthAndTheLongestStablePeriod) {
  // At h = 1 ms, z = h lambda = -10. The growth per step is |R(-10)|:
  // rk4 1 - 10 + 50 - 166.7 + 416.7 = 291, euler |1 - 10| = 9, rk2
  // |1 - 10 + 50| = 41, ab2's larger root of zeta^2 + 14 zeta - 5 = 14.3.
  // The longest stable step is where |R| = 1 on the ray: rk4 2.7853 / 1e4,
  // euler and rk2 2 / 1e4, ab2 1 / 1e4.
  const struct {
    const char* integrator;
    const char* growth;
    double longest;  // seconds
  } cases[] = {
      {"rk4", "by 291 ", 2.7853e-4}, {"euler", "by 9 ", 2e-4}, {"rk2", "by 41 ", 2e-4}, {"ab2", "by 14.3 ", 1e-4}};
  for (const auto& c : cases) {
    const auto w = warnings(stiff_graph(c.integrator, "1ms"));
    ASSERT_EQ(w.size(), 1u) << c.integrator;
    EXPECT_EQ(w[0].line, 4) << c.integrator;
    EXPECT_EQ(w[0].column, 5) << c.integrator;
    const std::string& m = w[0].message;
    EXPECT_NE(m.find("task 'plant' (integrator " + std::string(c.integrator) + ", period 1 ms)"), std::string::npos)
        << m;
    EXPECT_NE(m.find("a mode at -1e+04 1/s (h |lambda| = 10)"), std::string::npos) << m;
    EXPECT_NE(m.find(c.growth), std::string::npos) << m;
    // "a period of at most 278.526 us (where ...": the bisection's step,
    // within 0.1 % of the interval's end.
    const auto at = m.find("a period of at most ");
    ASSERT_NE(at, std::string::npos) << m;
    const double us = std::stod(m.substr(at + 19));
    EXPECT_NEAR(us * 1e-6, c.longest, 1e-3 * c.longest) << m;
    EXPECT_NE(m.find(" us (where no decaying mode grows)"), std::string::npos) << m;
    EXPECT_NE(m.find("use integrator: ros2"), std::string::npos) << m;
  }
}

// Two unstable modes (rk2 at 1 ms): -2500 (stable up to 0.8 ms) and
// -1 +- 1000i (up to 201 us, where |1 + z + z^2/2| reaches 1 on its ray);
// the period suggested is the one where neither grows, not the fastest
// mode's. A measured step is judged at its max_step.
TEST(StiffnessCheck, SuggestsAPeriodWhereNoDecayingModeGrowsAndJudgesMeasuredStepsAtMaxStep) {
  // Block diagonal: [[-2500]] and [[-1, 1000], [-1000, -1]].
  const std::string graph =
      "name: two\nduration: 1s\ntasks:\n  - {name: plant, period: 1ms, cpu: 0, integrator: rk2, step: fixed}\n"
      "blocks:\n  - {name: sys, type: state_space, task: plant, params: {A: [[-2500, 0, 0], [0, -1, 1000], [0, -1000, "
      "-1]], B: [[1], [0], [0]], C: [[1, 0, 0]], initial: [1, 1, 0]}}\n"
      "  - {name: u, type: constant, task: plant, params: {value: 0}}\nwires:\n  - {from: u.y, to: sys.u}\n";
  auto w = warnings(graph);
  ASSERT_EQ(w.size(), 1u);
  const auto at = w[0].message.find("a period of at most ");
  ASSERT_NE(at, std::string::npos) << w[0].message;
  const double us = std::stod(w[0].message.substr(at + 19));
  // rk2 on lambda = -1 + 1000i: |1 + z + z^2/2| <= 1 up to h = 201 us.
  EXPECT_GT(us, 195.0) << w[0].message;
  EXPECT_LT(us, 205.0) << w[0].message;
  // A measured step at 0.1 ms with max_step 0.5 ms: judged at 0.5 ms.
  std::string measured = stiff_graph("euler", "100us");
  measured.replace(measured.find("step: fixed"), 11, "step: measured, max_step: 500us");
  w = warnings(measured);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].message.find("(integrator euler, max_step 500 us)"), std::string::npos) << w[0].message;
  EXPECT_NE(w[0].message.find("a max_step of at most"), std::string::npos) << w[0].message;
}

TEST(StiffnessCheck, SaysNothingWhereTheIntegratorIsStable) {
  // The linearly implicit integrators at any period.
  for (const char* i : {"ros1", "ros2"}) EXPECT_TRUE(warnings(stiff_graph(i, "1ms")).empty()) << i;
  // rk4 at 0.2 ms: z = -2, inside its interval (-2.79, 0].
  EXPECT_TRUE(warnings(stiff_graph("rk4", "200us")).empty());
  // An undamped oscillator (eigenvalues +-i): euler grows it at every step,
  // but it is no decaying mode made to grow; it is not this warning's.
  EXPECT_TRUE(warnings(stiff_graph("euler", "1ms", "[[0, 1], [-1, 0]]")).empty());
}

}  // namespace
}  // namespace rtcosim::config
