// The HTTP-level types between kubesim's transport (HttpServer/HttpConnection) and its
// request handling: the request as parsed, the response to send, the streamed-body source
// (watches), and the handler interface.
//
// THREAD: HttpHandler::handle runs on a connection's strand (an io thread); the Responder may
// be called once from any thread. StreamSource methods run on the connection's strand except
// the wake callback passed to arm(), which may be called from any thread.
#pragma once

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
};

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::shared_ptr<StreamSource> stream;  // set: chunked streaming response, body ignored
  bool close = false;                    // close the connection after this response
  bool abort = false;                    // drop the connection without answering (faults)
  // Non-zero: serve the request again once the store reaches this resourceVersion; send this
  // response if it does not within the wait (api_request.hpp: waitForRv).
  uint64_t wait_for_rv = 0;
};

using Responder = std::function<void(HttpResponse)>;

class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  // Must call respond exactly once (synchronously or later, from any thread).
  virtual void handle(HttpRequest& request, Responder respond) = 0;
};

}  // namespace ccm::kubesim
