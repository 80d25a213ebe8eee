#pragma once

#include <cstddef>
#include <cstdint>

namespace rtcosim::runtime {

/*
 * HistogramMemory: where LogHistogram keeps its buckets. Slots of 16 KiB
 * are carved from anonymous mappings of 1 MiB: the kernel backs a page only
 * when a bucket in it is first written, so a histogram that counts values
 * of a few octaves costs a page or two of resident memory, not 16 KiB, and
 * a graph of 10^4 tasks does not zero 640 MB before its first frame. A
 * slot given back is dropped (madvise MADV_DONTNEED: it reads as zero
 * again, unbacked) and handed out next.
 *
 * Real-time: take and give_back run when a histogram is made or destroyed
 * (graph set-up and teardown), never in a frame; they lock a mutex and make
 * system calls. A real-time run's mlockall makes every mapped page resident
 * before the first frame, so a bucket's first write never faults there; a
 * mapping's unused slots (under 1 MiB) are what that costs. Without it (the
 * lock refused, `realtime: off`), the first write to each of a histogram's
 * pages in a run is a minor fault: a page or two per histogram per run,
 * where before the pages were zeroed when the graph was built.
 */
class HistogramMemory {
 public:
  static constexpr std::size_t kSlotBytes = 16384;
  // A zeroed, page-aligned slot of kSlotBytes; throws std::bad_alloc.
  static std::uint64_t* take();
  static void give_back(std::uint64_t* slot) noexcept;
  // Every bucket of `slot` zero again, its pages handed back to the kernel
  // (cleared by hand where mlockall locked them).
  static void clear(std::uint64_t* slot) noexcept;
  // Pages of `slot` mapped now (mincore): what it costs. A page only read
  // counts too (the kernel's shared zero page), though it costs nothing.
  static std::size_t resident_pages(const std::uint64_t* slot) noexcept;
};

}  // namespace rtcosim::runtime
