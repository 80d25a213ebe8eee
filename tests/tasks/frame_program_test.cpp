// The compiled frame program against the block-by-block evaluation
// (Partition::set_compiled(false), every block through its virtual
// functions in every pass): the same bits for every state, output,
// derivative and flag, with every integrator, at unequal steps.
#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

#include "tasks/diagram.hpp"
#include "tests/support/alloc_counter.hpp"

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
    if (n < 2) continue;
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
