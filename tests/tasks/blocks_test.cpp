// Sources, math and linear blocks against their analytic responses.
#include <cmath>

#include <gtest/gtest.h>

#include "tasks/blocks/state_space.hpp"
#include "tasks/diagram.hpp"

namespace rtcosim::tasks {
namespace {

struct Zero final : InputSource {
  void sample(std::size_t, double, std::span<double> o) noexcept override {
    for (double& v : o) v = 0.0;
  }
};

// Runs blocks with rk4 at `h` to `until`, calling `check(t)` after each step.
struct Diagram {
  Diagram(std::vector<BlockSpec> blocks, std::vector<WireSpec> wires, IntegratorKind kind = IntegratorKind::kRk4)
      : p(build_partition(BlockRegistry::with_builtins(), "p", blocks, wires, {}, kind)) {}
  double out(const std::string& block, std::size_t i = 0, const std::string& port = "y") {
    return p->output(p->find_output({block, port}))[i];
  }
  double dout(const std::string& block, const std::string& port = "y") {
    return p->output_derivative(p->find_output({block, port}))[0];
  }
  template <typename F>
  void until(double end, double h, F&& check) {
    while (p->time() < end - 1e-12) {
      p->step(p->time(), h, none);
      check(p->time());
    }
  }
  std::unique_ptr<Partition> p;
  Zero none;
};

TEST(FirstOrderLag, StepResponse) {
  Diagram r({{"one", "constant", {{"value", 1.0}}, ""},
             {"lag", "first_order_lag", {{"gain", 2.0}, {"time_constant", 0.3}}, ""}},
            {{{"one", "y"}, {"lag", "u"}}});
  r.until(2.0, 0.001, [&](double t) { EXPECT_NEAR(r.out("lag"), 2.0 * (1.0 - std::exp(-t / 0.3)), 1e-11) << t; });
}

TEST(SecondOrder, StepResponsesUnderCriticalAndOverDamped) {
  const double wn = 4.0;
  for (double zeta : {0.3, 1.0, 2.0}) {
    Diagram r({{"one", "constant", {{"value", 1.0}}, ""}, {"so", "second_order", {{"wn", wn}, {"zeta", zeta}}, ""}},
              {{{"one", "y"}, {"so", "u"}}});
    auto exact = [&](double t) {
      if (zeta < 1.0) {
        const double wd = wn * std::sqrt(1 - zeta * zeta);
        return 1.0 - std::exp(-zeta * wn * t) * (std::cos(wd * t) + zeta * wn / wd * std::sin(wd * t));
      }
      if (zeta == 1.0) return 1.0 - std::exp(-wn * t) * (1.0 + wn * t);
      const double s = std::sqrt(zeta * zeta - 1.0);
      const double p1 = -wn * (zeta - s), p2 = -wn * (zeta + s);
      return 1.0 + (p2 * std::exp(p1 * t) - p1 * std::exp(p2 * t)) / (p1 - p2);
    };
    r.until(3.0, 0.001, [&](double t) { EXPECT_NEAR(r.out("so"), exact(t), 1e-9) << "zeta " << zeta << " t " << t; });
  }
}

TEST(TransferFunction, ControllableCanonicalFormAndStepResponse) {
  Eigen::MatrixXd a, b, c, d;
  // (s + 3) / (s^3 + 6 s^2 + 11 s + 6) = (s + 3) / ((s + 1)(s + 2)(s + 3)) = 1 / ((s + 1)(s + 2))
  transfer_function_to_state_space("tf", {1, 3}, {1, 6, 11, 6}, a, b, c, d);
  Eigen::MatrixXd a_expected(3, 3), b_expected(3, 1), c_expected(1, 3);
  a_expected << 0, 1, 0, 0, 0, 1, -6, -11, -6;
  b_expected << 0, 0, 1;
  c_expected << 3, 1, 0;
  EXPECT_EQ(a, a_expected);
  EXPECT_EQ(b, b_expected);
  EXPECT_EQ(c, c_expected);
  EXPECT_EQ(d(0, 0), 0.0);
  // Step response of 1/((s+1)(s+2)): 1/2 - e^{-t} + e^{-2t}/2.
  Diagram r({{"one", "constant", {{"value", 1.0}}, ""},
             {"tf", "transfer_function", {{"num", Vector{1, 3}}, {"den", Vector{1, 6, 11, 6}}}, ""}},
            {{{"one", "y"}, {"tf", "u"}}});
  r.until(4.0, 0.001,
          [&](double t) { EXPECT_NEAR(r.out("tf"), 0.5 - std::exp(-t) + 0.5 * std::exp(-2 * t), 1e-10) << t; });
  // A biproper one has a feedthrough: (2 s + 1) / (s + 1) = 2 - 1/(s + 1).
  transfer_function_to_state_space("tf", {2, 1}, {1, 1}, a, b, c, d);
  EXPECT_EQ(d(0, 0), 2.0);
  EXPECT_EQ(c(0, 0), -1.0);
  EXPECT_THROW(transfer_function_to_state_space("tf", {1, 0, 0}, {1, 1}, a, b, c, d), BlockError);
}

TEST(Integrator, StopsAtItsLimitAndLeavesWhenTheInputTurns) {
  Diagram r({{"rate", "sine", {{"frequency", 0.25}}, ""}, {"acc", "integrator", {{"upper", 0.5}}, ""}},
            {{{"rate", "y"}, {"acc", "u"}}});
  r.until(4.0, 0.001, [&](double t) {
    const double free = (1.0 - std::cos(M_PI / 2.0 * t)) / (M_PI / 2.0);  // integral of sin(pi t / 2)
    // The free integral reaches 0.5 at t = acos(1 - pi/4) / (pi/2) = 0.84 s.
    if (t < 0.8) {
      EXPECT_NEAR(r.out("acc"), free, 1e-9);  // below the limit: the plain integral
    } else if (t > 0.9 && t < 2.0) {
      EXPECT_DOUBLE_EQ(r.out("acc"), 0.5);  // held at the limit while the input pushes up
    } else if (t > 2.05) {
      EXPECT_LT(r.out("acc"), 0.5);  // the input turned negative: it leaves the limit
    }
  });
}

TEST(Step, AccelerationLimitedProfileIsSmoothAndReachesItsValue) {
  Diagram r({{"cmd", "step", {{"time", 0.2}, {"final", 2.0}, {"acceleration", 8.0}}, ""}}, {});
  const double rise = 2.0 * std::sqrt(2.0 / 8.0);  // 1 s
  double prev_dy = 0.0;
  r.until(2.0, 0.001, [&](double t) {
    const double tau = t - 0.2;
    const double y = r.out("cmd"), dy = r.dout("cmd");
    if (tau <= 0) {
      EXPECT_EQ(y, 0.0);
    } else if (tau < rise / 2) {
      EXPECT_NEAR(y, 4.0 * tau * tau, 1e-12);
      EXPECT_NEAR(dy, 8.0 * tau, 1e-12);
    } else if (tau < rise) {
      EXPECT_NEAR(y, 2.0 - 4.0 * (rise - tau) * (rise - tau), 1e-12);
    } else {
      EXPECT_EQ(y, 2.0);
      EXPECT_EQ(dy, 0.0);
    }
    EXPECT_LE(std::fabs(dy - prev_dy), 8.0 * 0.001 + 1e-9);  // |y''| <= acceleration
    prev_dy = dy;
  });
}

TEST(Sources, ValuesAndExactDerivatives) {
  Diagram r({{"ramp", "ramp", {{"slope", 3.0}, {"time", 0.5}, {"initial", 1.0}}, ""},
             {"wave", "sine", {{"amplitude", 2.0}, {"frequency", 1.5}, {"phase", 0.3}, {"bias", 0.1}}, ""},
             {"sweep", "chirp", {{"f0", 1.0}, {"f1", 3.0}, {"duration", 2.0}}, ""}},
            {});
  r.until(3.0, 0.01, [&](double t) {
    EXPECT_NEAR(r.out("ramp"), 1.0 + 3.0 * std::max(0.0, t - 0.5), 1e-12);
    const double w = 2 * M_PI * 1.5;
    EXPECT_NEAR(r.out("wave"), 0.1 + 2.0 * std::sin(w * t + 0.3), 1e-12);
    EXPECT_NEAR(r.dout("wave"), 2.0 * w * std::cos(w * t + 0.3), 1e-10);
    const double tt = std::min(t, 2.0);
    const double phase = 2 * M_PI * (1.0 * tt + 0.5 * 2.0 * tt * tt / 2.0 + (t > 2.0 ? 3.0 * (t - 2.0) : 0.0));
    EXPECT_NEAR(r.out("sweep"), std::sin(phase), 1e-9);
  });
}

TEST(Math, GainSumProductSwitchMuxDemux) {
  const std::vector<BlockSpec> blocks = {{"a", "constant", {{"value", Vector{1, 2}}}, ""},
                                         {"b", "constant", {{"value", 3.0}}, ""},
                                         {"m", "gain", {{"gain", Matrix{{1, 2}, {3, 4}, {5, 6}}}}, ""},
                                         {"k", "gain", {{"gain", 2.0}, {"width", 2.0}}, ""},
                                         {"s", "sum", {{"signs", std::string("+-+")}}, ""},
                                         {"q", "product", {{"ops", std::string("*/")}}, ""},
                                         {"sw", "switch", {{"threshold", 2.5}}, ""},
                                         {"d", "demux", {{"widths", Vector{1, 2}}}, ""},
                                         {"x", "mux", {{"widths", Vector{2, 1}}}, ""}};
  const std::vector<WireSpec> wires = {
      {{"a", "y"}, {"m", "u"}},    {{"a", "y"}, {"k", "u"}},   {{"m", "y"}, {"d", "u"}},
      {{"d", "y1"}, {"s", "u1"}},  {{"b", "y"}, {"s", "u2"}},  {{"b", "y"}, {"s", "u3"}},
      {{"d", "y1"}, {"q", "u1"}},  {{"b", "y"}, {"q", "u2"}},  {{"b", "y"}, {"sw", "control"}},
      {{"d", "y1"}, {"sw", "u1"}}, {{"b", "y"}, {"sw", "u3"}}, {{"k", "y"}, {"x", "u1"}},
      {{"b", "y"}, {"x", "u2"}}};
  Diagram r(blocks, wires);
  r.until(0.01, 0.01, [](double) {});
  EXPECT_EQ(r.out("m", 0), 5.0);
  EXPECT_EQ(r.out("m", 2), 17.0);
  EXPECT_EQ(r.out("d", 1, "y2"), 17.0);
  EXPECT_EQ(r.out("k", 1), 4.0);
  EXPECT_EQ(r.out("s"), 5.0 - 3.0 + 3.0);
  EXPECT_DOUBLE_EQ(r.out("q"), 5.0 / 3.0);
  EXPECT_EQ(r.out("sw"), 5.0);  // control 3 >= 2.5: u1
  EXPECT_EQ(r.out("x", 0), 2.0);
  EXPECT_EQ(r.out("x", 2), 3.0);
}

TEST(Discrete, TransferFunctionFollowsItsDifferenceEquationAndHoldsBetweenHits) {
  // y[k] = 0.5 u[k] + 0.2 u[k-1] + 0.3 y[k-1], u a sine sampled every 0.01 s,
  // partition steps of 0.0025 s (four per sample).
  Diagram r({{"u", "sine", {{"frequency", 3.0}}, ""},
             {"dtf",
              "discrete_transfer_function",
              {{"num", Vector{0.5, 0.2}}, {"den", Vector{1.0, -0.3}}, {"sample_time", 0.01}},
              ""},
             {"delay", "unit_delay", {{"sample_time", 0.01}, {"initial", 7.0}}, ""},
             {"hold", "zero_order_hold", {{"sample_time", 0.01}}, ""}},
            {{{"u", "y"}, {"dtf", "u"}}, {{"u", "y"}, {"delay", "u"}}, {{"u", "y"}, {"hold", "u"}}},
            IntegratorKind::kEuler);
  double y_prev = 0.0, u_prev = 0.0;
  std::vector<double> samples;
  for (int k = 0; k < 50; ++k) {
    const double uk = std::sin(2 * M_PI * 3.0 * 0.01 * k);
    const double yk = 0.5 * uk + 0.2 * u_prev + 0.3 * y_prev;
    for (int j = 0; j < 4; ++j) {
      r.p->step(r.p->time(), 0.0025, r.none);
      // Between hits (and at the step ends inside the sample period) the
      // outputs hold the sample-k values.
      if (j < 3) {
        EXPECT_NEAR(r.out("dtf"), yk, 1e-12) << k;
        EXPECT_NEAR(r.out("hold"), uk, 1e-12) << k;
        EXPECT_NEAR(r.out("delay"), k == 0 ? 7.0 : samples.back(), 1e-12) << k;
      }
    }
    samples.push_back(uk);
    u_prev = uk;
    y_prev = yk;
  }
}

TEST(BlockErrors, NameTheBlockTheParameterAndWhatIsExpected) {
  const auto r = BlockRegistry::with_builtins();
  auto error = [&](const std::string& type, BlockParams p) {
    try {
      (void)r.create(type, "b", p);
    } catch (const BlockError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("first_order_lag", {}), "block 'b': parameter 'time_constant' is missing — expected a number");
  EXPECT_EQ(error("second_order", {{"wn", -2.0}}), "block 'b': parameter 'wn' = -2 — expected a positive number");
  EXPECT_EQ(error("state_space", {{"A", Matrix{{1, 2}}}, {"B", Matrix{{1}}}, {"C", Matrix{{1}}}}),
            "block 'b': A must be square");
  EXPECT_NE(error("transfer_function", {{"num", Vector{1, 0, 0}}, {"den", Vector{1, 1}}}).find("improper"),
            std::string::npos);
  EXPECT_NE(error("sum", {{"signs", std::string("+*")}}).find("expected a text of '+' and '-'"), std::string::npos);
  EXPECT_EQ(error("gain", {{"gain", 1.0}, {"gian", 2.0}}),
            "block 'b' of type 'gain' has no parameter 'gian' — expected one of: gain, width (did you mean 'gain'?)");
  EXPECT_NE(error("sinus", {}).find("unknown block type 'sinus'"), std::string::npos);
  EXPECT_NE(error("sinus", {}).find("(did you mean 'sine'?)"), std::string::npos);
}

// The stand-in of a part a build left out (RTCOSIM_WITHOUT): its type is
// listed, and a block of it is refused with the part's name and the way to
// build it, before its parameters are looked at.
TEST(BlockErrors, ATypeOfAPartLeftOutIsRefusedByNameWithHowToBuildIt) {
  BlockRegistry r;
  r.add(left_out_block_type("fmu", "fmi"));
  ASSERT_NE(r.find("fmu"), nullptr);
  try {
    (void)r.create("fmu", "plant", {{"file", std::string("x.fmu")}});
    FAIL() << "a left-out type built a block";
  } catch (const BlockError& e) {
    EXPECT_EQ(std::string(e.what()),
              "block 'plant': block type 'fmu' is not built into this rtcosim: its build left out the part 'fmi' "
              "(RTCOSIM_WITHOUT, as scripts/quickstart.sh builds it) — scripts/test.sh, or cmake -DRTCOSIM_WITHOUT= "
              "and a rebuild, builds every part");
  }
}

}  // namespace
}  // namespace rtcosim::tasks
