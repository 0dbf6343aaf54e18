// The HTTP-level types between kubesim's transport (HttpServer/HttpConnection) and its
// request handling: the request as parsed, the response to send, the streamed-body source
// (watches), and the handler interface.
//
// THREAD: HttpHandler::handle runs on a connection's strand (an io thread); the Responder may
// be called once from any thread. StreamSource methods run on the connection's strand except
// the wake callback passed to arm(), which may be called from any thread.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/beast/http.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ccm::kubesim {

// Who the verified TLS client certificate says the caller is.
struct CertificateIdentity {
  bool present = false;
  std::string user;                 // subject CN
  std::vector<std::string> groups;  // subject O entries
};

struct HttpRequest {
  boost::beast::http::request<boost::beast::http::string_body> message;
  CertificateIdentity certificate;
  std::string peer;  // "127.0.0.1:54321"
  bool http2 = false;  // arrived on an HTTP/2 stream (ALPN h2); else HTTP/1.x
};

// A body produced over time (watch streams), sent with chunked transfer encoding.
class StreamSource {
 public:
  virtual ~StreamSource() = default;
  // Called once, on the connection's strand, right after the headers were sent.
  virtual void start(const boost::asio::any_io_executor& strand) = 0;
  // Appends whatever is ready to out. Returns false when the stream is over (send out first).
  virtual bool poll(std::string& out) = 0;
  // One-shot: wake() is called (from any thread) when poll() may have something new.
  virtual void arm(std::function<void()> wake) = 0;
  // The connection is done with this stream (ended, closed or failed). Idempotent.
  virtual void stop() = 0;
  // Asked once poll() returned false: end the stream abruptly (HTTP/2 RST_STREAM, on HTTP/1.1
  // the connection is dropped) instead of with a clean end. Fault injection sets it.
  virtual bool resetAtEnd() const { return false; }
};

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::shared_ptr<StreamSource> stream;  // set: chunked streaming response, body ignored
  bool close = false;                    // close the connection after this response
  bool abort = false;                    // drop the connection without answering (faults)
  // HTTP/2: RST_STREAM (INTERNAL_ERROR) instead of an answer; HTTP/1.1: like abort (faults).
  bool reset = false;
  // Once this answer is sent, tell the client to take new requests elsewhere: HTTP/2 GOAWAY
  // (NO_ERROR; streams already open run on), HTTP/1.1 `Connection: close` (faults).
  bool goaway = false;
  // Non-zero: serve the request again once the store reaches this resourceVersion; send this
  // response if it does not within the wait (api_request.hpp: waitForRv).
  uint64_t wait_for_rv = 0;
};

using Responder = std::function<void(HttpResponse)>;

// Transport counters (GET /admin/status, "transport"): what the clients negotiated and what
// the server did to their connections.
struct TransportStats {
  std::atomic<uint64_t> http1_connections{0};    // handshakes that chose HTTP/1.1
  std::atomic<uint64_t> http2_connections{0};    // handshakes that chose h2
  std::atomic<int64_t> http2_connections_open{0};
  std::atomic<uint64_t> http2_streams{0};        // HTTP/2 requests (streams) answered
  std::atomic<int64_t> http2_streams_open{0};
  std::atomic<int64_t> http2_watch_streams_open{0};  // streamed answers (watches) running
  std::atomic<uint64_t> goaways_sent{0};
  std::atomic<uint64_t> streams_reset{0};        // RST_STREAM sent by the server
  std::atomic<uint64_t> gzip_responses{0};
};

class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  // Must call respond exactly once (synchronously or later, from any thread).
  virtual void handle(HttpRequest& request, Responder respond) = 0;
};

}  // namespace ccm::kubesim
