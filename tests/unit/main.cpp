#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

// Under AddressSanitizer (COMMSTACK_SANITIZE=ON) a malloc too large to serve returns NULL, as it
// does without it. The OTF2 library sizes some allocations from the archive it reads, so a mutated
// archive (test "otf2 reader: truncated and mutated archives ...") asks it for terabytes; OTF2
// handles the NULL and reports an error, which the reader turns into an InputError. ASan's default
// policy would abort inside the library instead.
#if defined(__SANITIZE_ADDRESS__)
extern "C" const char* __asan_default_options() {
  return "allocator_may_return_null=1";
}
#endif
