#include "tasks/partition.hpp"

#include <gtest/gtest.h>

#include <cmath>

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
    (void)build_partition(BlockRegistry::with_builtins(), "p", blocks, wires, std::move(externals), IntegratorKind::kEuler);
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
  const std::string e = error_of({{"g", "gain", {{"gain", 0.5}}, ""}, {"s", "sum", {}, ""}, {"c", "constant", {{"value", 1.0}}, ""}},
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
  const std::vector<BlockSpec> two = {{"src", "constant", {{"value", Vector{1, 2}}}, ""}, {"g", "gain", {{"gain", 1.0}}, ""}};
  EXPECT_EQ(error_of(two, {{{"scr", "y"}, {"g", "u"}}}),
            "wire 'scr.y -> g.u': partition 'p' has no block 'scr' (did you mean 'src'?)");
  EXPECT_EQ(error_of(two, {{{"src", "out"}, {"g", "u"}}}),
            "wire 'src.out -> g.u': block 'src' (constant) has no output port 'out' — its outputs: y");
  EXPECT_EQ(error_of(two, {{{"src", "y"}, {"g", "u"}}}),
            "wire 'src.y -> g.u': widths differ (src.y has 2 signal(s), g.u expects 1)");
  EXPECT_EQ(error_of({{"a", "constant", {{"value", 1.0}}, ""}, {"b", "constant", {{"value", 2.0}}, ""}, {"g", "gain", {{"gain", 1.0}}, ""}},
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
  auto p = build_partition(r, "p",
                           {{"wave", "sine", {{"frequency", 0.5}}, ""},
                            {"amp", "gain", {{"gain", 3.0}}, ""},
                            {"acc", "integrator", {}, ""},
                            {"ss", "state_space", {{"A", Matrix{{-1}}}, {"B", Matrix{{1}}}, {"C", Matrix{{1}}}, {"D", Matrix{{2}}}}, ""}},
                           {{{"wave", "y"}, {"amp", "u"}}, {{"amp", "y"}, {"acc", "u"}}}, {{"x", 1, {{"ss", "u"}}}},
                           IntegratorKind::kRk4);
  Sine in;
  p->step(0.0, 0.1, in);
  const double w = 2.0 * M_PI * 0.5;
  const auto wave = p->find_output({"wave", "y"}), amp = p->find_output({"amp", "y"}), acc = p->find_output({"acc", "y"}),
             ss = p->find_output({"ss", "y"});
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
    auto p = build_partition(r, "p",
                             {{"src", "chirp", {}, ""},
                              {"k", "gain", {{"gain", 2.0}}, ""},
                              {"s", "sum", {{"signs", std::string("+-")}}, ""},
                              {"ss", "state_space", {{"A", a}, {"B", Matrix(50, Vector{1.0})}, {"C", Matrix{Vector(50, 0.02)}}}, ""},
                              {"pid", "pid", {{"kp", 1.0}, {"ki", 0.5}, {"kd", 0.1}, {"upper", 2.0}}, ""}},
                             {{{"src", "y"}, {"k", "u"}}, {{"k", "y"}, {"s", "u1"}}, {{"ss", "y"}, {"s", "u2"}},
                              {{"s", "y"}, {"pid", "e"}}, {{"pid", "u"}, {"ss", "u"}}},
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

}  // namespace
}  // namespace rtcosim::tasks
