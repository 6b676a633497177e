// The heap advice that backs SimGrid's actor stacks and comm state with huge pages: the advised
// range covers what was asked, the heap keeps it, and memory from it is usable.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "sim/engine/heap_pages.hpp"

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitizer = true;  // ASan's allocator does not use the brk heap
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitizer = true;
#else
constexpr bool kSanitizer = false;
#endif
#else
constexpr bool kSanitizer = false;
#endif

// True when some mapping of this process carries the kernel's "hg" (MADV_HUGEPAGE) flag.
bool some_mapping_advised_huge() {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  while (std::getline(smaps, line)) {
    if (line.rfind("VmFlags:", 0) == 0 && line.find(" hg") != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("sim: the heap advice covers the bytes asked for and leaves the heap usable") {
#if defined(__linux__) && defined(__GLIBC__)
  if (kSanitizer) return;
  constexpr std::size_t kAsk = std::size_t{64} << 20;
  const std::size_t advised = commstack::sim::advise_huge_pages_for_heap(kAsk);
  // Rounded to whole 2 MiB pages at both ends of the range the 16 MiB blocks took.
  CHECK(advised >= kAsk - (std::size_t{4} << 20));
  CHECK(advised <= kAsk + (std::size_t{16} << 20));
  CHECK(some_mapping_advised_huge());
  // Allocations after the advice work as before (a few stacks' worth, written and read back).
  for (int i = 0; i < 64; ++i) {
    auto* p = static_cast<unsigned char*>(std::calloc(1, 32768));
    REQUIRE(p != nullptr);
    CHECK(p[32767] == 0);
    std::memset(p, 0xab, 32768);
    CHECK(p[12345] == 0xab);
    std::free(p);
  }
#endif
}
