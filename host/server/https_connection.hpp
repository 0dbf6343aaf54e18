// HttpsConnection: one client connection of the secure port. TLS handshake, then a
// keep-alive loop of HTTP/1.1 requests: each request is handed to a RequestSink, which
// answers through respond() (from any thread). Everything else runs on the connection's
// strand.
//
// Limits: the handshake, the reading of one request (including the keep-alive wait before
// it) and the writing of one response each have a deadline; request headers and bodies are
// bounded (431 / 413, then the connection closes). Malformed requests get 400 and a close.
//
// THREAD: start() on the accepting thread; respond() from any thread; the rest on the strand.
#pragma once

#include <array>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "host/server/client_certificates.hpp"

namespace ccm::server {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

struct ConnectionLimits {
  size_t max_header_bytes = size_t{16} * 1024;
  size_t max_body_bytes = size_t{64} * 1024;
  std::chrono::milliseconds handshake_timeout{10000};
  std::chrono::milliseconds read_timeout{30000};
  std::chrono::milliseconds write_timeout{30000};
};

class HttpsConnection;

class RequestSink {
 public:
  virtual ~RequestSink() = default;
  // Called on the connection's strand with a complete request. The sink must call
  // connection->respond() exactly once, now or later, from any thread.
  virtual void onRequest(const std::shared_ptr<HttpsConnection>& connection,
                         HttpRequest request) = 0;
};

class HttpsConnection : public std::enable_shared_from_this<HttpsConnection> {
 public:
  // tls and sink are borrowed and must outlive every connection; open_count is decremented
  // when the connection is destroyed.
  HttpsConnection(boost::asio::ip::tcp::socket socket, boost::asio::ssl::context& tls,
                  RequestSink& sink, ConnectionLimits limits, std::atomic<size_t>* open_count);
  ~HttpsConnection();
  HttpsConnection(const HttpsConnection&) = delete;
  HttpsConnection& operator=(const HttpsConnection&) = delete;

  void start();
  // Sends the answer to the current request (status, headers and body set by the caller;
  // version, keep-alive and Content-Length are set here; HEAD answers lose their body).
  void respond(HttpResponse response);
  // The certificate chain the client presented in the handshake (nullptr: none). Set before
  // the first request reaches the sink.
  const PeerCertificates* peerCertificates() const { return peer_.get(); }

 private:
  // The first bytes, read before the handshake: plain HTTP gets Go's 400 answer, anything
  // else is handed to the TLS handshake as already-read data.
  void onPrefix(boost::beast::error_code ec, size_t n);
  void answerPlainHttp();
  void onHandshake(boost::beast::error_code ec);
  void readRequest();
  void onRead(boost::beast::error_code ec);
  void send(HttpResponse response, bool keep_alive);
  void onWritten(bool keep_alive, boost::beast::error_code ec);
  void rejectAndClose(unsigned status, std::string body);
  void closeGracefully();
  void lingerAndClose();
  void drain();

  boost::beast::ssl_stream<boost::beast::tcp_stream> stream_;
  RequestSink& sink_;
  const ConnectionLimits limits_;
  std::atomic<size_t>* open_count_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::optional<HttpResponse> response_;  // being written
  unsigned request_version_ = 11;
  bool request_keep_alive_ = false;
  bool request_is_head_ = false;
  std::array<char, 5> prefix_{};  // a TLS record header's size
  std::string plain_answer_;      // being written to a plain-HTTP client
  std::unique_ptr<char[]> drain_buffer_;
  size_t drained_ = 0;
  std::shared_ptr<const PeerCertificates> peer_;
};

}  // namespace ccm::server
