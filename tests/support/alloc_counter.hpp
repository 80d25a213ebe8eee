#pragma once

#include <cstdint>

namespace rtcosim::testing {

/*
 * Counts heap allocations made through operator new on the calling thread
 * while a scope is open, to prove that real-time code paths allocate
 * nothing. Linked into every test executable (it replaces the global
 * operator new and delete).
 */
class AllocationScope {
 public:
  AllocationScope() noexcept;
  ~AllocationScope();
  AllocationScope(const AllocationScope&) = delete;
  AllocationScope& operator=(const AllocationScope&) = delete;
  // Allocations on this thread since the scope opened.
  [[nodiscard]] std::uint64_t count() const noexcept;

 private:
  std::uint64_t start_;
};

}  // namespace rtcosim::testing
