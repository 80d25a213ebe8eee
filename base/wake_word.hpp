#pragma once

#include <atomic>
#include <climits>
#include <cstdint>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace rtcosim::base {

/*
 * WakeWord: lets a real-time producer wake one non-real-time thread that
 * sleeps until something was published (the DDS bridge waiting for blocks to
 * send, a benchmark waiting for a block to arrive), without the producer
 * ever taking a lock or blocking.
 *
 * notify() bumps a 32-bit word and, only while a thread sleeps on it, makes
 * one FUTEX_WAKE system call. That call never blocks, takes no user-space
 * lock and allocates nothing; it is the one system call a frame may make
 * (docs/dds.md: a frame that publishes into a remote link). With nobody
 * asleep notify() is two atomic operations.
 *
 * A waiter reads value(), looks for work, and then calls wait() with the
 * value it read: a notify() between the two makes wait() return at once (the
 * kernel compares the word before it sleeps), so no wake-up is lost.
 * Any number of notifiers; the waiters count themselves. The owner keeps the
 * word alive while anyone may notify or wait.
 */
class WakeWord {
 public:
  [[nodiscard]] std::uint32_t value() const noexcept { return word_.load(std::memory_order_seq_cst); }

  void notify() noexcept {
    word_.fetch_add(1, std::memory_order_seq_cst);
    // seq_cst on both sides: either the sleeper's re-check sees the new
    // word, or this load sees the sleeper.
    if (sleepers_.load(std::memory_order_seq_cst) > 0) futex(FUTEX_WAKE_PRIVATE, INT_MAX, nullptr);
  }

  // Sleeps while the word still reads `seen`, at most `timeout_ns`.
  void wait(std::uint32_t seen, std::int64_t timeout_ns) noexcept {
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    if (word_.load(std::memory_order_seq_cst) == seen) {
      const timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000), static_cast<long>(timeout_ns % 1'000'000'000)};
      futex(FUTEX_WAIT_PRIVATE, seen, &ts);  // EAGAIN, EINTR, ETIMEDOUT: the caller looks again
    }
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
  }

 private:
  long futex(int op, std::uint32_t val, const timespec* timeout) noexcept {
    static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
    return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word_), op, val, timeout, nullptr, 0);
  }

  std::atomic<std::uint32_t> word_{0};
  std::atomic<std::uint32_t> sleepers_{0};
};

}  // namespace rtcosim::base
