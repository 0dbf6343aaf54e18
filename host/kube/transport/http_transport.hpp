// HttpTransport: single HTTP/1.1 requests over kept-alive connections — TLS through OpenSSL,
// or plain TCP — with blocking socket I/O: one write and usually one read per request.
//
// RestClient sends every non-streaming request through it unless a proxy applies (libcurl
// keeps proxies, and every streamed response: watches and lists). A request costs about half
// the CPU of the same request through libcurl's poll loop (measured in bench/RESULTS.md),
// which matters when thousands of nodes join at once.
//
//  - TLS 1.2+, peer and host verification (IP addresses against the certificate's IP SANs)
//    unless the configuration says insecure-skip-tls-verify; the CA bundle or the system
//    trust store; tls-server-name for SNI and verification while connecting to the server's
//    address; client certificates (with chains) per certificate generation.
//  - Connections are taken LIFO from a pool (at most 64 idle), checked for a close from the
//    server before reuse, and a request that fails on a reused connection before any byte of
//    the answer arrived is sent once more on a fresh one (as libcurl does).
//  - Bodies by Content-Length, chunked encoding, or to the end of the connection; 1xx
//    interim answers are skipped.
//  - A request with a stop token is cancelled by shutting its socket down.
//  - performBatch(): several requests pipelined on one connection (see there).
//
// THREAD: perform() may be called from any thread, concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "host/kube/config/credentials.hpp"
#include "host/kube/config/kube_config.hpp"
#include "host/runtime/status.hpp"

typedef struct ssl_ctx_st SSL_CTX;

namespace ccm::kube {

class HttpTransport {
 public:
  struct Options {
    std::chrono::milliseconds connect_timeout{30000};
    // A request that receives (or can send) nothing for this long fails.
    std::chrono::milliseconds stall{120000};
  };

  struct Request {
    std::string_view method;  // GET POST PUT PATCH DELETE
    std::string_view target;  // path and query, without the server's path prefix
    // Complete header lines without CRLF ("Accept: application/json"); Host and
    // Content-Length are added.
    const std::vector<std::string>* headers = nullptr;
    std::string_view body;
    bool send_body = false;                // a Content-Length (possibly 0) and the body are sent
    bool discard_success_body = false;     // a 2xx answer's body is read but not kept
    std::chrono::milliseconds timeout{0};  // whole request; 0 = none
    // Asked once the connection is ready, right before the request's first byte is written;
    // a non-OK answer fails the request unsent with that status (the leader's write fence:
    // the later it is asked, the shorter a pause that can slip a stale write through).
    const std::function<Status()>* before_send = nullptr;
  };

  struct Response {
    int code = 0;
    long retry_after_seconds = -1;      // numeric Retry-After, else -1
    std::vector<std::string> warnings;  // Warning header texts ("299 - \"text\"" -> text)
  };

  // Whether requests to this configuration may bypass libcurl: no proxy is configured and no
  // proxy environment variable is set.
  static bool usableFor(const RestConfig& config);

  // Fails on an unusable CA bundle or server URL.
  static StatusOr<std::unique_ptr<HttpTransport>> create(const RestConfig& config, Options options);
  ~HttpTransport();
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  // Performs one request with the given credentials' client certificate (if any). The answer's
  // body is appended to `body` (nullptr: read and discarded). Transport failures are a Status:
  // Cancelled (stop requested), DeadlineExceeded (timeout or stall), Unavailable (anything
  // else: connection refused or reset, TLS or protocol errors).
  Status perform(const Request& request, const Credentials::Current& creds, std::stop_token stop,
                 Response* response, std::string* body);

  // One request of a batch and what came of it.
  struct Exchange {
    Request request;
    Status status;  // OK once an answer (any HTTP code) was read; else as for perform()
    Response response;
    std::string body;  // the answer's body (empty when discarded)
  };

  // Performs the requests together on one connection: written at once and answered in order
  // (HTTP/1.1 pipelining), so the server wakes once for all of them; with `gather`, a read
  // that finds nothing waits that long first, and the answers are taken in a few wake-ups
  // rather than one each. Every exchange gets its own status. The first request's timeout
  // and before_send govern the whole batch. When the server closes the connection after an
  // answer (Connection: close), it did not act on the requests after it, and those are sent
  // again on another connection; when the connection fails, the answered requests keep their
  // outcome and the others fail as perform() would (the server may have acted on them).
  void performBatch(std::span<Exchange> batch, const Credentials::Current& creds,
                    std::stop_token stop, std::chrono::microseconds gather);

  // Connections made so far (for tests).
  uint64_t connectionsOpened() const;

 private:
  class Conn;
  struct ClientCert;

  HttpTransport(const RestConfig& config, Options options);
  Status init();
  // Opens a connection (TCP, then the TLS handshake); `stop` cancels it while it waits.
  StatusOr<std::unique_ptr<Conn>> connect(const Credentials::Current& creds,
                                          std::chrono::steady_clock::time_point deadline,
                                          std::stop_token stop);
  std::unique_ptr<Conn> takeIdle(uint64_t generation);
  void putIdle(std::unique_ptr<Conn> conn);
  // Appends the request's bytes (head and body) to `out`.
  void format(const Request& request, std::string* out) const;
  // Reads one answer; `more_follow`: pipelined answers follow it on the connection.
  // `nothing_received` is set when the failure happened before any byte of it arrived.
  Status readAnswer(Conn& conn, const Request& request, std::stop_token stop,
                    std::chrono::steady_clock::time_point deadline, bool more_follow,
                    Response* response, std::string* body, bool* nothing_received, bool* reusable);
  // The receive timeout for the next read: the stall timeout, or less before the deadline.
  std::chrono::milliseconds receiveTimeout(std::chrono::steady_clock::time_point deadline) const;
  // How a failed exchange is reported (Cancelled, DeadlineExceeded or Unavailable).
  Status failure(const Conn& conn, std::stop_token stop,
                 std::chrono::steady_clock::time_point deadline, std::string_view what) const;

  const RestConfig config_;
  const Options options_;
  bool tls_ = true;
  std::string connect_host_;  // where the socket connects
  std::string port_;
  std::string tls_name_;     // SNI and certificate name
  std::string host_header_;  // "host:port"
  std::string path_prefix_;  // the server URL's path ("" or "/prefix")
  SSL_CTX* ctx_ = nullptr;

  std::mutex mu_;
  std::vector<std::unique_ptr<Conn>> idle_;  // guarded by mu_
  std::shared_ptr<ClientCert> cert_;         // guarded by mu_; the newest generation seen
  uint64_t opened_ = 0;                      // guarded by mu_
};

}  // namespace ccm::kube
