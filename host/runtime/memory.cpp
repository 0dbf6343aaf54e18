// tuneAllocator and releaseFreeMemory: glibc's mallopt and malloc_trim where available.
#include "host/runtime/memory.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cstdlib>
#include <string_view>

namespace ccm::runtime {

bool releaseFreeMemory() {
#if defined(__GLIBC__)
  // Pad 0: keep nothing spare at the top of the main heap; every arena's free pages, also
  // those in the middle of a heap, are returned with madvise(MADV_DONTNEED).
  return malloc_trim(0) != 0;
#else
  return false;
#endif
}

bool tuneAllocator() {
#if defined(__GLIBC__)
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr &&
      std::string_view(tunables).find("malloc.top_pad") != std::string_view::npos) {
    return false;
  }
  constexpr int kTopPad = 4 << 20;
  return mallopt(M_TOP_PAD, kTopPad) == 1;
#else
  return false;
#endif
}

}  // namespace ccm::runtime
