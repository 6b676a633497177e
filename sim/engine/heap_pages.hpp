#pragma once

#include <cstddef>

namespace commstack::sim {

// Asks the kernel to back the next `bytes` of the malloc heap with transparent huge pages
// (Linux with glibc; elsewhere a no-op). Why: SimGrid 3.32 gives every actor a stack from
// calloc and keeps its per-comm state on the heap; a 4096-GPU edge-fidelity run creates 8192
// actors and ~400 MB of heap, taken one 4 KiB page fault at a time (91k faults, a fifth of the
// run). Huge pages cut that to a few thousand. The same as glibc's `glibc.malloc.hugetlb=1`
// tunable, which a program cannot set for itself. Returns the bytes advised (0 if none).
std::size_t advise_huge_pages_for_heap(std::size_t bytes);

}  // namespace commstack::sim
