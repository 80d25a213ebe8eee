#include "interface/rim_payload.hpp"

#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "coupling/data_block.hpp"
#include "tests/support/alloc_counter.hpp"

namespace rtcosim::interface {
using coupling::DataBlock;
namespace {

// The 2-link arm's RIM of tests/tasks/mechanics_test.cpp at q = (0, pi/2).
RimPayload arm_payload() {
  RimPayload p;
  p.tag = 0.25;
  p.dims = 2;
  p.status = 0;
  p.condition = 3.5 / 1.5;
  p.m(0, 0) = 1.5;
  p.m(0, 1) = 0.0;
  p.m(1, 0) = 0.0;
  p.m(1, 1) = 3.5;
  p.lambda_tilde = {0.0, -34.335};
  p.z = {0.0, 1.6};
  p.velocity = {-0.8, 1.0};
  p.position = {1.9, -0.25};
  return p;
}

TEST(RimPayload, FlatSizeIsHeaderPlusMatrixPlusFourVectors) {
  EXPECT_EQ(RimPayload::flat_size(1), 9U);
  EXPECT_EQ(RimPayload::flat_size(3), 25U);
  EXPECT_EQ(RimPayload::flat_size(6), 64U);
}

// Round trip through the values of a DataBlock, the way a Link carries it.
TEST(RimPayload, RoundTripsThroughDataBlockValues) {
  const RimPayload sent = arm_payload();
  DataBlock block(RimPayload::flat_size(2));
  RimPayload got;
  testing::AllocationScope scope;
  ASSERT_EQ(sent.pack(block.values()), 16U);
  ASSERT_EQ(unpack_rim_payload(block.values(), got), RimUnpackError::kNone);
  EXPECT_EQ(scope.count(), 0U);
  EXPECT_EQ(got.tag, 0.25);
  EXPECT_EQ(got.dims, 2U);
  EXPECT_EQ(got.status, 0);
  EXPECT_EQ(got.condition, 3.5 / 1.5);
  EXPECT_EQ(got.m(0, 0), 1.5);
  EXPECT_EQ(got.m(1, 1), 3.5);
  EXPECT_EQ(got.m(0, 1), 0.0);
  EXPECT_EQ(got.lambda_tilde[1], -34.335);
  EXPECT_EQ(got.z[1], 1.6);
  EXPECT_EQ(got.velocity[0], -0.8);
  EXPECT_EQ(got.velocity[1], 1.0);
  EXPECT_EQ(got.position[0], 1.9);
  EXPECT_EQ(got.position[1], -0.25);
}

TEST(RimPayload, SixDimensionalRowMajorLayout) {
  RimPayload p;
  p.dims = 6;
  for (std::size_t r = 0; r < 6; ++r) {
    for (std::size_t c = 0; c < 6; ++c) p.m(r, c) = static_cast<double>(10 * r + c);
    p.velocity[r] = -static_cast<double>(r);
    p.position[r] = 0.5 * static_cast<double>(r);
  }
  std::vector<double> flat(64);
  ASSERT_EQ(p.pack(flat), 64U);
  EXPECT_EQ(flat[4 + 2 * 6 + 5], 25.0);  // M_eff(2, 5), row-major after the header
  EXPECT_EQ(flat[57], -5.0);             // last velocity
  EXPECT_EQ(flat[63], 2.5);              // last position
  EXPECT_EQ(p.pack(std::span<double>(flat).first(63)), 0U);
  RimPayload got;
  ASSERT_EQ(unpack_rim_payload(flat, got), RimUnpackError::kNone);
  EXPECT_EQ(got.m(5, 2), 52.0);
}

TEST(RimPayload, SingularModelWithInfiniteConditionIsAccepted) {
  RimPayload p = arm_payload();
  p.status = 1;
  p.condition = std::numeric_limits<double>::infinity();
  std::vector<double> flat(RimPayload::flat_size(2));
  ASSERT_EQ(p.pack(flat), flat.size());
  RimPayload got;
  EXPECT_EQ(unpack_rim_payload(flat, got), RimUnpackError::kNone);
  EXPECT_EQ(got.status, 1);
}

TEST(RimPayload, HostilePayloadsAreRefusedWithTheReason) {
  std::vector<double> good(RimPayload::flat_size(2));
  ASSERT_EQ(arm_payload().pack(good), good.size());
  RimPayload got;
  const auto with = [&](std::size_t index, double value) {
    auto bad = good;
    bad[index] = value;
    return unpack_rim_payload(bad, got);
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(unpack_rim_payload(std::span<const double>(good).first(3), got), RimUnpackError::kTooShort);
  EXPECT_EQ(unpack_rim_payload(std::span<const double>(good).first(15), got), RimUnpackError::kTooShort);
  EXPECT_EQ(with(1, 7.0), RimUnpackError::kBadDimension);
  EXPECT_EQ(with(1, 0.0), RimUnpackError::kBadDimension);
  EXPECT_EQ(with(1, 1.5), RimUnpackError::kBadDimension);
  EXPECT_EQ(with(1, nan), RimUnpackError::kBadDimension);
  EXPECT_EQ(with(2, 4.0), RimUnpackError::kBadStatus);
  EXPECT_EQ(with(2, -1.0), RimUnpackError::kBadStatus);
  EXPECT_EQ(with(3, 0.5), RimUnpackError::kBadCondition);
  EXPECT_EQ(with(3, nan), RimUnpackError::kBadCondition);
  EXPECT_EQ(with(0, nan), RimUnpackError::kNonFinite);
  EXPECT_EQ(with(5, std::numeric_limits<double>::infinity()), RimUnpackError::kNonFinite);
  EXPECT_EQ(with(13, nan), RimUnpackError::kNonFinite);  // last velocity
  EXPECT_EQ(with(15, nan), RimUnpackError::kNonFinite);  // last position
  EXPECT_NE(rim_unpack_error_text(RimUnpackError::kBadDimension).find("[1, 6]"), std::string_view::npos);
}

}  // namespace
}  // namespace rtcosim::interface
