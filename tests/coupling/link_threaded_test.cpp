// Two threads exchanging 10^7 blocks through a Link, as a producer task and a
// consumer task do (also run under ThreadSanitizer): every sequence number is
// seen exactly once by the consumer or was counted as dropped by the
// producer, the consumer sees them in increasing order, and every payload
// word arrives intact. RTCOSIM_LINK_BLOCKS=<count> changes the block count
// for a quick run; the default is 10^7.
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "coupling/link.hpp"
#include "coupling/registry.hpp"

namespace rtcosim::coupling {
namespace {

// ThreadSanitizer finds a race from the happens-before of the first
// blocks, not from their number (AddressSanitizer a bad access from the
// first of its kind); their slowdown made 10^7 blocks a third of CI's TSan
// time, so the sanitizer builds exchange 10^6.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr std::uint64_t kDefaultBlocks = 1'000'000;
#else
constexpr std::uint64_t kDefaultBlocks = 10'000'000;
#endif
constexpr std::size_t kSignals = 4;

std::uint64_t block_count() {
  const char* text = std::getenv("RTCOSIM_LINK_BLOCKS");
  if (text == nullptr || *text == '\0') return kDefaultBlocks;
  char* end = nullptr;
  const std::uint64_t n = std::strtoull(text, &end, 10);
  if (*end != '\0' || n == 0) {
    ADD_FAILURE() << "RTCOSIM_LINK_BLOCKS='" << text << "' is not a positive block count; using " << kDefaultBlocks;
    return kDefaultBlocks;
  }
  return n;
}

// splitmix64: cheap, and every bit of the result depends on every bit of
// the input, so a word from the wrong block or signal does not match.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::uint64_t word_hash(std::uint64_t seq, std::size_t signal) { return mix(seq * kSignals + signal); }

// 52 bits: exactly representable as a double.
double value_of(std::uint64_t hash) { return static_cast<double>(hash >> 12); }
// A power-of-two multiple of the value: exact, and different from it.
double derivative_of(std::uint64_t hash) { return -0.5 * value_of(hash); }
bool validity_of(std::uint64_t hash, std::size_t signal) { return ((hash >> signal) & 1u) != 0; }
double tag_of(std::uint64_t seq) { return 1e-3 * static_cast<double>(seq); }

void fill(DataBlock& b, std::uint64_t seq) {
  b.sequence = seq;
  b.tag = tag_of(seq);
  b.producer_step = seq % 7 == 0 ? 1.5e-3 : 1e-3;
  b.discontinuity = seq % 1000 == 999;
  for (std::size_t i = 0; i < kSignals; ++i) {
    const std::uint64_t h = word_hash(seq, i);
    b.set(i, value_of(h), derivative_of(h), validity_of(h, i));
  }
}

// One bit per sequence number.
class Bitmap {
 public:
  explicit Bitmap(std::uint64_t bits) : bits_(bits), words_((bits + 63) / 64, 0) {}
  // Sets the bit; returns whether it was set already.
  bool test_and_set(std::uint64_t i) {
    std::uint64_t& w = words_[i / 64];
    const std::uint64_t mask = std::uint64_t{1} << (i % 64);
    const bool was = (w & mask) != 0;
    w |= mask;
    return was;
  }
  [[nodiscard]] std::uint64_t count() const {
    std::uint64_t n = 0;
    for (const std::uint64_t w : words_) n += static_cast<std::uint64_t>(std::popcount(w));
    return n;
  }
  // Bits set in both maps.
  [[nodiscard]] std::uint64_t count_both(const Bitmap& other) const {
    std::uint64_t n = 0;
    for (std::size_t k = 0; k < words_.size(); ++k) {
      n += static_cast<std::uint64_t>(std::popcount(words_[k] & other.words_[k]));
    }
    return n;
  }
  // Bits set in neither map, up to the size (the last word's spare bits are
  // in neither and do not count).
  [[nodiscard]] std::uint64_t count_neither(const Bitmap& other) const {
    std::uint64_t n = 0;
    for (std::size_t k = 0; k < words_.size(); ++k) {
      std::uint64_t none = ~(words_[k] | other.words_[k]);
      if (k + 1 == words_.size() && bits_ % 64 != 0) none &= (std::uint64_t{1} << (bits_ % 64)) - 1;
      n += static_cast<std::uint64_t>(std::popcount(none));
    }
    return n;
  }

 private:
  std::uint64_t bits_;
  std::vector<std::uint64_t> words_;
};

// What the consumer found; written by the consumer thread only, read after join.
struct ConsumerLog {
  explicit ConsumerLog(std::uint64_t n) : seen(n) {}
  Bitmap seen;
  std::uint64_t blocks = 0;
  std::uint64_t duplicates = 0;
  std::uint64_t out_of_range = 0;
  std::uint64_t out_of_order = 0;
  std::uint64_t bad_words = 0;  // header fields and payload words that differ from what was sent
  std::uint64_t checksum = 0;
};

enum class Producer {
  // Publishes each block once; a full ring drops it. The consumer is paused
  // a few times while the producer overfills the ring, so drops do happen
  // however the threads are scheduled.
  kDropsWhenFull,
  // Publishes only while the consumer's progress shows room in the ring, so
  // a drop is impossible whatever the scheduling.
  kWaitsForRoom,
};

struct Outcome {
  std::uint64_t published_ok = 0;  // publish returned true
  std::uint64_t forced_pauses = 0;
};

void exchange(std::size_t capacity_blocks, Producer mode) {
  const std::uint64_t n = block_count();
  Link link(kSignals, capacity_blocks, MethodRegistry::with_builtins().create("zoh", {}, kSignals));
  Bitmap dropped(n);
  ConsumerLog log(n);
  std::uint64_t producer_checksum = 0;

  std::atomic<bool> done{false};
  // kRunning -> kPauseRequested (producer) -> kPaused (consumer) -> kRunning
  // (producer). Only the consumer moves it to kPaused, so a producer that sees
  // kPaused knows the consumer is waiting now, not in an earlier round.
  enum Pause : int { kRunning, kPauseRequested, kPaused };
  std::atomic<int> pause{kRunning};
  // Blocks the consumer has taken, published (release) after each drain: its
  // pops happened before, so a producer that reads it (acquire) sees at
  // least that much room in the ring.
  std::atomic<std::uint64_t> consumer_progress{0};

  std::thread consumer([&] {
    std::uint64_t last = 0;
    bool first = true;
    auto sink = [&](const DataBlock& b) noexcept {
      ++log.blocks;
      const std::uint64_t seq = b.sequence;
      if (!first && seq <= last) ++log.out_of_order;
      first = false;
      last = seq;
      if (seq >= n) {
        ++log.out_of_range;
        return;
      }
      if (log.seen.test_and_set(seq)) ++log.duplicates;
      if (b.tag != tag_of(seq) || b.producer_step != (seq % 7 == 0 ? 1.5e-3 : 1e-3) ||
          b.discontinuity != (seq % 1000 == 999)) {
        ++log.bad_words;
      }
      for (std::size_t i = 0; i < kSignals; ++i) {
        const std::uint64_t h = word_hash(seq, i);
        if (b.values()[i] != value_of(h)) ++log.bad_words;
        if (b.derivatives()[i] != derivative_of(h)) ++log.bad_words;
        if (b.derivative_valid(i) != validity_of(h, i)) ++log.bad_words;
        log.checksum += static_cast<std::uint64_t>(b.values()[i]) ^ (std::uint64_t{b.derivative_valid(i)} << 63);
      }
    };
    for (;;) {
      const bool finished = done.load(std::memory_order_acquire);
      // Stored only when it moved: a store per idle spin would take the
      // cache line from the producer, which reads it before every publish.
      if (link.drain_to(sink) != 0) consumer_progress.store(log.blocks, std::memory_order_release);
      if (finished) break;  // the drain after seeing `done` took the last blocks
      if (pause.load(std::memory_order_acquire) == kPauseRequested) {
        pause.store(kPaused, std::memory_order_release);
        while (pause.load(std::memory_order_acquire) == kPaused) std::this_thread::yield();
      }
    }
  });

  Outcome outcome;
  DataBlock block(kSignals);
  // Pause points for kDropsWhenFull: a quarter, half and three quarters in,
  // when a quarter leaves room to overfill the ring.
  const std::uint64_t pause_every = n >= 64 * capacity_blocks ? n / 4 : 0;
  bool overfilling = false;
  for (std::uint64_t s = 0; s < n; ++s) {
    if (mode == Producer::kDropsWhenFull && pause_every > 0 && s > 0 && s % pause_every == 0 &&
        outcome.forced_pauses < 3) {
      pause.store(kPauseRequested, std::memory_order_release);
      while (pause.load(std::memory_order_acquire) != kPaused) std::this_thread::yield();
      overfilling = true;
      ++outcome.forced_pauses;
    }
    if (mode == Producer::kWaitsForRoom) {
      while (outcome.published_ok - consumer_progress.load(std::memory_order_acquire) >= capacity_blocks) {
        std::this_thread::yield();
      }
    }
    fill(block, s);
    if (link.publish(block)) {
      ++outcome.published_ok;
      for (std::size_t i = 0; i < kSignals; ++i) {
        producer_checksum +=
            static_cast<std::uint64_t>(block.values()[i]) ^ (std::uint64_t{block.derivative_valid(i)} << 63);
      }
    } else {
      (void)dropped.test_and_set(s);
      if (overfilling) {
        // The ring is full and the consumer waits: let it go on.
        overfilling = false;
        pause.store(kRunning, std::memory_order_release);
      }
    }
  }
  // Never left paused (a ring larger than the rest of the stream): the
  // consumer would wait forever instead of seeing `done`.
  if (overfilling) pause.store(kRunning, std::memory_order_release);
  done.store(true, std::memory_order_release);
  consumer.join();

  std::printf("%llu blocks, ring of %zu: %llu delivered, %llu dropped\n", static_cast<unsigned long long>(n),
              capacity_blocks, static_cast<unsigned long long>(link.published()),
              static_cast<unsigned long long>(link.dropped()));

  // Every sequence exactly once: seen by the consumer or dropped by the producer.
  EXPECT_EQ(log.seen.count_both(dropped), 0u) << "blocks both delivered and reported dropped";
  EXPECT_EQ(log.seen.count_neither(dropped), 0u) << "blocks lost without being counted";
  EXPECT_EQ(log.duplicates, 0u);
  EXPECT_EQ(log.out_of_range, 0u);
  EXPECT_EQ(log.out_of_order, 0u);
  EXPECT_EQ(log.bad_words, 0u);
  EXPECT_EQ(log.checksum, producer_checksum);
  EXPECT_EQ(log.blocks, outcome.published_ok);

  // The link's own counters agree with both sides.
  EXPECT_EQ(link.published(), outcome.published_ok);
  EXPECT_EQ(link.dropped(), dropped.count());
  EXPECT_EQ(link.published() + link.dropped(), n);
  EXPECT_EQ(link.consumed(), link.published());

  if (mode == Producer::kDropsWhenFull) {
    EXPECT_EQ(outcome.forced_pauses, pause_every > 0 ? 3u : 0u);
    EXPECT_GE(link.dropped(), outcome.forced_pauses);
  } else {
    EXPECT_EQ(link.dropped(), 0u);
  }
}

TEST(LinkThreaded, ASmallRingDropsAndCountsButLosesNothingSilently) { exchange(4, Producer::kDropsWhenFull); }

TEST(LinkThreaded, ABigRingWithAProducerThatWaitsForRoomDropsNothing) { exchange(4096, Producer::kWaitsForRoom); }

}  // namespace
}  // namespace rtcosim::coupling
