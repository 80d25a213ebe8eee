// WakeWord (base/wake_word.hpp) and a Link that notifies one: a thread that
// sleeps on the word is woken by every publish, and no wake-up is lost in
// the window between a waiter's last look and its sleep. The waits here have
// an hour's timeout: a lost wake-up hangs the test until ctest's 10-minute
// limit fails it, so passing at all is the proof (no time is asserted).
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/wake_word.hpp"
#include "coupling/link.hpp"
#include "coupling/registry.hpp"

namespace rtcosim::coupling {
namespace {

constexpr std::int64_t kHour = 3600LL * 1'000'000'000LL;

TEST(WakeWord, EveryDeliveredBlockBumpsTheWordAndADroppedOneDoesNot) {
  Link link(2, 3, MethodRegistry::with_builtins().create("zoh", {}, 2));
  base::WakeWord word;
  link.set_wake(&word);
  DataBlock b(2);
  const std::uint32_t before = word.value();
  int delivered = 0;
  for (int k = 0; k < 5; ++k) {
    b.sequence = static_cast<std::uint64_t>(k) + 1;
    delivered += link.publish(b) ? 1 : 0;
  }
  EXPECT_EQ(delivered, 3);  // the ring holds three blocks
  EXPECT_EQ(link.dropped(), 2u);
  EXPECT_EQ(word.value() - before, 3u);
  link.set_wake(nullptr);
  (void)link.publish(b);
  EXPECT_EQ(word.value() - before, 3u);
}

// Two threads hand a turn back and forth 20 000 times, each sleeping on its
// own word until the other notifies it.
TEST(WakeWord, PingPongLosesNoWakeUp) {
  constexpr int kRounds = 20'000;
  base::WakeWord to_pong, to_ping;
  std::atomic<int> ball{0};
  std::thread pong([&] {
    for (int k = 0; k < kRounds; ++k) {
      for (;;) {
        const std::uint32_t seen = to_pong.value();
        if (ball.load() == 2 * k + 1) break;
        to_pong.wait(seen, kHour);
      }
      ball.store(2 * k + 2);
      to_ping.notify();
    }
  });
  for (int k = 0; k < kRounds; ++k) {
    ball.store(2 * k + 1);
    to_pong.notify();
    for (;;) {
      const std::uint32_t seen = to_ping.value();
      if (ball.load() == 2 * k + 2) break;
      to_ping.wait(seen, kHour);
    }
  }
  pong.join();
  EXPECT_EQ(ball.load(), 2 * kRounds);
}

// A producer publishes 50 000 blocks into a link that notifies the word; the
// consumer drains only after waking on it, and still sees every block, in
// order, and ends.
TEST(WakeWord, AConsumerSleepingOnALinksWordSeesEveryBlock) {
  constexpr std::uint64_t kBlocks = 50'000;
  Link link(1, 64, MethodRegistry::with_builtins().create("zoh", {}, 1));
  base::WakeWord word;
  link.set_wake(&word);
  std::thread producer([&] {
    DataBlock b(1);
    for (std::uint64_t k = 1; k <= kBlocks; ++k) {
      b.sequence = k;
      b.set(0, static_cast<double>(k), 0.0, false);
      while (!link.publish(b)) std::this_thread::yield();  // full: the test wants every block
    }
  });
  std::uint64_t last = 0;
  bool in_order = true;
  while (last < kBlocks) {
    const std::uint32_t seen = word.value();
    const std::size_t n = link.drain_to([&](const DataBlock& b) noexcept {
      in_order = in_order && b.sequence == last + 1 && b.values()[0] == static_cast<double>(b.sequence);
      last = b.sequence;
    });
    if (n == 0) word.wait(seen, kHour);
  }
  producer.join();
  EXPECT_TRUE(in_order);
  EXPECT_EQ(last, kBlocks);
  EXPECT_EQ(link.published(), kBlocks);
}

}  // namespace
}  // namespace rtcosim::coupling
