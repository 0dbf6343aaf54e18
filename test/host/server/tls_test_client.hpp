// TlsTestClient: an HTTPS/1.1 client for the server's socket tests. Every operation runs
// asynchronously with a generous deadline (30 s), so a server that never answers makes the
// test fail instead of hanging. It can also misbehave: stay silent before the handshake,
// send partial requests, or send raw bytes.
#pragma once

#include <openssl/ssl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <map>
#include <optional>
#include <string>

namespace ccm::server::testing {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace net = boost::asio;

// The client's own safety deadline per operation: long enough never to fire on a working
// server, so reaching it means the server did not do what the test expects.
inline constexpr std::chrono::seconds kClientDeadline{30};

struct TlsClientOptions {
  std::string ca_pem;              // trust only this CA ("" + verify: the handshake fails)
  std::string host = "localhost";  // SNI (names only) and the name verified
  bool verify = true;
  int max_tls_version = 0;  // e.g. TLS1_1_VERSION to offer only old versions
  std::string client_cert_pem;  // a client certificate (chain) to present, with its key
  std::string client_key_pem;
};

struct Reply {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

class TlsTestClient {
 public:
  TlsTestClient(uint16_t port, TlsClientOptions options)
      : port_(port), options_(std::move(options)), ctx_(net::ssl::context::tls_client) {
    ctx_.set_verify_mode(options_.verify ? net::ssl::verify_peer : net::ssl::verify_none);
    if (!options_.ca_pem.empty()) {
      ctx_.add_certificate_authority(net::buffer(options_.ca_pem));
    }
    if (!options_.client_cert_pem.empty()) {
      ctx_.use_certificate_chain(net::buffer(options_.client_cert_pem));
      ctx_.use_private_key(net::buffer(options_.client_key_pem), net::ssl::context::pem);
    }
    if (options_.max_tls_version != 0) {
      SSL_CTX_set_min_proto_version(ctx_.native_handle(), TLS1_VERSION);
      SSL_CTX_set_max_proto_version(ctx_.native_handle(), options_.max_tls_version);
      SSL_CTX_set_security_level(ctx_.native_handle(), 0);
    }
    stream_.emplace(io_, ctx_);
  }

  // TCP connect to 127.0.0.1.
  beast::error_code connect() {
    beast::error_code result;
    lowest().expires_after(kClientDeadline);
    lowest().async_connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), port_),
                           [&](beast::error_code ec) { result = ec; });
    run();
    return result;
  }

  beast::error_code handshake() {
    if (options_.verify) {
      stream_->set_verify_callback(net::ssl::host_name_verification(options_.host));
    }
    boost::system::error_code not_ip;
    (void)net::ip::make_address(options_.host, not_ip);
    if (not_ip) {  // SNI carries names only
      SSL_set_tlsext_host_name(stream_->native_handle(), options_.host.c_str());
    }
    beast::error_code result;
    lowest().expires_after(kClientDeadline);
    stream_->async_handshake(net::ssl::stream_base::client,
                             [&](beast::error_code ec) { result = ec; });
    run();
    return result;
  }

  beast::error_code open() {
    if (auto ec = connect())
      return ec;
    return handshake();
  }

  // One request over the open connection.
  beast::error_code request(http::verb verb, const std::string& target, Reply* reply,
                            const std::map<std::string, std::string>& headers = {},
                            const std::string& body = "") {
    http::request<http::string_body> req{verb, target, 11};
    req.set(http::field::host, options_.host);
    for (const auto& [k, v] : headers)
      req.set(k, v);
    req.body() = body;
    if (!body.empty())
      req.prepare_payload();
    beast::error_code result;
    lowest().expires_after(kClientDeadline);
    http::async_write(*stream_, req, [&](beast::error_code ec, size_t) { result = ec; });
    run();
    if (result)
      return result;
    return readReply(reply, verb == http::verb::head);
  }

  // Connects, does one GET and returns the reply (status 0 and the error on failure).
  static Reply get(uint16_t port, const TlsClientOptions& options, const std::string& target,
                   const std::map<std::string, std::string>& headers = {},
                   beast::error_code* error = nullptr) {
    TlsTestClient c(port, options);
    Reply r;
    beast::error_code ec = c.open();
    if (!ec)
      ec = c.request(http::verb::get, target, &r, headers);
    if (error != nullptr)
      *error = ec;
    return r;
  }

  beast::error_code readReply(Reply* reply, bool head = false) {
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    parser.skip(head);
    beast::error_code result;
    lowest().expires_after(kClientDeadline);
    http::async_read(*stream_, buffer_, parser, [&](beast::error_code ec, size_t) { result = ec; });
    run();
    if (result)
      return result;
    auto res = parser.release();
    reply->status = res.result_int();
    reply->body = res.body();
    for (const auto& f : res) {
      std::string name(f.name_string());
      for (char& c : name)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      reply->headers[name] = std::string(f.value());
    }
    return {};
  }

  // Raw bytes over TLS.
  beast::error_code writeTls(const std::string& bytes) {
    beast::error_code result;
    lowest().expires_after(kClientDeadline);
    net::async_write(*stream_, net::buffer(bytes),
                     [&](beast::error_code ec, size_t) { result = ec; });
    run();
    return result;
  }

  // Reads over TLS until the connection ends; returns how it ended (never the client's own
  // timeout unless the server kept the connection open).
  beast::error_code waitClosedTls() {
    char buf[4096];
    for (;;) {
      beast::error_code result;
      lowest().expires_after(kClientDeadline);
      stream_->async_read_some(net::buffer(buf),
                               [&](beast::error_code ec, size_t) { result = ec; });
      run();
      if (result)
        return result;
    }
  }

  // Raw bytes over plain TCP (no handshake; connect() first).
  beast::error_code writeTcp(const std::string& bytes) {
    beast::error_code result;
    lowest().expires_after(kClientDeadline);
    net::async_write(lowest(), net::buffer(bytes),
                     [&](beast::error_code ec, size_t) { result = ec; });
    run();
    return result;
  }

  // Reads raw TCP until the connection ends; what was read goes to *out.
  beast::error_code readAllTcp(std::string* out) {
    char buf[4096];
    for (;;) {
      beast::error_code result;
      size_t got = 0;
      lowest().expires_after(kClientDeadline);
      lowest().async_read_some(net::buffer(buf), [&](beast::error_code ec, size_t n) {
        result = ec;
        got = n;
      });
      run();
      out->append(buf, got);
      if (result)
        return result;
    }
  }

  // Reads raw TCP (no TLS) until the connection ends.
  beast::error_code waitClosedTcp() {
    char buf[4096];
    for (;;) {
      beast::error_code result;
      lowest().expires_after(kClientDeadline);
      lowest().async_read_some(net::buffer(buf),
                               [&](beast::error_code ec, size_t) { result = ec; });
      run();
      if (result)
        return result;
    }
  }

 private:
  beast::tcp_stream& lowest() { return beast::get_lowest_layer(*stream_); }
  void run() {
    io_.restart();
    io_.run();
  }

  uint16_t port_;
  TlsClientOptions options_;
  net::io_context io_;
  net::ssl::context ctx_;
  std::optional<beast::ssl_stream<beast::tcp_stream>> stream_;
  beast::flat_buffer buffer_;
};

}  // namespace ccm::server::testing
