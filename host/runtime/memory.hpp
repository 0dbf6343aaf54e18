// Giving freed heap memory back to the operating system.
//
// glibc's allocator keeps freed memory in its per-thread arenas for reuse, so a transient
// peak (a first list of 5,000 nodes, a batch of nodes copied for a provider call) stays in the
// process's resident set long after it is freed. The host calls this after such peaks.
#pragma once

#include <cstddef>

namespace ccm::runtime {

// Releases free pages of every malloc arena to the kernel (glibc's malloc_trim); returns
// whether any memory was released. A no-op returning false on other C libraries.
// THREAD: any thread; it takes each arena's lock in turn, briefly.
bool releaseFreeMemory();

// Caps glibc's malloc arenas at `max` (mallopt M_ARENA_MAX) unless MALLOC_ARENA_MAX is set
// in the environment (the operator's choice wins). glibc gives each thread that contends
// for a lock an arena of its own, up to 8 per core; every arena keeps its own freed memory
// and fragments on its own. Returns whether the cap was applied. Call before threads start.
bool limitHeapArenas(int max);

// This process's resident set in bytes (/proc/self/statm); 0 where it cannot be read.
// THREAD: any thread.
size_t residentBytes();

}  // namespace ccm::runtime
