// The NTP-style offset estimate and its min-RTT filter, on exchanges with
// known clocks and delays.
#include "io/clock_offset.hpp"

#include <gtest/gtest.h>

namespace rtcosim::io {
namespace {

// One exchange with the other clock `offset` ahead, `out` ns on the way
// there, `back` on the way back, `hold` ns at the other end; t1 on this clock.
struct Exchange {
  std::int64_t t1, t2, t3, t4;
};
Exchange exchange(std::int64_t t1, std::int64_t offset, std::int64_t out, std::int64_t hold, std::int64_t back) {
  const std::int64_t t2 = t1 + out + offset;
  const std::int64_t t3 = t2 + hold;
  return {t1, t2, t3, t3 - offset + back};
}

TEST(ClockOffsetFilter, SymmetricDelaysGiveTheExactOffset) {
  ClockOffsetFilter f;
  const auto e = exchange(1'000'000'000, 5'000'000, 150'000, 20'000, 150'000);
  ASSERT_TRUE(f.add(e.t1, e.t2, e.t3, e.t4));
  EXPECT_EQ(f.offset_ns(), 5'000'000);
  EXPECT_EQ(f.round_trip_ns(), 300'000);  // the hold at the other end is not part of it
  EXPECT_EQ(f.exchanges(), 1u);
}

TEST(ClockOffsetFilter, TheLeastDelayedExchangeOfTheWindowWins) {
  ClockOffsetFilter f;
  // Asymmetric queueing makes each exchange off by (out - back) / 2; the
  // one with the smallest round trip is off by 10 us only.
  const std::int64_t offset = -2'000'000;
  struct {
    std::int64_t out, back;
  } delays[] = {{900'000, 100'000}, {100'000, 700'000}, {120'000, 100'000}, {400'000, 380'000}};
  std::int64_t t = 0;
  for (const auto& d : delays) {
    const auto e = exchange(t += 100'000'000, offset, d.out, 5'000, d.back);
    ASSERT_TRUE(f.add(e.t1, e.t2, e.t3, e.t4));
  }
  EXPECT_EQ(f.round_trip_ns(), 220'000);
  EXPECT_EQ(f.offset_ns(), offset + 10'000);
  // Eight more, each with a 300 us round trip: the 220 us one leaves the window.
  for (int i = 0; i < 8; ++i) {
    const auto e = exchange(t += 100'000'000, offset, 150'000, 5'000, 150'000);
    ASSERT_TRUE(f.add(e.t1, e.t2, e.t3, e.t4));
  }
  EXPECT_EQ(f.round_trip_ns(), 300'000);
  EXPECT_EQ(f.offset_ns(), offset);
  EXPECT_EQ(f.exchanges(), 12u);
}

TEST(ClockOffsetFilter, ImpossibleExchangesAreNotKept) {
  ClockOffsetFilter f;
  EXPECT_FALSE(f.add(1000, 500, 600, 900));      // a round trip of -200 ns
  EXPECT_FALSE(f.add(0, 10, 5, 100));            // t3 before t2
  EXPECT_FALSE(f.add(0, 0, 0, 2'000'000'000));   // 2 s round trip: stale
  EXPECT_EQ(f.exchanges(), 0u);
  EXPECT_EQ(f.offset_ns(), 0);
  // Clocks decades apart do not overflow.
  const std::int64_t far = 4'000'000'000'000'000'000;
  ASSERT_TRUE(f.add(0, far + 100, far + 100, 200));
  EXPECT_EQ(f.offset_ns(), far);
}

}  // namespace
}  // namespace rtcosim::io
