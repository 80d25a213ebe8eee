// Hostile blocks (coupling/extrapolator.hpp, push): a non-finite tag or
// value, a tag further ahead than the producer could have got. Each is
// rejected and counted, never stored: every built-in method afterwards
// answers exactly as a twin that never saw it.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "tests/coupling/method_test_util.hpp"

namespace rtcosim::coupling::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

DataBlock sine_block(double tag, std::uint64_t sequence) {
  DataBlock b = make_block(tag, {sine(tag)}, {sine_derivative(tag)});
  b.sequence = sequence;
  return b;
}

struct Twins {
  std::unique_ptr<Extrapolator> guarded, clean;
  std::uint64_t sequence = 0;
  explicit Twins(const std::string& id) : guarded(make_method(id)), clean(make_method(id)) {
    // A producer whose step is at most 13 ms; a consumer that accepts tags
    // up to 1 s ahead of its clock.
    guarded->set_tag_limits({0.013, 1.0});
  }
  // A regular block into both, the consumer's clock at the block's tag.
  void regular(double tag) {
    const DataBlock b = sine_block(tag, ++sequence);
    guarded->set_clock(tag);
    guarded->push(b);
    clean->push(b);
  }
  // A hostile block into the guarded one only; it takes a sequence number,
  // as the producer would have.
  void hostile(DataBlock b) {
    b.sequence = ++sequence;
    guarded->push(b);
  }
  void expect_same(const std::string& id, double newest, const char* after) const {
    for (double t : probe_times(newest, 0.01)) {
      const double u = eval1(*guarded, t);
      EXPECT_TRUE(std::isfinite(u)) << id << " after " << after << " at " << t;
      EXPECT_EQ(u, eval1(*clean, t)) << id << " after " << after << " at " << t;
    }
    EXPECT_EQ(mean1(*guarded, newest, newest + 0.007), mean1(*clean, newest, newest + 0.007)) << id << " " << after;
  }
};

TEST(HostileBlocks, AreRejectedCountedAndLeaveEveryMethodUnchanged) {
  for (const auto& id : MethodRegistry::with_builtins().ids()) {
    Twins twins(id);
    const auto tags = jittered_tags(0.2, 0.01, 40);
    std::size_t k = 0;
    auto regular_until = [&](std::size_t end) {
      for (; k < end; ++k) twins.regular(tags[k]);
    };
    regular_until(8);

    // A tag 10^9 s ahead: further than 13 ms per producer frame.
    twins.hostile(make_block(tags[k - 1] + 1e9, {0.5}, {0.0}));
    regular_until(12);
    twins.expect_same(id, tags[k - 1], "a +1e9 s tag");

    // A discontinuity block with a NaN tag: it must not even reset.
    twins.hostile(make_block(kNaN, {sine(tags[k])}, {sine_derivative(tags[k])}, true));
    twins.expect_same(id, tags[k - 1], "a NaN tag on a discontinuity block");
    regular_until(16);
    twins.expect_same(id, tags[k - 1], "a NaN tag on a discontinuity block");

    // NaN and infinite values, an infinite known derivative, at good tags
    // (which the regular blocks then take).
    twins.hostile(make_block(tags[k], {kNaN}, {0.0}));
    twins.hostile(make_block(tags[k], {kInf}, {0.0}));
    twins.hostile(make_block(tags[k], {sine(tags[k])}, {-kInf}));
    regular_until(20);
    twins.expect_same(id, tags[k - 1], "non-finite values");

    // Within the producer's reach by sequence (1000 frames of 13 ms) but
    // 2 s ahead of the consumer's clock, which allows 1 s.
    DataBlock ahead = make_block(tags[k - 1] + 2.0, {0.1}, {0.0});
    ahead.sequence = twins.sequence + 1000;
    twins.guarded->push(ahead);
    regular_until(24);
    twins.expect_same(id, tags[k - 1], "a tag 2 s ahead of the clock");

    // A ring that dropped five blocks: the tag gap is six producer steps,
    // more than 13 ms, and the sequence gap says why: taken by both.
    twins.sequence += 5;
    k += 5;
    regular_until(30);
    twins.expect_same(id, tags[k - 1], "a gap of dropped blocks");

    EXPECT_EQ(twins.guarded->rejected_tags(), 3u) << id;
    EXPECT_EQ(twins.guarded->rejected_values(), 3u) << id;
    EXPECT_EQ(twins.guarded->stale_blocks(), 0u) << id;
    EXPECT_EQ(twins.guarded->blocks_taken(), twins.clean->blocks_taken()) << id;
  }
}

// Without limits (a method used outside a graph), only non-finite tags and
// values are rejected.
TEST(HostileBlocks, WithoutLimitsOnlyNonFiniteBlocksAreRejected) {
  auto ex = make_method("polynomial");
  push_block(*ex, 0.1, {1.0});
  push_block(*ex, 1e9, {2.0});
  push_block(*ex, 2e9, {kNaN});
  push_block(*ex, kInf, {2.0});
  EXPECT_EQ(ex->blocks_taken(), 2u);
  EXPECT_EQ(ex->rejected_tags(), 1u);
  EXPECT_EQ(ex->rejected_values(), 1u);
}

// The check looks at every word of a wide block (its vector lanes and its
// odd last signal alike) and at a derivative only where it is known: an
// unknown derivative may be anything.
TEST(HostileBlocks, EveryWordOfAWideBlockIsCheckedAndUnknownDerivativesAreNot) {
  constexpr std::size_t kSignals = 7;
  for (std::size_t bad = 0; bad < kSignals; ++bad) {
    for (const double word : {kNaN, kInf, -kInf}) {
      auto ex = make_method("predictor", {}, kSignals);
      std::uint64_t sequence = 0;
      auto block = [&](double tag) {
        DataBlock b(kSignals);
        b.tag = tag;
        b.sequence = ++sequence;
        for (std::size_t s = 0; s < kSignals; ++s) b.set(s, sine(tag), sine_derivative(tag), true);
        return b;
      };
      DataBlock value = block(0.01);
      value.values()[bad] = word;
      ex->push(value);
      DataBlock derivative = block(0.02);
      derivative.derivatives()[bad] = word;
      ex->push(derivative);
      DataBlock unknown = block(0.03);
      unknown.set(bad, sine(0.03), word, false);
      ex->push(unknown);
      EXPECT_EQ(ex->rejected_values(), 2u) << bad << " " << word;
      EXPECT_EQ(ex->blocks_taken(), 1u) << bad << " " << word;
      EXPECT_TRUE(ex->in_derivative_fallback()) << bad << " " << word;
    }
  }
}

}  // namespace
}  // namespace rtcosim::coupling::testing
