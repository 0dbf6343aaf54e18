// HttpClient: HTTP(S) over libcurl for the OpenStack APIs, with TLS options from cloud.conf,
// per-request timeouts and a cancellation probe that aborts a transfer in flight. It pools
// curl handles so that connections are reused across calls.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ccm/types.hpp"

namespace ccm::openstack {

struct TlsOptions {
  std::string ca_file;    // empty: the system's roots
  std::string cert_file;  // client certificate (with key_file)
  std::string key_file;
  bool insecure = false;  // skip server certificate checks
};

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // sent when non-empty (or for POST/PUT)
  std::chrono::milliseconds timeout{60000};
  // Polled while the transfer runs; returning true aborts it with CANCELLED.
  std::function<bool()> cancelled;
};

struct HttpResponse {
  long status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names lowercased
  std::string body;

  // The first header with this (lowercase) name, or "".
  std::string header(const std::string& lower_name) const;
};

// THREAD: send() may be called from any number of threads at once.
class HttpClient {
 public:
  HttpClient(TlsOptions tls, std::string user_agent);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Transport failures map to UNAVAILABLE (connection, TLS), DEADLINE_EXCEEDED (timeout) or
  // CANCELLED; any HTTP status, 5xx included, is a successful send.
  sdk::Result<HttpResponse> send(const HttpRequest& request);

 private:
  void* acquire();
  void release(void* handle);

  TlsOptions tls_;
  std::string user_agent_;
  std::mutex mu_;
  std::vector<void*> idle_;  // guarded by mu_: curl easy handles ready for reuse
};

}  // namespace ccm::openstack
