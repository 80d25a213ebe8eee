// discrete_transfer_function, zero_order_hold and unit_delay through a real
// partition, against difference equations computed here, with partition
// steps equal to the sample time and a fraction of it.
//
// The partition's convention, which every check below follows: a sample
// hit at t_k is taken in the major evaluation at the start of the step that
// begins at t_k; the outputs a step leaves at its end t + h are the values
// held since the last hit at or before t. So when t + h is itself a hit,
// the outputs there are the left limit (the previous sample); the new
// sample appears in the next step.
#include <cmath>

#include <gtest/gtest.h>

#include "tests/support/alloc_counter.hpp"
#include "tests/tasks/block_rig.hpp"

namespace rtcosim::tasks {
namespace {

using testing::creation_error;
using testing::Rig;

// A smooth input with no simple relation to the sample grid, so that a
// block that used u at any time other than the hit would be caught.
double wiggle(double t) { return std::sin(7.3 * t) + 0.4 * std::cos(19.1 * t + 0.3) + 0.2 * std::sin(53.0 * t); }

// y[k] of num(z)/den(z) (descending powers, num right-aligned) by the
// textbook recursion den[0] y[k] = sum num'[i] u[k-i] - sum_{i>=1} den[i] y[k-i].
std::vector<double> difference_equation(const Vector& num, const Vector& den, const std::vector<double>& u) {
  const std::size_t n = den.size() - 1;
  Vector b(n + 1, 0.0);
  for (std::size_t i = 0; i < num.size(); ++i) b[n + 1 - num.size() + i] = num[i];
  std::vector<double> y(u.size(), 0.0);
  for (std::size_t k = 0; k < u.size(); ++k) {
    double acc = 0.0;
    for (std::size_t i = 0; i <= n && i <= k; ++i) acc += b[i] * u[k - i];
    for (std::size_t i = 1; i <= n && i <= k; ++i) acc -= den[i] * y[k - i];
    y[k] = acc / den[0];
  }
  return y;
}

const Vector kNum{1.0, 0.5, -0.3};
const Vector kDen{2.0, -1.2, 0.4};
constexpr double kTs = 0.01;

// dtf, hold and delay on the wiggle, and an integrator of the dtf's output
// (its rk4 stages fall between hits, where the output must hold).
Rig discrete_rig() {
  return Rig({{"dtf", "discrete_transfer_function", {{"num", kNum}, {"den", kDen}, {"sample_time", kTs}}},
              {"hold", "zero_order_hold", {{"sample_time", kTs}}},
              {"delay", "unit_delay", {{"sample_time", kTs}, {"initial", 7.0}}},
              {"sum_y", "integrator", {}}},
             {{{"dtf", "y"}, {"sum_y", "u"}}}, {{"u", {{"dtf", "u"}, {"hold", "u"}, {"delay", "u"}}, wiggle}});
}

TEST(DiscreteBlocks, FollowTheirDifferenceEquationsAtAndBetweenHits) {
  constexpr int kSamples = 120;
  std::vector<double> u(kSamples);
  for (int k = 0; k < kSamples; ++k) u[static_cast<std::size_t>(k)] = wiggle(k * kTs);
  const std::vector<double> y = difference_equation(kNum, kDen, u);

  for (const int per_sample : {1, 4}) {
    Rig r = discrete_rig();
    EXPECT_EQ(r.y("delay"), 7.0);
    const double h = kTs / per_sample;
    double integral = 0.0;
    for (long j = 0; j < static_cast<long>(kSamples) * per_sample; ++j) {
      r.step_at(j, h);
      const auto k = static_cast<std::size_t>(j / per_sample);  // the last hit at or before the step's start
      ASSERT_NEAR(r.y("dtf"), y[k], 1e-12) << per_sample << " " << j;
      ASSERT_NEAR(r.y("hold"), u[k], 1e-12) << per_sample << " " << j;
      ASSERT_NEAR(r.y("delay"), k == 0 ? 7.0 : u[k - 1], 1e-12) << per_sample << " " << j;
      for (const char* b : {"dtf", "hold", "delay"}) {
        ASSERT_EQ(r.dy(b), 0.0) << b;  // a held signal is flat between hits
        ASSERT_TRUE(r.dy_known(b)) << b;
      }
      integral += y[k] * h;
      ASSERT_NEAR(r.y("sum_y"), integral, 1e-12) << per_sample << " " << j;
    }
  }
}

TEST(DiscreteBlocks, ZeroOrderHoldHoldsEverySignalOfAVector) {
  Rig r({{"hold", "zero_order_hold", {{"sample_time", 0.1}, {"width", 3.0}}}}, {},
        {{"u", {{"hold", "u"}}, [](double t) { return 1.0 + t * t; }, false, 3}});
  for (long j = 0; j < 40; ++j) {
    r.step_at(j, 0.025);
    const double sampled = 1.0 + std::pow(0.1 * static_cast<double>(j / 4), 2.0);
    for (std::size_t i = 0; i < 3; ++i) ASSERT_NEAR(r.y("hold", "y", i), sampled, 1e-12) << j;
  }
}

// When the step does not divide the sample time, a sample due at k Ts is
// taken at the first major step at or after it: up to one step late.
TEST(DiscreteBlocks, SampleIsTakenAtTheFirstMajorStepAtOrAfterItsTime) {
  Rig r({{"hold", "zero_order_hold", {{"sample_time", 0.01}}}}, {}, {{"u", {{"hold", "u"}}, wiggle}});
  // Steps of 0.003 s: step j starts at 3j ms; samples are due every 10 ms.
  long hit_step = 0, next_due_ms = 0;
  for (long j = 0; j < 100; ++j) {
    if (3 * j >= next_due_ms) {
      hit_step = j;
      while (next_due_ms <= 3 * j) next_due_ms += 10;
    }
    r.step_at(j, 0.003);
    ASSERT_NEAR(r.y("hold"), wiggle(0.003 * static_cast<double>(hit_step)), 1e-12) << j;
  }
}

TEST(UnitDelay, BreaksAFeedbackLoopIntoAnAccumulator) {
  // s = u + d, d[k] = s[k-1]: d[k] = sum_{i<k} u[i], with no algebraic loop.
  Rig r({{"s", "sum", {}}, {"d", "unit_delay", {{"sample_time", 0.05}}}},
        {{{"d", "y"}, {"s", "u2"}}, {{"s", "y"}, {"d", "u"}}}, {{"u", {{"s", "u1"}}, wiggle}});
  double sum = 0.0;
  for (long j = 0; j < 120; ++j) {
    const long k = j / 2;
    if (j % 2 == 0 && k > 0) sum += wiggle(0.05 * static_cast<double>(k - 1));
    r.step_at(j, 0.025);
    ASSERT_NEAR(r.y("d"), sum, 1e-12) << j;
  }
}

TEST(DiscreteTransferFunction, WithoutDirectFeedthroughClosesALoop) {
  // Forward-Euler integrator Ts / (z - 1) under unit feedback:
  // y[k] = y[k-1] + Ts (1 - y[k-1]), so y[k] = 1 - (1 - Ts)^k.
  Rig r(
      {{"ref", "constant", {{"value", 1.0}}},
       {"err", "sum", {{"signs", std::string("+-")}}},
       {"dtf", "discrete_transfer_function", {{"num", Vector{0.1}}, {"den", Vector{1.0, -1.0}}, {"sample_time", 0.1}}}},
      {{{"ref", "y"}, {"err", "u1"}}, {{"dtf", "y"}, {"err", "u2"}}, {{"err", "y"}, {"dtf", "u"}}}, {});
  for (long k = 0; k < 50; ++k) {
    r.step_at(k, 0.1);
    ASSERT_NEAR(r.y("dtf"), 1.0 - std::pow(0.9, static_cast<double>(k)), 1e-12) << k;
  }
}

TEST(DiscreteTransferFunction, OrderZeroIsAHeldGain) {
  Rig r({{"g", "discrete_transfer_function", {{"num", 3.0}, {"den", 2.0}, {"sample_time", 0.02}}}}, {},
        {{"u", {{"g", "u"}}, wiggle}});
  for (long j = 0; j < 40; ++j) {
    r.step_at(j, 0.005);
    ASSERT_NEAR(r.y("g"), 1.5 * wiggle(0.02 * static_cast<double>(j / 4)), 1e-12) << j;
  }
}

TEST(DiscreteBlocks, FeedthroughIsDeclaredWhereTheOutputUsesTheSameSample) {
  auto loop_error = [](const std::string& type, BlockParams params) {
    try {
      Rig r({{"b", type, std::move(params)}, {"g", "gain", {{"gain", 0.5}}}},
            {{{"b", "y"}, {"g", "u"}}, {{"g", "y"}, {"b", "u"}}}, {});
    } catch (const BlockError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(loop_error("zero_order_hold", {{"sample_time", 0.1}}).find("algebraic loop"), std::string::npos);
  EXPECT_NE(loop_error("discrete_transfer_function",
                       {{"num", Vector{1.0, 0.0}}, {"den", Vector{1.0, -0.5}}, {"sample_time", 0.1}})
                .find("algebraic loop"),
            std::string::npos);
  EXPECT_EQ(loop_error("unit_delay", {{"sample_time", 0.1}}), "no error");
  EXPECT_EQ(loop_error("discrete_transfer_function",
                       {{"num", Vector{0.0, 1.0}}, {"den", Vector{1.0, -0.5}}, {"sample_time", 0.1}}),
            "no error");
}

// Hours of 10 ms frames with a 100 ms hold: simulation time is a sum of
// two million steps and the hits a multiple of the sample time, yet every
// tenth step still samples (a hit missed by rounding would hold the old
// value for one more step).
TEST(DiscreteBlocks, LongRunsKeepTheirSampleGrid) {
  Rig rig({{"hold", "zero_order_hold", {{"sample_time", 0.1}}}}, {},
          {{"u", {{"hold", "u"}}, [](double t) { return t; }}});
  constexpr long kSteps = 2'000'000;  // 20000 s, five and a half hours
  long wrong = 0, first_wrong = -1;
  for (long k = 0; k < kSteps; ++k) {
    rig.step(0.01);
    // Held since the last hit at or before the step's start k h.
    const double expected = static_cast<double>(k / 10) * 0.1;
    if (std::fabs(rig.y("hold") - expected) > 1e-6) {
      if (wrong++ == 0) first_wrong = k;
    }
  }
  EXPECT_EQ(wrong, 0) << "first at step " << first_wrong;
  EXPECT_NEAR(rig.time(), 20000.0, 1e-9);
}

TEST(DiscreteBlocks, StepsAllocateNothing) {
  Rig r = discrete_rig();
  for (long j = 0; j < 10; ++j) r.step_at(j, kTs / 4);
  rtcosim::testing::AllocationScope scope;
  for (long j = 10; j < 5000; ++j) r.step_at(j, kTs / 4);
  EXPECT_EQ(scope.count(), 0u);
}

TEST(DiscreteBlocks, BadParametersAreBlockErrorsNamingTheParameter) {
  EXPECT_EQ(
      creation_error("discrete_transfer_function", {{"num", 1.0}, {"den", Vector{0.0, 1.0}}, {"sample_time", 0.1}}),
      "block 'b': den[0] is 0 — expected a leading coefficient that is not zero");
  EXPECT_EQ(creation_error("discrete_transfer_function",
                           {{"num", Vector{1, 2, 3}}, {"den", Vector{1, 2}}, {"sample_time", 0.1}}),
            "block 'b': the transfer function is not causal (numerator degree 2 > denominator degree 1) — expected "
            "deg(num) <= deg(den)");
  EXPECT_EQ(creation_error("discrete_transfer_function", {{"num", 1.0}, {"den", 1.0}}),
            "block 'b': parameter 'sample_time' is missing — expected a number");
  EXPECT_EQ(
      creation_error("discrete_transfer_function", {{"num", std::string("1")}, {"den", 1.0}, {"sample_time", 0.1}}),
      "block 'b': parameter 'num' is '1' — expected a list of numbers");
  for (const char* type : {"discrete_transfer_function", "zero_order_hold", "unit_delay"}) {
    BlockParams p{{"sample_time", 0.0}};
    if (std::string(type) == "discrete_transfer_function") {
      p.set("num", 1.0);
      p.set("den", 1.0);
    }
    EXPECT_EQ(creation_error(type, p), "block 'b': parameter 'sample_time' = 0 — expected a positive number") << type;
    p.set("sample_time", -0.01);
    EXPECT_EQ(creation_error(type, p), "block 'b': parameter 'sample_time' = -0.01 — expected a positive number")
        << type;
  }
  EXPECT_EQ(creation_error("zero_order_hold", {{"sample_time", 0.1}, {"width", 0.0}}),
            "block 'b': parameter 'width' = 0 — expected an integer from 1 to 1048576");
  EXPECT_EQ(creation_error("unit_delay", {{"sample_time", 0.1}, {"initial", Vector{1, 2}}}),
            "block 'b': parameter 'initial' is a list of 2 numbers — expected a number");
}

}  // namespace
}  // namespace rtcosim::tasks
