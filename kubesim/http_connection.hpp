// HttpConnection: one TLS client connection. Handshake (optional client certificate; ALPN
// offers h2 and http/1.1), then either an Http2Session (ALPN chose h2) or a keep-alive loop
// of HTTP/1.1 requests handed to the HttpHandler; a response is either a
// plain body or a chunked stream pulled from a StreamSource (watches). While a stream runs
// the connection also reads, to notice a client that went away.
//
// Request bodies over the API limit (3 MiB) get 413 RequestEntityTooLarge and the connection
// closes (lingering briefly so the client can read the answer).
//
// THREAD: everything runs on the connection's strand; close() may be called from any thread.
#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "kubesim/http2_session.hpp"
#include "kubesim/http_types.hpp"

namespace ccm::kubesim {

struct ConnectionLimits {
  size_t max_body_bytes = size_t{3} * 1024 * 1024;  // the API server's limit (413 above)
  size_t hard_body_cap = size_t{64} * 1024 * 1024;  // bodies above this are not even read
  size_t max_header_bytes = size_t{64} * 1024;
  std::chrono::seconds handshake_timeout{10};
  std::chrono::seconds idle_timeout{600};
};

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(boost::asio::ip::tcp::socket socket, boost::asio::ssl::context& tls,
                 HttpHandler& handler, ConnectionLimits limits, TransportStats& stats,
                 std::function<void(HttpConnection*)> on_gone);
  ~HttpConnection();

  void start();
  // Drops the connection (any thread); in-flight work is abandoned.
  void close();
  // HTTP/2 only (any thread): GOAWAY, streamed answers ended when end_streams (see
  // Http2Session::goAway); RST_STREAM on every streamed answer. No-ops on HTTP/1.1.
  void goAway(bool end_streams);
  void resetStreams();
  // The client's address, "127.0.0.1:54321" (fixed at construction).
  const std::string& peer() const { return peer_; }
  // ALPN chose h2 (set once the handshake is done).
  bool http2() const { return http2_.load(); }

 private:
  void onHandshake(boost::beast::error_code ec);
  void readRequest();
  void onRead(boost::beast::error_code ec, size_t bytes);
  void deliver(HttpResponse response);
  void onWritten(bool keep_alive, boost::beast::error_code ec);
  void startStream(HttpResponse response);
  void pump();
  void onChunkWritten(boost::beast::error_code ec);
  void endStream();
  void watchPeer();
  void rejectAndLinger(unsigned status, std::string body, const std::string& content_type);
  void linger();
  void teardown();

  boost::beast::ssl_stream<boost::beast::tcp_stream> stream_;
  HttpHandler& handler_;
  const ConnectionLimits limits_;
  TransportStats& stats_;
  std::function<void(HttpConnection*)> on_gone_;
  std::unique_ptr<Http2Session> h2_;
  std::atomic<bool> http2_{false};

  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  HttpRequest request_;
  CertificateIdentity identity_;
  std::string peer_;
  bool request_keep_alive_ = true;
  unsigned request_version_ = 11;

  std::shared_ptr<void> in_flight_;  // response being written (keeps it alive)
  std::shared_ptr<StreamSource> source_;
  std::string chunk_;
  bool writing_ = false;
  bool stream_done_ = false;
  bool closed_ = false;
  char peer_probe_[512];
};

}  // namespace ccm::kubesim
