// Reads behind a method's reconstruction (docs/stalls.md, "Links read within
// their data"): for every built-in method a read further back than the blocks its
// reconstruction was built from is answered from the stored blocks — a cubic
// Hermite between the two around t where both carry a derivative, the line
// through their values otherwise — and a read before the oldest kept block
// holds that block. The references here are written out independently of
// SampleHistory; the old behaviour (the reconstruction carried backwards) is
// what the same method gives with an unbounded lookback.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "coupling/methods/sample_history.hpp"
#include "tests/coupling/method_test_util.hpp"

namespace rtcosim::coupling {
namespace {

using testing::eval1;
using testing::make_method;
using testing::push_sample;
using testing::sine;
using testing::sine_derivative;

struct Method {
  std::string id;
  ParamSettings params;
};

// Every built-in method but `rim` (below: it carries models, not signals).
std::vector<Method> methods() {
  return {{"zoh", {}},
          {"zoh_average", {}},
          {"predictor", {}},
          {"polynomial", {{"order", "3"}}},
          {"hermite", {{"order", "3"}}},
          {"smoothed", {{"order", "3"}}},
          {"ecd", {{"order", "3"}}},
          {"interpolated", {}},
          {"ecc", {}}};
}

bool holds(const std::string& id) { return id == "zoh" || id == "zoh_average"; }

constexpr double kStep = 0.01;  // producer period; the sine's period is 1 s, so omega T = 0.063
constexpr int kBlocks = 41;     // tags 0, 0.01, ..., 0.40
constexpr double kNewest = (kBlocks - 1) * kStep;

// Cubic Hermite through (a, f(a), f'(a)) and (b, f(b), f'(b)) at t, in Newton
// form on the confluent nodes a, a, b, b.
double hermite_between(double a, double b, double t) {
  const double h = b - a;
  const double fa = sine(a), fb = sine(b), da = sine_derivative(a), db = sine_derivative(b);
  const double ab = (fb - fa) / h;
  const double aab = (ab - da) / h;
  const double abb = (db - ab) / h;
  const double aabb = (abb - aab) / h;
  return fa + (t - a) * (da + (t - a) * (aab + (t - b) * aabb));
}

double line_between(double a, double b, double t) { return sine(a) + (t - a) * (sine(b) - sine(a)) / (b - a); }

// Reads 9.3, 12.5 and 20.7 producer periods behind the newest block: behind
// every method's reconstruction (the deepest, `smoothed`, reaches 6 blocks
// back at order 3), within the 64 blocks kept.
const std::vector<double> kBehind = {9.3, 12.5, 20.7};

// The ring itself, past its wrap: every method now keeps 64 blocks, so the
// method tests above never push enough for the ring's index to wrap. Each
// sample read back is the one pushed i blocks before the newest, by a list
// of the pushed blocks kept here.
TEST(SampleHistoryRing, AfterWrappingEverySampleIsTheOnePushedThatManyBlocksAgo) {
  constexpr std::size_t kCapacity = 5;
  methods::SampleHistory history;
  history.configure(kCapacity, 2);
  std::vector<double> pushed;
  for (int k = 0; k < 13; ++k) {
    const double tag = 0.01 * k;
    DataBlock block(2);
    block.tag = tag;
    block.set(0, 10.0 + k, -k, true);
    block.set(1, 20.0 + k, k, k % 2 == 0);
    history.push(block);
    pushed.push_back(tag);
    ASSERT_EQ(history.size(), std::min<std::size_t>(pushed.size(), kCapacity));
    for (std::size_t i = 0; i < history.size(); ++i) {
      const int j = k - static_cast<int>(i);  // the block pushed i before the newest
      EXPECT_EQ(history.tag(i), pushed[static_cast<std::size_t>(j)]) << "k " << k << " i " << i;
      EXPECT_EQ(history.value(i, 0), 10.0 + j) << "k " << k << " i " << i;
      EXPECT_EQ(history.value(i, 1), 20.0 + j) << "k " << k << " i " << i;
      EXPECT_EQ(history.derivative(i, 0), -j) << "k " << k << " i " << i;
      EXPECT_EQ(history.derivative_valid(i, 1), j % 2 == 0) << "k " << k << " i " << i;
      // A slot whose derivatives are all known keeps no flags of its own:
      // the pointer still reads them right, a lap after a partial block.
      EXPECT_EQ(history.all_derivatives_valid(i), j % 2 == 0) << "k " << k << " i " << i;
      EXPECT_EQ(history.derivative_flags_of(i)[0], 1) << "k " << k << " i " << i;
      EXPECT_EQ(history.derivative_flags_of(i)[1], j % 2 == 0 ? 1 : 0) << "k " << k << " i " << i;
    }
  }
}

// A derivative flag is known when it is any double but +-0.0 (a NaN too),
// as DataBlock::derivative_valid reads it; push tells the two apart with
// integer words, and a caller that already knows says so.
TEST(SampleHistoryRing, AnyNonzeroFlagIsKnownAndOnlyZerosAreNot) {
  const double flags[] = {
      1.0, -1.0, 2.0, 5e-324, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
      0.0, -0.0};
  constexpr std::size_t kSignals = std::size(flags);
  methods::SampleHistory history;
  history.configure(4, kSignals);
  DataBlock block(kSignals);
  block.tag = 1.0;
  for (std::size_t s = 0; s < kSignals; ++s) block.derivative_flags()[s] = flags[s];
  history.push(block);
  EXPECT_FALSE(history.all_derivatives_valid(0));
  for (std::size_t s = 0; s < kSignals; ++s) {
    EXPECT_EQ(history.derivative_valid(0, s), block.derivative_valid(s)) << s;
    EXPECT_EQ(history.derivative_flags_of(0)[s] != 0, flags[s] != 0.0) << s;
  }
  block.tag = 2.0;
  for (std::size_t s = 0; s < kSignals; ++s) block.derivative_flags()[s] = s % 2 == 0 ? -3.0 : 1.0;
  history.push(block);
  EXPECT_TRUE(history.all_derivatives_valid(0));
  block.tag = 3.0;
  history.push(block, false);  // the caller's word: no flag of it is trusted, each is read
  EXPECT_FALSE(history.all_derivatives_valid(0));
  for (std::size_t s = 0; s < kSignals; ++s) EXPECT_TRUE(history.derivative_valid(0, s)) << s;
}

TEST(HistoryBehind, FarBehindTheNewestBlockTheStoredBlocksAnswerWithTheirDerivatives) {
  // Cubic Hermite interpolation of sin(wt) at spacing T errs by at most
  // (wT)^4 / 384 = 4.1e-8.
  const double tolerance = std::pow(2.0 * std::numbers::pi * kStep, 4) / 384.0;
  for (const Method& m : methods()) {
    if (holds(m.id)) continue;
    auto ex = make_method(m.id, m.params);
    auto old = make_method(m.id, m.params);
    old->set_lookback(std::numeric_limits<double>::infinity());
    for (int k = 0; k < kBlocks; ++k) {
      push_sample(*ex, k * kStep, sine, sine_derivative);
      push_sample(*old, k * kStep, sine, sine_derivative);
    }
    for (double periods : kBehind) {
      const double t = kNewest - periods * kStep;
      const auto k = static_cast<int>(std::floor(t / kStep));
      const double u = eval1(*ex, t);
      EXPECT_NEAR(u, hermite_between(k * kStep, (k + 1) * kStep, t), 1e-12) << m.id << " at " << t;
      EXPECT_NEAR(u, sine(t), tolerance) << m.id << " at " << t;
      // The reconstruction carried backwards, as before: 30 to 10^6 times
      // further from the signal.
      EXPECT_GT(std::abs(eval1(*old, t) - sine(t)), 30.0 * tolerance) << m.id << " at " << t;
    }
  }
}

TEST(HistoryBehind, WithoutDerivativesTheLineThroughTheStoredValuesAnswers) {
  // Linear interpolation errs by at most (wT)^2 / 8 = 4.9e-4.
  const double tolerance = std::pow(2.0 * std::numbers::pi * kStep, 2) / 8.0;
  for (const Method& m : methods()) {
    if (holds(m.id) || m.id == "hermite") continue;  // hermite wants derivatives
    auto ex = make_method(m.id, m.params);
    for (int k = 0; k < kBlocks; ++k) push_sample(*ex, k * kStep, sine);
    for (double periods : kBehind) {
      const double t = kNewest - periods * kStep;
      const auto k = static_cast<int>(std::floor(t / kStep));
      const double u = eval1(*ex, t);
      EXPECT_NEAR(u, line_between(k * kStep, (k + 1) * kStep, t), 1e-14) << m.id << " at " << t;
      EXPECT_NEAR(u, sine(t), tolerance) << m.id << " at " << t;
    }
  }
}

TEST(HistoryBehind, BeforeTheOldestKeptBlockItsValueIsHeld) {
  // 100 blocks; the newest 64 are kept, the oldest of them at 0.36.
  for (const Method& m : methods()) {
    auto ex = make_method(m.id, m.params);
    for (int k = 0; k < 100; ++k) push_sample(*ex, k * kStep, sine, sine_derivative);
    const double oldest = 36 * kStep;
    EXPECT_EQ(ex->oldest_tag(), oldest) << m.id;
    EXPECT_EQ(methods::kLookBackBlocks, 64u);
    for (double t : {oldest, oldest - 0.003, 0.2, -5.0}) EXPECT_EQ(eval1(*ex, t), sine(oldest)) << m.id << " at " << t;
    // Just after it, the blocks around t again (a hold keeps the oldest there).
    if (!holds(m.id)) {
      EXPECT_NE(eval1(*ex, oldest + 0.003), sine(oldest)) << m.id;
    }
    ex->reset();
    EXPECT_EQ(ex->oldest_tag(), -std::numeric_limits<double>::infinity()) << m.id;
  }
}

TEST(HistoryBehind, RimKeepsEightModelsAndHoldsTheOldest) {
  auto ex = make_method("rim", {}, 1);
  for (int k = 0; k < 10; ++k) push_sample(*ex, k * kStep, sine);
  EXPECT_EQ(ex->oldest_tag(), 2 * kStep);
  EXPECT_EQ(eval1(*ex, 0.0), sine(2 * kStep));
}

// The lookback keeps a read the consumer makes in normal operation (a slow
// rate-group member a step behind) as the method defines it; beyond it the
// stored blocks answer.
TEST(HistoryBehind, WithinTheLookbackTheReconstructionAnswersBeyondItTheBlocks) {
  for (const Method& m : methods()) {
    if (holds(m.id)) continue;
    auto ex = make_method(m.id, m.params);
    auto old = make_method(m.id, m.params);
    ex->set_lookback(0.1);
    old->set_lookback(std::numeric_limits<double>::infinity());
    for (int k = 0; k < kBlocks; ++k) {
      push_sample(*ex, k * kStep, sine, sine_derivative);
      push_sample(*old, k * kStep, sine, sine_derivative);
    }
    const double within = kNewest - 0.093;
    EXPECT_EQ(eval1(*ex, within), eval1(*old, within)) << m.id;
    const double beyond = kNewest - 0.107;
    EXPECT_NEAR(eval1(*ex, beyond), hermite_between(0.29, 0.30, beyond), 1e-12) << m.id;
  }
}

// With no lookback, the edge is the oldest node a reconstruction is built
// from: a cubic fit answers back to its fourth-newest block (here between
// the third- and fourth-newest, where the fit and the stored blocks differ)
// and the stored blocks just behind it.
TEST(HistoryBehind, WithoutLookbackAFitAnswersBackToItsOldestNode) {
  auto ex = make_method("polynomial", {{"order", "3"}});
  ex->set_lookback(0.0);
  for (int k = 0; k < kBlocks; ++k) push_sample(*ex, k * kStep, sine, sine_derivative);
  // The cubic through the four newest blocks, in Lagrange form.
  auto cubic = [](double t) {
    double sum = 0.0;
    for (int j = 0; j < 4; ++j) {
      const double tj = kNewest - j * kStep;
      double w = 1.0;
      for (int m = 0; m < 4; ++m) {
        if (m != j) w *= (t - (kNewest - m * kStep)) / (tj - (kNewest - m * kStep));
      }
      sum += w * sine(tj);
    }
    return sum;
  };
  const double inside = kNewest - 2.5 * kStep;
  const double a = kNewest - 3 * kStep, b = kNewest - 2 * kStep;
  ASSERT_GT(std::fabs(cubic(inside) - hermite_between(a, b, inside)), 1e-9);  // the two answers differ here
  EXPECT_NEAR(eval1(*ex, inside), cubic(inside), 1e-12);
  const double behind = kNewest - 3.5 * kStep;
  EXPECT_NEAR(eval1(*ex, behind), hermite_between(kNewest - 4 * kStep, a, behind), 1e-12);
}

// Up to the oldest block a predictor is built from (the previous one), the
// predictor itself answers, bit for bit as before; just behind it, the blocks.
TEST(HistoryBehind, PredictorKeepsItsFormBackToThePreviousBlock) {
  auto ex = make_method("predictor", {});
  auto old = make_method("predictor", {});
  old->set_lookback(std::numeric_limits<double>::infinity());
  for (int k = 0; k < kBlocks; ++k) {
    push_sample(*ex, k * kStep, sine, sine_derivative);
    push_sample(*old, k * kStep, sine, sine_derivative);
  }
  for (double t : {kNewest, kNewest - 0.004, kNewest - kStep}) EXPECT_EQ(eval1(*ex, t), eval1(*old, t)) << t;
  const double t = kNewest - kStep - 0.002;
  EXPECT_NEAR(eval1(*ex, t), hermite_between(kNewest - 2 * kStep, kNewest - kStep, t), 1e-12);
  EXPECT_NE(eval1(*ex, t), eval1(*old, t));
}

}  // namespace
}  // namespace rtcosim::coupling
