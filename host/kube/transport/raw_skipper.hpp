// RawSkipper: finds the end of a JSON object or array in raw bytes, without parsing them:
// brackets are matched and strings terminated, nothing else is looked at (64 bytes per step
// where SSE2 is available, see feed()). ResponseStream uses it to skip a value straight from the socket
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
    size_t bytewise_until = 0;  // a block with a backslash is walked special byte by byte
    while (i < n) {
#if defined(__SSE2__)
      // Block step: where the next 64 bytes hold no backslash, one pass classifies them into
      // bit masks, the bytes inside strings are found from the quotes' running parity, and
      // only the brackets outside strings are visited. Dense skipped values (managedFields:
      // `{"f:x":{}}` has a quote or bracket every few bytes) cost a visit per bracket instead
      // of a scan per quote and bracket.
      if (!escape && i >= bytewise_until && i + 64 <= n) {
        Masks m = classify(p + i);
        if (m.backslash == 0) {
          // Bit k: byte k is inside a string (an opening quote counts as inside, a closing
          // one as outside; brackets are never quotes, so the difference does not matter).
          uint64_t inside = prefixXor(m.quote) ^ (in_string ? ~uint64_t{0} : 0);
          uint64_t brackets = (m.open | m.close) & ~inside;
          bool ended = false;
          while (brackets != 0) {
            size_t k = i + static_cast<size_t>(__builtin_ctzll(brackets));
            brackets &= brackets - 1;
            if (!bracket(p[k], depth, kinds)) {
              result = k;
              ended = true;
              break;
            }
          }
          if (ended) {
            break;
          }
          in_string = (inside >> 63) != 0;
          i += 64;
          continue;
        }
        bytewise_until = i + 64;
      }
#endif
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
      } else if (!bracket(c, depth, kinds)) {
        result = i - 1;
        break;
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

  // nextQuoteOrBackslash and nextQuoteOrBracket return the first position at or after i
  // holding one of the bytes they name (n when there is none), 16 bytes per step where SSE2
  // is available: skipped values are mostly runs of plain bytes (image names, digests, field
  // names). The first also steps over strings for scanNodeEvent.
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

 private:
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

  // A bracket outside strings: updates the depth and the kinds of the open containers.
  // False when the scan ends here: the outer container closed (failed_ set when its kind
  // does not match), or a closing bracket does not match its opening one (failed_ set).
  bool bracket(char c, uint32_t& depth, uint64_t& kinds) {
    if (c == '{' || c == '[') {
      if (depth < 64) {
        kinds = (kinds & ~(uint64_t{1} << depth)) | (uint64_t{c == '['} << depth);
      }
      ++depth;
      return true;
    }
    // '}' or ']'
    if (depth == 0) {
      if ((c == ']') != outer_is_array_) {
        failed_ = true;
      }
      return false;
    }
    --depth;
    if (depth < 64 && ((kinds >> depth) & 1) != uint64_t{c == ']'}) {
      failed_ = true;
      return false;
    }
    return true;
  }

#if defined(__SSE2__)
  // Bit k of each mask: byte k of a 64-byte block is a quote, a backslash, an opening
  // bracket ('{' or '['), a closing bracket ('}' or ']').
  struct Masks {
    uint64_t quote = 0, backslash = 0, open = 0, close = 0;
  };
  static Masks classify(const char* p) {
    // c & 0xDF folds '{' onto '[' and '}' onto ']' (and nothing else onto either).
    const __m128i fold = _mm_set1_epi8(static_cast<char>(0xDF));
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i open = _mm_set1_epi8('[');
    const __m128i close = _mm_set1_epi8(']');
    Masks m;
    for (size_t b = 0; b < 4; ++b) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * b));
      __m128i f = _mm_and_si128(v, fold);
      auto bits = [b](__m128i hit) {
        return static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(hit))) << (16 * b);
      };
      m.quote |= bits(_mm_cmpeq_epi8(v, quote));
      m.backslash |= bits(_mm_cmpeq_epi8(v, backslash));
      m.open |= bits(_mm_cmpeq_epi8(f, open));
      m.close |= bits(_mm_cmpeq_epi8(f, close));
    }
    return m;
  }
  // Bit k of the result: the parity of the set bits 0..k of x.
  static uint64_t prefixXor(uint64_t x) {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    return x;
  }
#endif

  uint64_t kinds_ = 0;  // bit d: the container at depth d is an array
  uint32_t depth_ = 0;
  bool outer_is_array_ = false;
  bool in_string_ = false;
  bool escape_ = false;
  bool failed_ = false;
};

}  // namespace ccm::kube::detail
