// HttpConnection: TLS handshake, the HTTP/1.1 keep-alive loop, chunked streaming.
#include "kubesim/http_connection.hpp"

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "host/log/log.hpp"
#include "host/tls/self_signed.hpp"
#include "kubesim/api_error.hpp"

namespace ccm::kubesim {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

namespace {

CertificateIdentity identityFrom(SSL* ssl) {
  CertificateIdentity id;
  X509* cert = SSL_get0_peer_certificate(ssl);
  if (cert == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) {
    return id;
  }
  tls::CertificateSubject subject = tls::subjectOf(cert);
  id.user = std::move(subject.common_name);
  id.groups = std::move(subject.organizations);
  id.present = !id.user.empty();
  return id;
}

}  // namespace

HttpConnection::HttpConnection(net::ip::tcp::socket socket, net::ssl::context& tls,
                               HttpHandler& handler, ConnectionLimits limits,
                               TransportStats& stats,
                               std::function<void(HttpConnection*)> on_gone)
    : stream_(beast::tcp_stream(std::move(socket)), tls),
      handler_(handler),
      limits_(limits),
      stats_(stats),
      on_gone_(std::move(on_gone)) {
  beast::error_code ec;
  auto ep = beast::get_lowest_layer(stream_).socket().remote_endpoint(ec);
  if (!ec) {
    peer_ = ep.address().to_string() + ":" + std::to_string(ep.port());
  }
  beast::get_lowest_layer(stream_).socket().set_option(net::ip::tcp::no_delay(true), ec);
}

HttpConnection::~HttpConnection() {
  h2_.reset();
  if (source_) {
    source_->stop();
  }
  if (on_gone_) {
    on_gone_(this);
  }
}

void HttpConnection::start() {
  net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
    beast::get_lowest_layer(self->stream_).expires_after(self->limits_.handshake_timeout);
    self->stream_.async_handshake(net::ssl::stream_base::server,
                                  [self](beast::error_code ec) { self->onHandshake(ec); });
  });
}

void HttpConnection::close() {
  net::post(stream_.get_executor(), [self = shared_from_this()] { self->teardown(); });
}

void HttpConnection::goAway(bool end_streams) {
  net::post(stream_.get_executor(), [self = shared_from_this(), end_streams] {
    if (self->h2_ && !self->closed_) {
      self->h2_->goAway(end_streams);
    }
  });
}

void HttpConnection::resetStreams() {
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    if (self->h2_ && !self->closed_) {
      self->h2_->resetStreams();
    }
  });
}

void HttpConnection::teardown() {
  if (closed_) {
    return;
  }
  closed_ = true;
  if (h2_) {
    h2_->abandon();
  }
  if (source_) {
    source_->stop();
  }
  beast::error_code ec;
  beast::get_lowest_layer(stream_).socket().shutdown(net::ip::tcp::socket::shutdown_both, ec);
  beast::get_lowest_layer(stream_).close();
}

void HttpConnection::onHandshake(beast::error_code ec) {
  if (ec) {
    ccm::log::infoV(4, "TLS handshake failed", {{"peer", peer_}, {"error", ec.message()}});
    teardown();
    return;
  }
  identity_ = identityFrom(stream_.native_handle());
  const unsigned char* alpn = nullptr;
  unsigned int alpn_len = 0;
  SSL_get0_alpn_selected(stream_.native_handle(), &alpn, &alpn_len);
  if (alpn_len == 2 && alpn[0] == 'h' && alpn[1] == '2') {
    stats_.http2_connections.fetch_add(1);
    http2_ = true;
    beast::get_lowest_layer(stream_).expires_never();
    h2_ = std::make_unique<Http2Session>(stream_, handler_, limits_, identity_, peer_, stats_,
                                         weak_from_this(), [this] { teardown(); });
    h2_->start();
    return;
  }
  stats_.http1_connections.fetch_add(1);
  readRequest();
}

void HttpConnection::readRequest() {
  if (closed_) {
    return;
  }
  parser_.emplace();
  // Read bodies up to a hard cap so an over-limit request still gets its 413 (the API limit
  // is checked once the body is in); beyond the cap the connection is cut.
  parser_->body_limit(limits_.hard_body_cap);
  parser_->header_limit(static_cast<uint32_t>(limits_.max_header_bytes));
  beast::get_lowest_layer(stream_).expires_after(limits_.idle_timeout);
  http::async_read(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec, size_t n) { self->onRead(ec, n); });
}

void HttpConnection::onRead(beast::error_code ec, size_t /*bytes*/) {
  if (closed_) {
    return;
  }
  if (ec == http::error::body_limit) {
    ApiError e =
        ApiError::requestEntityTooLarge("limit is " + std::to_string(limits_.max_body_bytes));
    rejectAndLinger(413, e.toJson(), "application/json");
    return;
  }
  if (ec == http::error::header_limit) {
    rejectAndLinger(431, "431 Request Header Fields Too Large", "text/plain; charset=utf-8");
    return;
  }
  if (ec == http::error::end_of_stream || ec == net::error::eof ||
      ec == net::ssl::error::stream_truncated || ec == beast::error::timeout ||
      ec == net::error::operation_aborted || ec == net::error::connection_reset) {
    teardown();
    return;
  }
  if (ec) {
    if (ec.category() == make_error_code(http::error::bad_method).category()) {
      rejectAndLinger(400, "400 Bad Request", "text/plain; charset=utf-8");
    } else {
      teardown();
    }
    return;
  }
  if (parser_->get().body().size() > limits_.max_body_bytes) {
    ApiError e =
        ApiError::requestEntityTooLarge("limit is " + std::to_string(limits_.max_body_bytes));
    rejectAndLinger(413, e.toJson(), "application/json");
    return;
  }
  request_.message = parser_->release();
  request_.certificate = identity_;
  request_.peer = peer_;
  request_keep_alive_ = request_.message.keep_alive();
  request_version_ = request_.message.version();
  beast::get_lowest_layer(stream_).expires_never();
  // The responder owns the connection until it is called: a delayed answer (injected
  // latency) must find the connection still there.
  auto self = shared_from_this();
  auto executor = stream_.get_executor();
  handler_.handle(request_, [self, executor](HttpResponse response) {
    net::dispatch(executor, [self, response = std::move(response)]() mutable {
      self->deliver(std::move(response));
    });
  });
}

void HttpConnection::deliver(HttpResponse response) {
  if (closed_) {
    if (response.stream) {
      response.stream->stop();
    }
    return;
  }
  if (response.abort || response.reset) {
    teardown();
    return;
  }
  if (response.stream) {
    startStream(std::move(response));
    return;
  }
  auto res = std::make_shared<http::response<http::string_body>>(
      static_cast<http::status>(response.status), request_version_);
  res->set(http::field::content_type, response.content_type);
  res->set(http::field::cache_control, "no-cache, private");
  for (auto& [k, v] : response.headers) {
    if (k == "Cache-Control") {
      res->set(k, v);
    } else {
      res->insert(k, v);  // Warning may repeat
    }
  }
  res->body() = std::move(response.body);
  bool keep_alive = request_keep_alive_ && !response.close && !response.goaway;
  res->keep_alive(keep_alive);
  res->prepare_payload();
  in_flight_ = res;
  http::async_write(stream_, *res,
                    [self = shared_from_this(), keep_alive](beast::error_code ec, size_t) {
                      self->onWritten(keep_alive, ec);
                    });
}

void HttpConnection::onWritten(bool keep_alive, beast::error_code ec) {
  in_flight_.reset();
  if (ec || closed_) {
    teardown();
    return;
  }
  if (!keep_alive) {
    linger();
    return;
  }
  readRequest();
}

void HttpConnection::startStream(HttpResponse response) {
  source_ = std::move(response.stream);
  stream_done_ = false;
  auto res = std::make_shared<http::response<http::empty_body>>(
      static_cast<http::status>(response.status), request_version_);
  res->set(http::field::content_type, response.content_type);
  res->set(http::field::cache_control, "no-cache, private");
  for (auto& [k, v] : response.headers) {
    res->set(k, v);
  }
  res->chunked(true);
  // A finished stream ends its connection (see endStream), so say so up front.
  res->keep_alive(false);
  auto sr = std::make_shared<http::response_serializer<http::empty_body>>(*res);
  in_flight_ = std::make_shared<std::pair<decltype(res), decltype(sr)>>(res, sr);
  writing_ = true;
  http::async_write_header(stream_, *sr, [self = shared_from_this()](beast::error_code ec, size_t) {
    self->writing_ = false;
    self->in_flight_.reset();
    if (ec || self->closed_) {
      self->teardown();
      return;
    }
    self->source_->start(self->stream_.get_executor());
    self->watchPeer();
    self->pump();
  });
}

void HttpConnection::watchPeer() {
  // The client never sends anything during a watch; a completed read means it went away
  // (or pipelines, which watch clients do not do: the bytes are dropped).
  stream_.async_read_some(net::buffer(peer_probe_),
                          [self = shared_from_this()](beast::error_code ec, size_t) {
                            if (self->closed_ || !self->source_) {
                              return;
                            }
                            if (ec) {
                              self->teardown();
                              return;
                            }
                            self->watchPeer();
                          });
}

void HttpConnection::pump() {
  if (closed_ || writing_ || !source_) {
    return;
  }
  chunk_.clear();
  bool more = source_->poll(chunk_);
  if (!more) {
    stream_done_ = true;
  }
  if (!chunk_.empty()) {
    writing_ = true;
    net::async_write(
        stream_, http::make_chunk(net::buffer(chunk_)),
        [self = shared_from_this()](beast::error_code ec, size_t) { self->onChunkWritten(ec); });
    return;
  }
  if (stream_done_) {
    endStream();
    return;
  }
  std::weak_ptr<HttpConnection> weak = shared_from_this();
  auto executor = stream_.get_executor();
  source_->arm([weak, executor] {
    net::post(executor, [weak] {
      if (auto self = weak.lock()) {
        self->pump();
      }
    });
  });
}

void HttpConnection::onChunkWritten(beast::error_code ec) {
  writing_ = false;
  if (ec || closed_) {
    teardown();
    return;
  }
  if (stream_done_) {
    endStream();
    return;
  }
  pump();
}

void HttpConnection::endStream() {
  if (source_) {
    source_->stop();
    if (source_->resetAtEnd()) {
      // HTTP/1.1 has no stream reset: the connection goes, as a broken one would.
      stats_.streams_reset.fetch_add(1);
      teardown();
      return;
    }
  }
  writing_ = true;
  net::async_write(stream_, http::make_chunk_last(),
                   [self = shared_from_this()](beast::error_code ec, size_t) {
                     self->writing_ = false;
                     self->source_.reset();
                     if (ec) {
                       self->teardown();
                       return;
                     }
                     // The peer probe read is still pending: half-close and let it see the
                     // client's close (or time out); the connection then goes away.
                     beast::get_lowest_layer(self->stream_).expires_after(std::chrono::seconds(2));
                     beast::error_code ignored;
                     beast::get_lowest_layer(self->stream_)
                         .socket()
                         .shutdown(net::ip::tcp::socket::shutdown_send, ignored);
                   });
}

void HttpConnection::rejectAndLinger(unsigned status, std::string body,
                                     const std::string& content_type) {
  auto res =
      std::make_shared<http::response<http::string_body>>(static_cast<http::status>(status), 11);
  res->set(http::field::content_type, content_type);
  res->body() = std::move(body);
  res->keep_alive(false);
  res->prepare_payload();
  in_flight_ = res;
  beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(5));
  http::async_write(stream_, *res, [self = shared_from_this()](beast::error_code ec, size_t) {
    self->in_flight_.reset();
    if (ec) {
      self->teardown();
      return;
    }
    self->linger();
  });
}

void HttpConnection::linger() {
  // Close politely: TLS close_notify, then give the client a moment to read what we sent
  // (and drain what it may still be sending) before the socket goes away.
  if (closed_) {
    return;
  }
  beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(2));
  stream_.async_shutdown([self = shared_from_this()](beast::error_code) { self->teardown(); });
}

}  // namespace ccm::kubesim
