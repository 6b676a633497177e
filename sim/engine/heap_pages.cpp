#include "sim/engine/heap_pages.hpp"

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <vector>

#if defined(__linux__) && defined(__GLIBC__)
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace commstack::sim {

std::size_t advise_huge_pages_for_heap(std::size_t bytes) {
#if defined(__linux__) && defined(__GLIBC__)
  constexpr std::size_t kHugePage = std::size_t{2} << 20;
  constexpr std::size_t kBlock = std::size_t{16} << 20;
  // Blocks below the mmap threshold come from the brk heap, and a heap that is never trimmed
  // keeps the advised range for the allocations that follow. Fixing both thresholds also stops
  // glibc's dynamic threshold from moving later blocks out of the advised range.
  if (mallopt(M_MMAP_THRESHOLD, static_cast<int>(2 * kBlock)) == 0) return 0;
  if (mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max()) == 0) return 0;
  const auto start = reinterpret_cast<std::uintptr_t>(sbrk(0));
  std::vector<void*> blocks;
  for (std::size_t got = 0; got < bytes; got += kBlock) {
    void* p = std::malloc(kBlock);
    if (p == nullptr) break;
    blocks.push_back(p);
  }
  const auto end = reinterpret_cast<std::uintptr_t>(sbrk(0));
  std::size_t advised = 0;
  const std::uintptr_t lo = (start + kHugePage - 1) & ~(kHugePage - 1);
  const std::uintptr_t hi = end & ~(kHugePage - 1);
  if (hi > lo && madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE) == 0) advised = hi - lo;
  // Freed blocks merge back into the top of the heap (not trimmed): untouched, so no memory is
  // resident until later allocations use it.
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) std::free(*it);
  return advised;
#else
  (void)bytes;
  return 0;
#endif
}

}  // namespace commstack::sim
