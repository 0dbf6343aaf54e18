// CCM_TEST_GLIBC_MALLOC is 1 when the process's allocator is glibc's malloc, whose arenas and
// trimming the memory tests measure, and 0 otherwise: another C library, or AddressSanitizer,
// which replaces malloc with its own allocator. gcc announces ASan with __SANITIZE_ADDRESS__,
// clang (before 18) only through __has_feature(address_sanitizer).
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define CCM_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CCM_TEST_ASAN 1
#endif
#endif

#if defined(__GLIBC__) && !defined(CCM_TEST_ASAN)
#define CCM_TEST_GLIBC_MALLOC 1
#else
#define CCM_TEST_GLIBC_MALLOC 0
#endif
