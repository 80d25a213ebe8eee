#include "tasks/partition.hpp"

#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

#include "tasks/diagram.hpp"
#include "tests/support/alloc_counter.hpp"

namespace rtcosim::tasks {
namespace {

struct Sine final : InputSource {
  void sample(std::size_t, double t, std::span<double> o) noexcept override {
    for (double& v : o) v = std::sin(t);
  }
};

std::string error_of(const std::vector<BlockSpec>& blocks, const std::vector<WireSpec>& wires,
                     std::vector<ExternalInputSpec> externals = {}) {
  try {
    (void)build_partition(BlockRegistry::with_builtins(), "p", blocks, wires, std::move(externals),
                          IntegratorKind::kEuler);
  } catch (const BlockError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Partition, OrdersBlocksOverDirectFeedthrough) {
  const auto r = BlockRegistry::with_builtins();
  auto p = build_partition(r, "p",
                           {{"total", "sum", {{"signs", std::string("++")}}, ""},
                            {"double", "gain", {{"gain", 2.0}}, ""},
                            {"one", "constant", {{"value", 1.0}}, ""},
                            {"state", "integrator", {}, ""}},
                           {{{"one", "y"}, {"double", "u"}},
                            {{"double", "y"}, {"total", "u1"}},
                            {{"state", "y"}, {"total", "u2"}},
                            {{"total", "y"}, {"state", "u"}}},
                           {}, IntegratorKind::kEuler);
  const auto order = p->evaluation_order();
  auto pos = [&](const std::string& n) { return std::find(order.begin(), order.end(), n) - order.begin(); };
  EXPECT_LT(pos("one"), pos("double"));
  EXPECT_LT(pos("double"), pos("total"));
  EXPECT_LT(pos("state"), pos("total"));  // an integrator breaks the loop total -> state -> total
}

TEST(Partition, AnAlgebraicLoopIsAnErrorNamingItsBlocks) {
  const std::string e =
      error_of({{"g", "gain", {{"gain", 0.5}}, ""}, {"s", "sum", {}, ""}, {"c", "constant", {{"value", 1.0}}, ""}},
               {{{"c", "y"}, {"s", "u1"}}, {{"g", "y"}, {"s", "u2"}}, {{"s", "y"}, {"g", "u"}}});
  EXPECT_NE(e.find("algebraic loop through blocks"), std::string::npos) << e;
  EXPECT_NE(e.find("g -> s -> g"), std::string::npos) << e;
  EXPECT_NE(e.find("unit_delay"), std::string::npos) << e;
}

// A block with one state x0 (held: x' = 0), a state-only output y = x and
// an output z = u that passes its input straight through.
class Mirror final : public Block {
 public:
  Mirror(std::string name, double x0) : Block(std::move(name), "mirror"), x0_(x0) {
    add_input("u", 1, true);
    add_output("y", 1, true);
    add_output("z", 1);
    set_continuous_states(1);
  }
  void initialize(std::span<double> x, std::span<double>) const noexcept override { x[0] = x0_; }
  void state_outputs(const BlockContext& c) const noexcept override {
    ++state_output_calls;
    c.out(0, 0, c.x[0]);
  }
  void output(const BlockContext& c) const noexcept override {
    c.out(0, 0, c.x[0]);
    c.out(1, 0, c.in(0));
  }
  void derivatives(const BlockContext&, std::span<double> dx) const noexcept override { dx[0] = 0.0; }

  mutable int state_output_calls = 0;

 private:
  double x0_;
};

std::unique_ptr<Partition> mirrors(const std::vector<WireSpec>& wires, std::vector<const Mirror*>* made = nullptr) {
  std::vector<std::unique_ptr<Block>> blocks;
  blocks.push_back(std::make_unique<Mirror>("a", 1.0));
  blocks.push_back(std::make_unique<Mirror>("b", 2.0));
  if (made) {
    for (const auto& b : blocks) made->push_back(static_cast<const Mirror*>(b.get()));
  }
  auto p = std::make_unique<Partition>("p", std::move(blocks), wires, std::vector<ExternalInputSpec>{},
                                       IntegratorKind::kEuler);
  p->reset(0.0);
  Sine none;
  p->refresh_outputs(none);
  return p;
}

// Two blocks that feed each other only from state-only outputs (as two
// mechanical bodies exchange their reduced interface models) form no
// algebraic loop: each sees the other's state in the same evaluation.
TEST(Partition, AWireFromAStateOnlyOutputClosesNoLoop) {
  auto p = mirrors({{{"a", "y"}, {"b", "u"}}, {{"b", "y"}, {"a", "u"}}});
  EXPECT_EQ(p->output(p->find_output({"a", "z"}))[0], 2.0);
  EXPECT_EQ(p->output(p->find_output({"b", "z"}))[0], 1.0);
  // a.u <- b.z still orders b before a: b.z = a.y = 1 reaches a.z in the
  // same evaluation only in that order.
  std::vector<const Mirror*> made;
  auto q = mirrors({{{"a", "y"}, {"b", "u"}}, {{"b", "z"}, {"a", "u"}}}, &made);
  const auto order = q->evaluation_order();
  ASSERT_EQ(order.size(), 2u);
  EXPECT_EQ(order[0], "b");
  EXPECT_EQ(q->output(q->find_output({"a", "z"}))[0], 1.0);
  // Only a.y is read before its block's turn could come: b's state-only
  // output feeds nothing, so b's model is not evaluated a second time.
  EXPECT_GT(made[0]->state_output_calls, 0);
  EXPECT_EQ(made[1]->state_output_calls, 0);
}

TEST(Partition, ALoopThroughPassThroughOutputsIsStillRefused) {
  try {
    (void)mirrors({{{"a", "z"}, {"b", "u"}}, {{"b", "z"}, {"a", "u"}}});
    FAIL() << "a real algebraic loop was accepted";
  } catch (const BlockError& e) {
    EXPECT_NE(std::string(e.what()).find("algebraic loop through blocks a -> b -> a"), std::string::npos) << e.what();
  }
}

TEST(Partition, WiringErrorsNameWhatIsWrong) {
  const std::vector<BlockSpec> two = {{"src", "constant", {{"value", Vector{1, 2}}}, ""},
                                      {"g", "gain", {{"gain", 1.0}}, ""}};
  EXPECT_EQ(error_of(two, {{{"scr", "y"}, {"g", "u"}}}),
            "wire 'scr.y -> g.u': partition 'p' has no block 'scr' (did you mean 'src'?)");
  EXPECT_EQ(error_of(two, {{{"src", "out"}, {"g", "u"}}}),
            "wire 'src.out -> g.u': block 'src' (constant) has no output port 'out' — its outputs: y");
  EXPECT_EQ(error_of(two, {{{"src", "y"}, {"g", "u"}}}),
            "wire 'src.y -> g.u': widths differ (src.y has 2 signal(s), g.u expects 1)");
  EXPECT_EQ(error_of({{"a", "constant", {{"value", 1.0}}, ""},
                      {"b", "constant", {{"value", 2.0}}, ""},
                      {"g", "gain", {{"gain", 1.0}}, ""}},
                     {{{"a", "y"}, {"g", "u"}}, {{"b", "y"}, {"g", "u"}}}),
            "input 'g.u' is driven twice: by 'a.y' and by 'b.y' — an input takes one source");
  EXPECT_EQ(error_of({{"g", "gain", {{"gain", 1.0}}, ""}}, {}),
            "input 'g.u' of block 'g' (gain) is not connected — wire a block output or an external input to it");
  EXPECT_EQ(error_of({{"g", "gain", {{"gain", 1.0}}, ""}, {"g", "gain", {{"gain", 2.0}}, ""}}, {}),
            "partition 'p': two blocks are named 'g' — block names must be unique");
  EXPECT_EQ(error_of({{"g", "gain", {{"gain", 1.0}}, ""}}, {}, {{"x", 1, {{"g", "in"}}}}),
            "external input 'x' -> g.in: block 'g' (gain) has no input port 'in' — its inputs: u (did you mean 'u'?)");
}

TEST(Partition, OutputsCarryTheirDerivativesWhereKnown) {
  const auto r = BlockRegistry::with_builtins();
  auto p = build_partition(
      r, "p",
      {{"wave", "sine", {{"frequency", 0.5}}, ""},
       {"amp", "gain", {{"gain", 3.0}}, ""},
       {"acc", "integrator", {}, ""},
       {"ss", "state_space", {{"A", Matrix{{-1}}}, {"B", Matrix{{1}}}, {"C", Matrix{{1}}}, {"D", Matrix{{2}}}}, ""}},
      {{{"wave", "y"}, {"amp", "u"}}, {{"amp", "y"}, {"acc", "u"}}}, {{"x", 1, {{"ss", "u"}}}}, IntegratorKind::kRk4);
  Sine in;
  p->step(0.0, 0.1, in);
  const double w = 2.0 * M_PI * 0.5;
  const auto wave = p->find_output({"wave", "y"}), amp = p->find_output({"amp", "y"}),
             acc = p->find_output({"acc", "y"}), ss = p->find_output({"ss", "y"});
  EXPECT_NEAR(p->output_derivative(wave)[0], w * std::cos(w * 0.1), 1e-12);
  EXPECT_NEAR(p->output_derivative(amp)[0], 3.0 * w * std::cos(w * 0.1), 1e-12);
  EXPECT_NEAR(p->output_derivative(acc)[0], p->output(amp)[0], 1e-12);  // an integrator's y' is its input
  EXPECT_TRUE(p->output_derivative_valid(acc, 0));
  EXPECT_FALSE(p->output_derivative_valid(ss, 0));  // D != 0 and the external input has no derivative
}

TEST(Partition, SnapshotRestoreContinuesBitIdentically) {
  for (auto kind : {IntegratorKind::kEuler, IntegratorKind::kAb2, IntegratorKind::kRk2, IntegratorKind::kRk4}) {
    const auto r = BlockRegistry::with_builtins();
    auto p = build_partition(r, "p",
                             {{"plant", "second_order", {{"wn", 5.0}, {"zeta", 0.3}}, ""},
                              {"hold", "zero_order_hold", {{"sample_time", 0.03}}, ""},
                              {"limit", "rate_limiter", {{"rising", 3.0}}, ""}},
                             {{{"hold", "y"}, {"limit", "u"}}, {{"limit", "y"}, {"plant", "u"}}},
                             {{"x", 1, {{"hold", "u"}}}}, kind);
    Sine in;
    double t = 0.0;
    for (int k = 0; k < 37; ++k, t += 0.01) p->step(t, 0.01, in);
    p->snapshot();
    std::vector<std::vector<double>> first;
    const double t0 = t;
    for (int k = 0; k < 23; ++k, t += 0.0123) {
      p->step(t, 0.0123, in);
      first.emplace_back(p->state().begin(), p->state().end());
    }
    p->restore();
    EXPECT_EQ(p->time(), t0);
    t = t0;
    for (int k = 0; k < 23; ++k, t += 0.0123) {
      p->step(t, 0.0123, in);
      const std::vector<double> again(p->state().begin(), p->state().end());
      EXPECT_EQ(again, first[static_cast<std::size_t>(k)]) << integrator_name(kind) << " step " << k;
    }
  }
}

TEST(Partition, StepsAllocateNothing) {
  for (auto kind : {IntegratorKind::kEuler, IntegratorKind::kAb2, IntegratorKind::kRk2, IntegratorKind::kRk4}) {
    const auto r = BlockRegistry::with_builtins();
    Matrix a(50, std::vector<double>(50, 0.0));
    for (std::size_t i = 0; i < 50; ++i) a[i][i] = -1.0 - 0.01 * static_cast<double>(i);
    auto p = build_partition(
        r, "p",
        {{"src", "chirp", {}, ""},
         {"k", "gain", {{"gain", 2.0}}, ""},
         {"s", "sum", {{"signs", std::string("+-")}}, ""},
         {"ss", "state_space", {{"A", a}, {"B", Matrix(50, Vector{1.0})}, {"C", Matrix{Vector(50, 0.02)}}}, ""},
         {"pid", "pid", {{"kp", 1.0}, {"ki", 0.5}, {"kd", 0.1}, {"upper", 2.0}}, ""}},
        {{{"src", "y"}, {"k", "u"}},
         {{"k", "y"}, {"s", "u1"}},
         {{"ss", "y"}, {"s", "u2"}},
         {{"s", "y"}, {"pid", "e"}},
         {{"pid", "u"}, {"ss", "u"}}},
        {}, kind);
    Sine in;
    double t = 0.0;
    for (int k = 0; k < 10; ++k, t += 0.001) p->step(t, 0.001, in);
    rtcosim::testing::AllocationScope scope;
    for (int k = 0; k < 10000; ++k, t += 0.001) p->step(t, 0.001, in);
    EXPECT_EQ(scope.count(), 0u) << integrator_name(kind);
  }
}

TEST(Partition, ResetRestoresTheInitialStates) {
  const auto r = BlockRegistry::with_builtins();
  auto p = build_partition(r, "p", {{"lag", "first_order_lag", {{"time_constant", 0.1}, {"initial", 3.0}}, ""}}, {},
                           {{"x", 1, {{"lag", "u"}}}}, IntegratorKind::kAb2);
  Sine in;
  for (int k = 0; k < 20; ++k) p->step(0.01 * k, 0.01, in);
  EXPECT_NE(p->state()[0], 3.0);
  p->reset(0.0);
  EXPECT_EQ(p->state()[0], 3.0);
  EXPECT_EQ(p->time(), 0.0);
}

// A state that overflows stops the partition and names its block: u = 1,
// gain 1e308, integrated with Euler at h = 1: 1e308 after the first step,
// 2e308 = inf in the second. `slow` (state 0) stays finite; `acc` owns state 1.
TEST(Partition, AStateThatBecomesInfiniteStopsItNamingTheBlock) {
  struct One final : InputSource {
    void sample(std::size_t, double, std::span<double> out) noexcept override {
      for (double& v : out) v = 1.0;
    }
  } one;
  const auto r = BlockRegistry::with_builtins();
  auto p = build_partition(
      r, "p", {{"slow", "integrator", {}, ""}, {"huge", "gain", {{"gain", 1e308}}, ""}, {"acc", "integrator", {}, ""}},
      {{{"huge", "y"}, {"acc", "u"}}}, {{"u", 1, {{"slow", "u"}, {"huge", "u"}}}}, IntegratorKind::kEuler);
  p->step(0.0, 1.0, one);
  EXPECT_FALSE(p->failed());
  EXPECT_EQ(p->state()[1], 1e308);
  p->step(1.0, 1.0, one);
  ASSERT_TRUE(p->failed());
  EXPECT_EQ(p->failure(),
            "block 'acc' (integrator): its state 0 became infinite in the step from t = 1 s (an input or a value it "
            "computed overflowed) — the task stops rather than carry it on");
  EXPECT_EQ(p->time(), 1.0);  // where the step that failed began
  p->step(1.0, 1.0, one);     // asked nothing more
  EXPECT_EQ(p->time(), 1.0);
  p->reset(0.0);  // a new run
  EXPECT_FALSE(p->failed());
  p->step(0.0, 1.0, one);
  EXPECT_EQ(p->state()[1], 1e308);
}

// x' = -k x with Euler at k h = 3: x_{n+1} = -2 x_n, a numerical blow-up.
// From the second step on, the relative local error is exactly
// (k h / 2) |x_n - x_{n-1}| / (|x_{n+1}| + max |x|) = 4.5 / 8 = 0.5625.
std::unique_ptr<Partition> decay(double k, IntegratorKind integrator = IntegratorKind::kEuler) {
  return build_partition(BlockRegistry::with_builtins(), "p",
                         {{"x", "integrator", {{"initial", 1.0}}, ""}, {"minus_k", "gain", {{"gain", -k}}, ""}},
                         {{{"x", "y"}, {"minus_k", "u"}}, {{"minus_k", "y"}, {"x", "u"}}}, {}, integrator);
}

TEST(Partition, TheRelativeLocalErrorOfAnEulerBlowUpIsExact) {
  auto p = decay(3.0);
  Sine none;
  p->step(0.0, 1.0, none);
  EXPECT_EQ(p->local_error(), 0.0);  // no derivative history yet
  for (int n = 1; n < 8; ++n) {
    p->step(n, 1.0, none);
    EXPECT_DOUBLE_EQ(p->local_error(), 0.5625) << n;
  }
  EXPECT_FALSE(p->failed());  // no guard set: only measured
  EXPECT_EQ(p->state()[0], 256.0);
  EXPECT_EQ(p->local_error_owner(), "block 'x' (integrator): its state 0");
}

TEST(Partition, ADivergenceAboveTheToleranceForStepsInARowStopsIt) {
  auto p = decay(3.0);
  p->set_divergence_guard({0.5, 3, 0.0});
  Sine none;
  for (int n = 0; n < 3; ++n) p->step(n, 1.0, none);  // steps 2 and 3 above: 2 in a row
  EXPECT_FALSE(p->failed());
  p->step(3.0, 1.0, none);
  ASSERT_TRUE(p->failed());
  EXPECT_EQ(p->time(), 3.0);  // where the step that failed began
  EXPECT_EQ(p->failure(),
            "the simulation diverged: block 'x' (integrator): its state 0 had a relative local error of 0.562 (value "
            "16), above the tolerance 0.5 for 3 step(s) in a row while its magnitude grew 4x, in the step from t = 3 s "
            "— the task stops "
            "(docs/stalls.md: the task's 'divergence' settings)");
  p->reset(0.0);
  EXPECT_FALSE(p->failed());
  // Just above the measure: never stops.
  p->set_divergence_guard({0.5625 * (1 + 1e-12), 1, 0.0});
  for (int n = 0; n < 20; ++n) p->step(n, 1.0, none);
  EXPECT_FALSE(p->failed());
}

// Euler at k h = 2: x_{n+1} = -x_n, an oscillation that neither grows nor
// decays. Its measure is (k h / 2) |x_n - x_{n-1}| / (|x| + 1) = 1 at every
// step, above any tolerance, but its magnitude never grows: a sustained
// error, not a divergence, and the guard lets it run.
TEST(Partition, ABoundedOscillationIsNotADivergence) {
  auto p = decay(2.0);
  p->set_divergence_guard({0.25, 5, 1e12});
  Sine none;
  for (int n = 0; n < 100; ++n) p->step(n, 1.0, none);
  EXPECT_FALSE(p->failed());
  EXPECT_DOUBLE_EQ(p->local_error(), 1.0);
  EXPECT_EQ(std::fabs(p->state()[0]), 1.0);
}

// A stable decay (k h = 0.5) stays below the tolerance: its measure is
// (k h / 2) |x_1 - x_0| / (|x_2| + |x_0|) = 0.125 / 1.25 at the second step
// (the initial state is the scale), then halves with every step.
TEST(Partition, AStableDecayStaysBelowTheTolerance) {
  auto p = decay(0.5);
  p->set_divergence_guard({0.11, 1, 1e12});
  Sine none;
  p->step(0.0, 1.0, none);
  p->step(1.0, 1.0, none);
  EXPECT_DOUBLE_EQ(p->local_error(), 0.125 / 1.25);
  for (int n = 2; n < 50; ++n) p->step(n, 1.0, none);
  EXPECT_FALSE(p->failed());
  EXPECT_LT(p->local_error(), 1e-12);
}

// ab2: the relative measure is its truncation-error estimate over
// |x| + the largest |x| so far (one state).
TEST(Partition, Ab2sRelativeLocalErrorIsItsEstimateOverTheStatesScale) {
  auto p = decay(0.3, IntegratorKind::kAb2);
  Sine none;
  double largest = 1.0;
  for (int n = 0; n < 30; ++n) {
    p->step(0.1 * n, 0.1, none);
    const double x = std::fabs(p->state()[0]);
    largest = std::max(largest, x);
    if (n < 3) continue;  // the estimate starts past the start-up step
    ASSERT_GT(p->truncation_error(), 0.0);
    EXPECT_DOUBLE_EQ(p->local_error(), p->truncation_error() / (x + largest)) << n;
  }
}

// u = 1e6: x = 1e6 t passes a bound of 1e7 in the step from t = 10 s.
TEST(Partition, AStateBeyondTheBoundStopsIt) {
  struct Million final : InputSource {
    void sample(std::size_t, double, std::span<double> out) noexcept override {
      for (double& v : out) v = 1e6;
    }
  } in;
  auto p = build_partition(BlockRegistry::with_builtins(), "p", {{"acc", "integrator", {}, ""}}, {},
                           {{"u", 1, {{"acc", "u"}}}}, IntegratorKind::kEuler);
  p->set_divergence_guard({0.0, 1, 1e7});
  for (int n = 0; n < 10; ++n) p->step(n, 1.0, in);
  EXPECT_FALSE(p->failed());
  p->step(10.0, 1.0, in);
  ASSERT_TRUE(p->failed());
  EXPECT_EQ(p->failure(),
            "the simulation diverged: block 'acc' (integrator): its state 0 reached 1.1e+07, beyond state_bound 1e+07, "
            "in the step from t = 10 s — the task stops (docs/stalls.md: the task's 'divergence' settings)");
}

}  // namespace
}  // namespace rtcosim::tasks

// The compiled frame program against the block-by-block evaluation
// (Partition::set_compiled(false), every block through its virtual
// functions in every pass): the same bits for every state, output,
// derivative and flag, with every integrator, at unequal steps.
namespace rtcosim::tasks {
namespace {

struct Wave final : InputSource {
  void sample(std::size_t input, double t, std::span<double> out) noexcept override {
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = std::sin(3.0 * t + static_cast<double>(input + i));
  }
};

// N copies of a loop that uses every kernel family and blocks of their own
// code between them: sine -> gain -> integrator (limited); sine - lag ->
// sum -> lag (a loop through a state); a transfer function with a direct
// term and a second-order block after it; a constant feeding a unit delay
// (a block of its own code) in the middle; an external input through a
// matrix gain; a gain that reads a sum.
struct Mixed {
  std::vector<BlockSpec> blocks;
  std::vector<WireSpec> wires;
  std::vector<ExternalInputSpec> externals;
};

Mixed mixed(int copies) {
  Mixed m;
  auto wire = [&](const std::string& from, const std::string& to) {
    const auto a = from.find('.'), b = to.find('.');
    m.wires.push_back({{from.substr(0, a), from.substr(a + 1)}, {to.substr(0, b), to.substr(b + 1)}});
  };
  for (int k = 0; k < copies; ++k) {
    const std::string n = std::to_string(k);
    const double f = 1.0 + k % 5;
    m.blocks.push_back(
        {"s" + n, "sine", {{"frequency", f}, {"phase", 0.1 * k}, {"amplitude", 2.0}, {"bias", 0.5}}, ""});
    m.blocks.push_back({"g" + n, "gain", {{"gain", 1.5 + k}}, ""});
    m.blocks.push_back({"i" + n, "integrator", {{"lower", -0.05}, {"upper", 0.05}}, ""});
    m.blocks.push_back({"e" + n, "sum", {{"signs", std::string("+-+")}}, ""});
    m.blocks.push_back({"l" + n, "first_order_lag", {{"time_constant", 0.02 + 0.01 * k}, {"gain", 2.0}}, ""});
    m.blocks.push_back({"tf" + n, "transfer_function", {{"num", Vector{1.0, 2.0}}, {"den", Vector{1.0, 30.0}}}, ""});
    m.blocks.push_back({"so" + n, "second_order", {{"wn", 40.0 + k}, {"zeta", 0.3}}, ""});
    m.blocks.push_back({"c" + n, "constant", {{"value", 0.25 * k}}, ""});
    m.blocks.push_back({"d" + n, "unit_delay", {{"sample_time", 0.004}}, ""});
    m.blocks.push_back({"mg" + n, "gain", {{"gain", Matrix{{1.0, -2.0}, {0.5, 0.25}}}}, ""});
    // A gain reading the sum: it may not join the first gains' run.
    m.blocks.push_back({"ge" + n, "gain", {{"gain", -0.5}}, ""});
    // A direct term on an external input, whose derivative is unknown.
    m.blocks.push_back({"tx" + n, "transfer_function", {{"num", Vector{2.0, 1.0}}, {"den", Vector{1.0, 10.0}}}, ""});
    wire("s" + n + ".y", "g" + n + ".u");
    wire("g" + n + ".y", "i" + n + ".u");
    wire("s" + n + ".y", "e" + n + ".u1");
    wire("l" + n + ".y", "e" + n + ".u2");
    wire("d" + n + ".y", "e" + n + ".u3");
    wire("e" + n + ".y", "l" + n + ".u");
    wire("e" + n + ".y", "tf" + n + ".u");
    wire("tf" + n + ".y", "so" + n + ".u");
    wire("c" + n + ".y", "d" + n + ".u");
    wire("e" + n + ".y", "ge" + n + ".u");
    m.externals.push_back({"x" + n, 2, {{"mg" + n, "u"}}});
    m.externals.push_back({"w" + n, 1, {{"tx" + n, "u"}}});
  }
  return m;
}

std::unique_ptr<Partition> build(const Mixed& m, IntegratorKind kind) {
  return build_partition(BlockRegistry::with_builtins(), "p", m.blocks, m.wires, m.externals, kind);
}

template <typename T>
bool same_bits(std::span<const T> a, std::span<const T> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

class FrameProgram : public ::testing::TestWithParam<IntegratorKind> {};

TEST_P(FrameProgram, GivesTheBitsOfTheBlockByBlockEvaluation) {
  const Mixed m = mixed(6);
  auto compiled = build(m, GetParam());
  auto reference = build(m, GetParam());
  reference->set_compiled(false);
  // Runs of one type: far fewer kernels than blocks.
  EXPECT_LT(compiled->kernel_count(), compiled->block_count() / 2);
  EXPECT_EQ(reference->kernel_count(), reference->block_count());
  Wave wave;
  compiled->refresh_outputs(wave);
  reference->refresh_outputs(wave);
  double t = 0.0;
  for (int n = 0; n < 400; ++n) {
    const double h = 1e-3 * (1.0 + 0.37 * (n % 3));  // unequal steps
    compiled->step(t, h, wave);
    reference->step(t, h, wave);
    t += h;
    ASSERT_TRUE(same_bits(compiled->state(), reference->state())) << "step " << n;
    ASSERT_TRUE(same_bits(compiled->discrete_state(), reference->discrete_state())) << "step " << n;
    for (const auto& b : m.blocks) {
      const OutputRef r = compiled->find_output({b.name, "y"});
      ASSERT_TRUE(same_bits(compiled->output(r), reference->output(r))) << b.name << " step " << n;
      ASSERT_TRUE(same_bits(compiled->output_derivative(r), reference->output_derivative(r)))
          << b.name << " step " << n;
      ASSERT_TRUE(same_bits(compiled->output_derivative_flags(r), reference->output_derivative_flags(r)))
          << b.name << " step " << n;
    }
  }
  EXPECT_EQ(compiled->truncation_error(), reference->truncation_error());
  // The loop went somewhere: the limited integrators sit at a limit, the lags moved.
  EXPECT_EQ(compiled->output(compiled->find_output({"i0", "y"}))[0], 0.05);
  EXPECT_NE(compiled->output(compiled->find_output({"l3", "y"}))[0], 0.0);
  EXPECT_EQ(compiled->output_derivative_flags(compiled->find_output({"tx2", "y"}))[0], 0);
  EXPECT_EQ(compiled->output_derivative_flags(compiled->find_output({"tf2", "y"}))[0], 1);
}

INSTANTIATE_TEST_SUITE_P(Integrators, FrameProgram,
                         ::testing::Values(IntegratorKind::kEuler, IntegratorKind::kRk2, IntegratorKind::kRk4,
                                           IntegratorKind::kAb2),
                         [](const auto& p) { return std::string(integrator_name(p.param)); });

// A generated plant's shape: lags declared one after the other, each fed by
// its own external input, so that inputs, outputs and states are each
// consecutive (the scalar state-space kernel's dense loops), plus one lag
// with a direct term (a transfer function) that breaks the run's density in
// a second partition.
TEST(FrameProgramDense, ConsecutiveLagsGiveTheBitsOfTheBlockByBlockEvaluation) {
  for (const bool with_direct_term : {false, true}) {
    std::vector<BlockSpec> blocks;
    std::vector<ExternalInputSpec> externals;
    for (int k = 0; k < 64; ++k) {
      const std::string n = std::to_string(k);
      if (with_direct_term && k == 31) {
        blocks.push_back({"l" + n, "transfer_function", {{"num", Vector{1.0, 2.0}}, {"den", Vector{1.0, 20.0}}}, ""});
      } else {
        blocks.push_back({"l" + n, "first_order_lag", {{"time_constant", 0.01 + 0.001 * k}, {"gain", 1.0 + k}}, ""});
      }
      externals.push_back({"u" + n, 1, {{"l" + n, "u"}}});
    }
    auto compiled = build_partition(BlockRegistry::with_builtins(), "p", blocks, {}, externals, IntegratorKind::kAb2);
    auto reference = build_partition(BlockRegistry::with_builtins(), "p", blocks, {}, externals, IntegratorKind::kAb2);
    reference->set_compiled(false);
    EXPECT_EQ(compiled->kernel_count(), 1u);
    Wave wave;
    double t = 0.0;
    for (int n = 0; n < 300; ++n) {
      const double h = 1e-3 * (1.0 + 0.5 * (n % 2));
      compiled->step(t, h, wave);
      reference->step(t, h, wave);
      t += h;
      ASSERT_TRUE(same_bits(compiled->state(), reference->state())) << n;
    }
    for (const auto& b : blocks) {
      const OutputRef r = compiled->find_output({b.name, "y"});
      EXPECT_TRUE(same_bits(compiled->output(r), reference->output(r))) << b.name;
      EXPECT_TRUE(same_bits(compiled->output_derivative(r), reference->output_derivative(r))) << b.name;
    }
    EXPECT_NE(compiled->state()[5], 0.0);
  }
}

TEST(FrameProgramDerivatives, OnlyTheConsumedOnesAndWhatTheyReadAreComputed) {
  const Mixed m = mixed(2);
  auto compiled = build(m, IntegratorKind::kAb2);
  auto reference = build(m, IntegratorKind::kAb2);
  reference->set_compiled(false);
  // Consumed outside: tf0's output (its D term reads e0's derivative, which
  // reads s0's and l0's) and s1's.
  const std::vector<OutputRef> consumed = {compiled->find_output({"tf0", "y"}), compiled->find_output({"s1", "y"})};
  compiled->set_derivative_consumers(consumed);
  Wave wave;
  double t = 0.0;
  for (int n = 0; n < 50; ++n) {
    compiled->step(t, 1e-3, wave);
    reference->step(t, 1e-3, wave);
    t += 1e-3;
  }
  auto derivative_of = [&](Partition& p, const char* block) {
    const OutputRef r = p.find_output({block, "y"});
    return std::pair{p.output_derivative(r)[0], p.output_derivative_flags(r)[0]};
  };
  for (const char* b : {"tf0", "e0", "s0", "l0", "s1"}) {
    EXPECT_EQ(derivative_of(*compiled, b), derivative_of(*reference, b)) << b;
    EXPECT_EQ(derivative_of(*compiled, b).second, 1) << b;
  }
  // Read by nobody: not computed, unknown.
  for (const char* b : {"so0", "g1", "i1", "l1", "so1"}) {
    EXPECT_EQ(derivative_of(*compiled, b), (std::pair<double, unsigned char>{0.0, 0})) << b;
    EXPECT_EQ(derivative_of(*reference, b).second, 1) << b;
  }
  // Blocks of their own code keep computing theirs, and what they read
  // does too (they may read it).
  EXPECT_EQ(derivative_of(*compiled, "d1"), derivative_of(*reference, "d1"));
  EXPECT_EQ(derivative_of(*compiled, "c1"), derivative_of(*reference, "c1"));
  // Values are untouched by what is skipped.
  for (const auto& b : m.blocks) {
    const OutputRef r = compiled->find_output({b.name, "y"});
    EXPECT_TRUE(same_bits(compiled->output(r), reference->output(r))) << b.name;
  }
}

// The AB-2 local-error estimate, computed as |factor| max |dd| in
// vectorised loops, against its definition max_i |factor dd_i| in one loop,
// to the bit: integrators of inputs u_i(t) (of both signs, seven states so
// that the four-way maximum has a remainder), whose stage derivatives are
// u_i at the mid-frame times, at unequal steps.
struct Signed final : InputSource {
  void sample(std::size_t input, double t, std::span<double> out) noexcept override { out[0] = u(input, t); }
  static double u(std::size_t i, double t) {
    return (i % 2 ? -1.0 : 1.0) * std::sin((1.0 + static_cast<double>(i)) * 7.0 * t) * (1.0 + static_cast<double>(i));
  }
};

TEST(FrameProgramAb2, TruncationErrorIsItsDefinitionToTheBit) {
  constexpr std::size_t kStates = 7;
  std::vector<BlockSpec> blocks;
  std::vector<ExternalInputSpec> externals;
  for (std::size_t k = 0; k < kStates; ++k) {
    blocks.push_back({"i" + std::to_string(k), "integrator", {}, ""});
    externals.push_back({"u" + std::to_string(k), 1, {{"i" + std::to_string(k), "u"}}});
  }
  auto p = build_partition(BlockRegistry::with_builtins(), "p", blocks, {}, externals, IntegratorKind::kAb2);
  Signed inputs;
  std::vector<double> hs, taus;
  double t = 0.0;
  for (int n = 0; n < 40; ++n) {
    const double h = 1e-3 * (1.0 + 0.3 * (n % 4));
    p->step(t, h, inputs);
    hs.push_back(h);
    taus.push_back(t + 0.5 * h);
    t += h;
    if (n < 3) {  // three derivatives past the start-up step's
      ASSERT_EQ(p->truncation_error(), 0.0) << "step " << n;
      continue;
    }
    const double d1 = hs[hs.size() - 2], d2 = hs[hs.size() - 3], d02 = d1 + d2;
    const double factor = h * h * (h / 6.0 + d1 / 4.0) * 2.0;
    double worst = 0.0;
    for (std::size_t i = 0; i < kStates; ++i) {
      const double f0 = Signed::u(i, taus[taus.size() - 1]), f1 = Signed::u(i, taus[taus.size() - 2]),
                   f2 = Signed::u(i, taus[taus.size() - 3]);
      const double dd = ((f0 - f1) / d1 - (f1 - f2) / d2) / d02;
      worst = std::max(worst, std::fabs(factor * dd));
    }
    ASSERT_EQ(p->truncation_error(), worst) << "step " << n;
    ASSERT_GT(worst, 0.0);
  }
}

TEST(FrameProgramRealTime, StepsAllocateNothing) {
  const Mixed m = mixed(8);
  auto p = build(m, IntegratorKind::kAb2);
  p->set_derivative_consumers(std::vector<OutputRef>{p->find_output({"l0", "y"})});
  Wave wave;
  double t = 0.0;
  for (int n = 0; n < 5; ++n, t += 1e-3) p->step(t, 1e-3, wave);
  testing::AllocationScope scope;
  for (int n = 0; n < 200; ++n, t += 1e-3) p->step(t, 1e-3, wave);
  EXPECT_EQ(scope.count(), 0u);
}

}  // namespace
}  // namespace rtcosim::tasks
