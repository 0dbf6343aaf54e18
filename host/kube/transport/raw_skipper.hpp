// RawSkipper: finds the end of a JSON object or array in raw bytes, without parsing them:
// brackets are matched and strings terminated, nothing else is looked at (16 bytes at a time
// where SSE2 is available). ResponseStream uses it to skip a value straight from the socket
// buffer; the object decoders use it to skip what they do not keep (object_decoder.hpp).
//
// THREAD: one thread at a time per skipper.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ccm::kube::detail {

// Finds the closing bracket of a container whose opening bracket was consumed.
class RawSkipper {
 public:
  // Consumes from [p, p + n); returns how many bytes precede the closing bracket (n: not in
  // this span). failed() after a bracket mismatch.
  size_t feed(const char* p, size_t n) {
    // The state lives in locals while scanning: stores through `p` (a char pointer) could
    // alias the members, which would make the compiler reload them for every byte.
    bool in_string = in_string_;
    bool escape = escape_;
    uint32_t depth = depth_;
    uint64_t kinds = kinds_;
    size_t result = n;
    size_t i = 0;
    while (i < n) {
      if (escape) {  // the byte after a backslash in a string
        escape = false;
        ++i;
        continue;
      }
      i = in_string ? nextQuoteOrBackslash(p, i, n) : nextQuoteOrBracket(p, i, n);
      if (i == n) {
        break;
      }
      char c = p[i++];
      if (in_string) {
        if (c == '\\') {
          escape = true;
        } else {
          in_string = false;
        }
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        if (depth < 64) {
          kinds = (kinds & ~(uint64_t{1} << depth)) | (uint64_t{c == '['} << depth);
        }
        ++depth;
      } else {  // '}' or ']'
        if (depth == 0) {
          if ((c == ']') != outer_is_array_) {
            failed_ = true;
          }
          result = i - 1;
          break;
        }
        --depth;
        if (depth < 64 && ((kinds >> depth) & 1) != uint64_t{c == ']'}) {
          failed_ = true;
          result = i - 1;
          break;
        }
      }
    }
    in_string_ = in_string;
    escape_ = escape;
    depth_ = depth;
    kinds_ = kinds;
    return result;
  }
  void start(bool outer_is_array) {
    outer_is_array_ = outer_is_array;
    depth_ = 0;
    in_string_ = escape_ = failed_ = false;
  }
  bool failed() const { return failed_; }

 private:
  // Each returns the first position at or after i holding one of the bytes it names (n when
  // there is none). 16 bytes per step where SSE2 is available: skipped values are mostly runs
  // of plain bytes (image names, digests, field names).
  static size_t nextQuoteOrBackslash(const char* p, size_t i, size_t n) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    for (; i + 16 <= n; i += 16) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      auto m = static_cast<unsigned>(
          _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash))));
      if (m != 0) {
        return i + static_cast<size_t>(__builtin_ctz(m));
      }
    }
#endif
    while (i < n && p[i] != '"' && p[i] != '\\') {
      ++i;
    }
    return i;
  }
  static size_t nextQuoteOrBracket(const char* p, size_t i, size_t n) {
#if defined(__SSE2__)
    // c & 0xDF folds '{' onto '[' and '}' onto ']' (and nothing else onto either).
    const __m128i fold = _mm_set1_epi8(static_cast<char>(0xDF));
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i open = _mm_set1_epi8('[');
    const __m128i close = _mm_set1_epi8(']');
    for (; i + 16 <= n; i += 16) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      __m128i f = _mm_and_si128(v, fold);
      __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(v, quote),
                                 _mm_or_si128(_mm_cmpeq_epi8(f, open), _mm_cmpeq_epi8(f, close)));
      auto m = static_cast<unsigned>(_mm_movemask_epi8(hit));
      if (m != 0) {
        return i + static_cast<size_t>(__builtin_ctz(m));
      }
    }
#endif
    for (; i < n; ++i) {
      char c = p[i];
      if (c == '"' || c == '{' || c == '[' || c == '}' || c == ']') {
        break;
      }
    }
    return i;
  }

  uint64_t kinds_ = 0;  // bit d: the container at depth d is an array
  uint32_t depth_ = 0;
  bool outer_is_array_ = false;
  bool in_string_ = false;
  bool escape_ = false;
  bool failed_ = false;
};

}  // namespace ccm::kube::detail
