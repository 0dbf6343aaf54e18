// releaseFreeMemory: glibc's malloc_trim where available.
#include "host/runtime/memory.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

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

}  // namespace ccm::runtime
