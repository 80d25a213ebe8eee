#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

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
 * signal count into the consumer's extrapolator over a single-producer,
 * single-consumer ring of block slots.
 *
 * The ring's slots are DataBlocks themselves, so that a block is copied once
 * on each side: the producer fills the next free slot in place
 * (`publish_with`, straight from its partition's signal memory), and the
 * consumer hands the slot itself to the extrapolator, which copies it into
 * its history. (A ring of words between a producer's block and a consumer's
 * staging block copied every signal twice more.)
 *
 * Ownership: the link owns its ring and the extrapolator. Exactly one thread
 * calls `publish`/`publish_with`/`has_room`/`drop` (producer) and exactly
 * one calls `drain`/`drain_to`/`waiting_blocks`/`extrapolator()`
 * (consumer); the counters may be read from any thread.
 *
 * RT-safe: `publish`, `publish_with` and `drain` are noexcept, wait-free and
 * allocate nothing; all storage is sized in the constructor. A full ring
 * drops the new block and counts it: a producer never waits for a slow
 * consumer. With a wake word set (before the producer starts: the DDS
 * bridge for a link it sends), each published block also notifies it: one
 * FUTEX_WAKE while the word's thread sleeps (base/wake_word.hpp), nothing
 * else.
 */
class Link {
 public:
  Link(std::size_t signal_count, std::size_t capacity_blocks, std::unique_ptr<Extrapolator> extrapolator);
  Link(std::size_t signal_count, const LinkTiming& timing, std::unique_ptr<Extrapolator> extrapolator)
      : Link(signal_count, ring_capacity_blocks(timing), std::move(extrapolator)) {}

  // Producer side. Returns false when the ring was full and the block was
  // dropped (counted in dropped()). Precondition: same signal count.
  [[nodiscard]] bool publish(const DataBlock& block) noexcept {
    return publish_with([&block](DataBlock& slot) noexcept { slot.assign_from(block); });
  }
  // Producer side: `fill(DataBlock&)` writes the block in place into the
  // next free slot: its header and every signal (the slot holds whatever
  // block it carried a lap ago). It is not called when the ring is full:
  // the block is dropped and counted, and false returned.
  template <typename Fill>
  [[nodiscard]] bool publish_with(Fill&& fill) noexcept {
    const std::size_t w = write_.load(std::memory_order_relaxed);
    const std::size_t next = w + 1 == slots_.size() ? 0 : w + 1;
    if (next == read_seen_) {
      // Acquire: the consumer has finished reading the slot it gave back
      // before this end writes it again.
      read_seen_ = read_.load(std::memory_order_acquire);
      if (next == read_seen_) {
        base::add_single_writer(dropped_);
        return false;
      }
    }
    fill(slots_[w].block);
    // Release: the slot's words are written before the consumer can see it.
    write_.store(next, std::memory_order_release);
    base::add_single_writer(published_);
    if (wake_ != nullptr) wake_->notify();
    return true;
  }

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
  // took, docs/replay.md). The block is the ring's slot, valid only during
  // the call: a sink that keeps it copies it.
  template <typename Sink>
  std::size_t drain_to(Sink&& sink, std::size_t max_blocks = SIZE_MAX) noexcept {
    std::size_t taken = 0;
    std::size_t r = read_.load(std::memory_order_relaxed);
    while (taken < max_blocks) {
      if (r == write_seen_) {
        // Acquire: the producer's words of every slot up to it are visible.
        write_seen_ = write_.load(std::memory_order_acquire);
        if (r == write_seen_) break;
      }
      const DataBlock& block = slots_[r].block;
      if (tap_ != nullptr) tap_->block(block);
      sink(block);
      r = r + 1 == slots_.size() ? 0 : r + 1;
      // Release: the slot is read before the producer may fill it again.
      read_.store(r, std::memory_order_release);
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
    const std::size_t w = write_.load(std::memory_order_acquire);
    const std::size_t r = read_.load(std::memory_order_relaxed);
    return w >= r ? w - r : w + slots_.size() - r;
  }
  // Producer side: a block would fit now.
  [[nodiscard]] bool has_room() const noexcept {
    const std::size_t w = write_.load(std::memory_order_relaxed);
    const std::size_t next = w + 1 == slots_.size() ? 0 : w + 1;
    return next != read_.load(std::memory_order_acquire);
  }
  // Producer side: counts a block as dropped without offering it (a replay
  // repeats the drops of the run it reproduces).
  void drop() noexcept { base::add_single_writer(dropped_); }

  [[nodiscard]] Extrapolator& extrapolator() noexcept { return *extrapolator_; }
  [[nodiscard]] const Extrapolator& extrapolator() const noexcept { return *extrapolator_; }
  [[nodiscard]] std::size_t signal_count() const noexcept { return signals_; }
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
  // A slot starts on a cache line of its own: the producer fills the one
  // after the slot the consumer reads.
  struct alignas(64) Slot {
    DataBlock block;
  };

  std::size_t capacity_blocks_;
  std::size_t signals_;
  // capacity_blocks_ + 1 slots: one always stays free, so that a full ring
  // and an empty one differ (write_ == read_ is empty).
  std::vector<Slot> slots_;
  std::unique_ptr<Extrapolator> extrapolator_;
  base::WakeWord* wake_ = nullptr;
  BlockTap* tap_ = nullptr;
  // Each end's index and counters on a cache line of its own: each is
  // written by one thread every frame, and sharing a line would make them
  // ping-pong. Each end keeps the other's index as it last read it, and
  // reads it again only when that says the ring is full (empty).
  alignas(64) std::atomic<std::size_t> write_{0};
  std::size_t read_seen_ = 0;  // the producer's
  std::atomic<std::uint64_t> published_{0};
  std::atomic<std::uint64_t> dropped_{0};
  alignas(64) std::atomic<std::size_t> read_{0};
  std::size_t write_seen_ = 0;  // the consumer's
  std::atomic<std::uint64_t> consumed_{0};
};

}  // namespace rtcosim::coupling
