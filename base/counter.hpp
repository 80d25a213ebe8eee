#pragma once

#include <atomic>

namespace rtcosim::base {

// Adds to an atomic that only one thread writes (a task's statistics, a
// link end's counters) while others may read it. A relaxed load and store
// instead of fetch_add: no locked read-modify-write on the frame path, and
// readers still see every value whole. Wrong for counters two threads add
// to; those keep fetch_add.
template <class T>
inline void add_single_writer(std::atomic<T>& a, T n = T{1}) noexcept {
  a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

}  // namespace rtcosim::base
