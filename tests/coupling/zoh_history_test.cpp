// zoh and zoh_average keep their newest 64 blocks (coupling/methods/zoh.hpp)
// for a consumer that evaluates behind the newest tag: a time 63 blocks back
// still gets the block that held then, and only older times get the oldest
// kept block. (Step means do not depend on it: a running integral.)
#include <gtest/gtest.h>

#include "tests/coupling/method_test_util.hpp"

namespace rtcosim::coupling::testing {
namespace {

TEST(ZohHistory, SixtyFourBlocksBackTheHeldValueIsStillKnown) {
  for (const char* id : {"zoh", "zoh_average"}) {
    auto ex = make_method(id);
    // 100 blocks at tags 0, 1, ..., 99 with value 10 * tag.
    for (int k = 0; k < 100; ++k) push_block(*ex, k, {10.0 * k});
    for (int k = 36; k < 100; ++k) EXPECT_EQ(eval1(*ex, k + 0.5), 10.0 * k) << id << " at " << k + 0.5;
    // Before the oldest kept block (tag 36): that block.
    EXPECT_EQ(eval1(*ex, 35.5), 360.0) << id;
    EXPECT_EQ(eval1(*ex, 0.0), 360.0) << id;
  }
}

}  // namespace
}  // namespace rtcosim::coupling::testing
