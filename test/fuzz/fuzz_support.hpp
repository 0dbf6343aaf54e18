// Small helpers shared by the fuzz targets.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace ccm::fuzz {

// A broken invariant: print what and abort, so libFuzzer (or the replay test) reports the
// input as a crash.
[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
  std::abort();
}

inline void require(bool ok, const char* what) {
  if (!ok) {
    fail(what);
  }
}

// Reads every byte of a view, so AddressSanitizer sees a view that points at freed or foreign
// memory; the sum is returned so the compiler cannot drop the reads.
inline uint64_t touch(std::string_view s) {
  uint64_t h = s.size();
  for (char c : s) {
    h = h * 131 + static_cast<unsigned char>(c);
  }
  return h;
}

// Inputs naming device or process files would make a file-reading parser block or read
// forever (/dev/zero, /dev/stdin); those are operator configuration, not input worth fuzzing.
inline bool namesSpecialFiles(std::string_view text) {
  return text.find("/dev") != std::string_view::npos ||
         text.find("/proc") != std::string_view::npos ||
         text.find("/sys") != std::string_view::npos;
}

}  // namespace ccm::fuzz
