// The age of plant rows when a frame takes them (docs/plant.md, docs/sync.md
// "delay: measured"): the taking frame's time minus the row's tag, counted
// in 0.25 ms buckets, its median reported as the bucket's centre.
#include <cmath>

#include <gtest/gtest.h>

#include "tasks/plant/live_feed.hpp"

namespace rtcosim::tasks::plant {
namespace {

// A source fed by the test instead of a receiver thread.
class Fed final : public LiveSource {
 public:
  Fed() : LiveSource("test:fed", 1, 64) {}
  void feed(double tag) {
    LiveRow r;
    r.time = tag;
    deliver(r);
  }
};

TEST(PlantAge, TheMedianAgeOfTakenRowsIsTheirDelayToTheBucket) {
  Fed source;
  LiveHistory history(1, 16);
  EXPECT_EQ(source.status().aged, 0u);
  EXPECT_TRUE(std::isnan(source.status().age_median_s));
  // Nine rows every 10 ms, each taken 4.1 ms after its tag, and one taken
  // 30.1 ms late: the median stays in the 4.0 .. 4.25 ms bucket.
  for (int k = 0; k < 9; ++k) {
    source.feed(0.01 * k);
    history.take(source, 0.01 * k + 0.0041, 10.0);
  }
  source.feed(0.09);
  history.take(source, 0.09 + 0.0301, 10.0);
  const auto s = source.status();
  EXPECT_EQ(s.aged, 10u);
  EXPECT_DOUBLE_EQ(s.age_median_s, 4.125e-3);
  EXPECT_EQ(s.late, 10u);
  // Rows ahead of the frame (a sender whose clock leads) have negative ages.
  Fed ahead;
  LiveHistory h2(1, 16);
  for (int k = 0; k < 3; ++k) {
    ahead.feed(0.01 * k + 0.0021);
    h2.take(ahead, 0.01 * k, 10.0);
  }
  EXPECT_DOUBLE_EQ(ahead.status().age_median_s, -2.125e-3);
  EXPECT_EQ(ahead.status().late, 0u);
}

}  // namespace
}  // namespace rtcosim::tasks::plant
