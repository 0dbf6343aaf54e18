// RestClient: HTTP(S) to the Kubernetes API server over libcurl.
//  - Single requests go through HttpTransport (HTTP/1.1 over kept-alive connections, blocking
//    I/O) unless a proxy applies; streamed responses (watches, lists) and proxied requests use
//    libcurl: a pool of easy handles, each keeping its connection alive; HTTP/2 is negotiated
//    by ALPN where the server offers it; DNS and TLS sessions are shared.
//  - TLS verification is always on unless the configuration says insecure-skip-tls-verify;
//    tls-server-name is honoured (SNI and certificate name); client certificates and bearer
//    tokens come from Credentials (token file rotation, exec plugins, re-auth after 401).
//  - One token bucket (--kube-api-qps / --kube-api-burst) paces every request, watch start
//    and retry of this client (share the client, share the bucket).
//  - 429 and 5xx answers carrying a numeric Retry-After are retried after that delay, up to
//    10 times, like client-go; every other non-2xx answer becomes an ApiStatus.
//  - Metrics: rest_client_requests_total{code,host,method},
//    rest_client_request_duration_seconds{verb,host},
//    rest_client_rate_limiter_duration_seconds{verb,host}.
//
// THREAD: every public method may be called from any thread, concurrently.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "host/kube/api/api_status.hpp"
#include "host/kube/api/kube_api.hpp"
#include "host/kube/config/credentials.hpp"
#include "host/kube/config/kube_config.hpp"
#include "host/kube/transport/http_transport.hpp"
#include "host/kube/transport/response_stream.hpp"
#include "host/runtime/clock.hpp"
#include "host/runtime/metrics.hpp"
#include "host/runtime/rate_limiter.hpp"

namespace ccm::kube {

namespace detail {
struct CurlTransfer;
}

enum class Verb : uint8_t { Get, Post, Put, Patch, Delete };
std::string_view verbName(Verb verb);

struct Request {
  Verb verb = Verb::Get;
  std::string path;  // "/api/v1/nodes/n1" plus an escaped query
  std::string body;  // empty = no body
  std::string_view content_type = kJson;
  bool want_body = true;  // false: a successful answer's body is discarded
  // Ask for the answer's object as meta.k8s.io/v1 PartialObjectMetadata (its metadata only),
  // as client-go's metadata client does; a server that does not offer it answers in full.
  bool metadata_answer = false;
  std::chrono::milliseconds timeout{0};  // 0 = the client's default
};

// The Accept header line ("Accept: ...") a request is sent with.
std::string_view acceptHeader(const Request& request);

struct Response {
  int code = 0;
  std::string body;
};

class RestClient {
 public:
  // Fails on an unusable configuration (e.g. unreadable credentials).
  static StatusOr<std::unique_ptr<RestClient>> create(const RestConfig& config,
                                                      const ClientOptions& options,
                                                      Clock& clock = Clock::real(),
                                                      metrics::Registry* registry = nullptr);
  ~RestClient();
  RestClient(const RestClient&) = delete;
  RestClient& operator=(const RestClient&) = delete;

  // Performs a request; a 2xx answer yields the response, anything else an error status.
  ApiResult<Response> call(const Request& request, std::stop_token stop = {});

  // Performs several requests together; each result is what call() would give for it. Every
  // request takes its rate-limiter token first. Without a proxy they are pipelined on one
  // connection (HttpTransport::performBatch, answers read after `gather`); otherwise, or for
  // a single request, they are called one after another. An answer that call() would retry
  // (401 with fresh credentials, 429 or 5xx with Retry-After) is retried through call().
  std::vector<ApiResult<Response>> callBatch(std::span<const Request> requests,
                                             std::stop_token stop,
                                             std::chrono::microseconds gather);

  // Opens a streamed response (watch, large list). A 2xx answer yields the open stream;
  // anything else an error status (after Retry-After retries).
  ApiResult<std::unique_ptr<ResponseStream>> stream(const Request& request, std::stop_token stop,
                                                    StreamOptions options = {});

  const RestConfig& config() const { return config_; }
  const std::string& host() const { return host_label_; }
  TokenBucket& rateLimiter() { return bucket_; }

  // Asked right before each attempt of a mutating request (POST, PUT, PATCH, DELETE) is
  // sent; a non-OK answer fails the request unsent. With leader election the app installs one
  // so that a leader that can no longer be sure it leads (e.g. resumed after a pause longer
  // than its renew deadline) writes nothing while its controllers are being stopped.
  // THREAD: any thread, at any time.
  using WriteGuard = std::function<ApiStatus(const Request&)>;
  void setWriteGuard(WriteGuard guard);

 private:
  friend class ResponseStream;
  struct Metrics;

  RestClient(RestConfig config, const ClientOptions& options, Clock& clock,
             metrics::Registry* registry);
  Status init();
  void initMetrics();

  // Takes (or makes) a handle for this certificate generation.
  std::unique_ptr<detail::CurlTransfer> acquire(const Credentials::Current& creds);
  void release(std::unique_ptr<detail::CurlTransfer> transfer);
  static void destroy(std::unique_ptr<detail::CurlTransfer> transfer);
  Status configureHandle(detail::CurlTransfer& t, const Credentials::Current& creds);
  // Per-request options; `headers` receives the list to free after the transfer.
  void prepare(detail::CurlTransfer& t, const Request& request, const Credentials::Current& creds,
               struct curl_slist** headers, bool streaming, std::chrono::milliseconds max_duration);
  // One attempt of a non-streaming request through libcurl / HttpTransport: the answer's
  // code, body, Retry-After and warnings, or a transport failure (recorded in the metrics).
  ApiStatus sendCurl(const Request& request, const Credentials::Current& creds,
                     std::stop_token stop, Response* response, long* code, long* retry_after,
                     std::vector<std::string>* warnings);
  ApiStatus sendHttp(const Request& request, const Credentials::Current& creds,
                     std::stop_token stop, Response* response, long* code, long* retry_after,
                     std::vector<std::string>* warnings);
  // The lean transport's form of `request`; its header lines go to `headers`, which must
  // outlive the result.
  HttpTransport::Request httpRequest(const Request& request, const Credentials::Current& creds,
                                     std::vector<std::string>* headers) const;
  // A transport failure as a call's status (recorded in the metrics).
  ApiStatus httpFailure(Verb verb, const Status& st, std::chrono::steady_clock::duration elapsed);
  // The write guard's answer for a write (OK for reads and without a guard).
  ApiStatus askWriteGuard(const Request& request) const;
  // The write guard as a transport fence: asked right before the bytes go out; a refusal is
  // kept in `refused`.
  std::function<Status()> fenceFor(const Request& request, ApiStatus* refused) const;
  // Waits for a rate-limiter token (records the metric); false when stopped.
  bool throttle(Verb verb, std::stop_token stop);
  void record(Verb verb, const std::string& code, std::chrono::steady_clock::duration d);
  void logWarnings(const std::vector<std::string>& warnings);
  ApiStatus transportError(CURLcode code, const detail::CurlTransfer& t) const;

  const RestConfig config_;
  const std::string user_agent_;
  const std::chrono::milliseconds timeout_;
  const std::chrono::milliseconds connect_timeout_;
  Clock& clock_;
  Credentials credentials_;
  TokenBucket bucket_;
  metrics::Registry* registry_;
  std::string url_base_;    // server URL, with the host replaced by tls-server-name if set
  std::string connect_to_;  // CURLOPT_CONNECT_TO entry for tls-server-name ("" = none)
  std::string host_label_;  // "host:port" for metrics
  // Non-streaming requests go through this lean transport when no proxy applies (null:
  // libcurl for everything).
  std::unique_ptr<HttpTransport> http_;
  std::unique_ptr<Metrics> metrics_;
  // The guard in force, read on every write without a lock (std::atomic<std::shared_ptr>
  // spins on a lock bit in libstdc++, and ten node workers on two cores made that a busy
  // wait). Every guard ever installed stays alive in guards_ until the client is destroyed,
  // so a reader never holds a freed one; the app installs one per process.
  std::atomic<const WriteGuard*> write_guard_{nullptr};
  std::mutex guards_mu_;
  std::vector<std::unique_ptr<const WriteGuard>> guards_;  // guarded by guards_mu_

  CURLSH* share_ = nullptr;
  std::mutex share_locks_[CURL_LOCK_DATA_LAST];

  std::mutex pool_mu_;
  std::vector<std::unique_ptr<detail::CurlTransfer>> pool_;  // guarded by pool_mu_

  std::mutex warn_mu_;
  std::unordered_set<std::string> warned_;  // guarded by warn_mu_
};

}  // namespace ccm::kube
