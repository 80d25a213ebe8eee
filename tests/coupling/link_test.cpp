// Link on one thread: what goes in comes out bit for bit and in order, a full
// ring drops the new block and counts it, the ring is sized from the periods,
// and drain() feeds the link's extrapolator.
#include "coupling/link.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "coupling/registry.hpp"

namespace rtcosim::coupling {
namespace {

const MethodRegistry& registry() {
  static const MethodRegistry r = MethodRegistry::with_builtins();
  return r;
}

Link make_link(std::size_t signals, std::size_t capacity, std::string_view method = "zoh") {
  return Link(signals, capacity, registry().create(method, {}, signals));
}

// Block `seq` of a deterministic stream: every word differs from its
// neighbours', so a shifted or torn read cannot go unnoticed.
DataBlock stream_block(std::size_t signals, std::uint64_t seq) {
  DataBlock b(signals);
  b.sequence = seq;
  b.tag = 1e-3 * static_cast<double>(seq + 1);
  b.producer_step = 1e-3 + 1e-6 * static_cast<double>(seq % 7);
  b.discontinuity = seq % 5 == 3;
  for (std::size_t i = 0; i < signals; ++i) {
    const double x = static_cast<double>(seq) + 0.125 * static_cast<double>(i);
    b.set(i, x, -x - 0.5, (seq + i) % 3 != 0);
  }
  return b;
}

// Copies what a sink sees: the block is the ring's slot, filled again a lap later.
DataBlock copy_of(const DataBlock& b) {
  DataBlock out(b.signal_count());
  out.assign_from(b);
  return out;
}

std::uint64_t bits(double v) { return std::bit_cast<std::uint64_t>(v); }

// Header and payload compared bit for bit: a value comparison would take
// -0.0 for 0.0 and never match a NaN.
void expect_identical(const DataBlock& got, const DataBlock& want) {
  EXPECT_EQ(bits(got.tag), bits(want.tag));
  EXPECT_EQ(got.sequence, want.sequence);
  EXPECT_EQ(bits(got.producer_step), bits(want.producer_step));
  EXPECT_EQ(got.discontinuity, want.discontinuity);
  ASSERT_EQ(got.signal_count(), want.signal_count());
  for (std::size_t i = 0; i < want.signal_count(); ++i) {
    EXPECT_EQ(bits(got.values()[i]), bits(want.values()[i])) << "value " << i;
    EXPECT_EQ(bits(got.derivatives()[i]), bits(want.derivatives()[i])) << "derivative " << i;
    EXPECT_EQ(got.derivative_valid(i), want.derivative_valid(i)) << "validity " << i;
  }
}

std::vector<DataBlock> drain_copies(Link& link) {
  std::vector<DataBlock> got;
  const std::size_t n = link.drain_to([&](const DataBlock& b) noexcept { got.push_back(copy_of(b)); });
  EXPECT_EQ(n, got.size());
  return got;
}

TEST(Link, RoundTripsHeaderAndPayloadBitForBit) {
  constexpr std::size_t kSignals = 6;
  Link link = make_link(kSignals, 4);
  DataBlock a(kSignals);
  a.tag = 0.0;
  a.sequence = 0;
  a.producer_step = 0.001;
  a.discontinuity = true;
  const double specials[kSignals] = {-0.0,
                                     std::numeric_limits<double>::denorm_min(),
                                     std::numeric_limits<double>::max(),
                                     -std::numeric_limits<double>::infinity(),
                                     std::numeric_limits<double>::quiet_NaN(),
                                     -1.0 / 3.0};
  for (std::size_t i = 0; i < kSignals; ++i) a.set(i, specials[i], specials[kSignals - 1 - i], i % 2 == 0);

  DataBlock b(kSignals);
  b.tag = 12345.678901234567;
  b.sequence = (std::uint64_t{1} << 53) + 1;  // a slot keeps the sequence as it is (no double could)
  b.producer_step = 0.0;
  b.discontinuity = false;
  for (std::size_t i = 0; i < kSignals; ++i) b.set(i, 1.0 + static_cast<double>(i), 1e-300, i % 2 == 1);

  ASSERT_TRUE(link.publish(a));
  ASSERT_TRUE(link.publish(b));
  const auto got = drain_copies(link);
  ASSERT_EQ(got.size(), 2u);
  expect_identical(got[0], a);
  expect_identical(got[1], b);
  EXPECT_EQ(link.published(), 2u);
  EXPECT_EQ(link.consumed(), 2u);
  EXPECT_EQ(link.dropped(), 0u);
}

// A producer fills the slot in place; on a full ring it is not asked to,
// and whatever a slot held a lap ago is overwritten whole.
TEST(Link, PublishWithFillsTheNextSlotInPlaceAndNotWhenTheRingIsFull) {
  static constexpr std::size_t kSignals = 4;
  Link link = make_link(kSignals, 2);
  int fills = 0;
  auto fill_with = [&](std::uint64_t seq) {
    return [&fills, seq](DataBlock& slot) noexcept {
      ++fills;
      ASSERT_EQ(slot.signal_count(), kSignals);
      slot.assign_from(stream_block(kSignals, seq));
    };
  };
  EXPECT_TRUE(link.publish_with(fill_with(0)));
  EXPECT_TRUE(link.publish_with(fill_with(1)));
  EXPECT_FALSE(link.publish_with(fill_with(2)));
  EXPECT_EQ(fills, 2);
  EXPECT_EQ(link.dropped(), 1u);
  for (std::uint64_t lap = 0; lap < 3; ++lap) {
    const auto got = drain_copies(link);
    ASSERT_EQ(got.size(), 2u);
    expect_identical(got[0], stream_block(kSignals, 10 * lap + (lap == 0 ? 0 : 3)));
    expect_identical(got[1], stream_block(kSignals, 10 * lap + (lap == 0 ? 1 : 4)));
    EXPECT_TRUE(link.publish_with(fill_with(10 * (lap + 1) + 3)));
    EXPECT_TRUE(link.publish_with(fill_with(10 * (lap + 1) + 4)));
  }
  EXPECT_EQ(link.published(), 8u);
}

TEST(Link, DrainingAnEmptyRingTakesNothing) {
  Link link = make_link(2, 3);
  EXPECT_EQ(link.drain(), 0u);
  EXPECT_EQ(link.drain_to([](const DataBlock&) noexcept { ADD_FAILURE() << "sink called on an empty ring"; }), 0u);
  EXPECT_EQ(link.consumed(), 0u);
  EXPECT_EQ(link.extrapolator().blocks_taken(), 0u);
}

// The ring holds 5 blocks in 6 slots (one stays free), so a burst starts at
// a different slot on every lap: many laps with bursts of every size cross
// every wrap-around position.
TEST(Link, BlocksComeOutOldestFirstAcrossWrapArounds) {
  constexpr std::size_t kSignals = 3;
  constexpr std::size_t kCapacity = 5;
  Link link = make_link(kSignals, kCapacity);
  std::uint64_t next_published = 0, next_expected = 0;
  for (int round = 0; round < 400; ++round) {
    const auto burst = static_cast<std::size_t>(round * 7 % kCapacity) + 1;
    for (std::size_t k = 0; k < burst; ++k) ASSERT_TRUE(link.publish(stream_block(kSignals, next_published++)));
    for (const DataBlock& b : drain_copies(link)) {
      ASSERT_EQ(b.sequence, next_expected) << "round " << round;
      expect_identical(b, stream_block(kSignals, next_expected));
      ++next_expected;
    }
  }
  EXPECT_EQ(next_expected, next_published);
  EXPECT_EQ(link.dropped(), 0u);
  EXPECT_EQ(link.consumed(), next_published);
}

TEST(Link, AFullRingDropsTheNewBlockCountsItAndHasRoomAfterDraining) {
  constexpr std::size_t kSignals = 2;
  Link link = make_link(kSignals, 4);
  EXPECT_EQ(link.capacity_blocks(), 4u);
  for (std::uint64_t s = 0; s < 4; ++s) EXPECT_TRUE(link.publish(stream_block(kSignals, s))) << s;
  EXPECT_FALSE(link.publish(stream_block(kSignals, 4)));
  EXPECT_FALSE(link.publish(stream_block(kSignals, 5)));
  EXPECT_EQ(link.published(), 4u);
  EXPECT_EQ(link.dropped(), 2u);

  // The blocks that were waiting survive; the new ones are the ones lost.
  auto got = drain_copies(link);
  ASSERT_EQ(got.size(), 4u);
  for (std::uint64_t s = 0; s < 4; ++s) expect_identical(got[s], stream_block(kSignals, s));
  EXPECT_EQ(link.consumed(), 4u);

  // A drained ring takes a full ring's worth again, and no more.
  for (std::uint64_t s = 6; s < 10; ++s) EXPECT_TRUE(link.publish(stream_block(kSignals, s))) << s;
  EXPECT_FALSE(link.publish(stream_block(kSignals, 10)));
  EXPECT_EQ(link.dropped(), 3u);
  got = drain_copies(link);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got.front().sequence, 6u);
  EXPECT_EQ(got.back().sequence, 9u);
  EXPECT_EQ(link.published(), 8u);
  EXPECT_EQ(link.consumed(), 8u);
}

TEST(Link, RingSizeComesFromThePeriods) {
  // Producer 1 ms, consumer 10 ms, longest consumer frame 25 ms: 25 blocks
  // may arrive during one frame, plus the margin of 2.
  EXPECT_EQ(ring_capacity_blocks({.producer_period = 0.001, .consumer_period = 0.010, .consumer_max_frame = 0.025}),
            27u);
  // No longest frame given: 4 consumer periods.
  EXPECT_EQ(ring_capacity_blocks({.producer_period = 0.001, .consumer_period = 0.010}), 42u);
  // A "longest" frame shorter than the period is taken as the period.
  EXPECT_EQ(ring_capacity_blocks({.producer_period = 0.001, .consumer_period = 0.010, .consumer_max_frame = 0.005}),
            12u);
  // A partial producer period still brings a whole block.
  EXPECT_EQ(ring_capacity_blocks({.producer_period = 0.003, .consumer_period = 0.010, .consumer_max_frame = 0.010}),
            6u);
  EXPECT_EQ(ring_capacity_blocks(
                {.producer_period = 0.001, .consumer_period = 0.010, .consumer_max_frame = 0.025, .margin_blocks = 0}),
            25u);
  // A slow producer still gets two blocks: one being read, one being written.
  EXPECT_EQ(ring_capacity_blocks({.producer_period = 1.0, .consumer_period = 0.001, .margin_blocks = 0}), 2u);
}

TEST(Link, NonPositivePeriodsAreRefused) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const auto& [producer, consumer] : std::vector<std::pair<double, double>>{
           {0.0, 0.01}, {-0.001, 0.01}, {0.001, 0.0}, {0.001, -0.01}, {nan, 0.01}, {0.001, nan}}) {
    EXPECT_THROW((void)ring_capacity_blocks({.producer_period = producer, .consumer_period = consumer}), CouplingError)
        << producer << " " << consumer;
  }
  EXPECT_THROW(Link(1, LinkTiming{.producer_period = 0.0, .consumer_period = 0.01}, registry().create("zoh", {}, 1)),
               CouplingError);
}

TEST(Link, ATimedLinkHoldsExactlyItsComputedCapacity) {
  Link link(1, LinkTiming{.producer_period = 0.001, .consumer_period = 0.010, .consumer_max_frame = 0.025},
            registry().create("zoh", {}, 1));
  EXPECT_EQ(link.capacity_blocks(), 27u);
  for (std::uint64_t s = 0; s < 27; ++s) EXPECT_TRUE(link.publish(stream_block(1, s))) << s;
  EXPECT_FALSE(link.publish(stream_block(1, 27)));
}

TEST(Link, DrainFeedsTheExtrapolatorOldestFirst) {
  Link link = make_link(2, 8);
  DataBlock b(2);
  for (std::uint64_t s = 0; s < 3; ++s) {
    b.sequence = s;
    b.tag = 0.1 * static_cast<double>(s + 1);
    b.set(0, 10.0 + static_cast<double>(s), 0.0);
    b.set(1, -20.0 - static_cast<double>(s), 0.0);
    ASSERT_TRUE(link.publish(b));
  }
  EXPECT_EQ(link.drain(), 3u);
  const Extrapolator& e = link.extrapolator();
  EXPECT_EQ(e.blocks_taken(), 3u);
  EXPECT_EQ(e.stale_blocks(), 0u);  // oldest first: each tag is after the previous one
  EXPECT_DOUBLE_EQ(e.newest_tag(), 0.3);
  double out[2];
  e.evaluate(0.35, out);  // zoh: the newest block's values
  EXPECT_EQ(out[0], 12.0);
  EXPECT_EQ(out[1], -22.0);
  e.evaluate(0.15, out);  // and the older ones are kept behind it
  EXPECT_EQ(out[0], 10.0);
}

TEST(Link, DrainPassesStaleAndDiscontinuityBlocksToTheExtrapolator) {
  Link link = make_link(1, 8);
  DataBlock b(1);
  b.tag = 1.0;
  b.set(0, 1.0, 0.0);
  ASSERT_TRUE(link.publish(b));
  b.tag = 0.5;  // not after the newest tag: ignored and counted
  b.set(0, 2.0, 0.0);
  ASSERT_TRUE(link.publish(b));
  EXPECT_EQ(link.drain(), 2u);
  EXPECT_EQ(link.extrapolator().stale_blocks(), 1u);
  double out[1];
  link.extrapolator().evaluate(2.0, out);
  EXPECT_EQ(out[0], 1.0);

  b.tag = 0.25;  // earlier still, but a discontinuity restarts the history
  b.discontinuity = true;
  b.set(0, 3.0, 0.0);
  ASSERT_TRUE(link.publish(b));
  EXPECT_EQ(link.drain(), 1u);
  EXPECT_DOUBLE_EQ(link.extrapolator().newest_tag(), 0.25);
  link.extrapolator().evaluate(2.0, out);
  EXPECT_EQ(out[0], 3.0);
}

TEST(Link, AnExtrapolatorOfAnotherSignalCountIsRefused) {
  try {
    Link link(3, 4, registry().create("polynomial", {}, 2));
    FAIL() << "no error";
  } catch (const CouplingError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find('3'), std::string::npos) << what;
    EXPECT_NE(what.find('2'), std::string::npos) << what;
  }
  EXPECT_THROW(Link(1, 4, registry().create("zoh", {}, 16)), CouplingError);
  EXPECT_THROW(Link(3, 4, nullptr), CouplingError);
}

TEST(Link, RealTimeOperationsAreNoexcept) {
  static_assert(noexcept(std::declval<Link&>().publish(std::declval<const DataBlock&>())));
  static_assert(noexcept(std::declval<Link&>().publish_with([](DataBlock&) noexcept {})));
  static_assert(noexcept(std::declval<Link&>().drain()));
  static_assert(noexcept(std::declval<Link&>().drain_to([](const DataBlock&) noexcept {})));
  static_assert(noexcept(std::declval<const Link&>().published()));
  static_assert(noexcept(std::declval<const Link&>().dropped()));
  static_assert(noexcept(std::declval<const Link&>().consumed()));
  SUCCEED();
}

}  // namespace
}  // namespace rtcosim::coupling
