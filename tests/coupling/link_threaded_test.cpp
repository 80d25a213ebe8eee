// Two threads exchanging 10^7 blocks through a Link (also under TSan): every
// sequence number is seen exactly once by the consumer or was counted as
// dropped by the producer, in order, with its payload intact.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "coupling/link.hpp"
#include "coupling/registry.hpp"

namespace rtcosim::coupling {
namespace {

std::uint64_t block_count() {
  if (const char* s = std::getenv("RTCOSIM_LINK_BLOCKS")) return std::strtoull(s, nullptr, 10);
  return 10'000'000;
}

// A cheap hash of (sequence, signal): each payload word is predictable.
double payload(std::uint64_t seq, std::size_t i) {
  std::uint64_t x = seq * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<double>(x & 0xFFFFFFFFFFull);
}

// retry: the producer publishes again until the block goes through (the
// failed attempts are still counted as drops by the link).
void exchange(std::size_t capacity_blocks, bool retry) {
  constexpr std::size_t kSignals = 4;
  const std::uint64_t n = block_count();
  const auto registry = MethodRegistry::with_builtins();
  Link link(kSignals, capacity_blocks, registry.create("zoh", {}, kSignals));
  std::vector<std::uint8_t> dropped(n, 0), seen(n, 0);
  std::atomic<bool> done{false};
  std::uint64_t producer_sum = 0, consumer_sum = 0, bad_payload = 0, out_of_order = 0, failed_attempts = 0;

  std::thread consumer([&] {
    std::uint64_t last = 0;
    bool first = true;
    auto sink = [&](const DataBlock& b) noexcept {
      if (!first && b.sequence <= last) ++out_of_order;
      first = false;
      last = b.sequence;
      if (b.sequence < n) ++seen[b.sequence];
      for (std::size_t i = 0; i < kSignals; ++i) {
        if (b.values()[i] != payload(b.sequence, i) || b.derivatives()[i] != -payload(b.sequence, i) ||
            b.derivative_valid(i) != (i % 2 == 0)) {
          ++bad_payload;
        }
        consumer_sum += static_cast<std::uint64_t>(b.values()[i]);
      }
      if (b.tag != static_cast<double>(b.sequence) * 1e-3) ++bad_payload;
    };
    while (!done.load(std::memory_order_acquire)) link.drain_to(sink);
    link.drain_to(sink);
  });

  DataBlock block(kSignals);
  for (std::uint64_t s = 0; s < n; ++s) {
    block.sequence = s;
    block.tag = static_cast<double>(s) * 1e-3;
    for (std::size_t i = 0; i < kSignals; ++i) block.set(i, payload(s, i), -payload(s, i), i % 2 == 0);
    bool delivered = link.publish(block);
    while (!delivered && retry) {
      ++failed_attempts;
      delivered = link.publish(block);
    }
    if (delivered) {
      for (std::size_t i = 0; i < kSignals; ++i) producer_sum += static_cast<std::uint64_t>(payload(s, i));
    } else {
      dropped[s] = 1;
    }
  }
  done.store(true, std::memory_order_release);
  consumer.join();

  std::uint64_t missing = 0, twice = 0, drops = 0;
  for (std::uint64_t s = 0; s < n; ++s) {
    drops += dropped[s];
    if (seen[s] + dropped[s] != 1) ++(seen[s] > 1 ? twice : missing);
  }
  EXPECT_EQ(missing, 0u);
  EXPECT_EQ(twice, 0u);
  EXPECT_EQ(out_of_order, 0u);
  EXPECT_EQ(bad_payload, 0u);
  EXPECT_EQ(consumer_sum, producer_sum);  // checksum over every delivered value
  EXPECT_EQ(link.published() + drops, n);
  EXPECT_EQ(link.dropped(), drops + failed_attempts);
  EXPECT_EQ(link.consumed(), link.published());
  if (retry) {
    EXPECT_EQ(drops, 0u);
  }
}

TEST(LinkThreaded, SmallRingDropsAndCountsButLosesNothingSilently) { exchange(4, false); }

TEST(LinkThreaded, AProducerThatRetriesDeliversEveryBlockInOrder) { exchange(1024, true); }

}  // namespace
}  // namespace rtcosim::coupling
