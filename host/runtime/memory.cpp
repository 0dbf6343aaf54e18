// releaseFreeMemory: glibc's malloc_trim where available.
#include "host/runtime/memory.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>

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

bool limitHeapArenas(int max) {
#if defined(__GLIBC__)
  if (std::getenv("MALLOC_ARENA_MAX") != nullptr) {
    return false;
  }
  return mallopt(M_ARENA_MAX, max) == 1;
#else
  (void)max;
  return false;
#endif
}

size_t residentBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t size_pages = 0;
  size_t resident_pages = 0;
  long page = sysconf(_SC_PAGESIZE);
  if (!(statm >> size_pages >> resident_pages) || page <= 0) {
    return 0;
  }
  return resident_pages * static_cast<size_t>(page);
}

}  // namespace ccm::runtime
