#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <boost/lockfree/spsc_queue.hpp>

#include "base/counter.hpp"
#include "base/wake_word.hpp"
#include "coupling/data_block.hpp"
#include "coupling/extrapolator.hpp"

namespace rtcosim::coupling {

// Periods that size a link's ring. A consumer frame that runs long leaves
// blocks waiting: the ring holds every block produced during the consumer's
// longest frame plus `margin_blocks`.
struct LinkTiming {
  double producer_period = 0.0;     // seconds, > 0
  double consumer_period = 0.0;     // seconds, > 0
  double consumer_max_frame = 0.0;  // seconds; 0 means 4 consumer periods
  std::size_t margin_blocks = 2;
};

// Blocks the ring of a link with this timing holds (at least 2).
[[nodiscard]] std::size_t ring_capacity_blocks(const LinkTiming& timing);

/*
 * BlockTap: sees every block a link's consumer drains, as it drains it (a
 * replay log records the blocks of a link whose producer is on another
 * host, docs/replay.md). Set before the consumer starts, cleared after it
 * stopped. RT: noexcept, allocation-free.
 */
class BlockTap {
 public:
  virtual ~BlockTap() = default;
  virtual void block(const DataBlock& block) noexcept = 0;
};

/*
 * Link: one producer task, one consumer task, carrying DataBlocks of a fixed
 * signal count over a boost::lockfree::spsc_queue, into the consumer's
 * extrapolator.
 *
 * Ownership: the link owns its ring, the consumer's staging block and the
 * extrapolator. Exactly one thread calls `publish` (producer) and exactly one
 * calls `drain`/`extrapolator()` (consumer); the counters may be read from any
 * thread.
 *
 * RT-safe: `publish` and `drain` are noexcept, wait-free and allocate
 * nothing; all storage is sized in the constructor. A full ring drops the
 * new block and counts it: a producer never waits for a slow consumer.
 * With a wake word set (before the producer starts: the DDS bridge for a
 * link it sends), each published block also notifies it: one FUTEX_WAKE
 * while the word's thread sleeps (base/wake_word.hpp), nothing else.
 */
class Link {
 public:
  Link(std::size_t signal_count, std::size_t capacity_blocks, std::unique_ptr<Extrapolator> extrapolator);
  Link(std::size_t signal_count, const LinkTiming& timing, std::unique_ptr<Extrapolator> extrapolator)
      : Link(signal_count, ring_capacity_blocks(timing), std::move(extrapolator)) {}

  // Producer side. Returns false when the ring was full and the block was
  // dropped (counted in dropped()). Precondition: same signal count.
  [[nodiscard]] bool publish(const DataBlock& block) noexcept;

  // Set-up: `word` (not owned; nullptr: none) is notified after every
  // published block. Set it before the producer's first publish.
  void set_wake(base::WakeWord* word) noexcept { wake_ = word; }
  // Set-up, while the consumer does not drain: the tap that sees every
  // drained block (nullptr: none).
  void set_tap(BlockTap* tap) noexcept { tap_ = tap; }

  // Consumer side: hands every waiting block, oldest first, to the
  // extrapolator. Returns how many.
  std::size_t drain() noexcept {
    return drain_to([this](const DataBlock& b) noexcept { extrapolator_->push(b); });
  }

  // Consumer side: hands every waiting block, oldest first, to `sink`; at
  // most `max_blocks` of them (a replay takes exactly what the logged frame
  // took, docs/replay.md).
  template <typename Sink>
  std::size_t drain_to(Sink&& sink, std::size_t max_blocks = SIZE_MAX) noexcept {
    std::size_t taken = 0;
    const std::size_t payload_words = staging_.payload().size();
    while (taken < max_blocks && ring_.read_available() >= kHeaderWords + payload_words) {
      std::array<double, kHeaderWords> header{};
      // Both pops succeed in full: the producer publishes a whole block
      // before we could see its words, and nobody else pops.
      (void)ring_.pop(header.data(), kHeaderWords);
      (void)ring_.pop(staging_.payload().data(), payload_words);
      decode_header(header, staging_);
      if (tap_ != nullptr) tap_->block(staging_);
      sink(static_cast<const DataBlock&>(staging_));
      ++taken;
    }
    base::add_single_writer(consumed_, static_cast<std::uint64_t>(taken));
    return taken;
  }

  // Consumer side: drains at most `max_blocks` into the extrapolator.
  std::size_t drain(std::size_t max_blocks) noexcept {
    return drain_to([this](const DataBlock& b) noexcept { extrapolator_->push(b); }, max_blocks);
  }
  // Consumer side: whole blocks waiting in the ring.
  [[nodiscard]] std::size_t waiting_blocks() const noexcept {
    return ring_.read_available() / (kHeaderWords + staging_.payload().size());
  }
  // Producer side: a block would fit now.
  [[nodiscard]] bool has_room() const noexcept {
    return ring_.write_available() >= kHeaderWords + staging_.payload().size();
  }
  // Producer side: counts a block as dropped without offering it (a replay
  // repeats the drops of the run it reproduces).
  void drop() noexcept { base::add_single_writer(dropped_); }

  [[nodiscard]] Extrapolator& extrapolator() noexcept { return *extrapolator_; }
  [[nodiscard]] const Extrapolator& extrapolator() const noexcept { return *extrapolator_; }
  [[nodiscard]] std::size_t signal_count() const noexcept { return staging_.signal_count(); }
  [[nodiscard]] std::size_t capacity_blocks() const noexcept { return capacity_blocks_; }

  [[nodiscard]] std::uint64_t published() const noexcept { return published_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t consumed() const noexcept { return consumed_.load(std::memory_order_relaxed); }
  // A fresh run: counters back to zero, the extrapolator's too (between
  // runs only, with neither end running).
  void reset_counters() noexcept {
    for (auto* c : {&published_, &dropped_, &consumed_}) c->store(0, std::memory_order_relaxed);
    extrapolator_->reset_counters();
  }

 private:
  // tag, producer step, sequence, flags: one ring word each.
  static constexpr std::size_t kHeaderWords = 4;
  static void decode_header(const std::array<double, kHeaderWords>& header, DataBlock& block) noexcept;

  std::size_t capacity_blocks_;
  boost::lockfree::spsc_queue<double> ring_;
  DataBlock staging_;  // consumer-owned
  std::unique_ptr<Extrapolator> extrapolator_;
  base::WakeWord* wake_ = nullptr;
  BlockTap* tap_ = nullptr;
  // Producer and consumer counters on separate cache lines: each is written
  // by one thread every frame, and sharing a line would make them ping-pong.
  alignas(64) std::atomic<std::uint64_t> published_{0};
  std::atomic<std::uint64_t> dropped_{0};
  alignas(64) std::atomic<std::uint64_t> consumed_{0};
};

}  // namespace rtcosim::coupling
