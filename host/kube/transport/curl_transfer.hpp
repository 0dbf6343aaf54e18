// Internal: one libcurl easy handle with its per-transfer state (body sink, headers seen),
// shared by RestClient (blocking calls) and ResponseStream (streamed bodies).
//
// THREAD: a CurlTransfer is used by one thread at a time; handles move between threads only
// through RestClient's pool.
#pragma once

#include <curl/curl.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace ccm::kube::detail {

struct CurlTransfer {
  CURL* easy = nullptr;
  uint64_t cert_generation = 0;
  char error[CURL_ERROR_SIZE] = {};

  // Per-transfer state, reset by begin().
  std::string* body = nullptr;   // where body bytes go (null: discard)
  size_t body_limit = 0;         // stop storing beyond this many bytes (0 = unlimited)
  bool pause_when_full = false;  // streaming: pause instead of growing past body_limit
  bool paused = false;
  bool headers_done = false;
  long retry_after_seconds = -1;
  std::vector<std::string> warnings;

  void begin(std::string* sink, size_t limit, bool pause) {
    body = sink;
    body_limit = limit;
    pause_when_full = pause;
    paused = false;
    headers_done = false;
    retry_after_seconds = -1;
    warnings.clear();
    error[0] = '\0';
  }

  static size_t onWrite(char* data, size_t size, size_t n, void* self);
  static size_t onHeader(char* data, size_t size, size_t n, void* self);
};

}  // namespace ccm::kube::detail
