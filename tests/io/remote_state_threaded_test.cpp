// The text a DDS bridge keeps in the run's RemoteState for the summaries
// (io/remote_state.hpp, AtomicText): written by one thread without a lock
// or an allocation, read whole by another.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "io/remote_state.hpp"
#include "tests/support/alloc_counter.hpp"

namespace rtcosim::io {
namespace {

// Cut to its capacity, every byte outside printable ASCII as '?', nothing
// allocated by the writer.
TEST(AtomicText, KeepsPrintableAsciiUpToItsCapacityAndAllocatesNothing) {
  AtomicText text;
  EXPECT_EQ(text.load(), "");
  const std::string long_text(AtomicText::kCapacity + 10, 'x');
  const std::string hostile = "naming '\x1b]0;owned\x07' \xc3\xa9";
  std::uint64_t allocations = 99;
  {
    rtcosim::testing::AllocationScope scope;
    text.store(long_text);
    text.store(hostile);
    allocations = scope.count();
  }
  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(text.load(), "naming '?]0;owned?' ??");
  text.store(long_text);
  EXPECT_EQ(text.load(), long_text.substr(0, AtomicText::kCapacity));
}

// A reader while one thread rewrites it sees one whole write each time,
// never a mixture of two or a length of one with the bytes of another.
TEST(AtomicText, AReaderSeesOneWholeWriteWhileAnotherThreadWrites) {
  AtomicText text;
  const std::string a(40, 'a'), b(AtomicText::kCapacity, 'b');
  text.store(a);
  std::atomic<bool> writing{true};
  // A pause between writes, as the bridge's at most one a second: a writer
  // that never pauses starves a sequence lock's reader (it livelocked under
  // ThreadSanitizer), which is the lock's nature, not what is tested here.
  std::thread writer([&] {
    for (int i = 0; writing.load(std::memory_order_relaxed); ++i) {
      text.store(i % 2 ? b : a);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  });
  int mixed = 0, seen_a = 0, seen_b = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string s = text.load();
    if (s == a) {
      ++seen_a;
    } else if (s == b) {
      ++seen_b;
    } else {
      ++mixed;
    }
  }
  writing = false;
  writer.join();
  EXPECT_EQ(mixed, 0);
  EXPECT_GT(seen_a + seen_b, 0);
}

}  // namespace
}  // namespace rtcosim::io
