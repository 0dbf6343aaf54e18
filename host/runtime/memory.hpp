// The host's use of the C library's allocator: how arenas grow, and giving freed heap memory
// back to the operating system.
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

// Makes glibc grow (and keep spare) each arena's top by 4 MiB at a time instead of by what the
// request needs (M_TOP_PAD). With the default, a node burst grew the arenas thousands of times
// by a few pages, each an mprotect whose TLB shootdown interrupts the process's other CPU
// (bench/RESULTS.md); growing only reserves address space, pages become resident when used.
// Left alone when GLIBC_TUNABLES sets glibc.malloc.top_pad (the operator's choice wins); a
// no-op on other C libraries. Returns whether it changed the setting.
// THREAD: call at start-up, before other threads exist.
bool tuneAllocator();

}  // namespace ccm::runtime
