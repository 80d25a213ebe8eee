// The consumer's and producer's real-time path allocates nothing and throws
// nothing, for every built-in coupling method: after set-up and a warm-up,
// 10^4 frames of Link::publish, Link::drain, evaluate and evaluate_mean on 16
// signals make no heap allocation, including the rarer paths a frame can hit
// (a discontinuity, a stale block, a full ring, blocks without derivatives,
// several blocks in one drain, a reset).
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "coupling/extrapolator.hpp"
#include "coupling/link.hpp"
#include "coupling/registry.hpp"
#include "tests/support/alloc_counter.hpp"

namespace rtcosim::coupling {
namespace {

// Everything the real-time path calls is noexcept: an exception escaping a
// task's frame would end the process (std::terminate), and the operator
// below is how a reader of the header knows it cannot.
static_assert(noexcept(std::declval<Link&>().publish(std::declval<const DataBlock&>())));
static_assert(noexcept(std::declval<Link&>().drain()));
static_assert(noexcept(std::declval<Link&>().drain_to([](const DataBlock&) noexcept {})));
static_assert(noexcept(std::declval<Link&>().extrapolator()));
static_assert(noexcept(std::declval<Extrapolator&>().push(std::declval<const DataBlock&>())));
static_assert(noexcept(std::declval<const Extrapolator&>().evaluate(0.0, std::declval<std::span<double>>())));
static_assert(noexcept(std::declval<const Extrapolator&>().evaluate_mean(0.0, 1.0, std::declval<std::span<double>>())));
static_assert(noexcept(std::declval<Extrapolator&>().reset()));
static_assert(noexcept(std::declval<DataBlock&>().assign_from(std::declval<const DataBlock&>())));
static_assert(noexcept(std::declval<DataBlock&>().set(0, 0.0, 0.0, true)));

constexpr std::size_t kSignals = 16;
constexpr std::size_t kRingBlocks = 8;
constexpr double kPeriod = 1e-3;
constexpr int kWarmUpFrames = 200;  // more than any method's history (zoh keeps 64)
constexpr int kMeasuredFrames = 10'000;

// Frames of the measured window where something unusual happens.
constexpr int kDiscontinuityFrame = 2'000;
constexpr int kStaleFrame = 4'000;
constexpr int kBurstFrame = 6'000;  // several blocks in one drain, then a full ring
constexpr int kNoDerivativesFrom = 7'000;
constexpr int kNoDerivativesTo = 7'050;
constexpr int kResetFrame = 8'000;

class RtSafety : public ::testing::TestWithParam<std::string> {};

// A producer at 1 kHz with a little jitter, whose signals are smooth.
class Stream {
 public:
  Stream() : block_(kSignals) {}

  // The next block in time. Setting `discontinuity` also jumps back in
  // time, as a reset of the producer's model would.
  const DataBlock& next(bool discontinuity = false, bool derivatives = true) noexcept {
    ++frame_;
    tag_ += kPeriod * (1.0 + 0.05 * std::sin(0.7 * static_cast<double>(frame_)));
    if (discontinuity) tag_ -= 50 * kPeriod;
    block_.sequence = frame_;
    block_.tag = tag_;
    block_.producer_step = kPeriod;
    block_.discontinuity = discontinuity;
    for (std::size_t s = 0; s < kSignals; ++s) {
      const double w = 3.0 + static_cast<double>(s);
      // Odd signals lose their derivatives when asked: the Hermite and
      // predictor fallbacks run for those.
      block_.set(s, std::sin(w * tag_), w * std::cos(w * tag_), derivatives || s % 2 == 0);
    }
    return block_;
  }

  // A copy of the newest block whose tag is not after it (a late retransmission).
  const DataBlock& stale() noexcept {
    block_.tag -= 0.5 * kPeriod;
    block_.discontinuity = false;
    return block_;
  }

  [[nodiscard]] double tag() const noexcept { return tag_; }

 private:
  DataBlock block_;
  std::uint64_t frame_ = 0;
  double tag_ = 0.0;
};

// One consumer frame: evaluates as an integrator would, and folds the results
// into `sum`, so that nothing is optimised away and non-finite output shows.
void consume(const Extrapolator& e, double t, std::vector<double>& out, double& sum) noexcept {
  e.evaluate(t + 0.3 * kPeriod, out);
  for (const double v : out) sum += v;
  e.evaluate_mean(t, t + kPeriod, out);
  for (const double v : out) sum += v;
}

TEST_P(RtSafety, SteadyStateFramesAllocateNothing) {
  const auto registry = MethodRegistry::with_builtins();
  Link link(kSignals, kRingBlocks, registry.create(GetParam(), {}, kSignals));
  Stream stream;
  std::vector<double> out(kSignals);
  double sum = 0.0;
  bool all_published = true;

  for (int k = 0; k < kWarmUpFrames; ++k) {
    all_published &= link.publish(stream.next());
    (void)link.drain();
    consume(link.extrapolator(), stream.tag(), out, sum);
  }
  ASSERT_TRUE(all_published);
  const std::uint64_t stale_before = link.extrapolator().stale_blocks();

  std::uint64_t dropped_in_window = 0;
  std::uint64_t allocations = 0;
  {
    const testing::AllocationScope scope;
    for (int k = 0; k < kMeasuredFrames; ++k) {
      const bool derivatives = k < kNoDerivativesFrom || k >= kNoDerivativesTo;
      const bool published = link.publish(stream.next(k == kDiscontinuityFrame, derivatives));
      if (k == kStaleFrame) (void)link.publish(stream.stale());
      if (k == kBurstFrame) {
        // A consumer frame that ran long: the ring fills up and the rest is dropped.
        for (std::size_t i = 0; i < kRingBlocks + 2; ++i) {
          if (!link.publish(stream.next())) ++dropped_in_window;
        }
      }
      if (!published) ++dropped_in_window;
      if (k == kResetFrame) link.extrapolator().reset();
      (void)link.drain();
      consume(link.extrapolator(), stream.tag(), out, sum);
    }
    allocations = scope.count();
  }

  EXPECT_EQ(allocations, 0u) << GetParam() << " allocated on the real-time path";
  // The unusual paths did run inside the measured window.
  EXPECT_EQ(link.extrapolator().stale_blocks() - stale_before, 1u);
  if (registry.get(GetParam()).uses_derivatives) {
    EXPECT_TRUE(link.extrapolator().used_derivative_fallback());
  }
  EXPECT_EQ(dropped_in_window, 3u);  // 1 + 7 burst blocks fill the 8 slots; 3 are left over
  EXPECT_EQ(link.dropped(), dropped_in_window);
  EXPECT_EQ(link.consumed(), link.published());
  EXPECT_TRUE(std::isfinite(sum)) << GetParam();
}

std::vector<std::string> builtin_ids() { return MethodRegistry::with_builtins().ids(); }

INSTANTIATE_TEST_SUITE_P(EveryBuiltInMethod, RtSafety, ::testing::ValuesIn(builtin_ids()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// An empty parameter list would pass by running nothing.
TEST(RtSafetyCoverage, RunsForAllTenBuiltInMethods) { EXPECT_EQ(builtin_ids().size(), 10u); }

}  // namespace
}  // namespace rtcosim::coupling
