#include "runtime/histogram_memory.hpp"

#include <atomic>
#include <mutex>
#include <new>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

namespace rtcosim::runtime {

namespace {

constexpr std::size_t kMappingBytes = std::size_t{1} << 20;

struct Pool {
  std::mutex mutex;
  std::vector<std::uint64_t*> free;  // slots given back or not yet handed out
};

// Never destroyed: histograms of static objects may go after it would.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

}  // namespace

std::uint64_t* HistogramMemory::take() {
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  if (p.free.empty()) {
    void* m =
        ::mmap(nullptr, kMappingBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    auto* base = static_cast<unsigned char*>(m);
    p.free.reserve(p.free.size() + kMappingBytes / kSlotBytes);
    // Handed out from the mapping's start: the last slot is pushed first.
    for (std::size_t off = kMappingBytes; off >= kSlotBytes; off -= kSlotBytes) {
      p.free.push_back(reinterpret_cast<std::uint64_t*>(base + off - kSlotBytes));
    }
  }
  std::uint64_t* slot = p.free.back();
  p.free.pop_back();
  return slot;
}

void HistogramMemory::clear(std::uint64_t* slot) noexcept {
  // Zero again without touching it: its pages go back to the kernel. Pages
  // that mlockall locked refuse it, and are cleared by hand.
  if (::madvise(slot, kSlotBytes, MADV_DONTNEED) != 0) {
    for (std::size_t i = 0; i < kSlotBytes / sizeof(std::uint64_t); ++i) {
      std::atomic_ref<std::uint64_t>(slot[i]).store(0, std::memory_order_relaxed);
    }
  }
}

void HistogramMemory::give_back(std::uint64_t* slot) noexcept {
  if (!slot) return;
  clear(slot);
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  // Never reallocates: take() reserved room for every slot of each mapping.
  p.free.push_back(slot);
}

std::size_t HistogramMemory::resident_pages(const std::uint64_t* slot) noexcept {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in(kSlotBytes / page);
  if (::mincore(const_cast<std::uint64_t*>(slot), kSlotBytes, in.data()) != 0) return 0;
  std::size_t n = 0;
  for (const unsigned char c : in) n += c & 1u;
  return n;
}

}  // namespace rtcosim::runtime
