#include "coupling/link.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "coupling/registry.hpp"

namespace rtcosim::coupling {
namespace {

std::unique_ptr<Link> make_link(std::size_t signals, std::size_t capacity, const std::string& method = "zoh") {
  static const auto registry = MethodRegistry::with_builtins();
  return std::make_unique<Link>(signals, capacity, registry.create(method, {}, signals));
}

DataBlock block(std::uint64_t seq, double tag, std::vector<double> values) {
  DataBlock b(values.size());
  b.sequence = seq;
  b.tag = tag;
  b.producer_step = 0.01;
  for (std::size_t i = 0; i < values.size(); ++i) b.set(i, values[i], 10.0 * values[i], i != 1);
  return b;
}

TEST(Link, RoundTripsHeaderAndPayloadOldestFirst) {
  auto link = make_link(3, 8);
  auto a = block(7, 0.5, {1, 2, 3});
  a.discontinuity = true;
  ASSERT_TRUE(link->publish(a));
  ASSERT_TRUE(link->publish(block(8, 0.51, {4, 5, 6})));
  std::vector<DataBlock> got;
  EXPECT_EQ(link->drain_to([&](const DataBlock& b) noexcept {
    got.emplace_back(b.signal_count());
    got.back().assign_from(b);
  }), 2u);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].sequence, 7u);
  EXPECT_EQ(got[0].tag, 0.5);
  EXPECT_EQ(got[0].producer_step, 0.01);
  EXPECT_TRUE(got[0].discontinuity);
  EXPECT_FALSE(got[1].discontinuity);
  EXPECT_EQ(got[1].values()[2], 6.0);
  EXPECT_EQ(got[1].derivatives()[0], 40.0);
  EXPECT_TRUE(got[1].derivative_valid(0));
  EXPECT_FALSE(got[1].derivative_valid(1));
  EXPECT_EQ(link->consumed(), 2u);
}

TEST(Link, AFullRingDropsTheNewBlockAndCountsIt) {
  auto link = make_link(1, 2);
  EXPECT_TRUE(link->publish(block(1, 0.1, {1})));
  EXPECT_TRUE(link->publish(block(2, 0.2, {2})));
  EXPECT_FALSE(link->publish(block(3, 0.3, {3})));
  EXPECT_EQ(link->dropped(), 1u);
  EXPECT_EQ(link->published(), 2u);
  std::vector<std::uint64_t> seqs;
  link->drain_to([&](const DataBlock& b) noexcept { seqs.push_back(b.sequence); });
  EXPECT_EQ(seqs, (std::vector<std::uint64_t>{1, 2}));  // the old ones, not the new
  EXPECT_TRUE(link->publish(block(4, 0.4, {4})));       // room again
}

TEST(Link, DrainFeedsTheExtrapolator) {
  auto link = make_link(2, 4);
  ASSERT_TRUE(link->publish(block(1, 0.1, {1, 2})));
  ASSERT_TRUE(link->publish(block(2, 0.2, {3, 4})));
  EXPECT_EQ(link->drain(), 2u);
  double out[2];
  link->extrapolator().evaluate(0.25, out);
  EXPECT_EQ(out[0], 3.0);
  EXPECT_EQ(out[1], 4.0);
}

TEST(Link, RingSizeComesFromThePeriods) {
  EXPECT_EQ(ring_capacity_blocks({0.001, 0.010, 0.025, 2}), 27u);
  EXPECT_EQ(ring_capacity_blocks({0.001, 0.010, 0.0, 2}), 42u);  // default: 4 consumer periods
  EXPECT_EQ(ring_capacity_blocks({0.1, 0.001, 0.0, 2}), 3u);
  EXPECT_THROW((void)ring_capacity_blocks({0.0, 0.01, 0.0, 2}), CouplingError);
  EXPECT_THROW((void)ring_capacity_blocks({0.01, -1.0, 0.0, 2}), CouplingError);
}

TEST(Link, AnExtrapolatorOfAnotherWidthIsRefused) {
  static const auto registry = MethodRegistry::with_builtins();
  EXPECT_THROW(Link(3, 4, registry.create("zoh", {}, 2)), CouplingError);
  EXPECT_THROW(Link(3, 4, nullptr), CouplingError);
}

TEST(Link, PublishAndDrainAreNoexcept) {
  static_assert(noexcept(std::declval<Link&>().publish(std::declval<const DataBlock&>())));
  static_assert(noexcept(std::declval<Link&>().drain()));
  SUCCEED();
}

}  // namespace
}  // namespace rtcosim::coupling
