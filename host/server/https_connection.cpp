// HttpsConnection: the TLS and HTTP/1.1 state machine of one client connection.
#include "host/server/https_connection.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "host/log/log.hpp"

namespace ccm::server {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace net = boost::asio;

constexpr std::chrono::seconds kShutdownTimeout{2};
constexpr std::chrono::seconds kLingerTimeout{2};
constexpr size_t kDrainChunk = size_t{16} * 1024;
constexpr size_t kDrainMax = size_t{1024} * 1024;

// A TLS record header that is really the start of a plain HTTP request (the methods Go's
// server recognises there).
bool looksLikePlainHttp(std::string_view first5) {
  for (std::string_view start : {"GET /", "HEAD ", "POST ", "PUT /", "OPTIO"}) {
    if (first5 == start) {
      return true;
    }
  }
  return false;
}

bool isHttpParseError(const beast::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_target).category();
}

}  // namespace

HttpsConnection::HttpsConnection(net::ip::tcp::socket socket, net::ssl::context& tls,
                                 RequestSink& sink, ConnectionLimits limits,
                                 std::atomic<size_t>* open_count)
    : stream_(std::move(socket), tls),
      sink_(sink),
      limits_(limits),
      open_count_(open_count),
      // Room for the largest header plus what a client may pipeline behind it.
      buffer_(limits.max_header_bytes + size_t{8} * 1024) {}

HttpsConnection::~HttpsConnection() {
  if (open_count_ != nullptr) {
    open_count_->fetch_sub(1);
  }
}

void HttpsConnection::start() {
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    beast::get_lowest_layer(self->stream_).expires_after(self->limits_.handshake_timeout);
    net::async_read(beast::get_lowest_layer(self->stream_), net::buffer(self->prefix_),
                    beast::bind_front_handler(&HttpsConnection::onPrefix, self));
  });
}

void HttpsConnection::onPrefix(beast::error_code ec, size_t n) {
  if (ec) {
    log::infoV(4, "Secure port connection closed before a TLS handshake", {{"err", ec.message()}});
    beast::error_code ignored;
    beast::get_lowest_layer(stream_).socket().close(ignored);
    return;
  }
  if (looksLikePlainHttp(std::string_view(prefix_.data(), n))) {
    answerPlainHttp();
    return;
  }
  stream_.async_handshake(
      net::ssl::stream_base::server, net::buffer(prefix_.data(), n),
      [self = shared_from_this()](beast::error_code hec, size_t) { self->onHandshake(hec); });
}

// What Go's HTTPS server answers a client that speaks plain HTTP to it, then closes.
void HttpsConnection::answerPlainHttp() {
  log::infoV(3, "Plain HTTP request on the secure port; answering 400");
  plain_answer_ =
      "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";
  beast::get_lowest_layer(stream_).expires_after(limits_.write_timeout);
  net::async_write(beast::get_lowest_layer(stream_), net::buffer(plain_answer_),
                   [self = shared_from_this()](beast::error_code ec, size_t) {
                     if (ec) {
                       beast::error_code ignored;
                       beast::get_lowest_layer(self->stream_).socket().close(ignored);
                       return;
                     }
                     self->lingerAndClose();
                   });
}

void HttpsConnection::onHandshake(beast::error_code ec) {
  if (ec) {
    log::infoV(4, "TLS handshake failed on the secure port", {{"err", ec.message()}});
    beast::error_code ignored;
    beast::get_lowest_layer(stream_).socket().close(ignored);
    return;
  }
  peer_ = PeerCertificates::fromConnection(stream_.native_handle());
  readRequest();
}

void HttpsConnection::readRequest() {
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(limits_.max_header_bytes));
  parser_->body_limit(limits_.max_body_bytes);
  beast::get_lowest_layer(stream_).expires_after(limits_.read_timeout);
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, size_t) { self->onRead(ec); });
}

void HttpsConnection::onRead(beast::error_code ec) {
  if (ec == http::error::end_of_stream) {
    closeGracefully();
    return;
  }
  if (ec == http::error::header_limit || ec == beast::error_code(http::error::buffer_overflow)) {
    rejectAndClose(431, "request header fields too large\n");
    return;
  }
  if (ec == http::error::body_limit) {
    rejectAndClose(413, "request entity too large\n");
    return;
  }
  if (ec && isHttpParseError(ec) && ec != http::error::partial_message) {
    rejectAndClose(400, "bad request: " + ec.message() + "\n");
    return;
  }
  if (ec) {
    // Timeout, reset, TLS error or EOF in the middle of a request: nothing to answer.
    log::infoV(5, "Secure port connection ended", {{"err", ec.message()}});
    beast::error_code ignored;
    beast::get_lowest_layer(stream_).socket().close(ignored);
    return;
  }
  HttpRequest request = parser_->release();
  parser_.reset();
  request_version_ = request.version();
  request_keep_alive_ = request.keep_alive();
  request_is_head_ = request.method() == http::verb::head;
  // No deadline while the sink works on it; respond() sets the write deadline.
  beast::get_lowest_layer(stream_).expires_never();
  sink_.onRequest(shared_from_this(), std::move(request));
}

void HttpsConnection::respond(HttpResponse response) {
  net::post(stream_.get_executor(), [self = shared_from_this(), r = std::move(response)]() mutable {
    self->send(std::move(r), self->request_keep_alive_);
  });
}

void HttpsConnection::send(HttpResponse response, bool keep_alive) {
  response.version(request_version_);
  response.keep_alive(keep_alive);
  if (request_is_head_) {
    response.content_length(response.body().size());
    response.body().clear();
  } else {
    response.prepare_payload();
  }
  response_.emplace(std::move(response));
  beast::get_lowest_layer(stream_).expires_after(limits_.write_timeout);
  http::async_write(stream_, *response_,
                    [self = shared_from_this(), keep_alive](beast::error_code ec, size_t) {
                      self->onWritten(keep_alive, ec);
                    });
}

void HttpsConnection::onWritten(bool keep_alive, beast::error_code ec) {
  response_.reset();
  if (ec) {
    beast::error_code ignored;
    beast::get_lowest_layer(stream_).socket().close(ignored);
    return;
  }
  if (!keep_alive) {
    closeGracefully();
    return;
  }
  readRequest();
}

void HttpsConnection::rejectAndClose(unsigned status, std::string body) {
  log::infoV(3, "Rejected a request on the secure port", {{"code", status}});
  HttpResponse r{static_cast<http::status>(status), request_version_};
  r.set(http::field::content_type, "text/plain; charset=utf-8");
  r.set("X-Content-Type-Options", "nosniff");
  r.body() = std::move(body);
  r.keep_alive(false);
  r.prepare_payload();
  response_.emplace(std::move(r));
  beast::get_lowest_layer(stream_).expires_after(limits_.write_timeout);
  http::async_write(stream_, *response_, [self = shared_from_this()](beast::error_code ec, size_t) {
    self->response_.reset();
    if (ec) {
      beast::error_code ignored;
      beast::get_lowest_layer(self->stream_).socket().close(ignored);
      return;
    }
    self->lingerAndClose();
  });
}

void HttpsConnection::closeGracefully() {
  beast::get_lowest_layer(stream_).expires_after(kShutdownTimeout);
  stream_.async_shutdown([self = shared_from_this()](beast::error_code) {
    beast::error_code ignored;
    beast::get_lowest_layer(self->stream_)
        .socket()
        .shutdown(net::ip::tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(self->stream_).socket().close(ignored);
  });
}

// After an error answer the client may still be sending (a huge header): stop sending, read
// and discard for a little while so that the close does not turn into a reset that destroys
// the answer before the client has read it.
void HttpsConnection::lingerAndClose() {
  beast::error_code ignored;
  beast::get_lowest_layer(stream_).socket().shutdown(net::ip::tcp::socket::shutdown_send, ignored);
  drain_buffer_ = std::make_unique<char[]>(kDrainChunk);
  beast::get_lowest_layer(stream_).expires_after(kLingerTimeout);
  drain();
}

void HttpsConnection::drain() {
  beast::get_lowest_layer(stream_).async_read_some(
      net::buffer(drain_buffer_.get(), kDrainChunk),
      [self = shared_from_this()](beast::error_code ec, size_t n) {
        self->drained_ += n;
        if (ec || self->drained_ >= kDrainMax) {
          beast::error_code ignored;
          beast::get_lowest_layer(self->stream_).socket().close(ignored);
          return;
        }
        self->drain();
      });
}

}  // namespace ccm::server
