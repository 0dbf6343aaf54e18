// Http2Session: HTTP/2 (RFC 9113) on a TLS connection whose ALPN chose "h2", as kube-apiserver
// serves it (Go's net/http2 with the API server's settings): many concurrent streams, each
// request handed to the same HttpHandler as HTTP/1.1 requests, answers sent as DATA frames
// under the client's flow control, streamed answers (watches) as DATA frames while they last.
//
// Settings sent: SETTINGS_MAX_CONCURRENT_STREAMS 250 (the API server's default), a 256 KiB
// stream window and maximum frame size, a connection window of 250 × 256 KiB (the API
// server's MaxUploadBufferPerStream/PerConnection). Request bodies over the API limit get 413.
// A connection without streams for 90 s (the API server's HTTP/2 IdleTimeout) is closed with
// GOAWAY.
//
// goAway(): GOAWAY (NO_ERROR, the last stream seen); with end_streams the streamed answers end
// cleanly at once (a server shutting down ends its watches), otherwise they run on; the
// connection closes when no stream is left. resetStreams(): RST_STREAM on every streamed
// answer (faults).
//
// The session lives inside an HttpConnection and uses its TLS stream and strand; every
// asynchronous operation keeps the owner alive through `owner`.
//
// THREAD: everything runs on the connection's strand.
#pragma once

#include <nghttp2/nghttp2.h>

#include <array>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "kubesim/http_types.hpp"

namespace ccm::kubesim {

struct ConnectionLimits;

class Http2Session {
 public:
  static constexpr uint32_t kMaxConcurrentStreams = 250;
  static constexpr int32_t kStreamWindow = 256 * 1024;
  static constexpr uint32_t kMaxFrameSize = 256 * 1024;

  using Stream = boost::beast::ssl_stream<boost::beast::tcp_stream>;

  // `on_closed` runs once when the session is over (the owner then tears the socket down).
  Http2Session(Stream& stream, HttpHandler& handler, const ConnectionLimits& limits,
               CertificateIdentity identity, std::string peer, TransportStats& stats,
               std::weak_ptr<void> owner, std::function<void()> on_closed);
  ~Http2Session();
  Http2Session(const Http2Session&) = delete;
  Http2Session& operator=(const Http2Session&) = delete;

  // Sends the server preface and starts reading.
  void start();
  void goAway(bool end_streams);
  void resetStreams();
  // The socket is going away: stop every stream source, no more I/O.
  void abandon();

 private:
  struct H2Stream;

  // nghttp2 callbacks (user_data is the session).
  static int onBeginHeaders(nghttp2_session* s, const nghttp2_frame* frame, void* user);
  static int onHeader(nghttp2_session* s, const nghttp2_frame* frame, const uint8_t* name,
                      size_t namelen, const uint8_t* value, size_t valuelen, uint8_t flags,
                      void* user);
  static int onDataChunk(nghttp2_session* s, uint8_t flags, int32_t stream_id,
                         const uint8_t* data, size_t len, void* user);
  static int onFrameRecv(nghttp2_session* s, const nghttp2_frame* frame, void* user);
  static int onStreamClose(nghttp2_session* s, int32_t stream_id, uint32_t error_code,
                           void* user);
  static ssize_t readBody(nghttp2_session* s, int32_t stream_id, uint8_t* buf, size_t length,
                          uint32_t* data_flags, nghttp2_data_source* source, void* user);

  void readMore();
  void flush();
  void dispatch(const std::shared_ptr<H2Stream>& st);
  void respond(const std::shared_ptr<H2Stream>& st, HttpResponse response);
  void submitError(const std::shared_ptr<H2Stream>& st, unsigned status, std::string body,
                   const std::string& content_type);
  ssize_t produce(H2Stream& st, uint8_t* buf, size_t length, uint32_t* data_flags);
  void submitGoAway();
  void armIdleTimer();
  void finish();

  Stream& stream_;
  HttpHandler& handler_;
  const ConnectionLimits& limits_;
  const CertificateIdentity identity_;
  const std::string peer_;
  TransportStats& stats_;
  std::weak_ptr<void> owner_;
  std::function<void()> on_closed_;

  nghttp2_session* session_ = nullptr;
  std::map<int32_t, std::shared_ptr<H2Stream>> streams_;
  std::array<uint8_t, 16384> in_{};
  std::string out_;
  bool writing_ = false;
  bool in_recv_ = false;  // inside nghttp2_session_mem_recv: no sending from callbacks
  bool going_away_ = false;
  bool finished_ = false;
  boost::asio::steady_timer idle_timer_;
};

}  // namespace ccm::kubesim
