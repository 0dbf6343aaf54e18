// ResponseStream: the body of a long response (a watch, a large list) read as it arrives.
// It is a RapidJSON input stream (Peek/Take/Tell), so a SAX decoder can parse straight from
// the socket: the bytes are pulled from libcurl (multi interface) only when the parser needs
// more, and at most ~256 KiB are buffered (the transfer is paused beyond that).
//
// While waiting for bytes it calls the idle hook at least every idle_interval, and returns
// '\0' (end of input) when the body ends, the transfer fails or times out, or stop is
// requested; endState() says which.
//
// THREAD: used by one thread (the one that opened it).
#pragma once

#include <curl/curl.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

namespace ccm::kube {

namespace detail {
struct CurlTransfer;
class RawSkipper;
}  // namespace detail

class RestClient;

struct StreamOptions {
  // Whole-transfer limit (0 = none). A watch gets timeoutSeconds plus a grace period.
  std::chrono::milliseconds max_duration{0};
  // Called on the reading thread at least this often while no bytes arrive.
  std::chrono::milliseconds idle_interval{1000};
  std::function<void()> on_idle;
  // Read gathering (0 = off): once everything buffered has been consumed, wait this long
  // before reading again, so that bytes arriving close together (a burst of watch events)
  // are read in one wake-up instead of one each. Bytes that come after a quiet spell longer
  // than this are read as soon as they arrive; the wait ends early when stop is requested.
  std::chrono::milliseconds gather{0};
  // While each wait finds bytes already waiting (a long burst: a cluster of kubelets
  // heartbeating), the wait doubles up to this (0 or below `gather` = never grows); after a
  // quiet spell it is back to `gather`. Events are then handled at most this late, in fewer,
  // larger batches.
  std::chrono::milliseconds gather_max{0};
};

class ResponseStream {
 public:
  using Ch = char;
  enum class End { Open, Clean, TimedOut, Cancelled, Failed };

  ~ResponseStream();
  ResponseStream(const ResponseStream&) = delete;
  ResponseStream& operator=(const ResponseStream&) = delete;

  // RapidJSON stream concept (input only).
  Ch Peek() {
    if (pos_ == end_ && !fill()) {
      return '\0';
    }
    return *pos_;
  }
  Ch Take() {
    if (pos_ == end_ && !fill()) {
      return '\0';
    }
    ++consumed_;
    return *pos_++;
  }
  size_t Tell() const { return consumed_; }
  Ch* PutBegin() { return nullptr; }
  void Put(Ch) {}
  void Flush() {}
  size_t PutEnd(Ch*) { return 0; }

  // The rest of the current line (up to, not including, its '\n'), reading on until it is
  // buffered whole; nullopt when the body ends or fails first, stop is requested, the line is
  // longer than the buffer, or the bytes so far end in '}' without a line end (they may be a
  // whole JSON object whose newline is late or missing: never waited for). A caller can then
  // parse a value from memory, which is several times cheaper than through Peek/Take, and
  // consume() what it parsed. Nothing is consumed here: the stream reads on from the same
  // place either way.
  std::optional<std::string_view> bufferLine();
  // Marks the next n bytes as read (at most what bufferLine() returned).
  void consume(size_t n) {
    pos_ += n;
    consumed_ += n;
  }

  // Skips whitespace; true when the body has no more bytes.
  bool atEnd();
  // Moves to the closing bracket of the container being skipped (see SkippingStream); false
  // when the body ended first or the brackets do not match.
  bool skipRaw(detail::RawSkipper& skipper, bool array);
  // How the body ended (Open while bytes may still come).
  End endState() const { return end_state_; }
  // libcurl's description when endState() is Failed or TimedOut.
  const std::string& error() const { return error_; }
  // HTTP status of the response.
  long httpCode() const { return http_code_; }
  // How many times waiting for more of the body found some (for tests).
  uint64_t reads() const { return reads_; }
  // The gathering wait the next read will use (StreamOptions::gather, grown while busy).
  std::chrono::milliseconds gatherWait() const { return gather_wait_; }

 private:
  friend class RestClient;
  ResponseStream(RestClient* owner, std::unique_ptr<detail::CurlTransfer> transfer,
                 std::stop_token stop, StreamOptions options);

  // Starts the transfer and waits for the response headers (or the end). False when the
  // transfer ended without a response (see endState()/error()).
  bool open();
  // Reads the remaining body (up to a limit) into buffer_ (used for error responses).
  void drain(size_t limit);
  // Pulls more once everything buffered is consumed; false at the end (Cancelled on stop).
  bool fill();
  // Drops the consumed bytes, keeps the rest and waits until more are appended; false when
  // nothing more can come now (the end, a failure, stop, or the buffer is full).
  bool readMore();
  std::string_view buffered() const {
    return pos_ == nullptr ? std::string_view() : std::string_view(pos_, end_ - pos_);
  }
  // One round of curl_multi_perform and message handling.
  void perform();
  void waitForActivity();

  RestClient* owner_;
  std::unique_ptr<detail::CurlTransfer> transfer_;
  CURLM* multi_ = nullptr;
  std::stop_token stop_;
  std::optional<std::stop_callback<std::function<void()>>> stop_callback_;
  StreamOptions options_;
  std::chrono::steady_clock::time_point last_idle_call_;

  std::string buffer_;
  const char* pos_ = nullptr;
  const char* end_ = nullptr;
  size_t consumed_ = 0;
  uint64_t reads_ = 0;
  std::chrono::milliseconds gather_wait_{0};
  bool done_ = false;
  CURLcode result_ = CURLE_OK;
  End end_state_ = End::Open;
  std::string error_;
  long http_code_ = 0;
};

}  // namespace ccm::kube
