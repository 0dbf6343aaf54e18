// HttpTransport implementation: connections, TLS set-up, request writing, answer parsing.
#include "host/kube/transport/http_transport.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "host/kube/transport/http_headers.hpp"
#include "host/runtime/rate_limiter.hpp"

namespace ccm::kube {
namespace {

constexpr size_t kMaxIdle = 64;
constexpr size_t kReadChunk = size_t{16} * 1024;
constexpr size_t kMaxHeaderBytes = size_t{256} * 1024;

using Clock_ = std::chrono::steady_clock;

bool isIpLiteral(std::string_view host) {
  std::string h(host);
  in6_addr a6{};
  in_addr a4{};
  return inet_pton(AF_INET, h.c_str(), &a4) == 1 || inet_pton(AF_INET6, h.c_str(), &a6) == 1;
}

std::string sslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) {
      out += "; ";
    }
    out += buf;
  }
  return out;
}

timeval toTimeval(std::chrono::milliseconds ms) {
  if (ms.count() <= 0) {
    ms = std::chrono::milliseconds(1);
  }
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

// While alive, a stop request shuts the socket down, which wakes any read or write blocked
// on it (the TLS handshake, the answer).
class ShutdownOnStop {
 public:
  // A token that can never be stopped registers nothing.
  ShutdownOnStop(std::stop_token stop, int fd) : callback_(std::move(stop), Shutdown{fd}) {}

 private:
  struct Shutdown {
    int fd;
    void operator()() const { ::shutdown(fd, SHUT_RDWR); }
  };
  std::stop_callback<Shutdown> callback_;
};

bool envSet(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0';
}

// A socket BIO that never raises SIGPIPE (send with MSG_NOSIGNAL): the host does not ignore
// SIGPIPE process-wide, and a write to a connection the server just closed must be an error,
// not a signal. A receive timeout (SO_RCVTIMEO) reads as a retryable condition, which the
// connection reports as a stall.
int bioWrite(BIO* b, const char* data, int len) {
  int fd = static_cast<int>(reinterpret_cast<intptr_t>(BIO_get_data(b)));
  BIO_clear_retry_flags(b);
  ssize_t n = ::send(fd, data, static_cast<size_t>(len), MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    BIO_set_retry_write(b);
  }
  return static_cast<int>(n);
}

int bioRead(BIO* b, char* data, int len) {
  int fd = static_cast<int>(reinterpret_cast<intptr_t>(BIO_get_data(b)));
  BIO_clear_retry_flags(b);
  ssize_t n = ::recv(fd, data, static_cast<size_t>(len), 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    BIO_set_retry_read(b);
  }
  return static_cast<int>(n);
}

long bioCtrl(BIO*, int cmd, long, void*) {
  switch (cmd) {
    case BIO_CTRL_FLUSH:
    case BIO_CTRL_PUSH:
    case BIO_CTRL_POP:
      return 1;
    default:
      return 0;
  }
}

int bioCreate(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}

BIO_METHOD* socketMethod() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "ccm-socket");
    BIO_meth_set_write(m, bioWrite);
    BIO_meth_set_read(m, bioRead);
    BIO_meth_set_ctrl(m, bioCtrl);
    BIO_meth_set_create(m, bioCreate);
    return m;
  }();
  return method;
}

}  // namespace

// ---- client certificates ----------------------------------------------------------------------

struct HttpTransport::ClientCert {
  uint64_t generation = 0;
  X509* cert = nullptr;
  EVP_PKEY* key = nullptr;
  STACK_OF(X509) * chain = nullptr;

  ~ClientCert() {
    X509_free(cert);
    EVP_PKEY_free(key);
    if (chain != nullptr) {
      sk_X509_pop_free(chain, X509_free);
    }
  }

  static StatusOr<std::shared_ptr<ClientCert>> parse(const ClientCertificate& in) {
    auto out = std::make_shared<ClientCert>();
    out->generation = in.generation;
    BIO* cb = BIO_new_mem_buf(in.cert_pem.data(), static_cast<int>(in.cert_pem.size()));
    out->cert = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
    if (out->cert != nullptr) {
      out->chain = sk_X509_new_null();
      while (X509* extra = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr)) {
        sk_X509_push(out->chain, extra);
      }
    }
    BIO_free(cb);
    BIO* kb = BIO_new_mem_buf(in.key_pem.data(), static_cast<int>(in.key_pem.size()));
    out->key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
    BIO_free(kb);
    ERR_clear_error();
    if (out->cert == nullptr || out->key == nullptr) {
      return Status(Code::InvalidArgument, "the client certificate or key is not valid PEM");
    }
    if (X509_check_private_key(out->cert, out->key) != 1) {
      ERR_clear_error();
      return Status(Code::InvalidArgument, "the client key does not match the certificate");
    }
    return out;
  }
};

// ---- one connection -----------------------------------------------------------------------------

class HttpTransport::Conn {
 public:
  Conn(int fd, SSL* ssl, uint64_t generation) : fd_(fd), ssl_(ssl), generation_(generation) {}
  ~Conn() {
    if (ssl_ != nullptr) {
      SSL_free(ssl_);
    }
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  int fd() const { return fd_; }
  uint64_t generation() const { return generation_; }
  bool reused = false;
  std::string out;  // the request being written (kept to reuse its capacity)
  // While set (a batch's answers are awaited), a read that finds nothing buffered first
  // waits this long, so that answers arriving meanwhile are taken in one wake-up.
  std::chrono::microseconds gather{0};
  std::stop_token gather_stop;

  // True when the server has not closed (or written to) this idle connection.
  bool idleAndOpen() {
    if (ssl_ != nullptr && SSL_has_pending(ssl_) == 1) {
      return false;  // read ahead after the last answer: only a close_notify comes unasked
    }
    char c = 0;
    ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return true;
    }
    return false;  // 0: closed; > 0: unexpected bytes (e.g. a TLS close_notify); error
  }

  void setReceiveTimeout(std::chrono::milliseconds ms) {
    if (ms == rcv_timeout_) {
      return;
    }
    timeval tv = toTimeval(ms);
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    rcv_timeout_ = ms;
  }

  // Writes everything; false on failure (error() says why).
  bool writeAll(std::string_view data) {
    while (!data.empty()) {
      if (ssl_ != nullptr) {
        size_t written = 0;
        int r = SSL_write_ex(ssl_, data.data(), data.size(), &written);
        if (r != 1) {
          fail("write", SSL_get_error(ssl_, r));
          return false;
        }
        data.remove_prefix(written);
      } else {
        ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
        if (n <= 0) {
          failErrno("write", n == 0 ? EPIPE : errno);
          return false;
        }
        data.remove_prefix(static_cast<size_t>(n));
      }
    }
    return true;
  }

  // Reads at least one more byte into the buffer; false at the end or on failure (eof() tells
  // which).
  bool readMore() {
    if (pos_ > 0 && pos_ == len_) {
      pos_ = len_ = 0;
    }
    if (buf_.size() - len_ < kReadChunk) {
      if (pos_ > 0) {
        std::memmove(buf_.data(), buf_.data() + pos_, len_ - pos_);
        len_ -= pos_;
        pos_ = 0;
      }
      if (buf_.size() - len_ < kReadChunk) {
        buf_.resize(std::max(buf_.size() * 2, len_ + kReadChunk));
      }
    }
    if (gather.count() > 0 && pos_ == len_ && (ssl_ == nullptr || SSL_has_pending(ssl_) != 1) &&
        !sleepFor(gather, gather_stop)) {
      error_ = "cancelled";
      return false;
    }
    char* dst = buf_.data() + len_;
    size_t room = buf_.size() - len_;
    if (ssl_ != nullptr) {
      size_t got = 0;
      int r = SSL_read_ex(ssl_, dst, room, &got);
      if (r != 1) {
        int e = SSL_get_error(ssl_, r);
        if (e == SSL_ERROR_ZERO_RETURN) {
          eof_ = true;
          return false;
        }
        fail("read", e);
        return false;
      }
      len_ += got;
      received_ += got;
      return true;
    }
    ssize_t n = ::recv(fd_, dst, room, 0);
    if (n == 0) {
      eof_ = true;
      return false;
    }
    if (n < 0) {
      failErrno("read", errno);
      return false;
    }
    len_ += static_cast<size_t>(n);
    received_ += static_cast<size_t>(n);
    return true;
  }

  std::string_view buffered() const { return std::string_view(buf_.data() + pos_, len_ - pos_); }
  void consume(size_t n) { pos_ += n; }
  // Drops buffered bytes (an answer is complete; nothing may follow on a reused connection).
  void resetBuffer() { pos_ = len_ = 0; }
  // Gives back the large read buffer of an idle connection.
  void shrink() {
    if (out.capacity() > 4 * kReadChunk) {
      std::string().swap(out);
    }
    if (buf_.size() > 4 * kReadChunk && len_ == pos_) {
      std::string().swap(buf_);
      pos_ = len_ = 0;
    }
  }

  bool eof() const { return eof_; }
  bool timedOut() const { return timed_out_; }
  uint64_t received() const { return received_; }
  void startExchange() {
    received_ = 0;
    eof_ = timed_out_ = false;
    error_.clear();
  }
  const std::string& error() const { return error_; }

 private:
  void failErrno(const char* what, int err) {
    if (err == EAGAIN || err == EWOULDBLOCK) {
      timed_out_ = true;
      error_ = fmt::format("{}: no data for the stall timeout", what);
      return;
    }
    error_ = fmt::format("{}: {}", what, std::strerror(err));
  }
  void fail(const char* what, int ssl_error) {
    int err = errno;
    if (ssl_error == SSL_ERROR_WANT_READ || ssl_error == SSL_ERROR_WANT_WRITE) {
      ERR_clear_error();
      failErrno(what, EAGAIN);  // SO_RCVTIMEO / SO_SNDTIMEO expired
      return;
    }
    if (ssl_error == SSL_ERROR_SYSCALL) {
      std::string detail = sslErrors();
      if (!detail.empty()) {
        error_ = fmt::format("{}: {}", what, detail);
      } else if (err == 0) {
        eof_ = true;  // the peer closed without close_notify
        error_ = fmt::format("{}: connection closed", what);
      } else {
        failErrno(what, err);
      }
      return;
    }
    std::string detail = sslErrors();
    error_ =
        fmt::format("{}: TLS error {}{}{}", what, ssl_error, detail.empty() ? "" : ": ", detail);
  }

  int fd_ = -1;
  SSL* ssl_ = nullptr;
  uint64_t generation_ = 0;
  std::string buf_;
  size_t pos_ = 0;
  size_t len_ = 0;
  bool eof_ = false;
  bool timed_out_ = false;
  uint64_t received_ = 0;
  std::string error_;
  std::chrono::milliseconds rcv_timeout_{-1};
};

// ---- the transport ------------------------------------------------------------------------------

bool HttpTransport::usableFor(const RestConfig& config) {
  if (!config.proxy_url.empty()) {
    return false;
  }
  for (const char* v :
       {"https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"}) {
    if (envSet(v)) {
      return false;
    }
  }
  return true;
}

StatusOr<std::unique_ptr<HttpTransport>> HttpTransport::create(const RestConfig& config,
                                                               Options options) {
  std::unique_ptr<HttpTransport> t(new HttpTransport(config, options));
  CCM_RETURN_IF_ERROR(t->init());
  return t;
}

HttpTransport::HttpTransport(const RestConfig& config, Options options)
    : config_(config), options_(options) {}

HttpTransport::~HttpTransport() {
  idle_.clear();
  if (ctx_ != nullptr) {
    SSL_CTX_free(ctx_);
  }
}

uint64_t HttpTransport::connectionsOpened() const {
  std::lock_guard lock(const_cast<std::mutex&>(mu_));
  return opened_;
}

Status HttpTransport::init() {
  const std::string& server = config_.server;
  size_t scheme_end = server.find("://");
  if (scheme_end == std::string::npos) {
    return Status(Code::InvalidArgument, fmt::format("server \"{}\" is not a URL", server));
  }
  std::string scheme = server.substr(0, scheme_end);
  if (scheme != "https" && scheme != "http") {
    return Status(Code::InvalidArgument, fmt::format("server \"{}\": unsupported scheme", server));
  }
  tls_ = scheme == "https";
  size_t host_start = scheme_end + 3;
  size_t path_start = server.find('/', host_start);
  std::string authority = server.substr(
      host_start, path_start == std::string::npos ? std::string::npos : path_start - host_start);
  path_prefix_ = path_start == std::string::npos ? "" : server.substr(path_start);
  while (!path_prefix_.empty() && path_prefix_.back() == '/') {
    path_prefix_.pop_back();
  }
  std::string host = authority;
  port_ = tls_ ? "443" : "80";
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string::npos) {
      return Status(Code::InvalidArgument, fmt::format("server \"{}\": bad IPv6 address", server));
    }
    host = authority.substr(1, close - 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':') {
      port_ = authority.substr(close + 2);
    }
  } else if (size_t colon = authority.rfind(':'); colon != std::string::npos) {
    host = authority.substr(0, colon);
    port_ = authority.substr(colon + 1);
  }
  connect_host_ = host;
  bool v6 = host.find(':') != std::string::npos;
  std::string host_for_header = v6 ? "[" + host + "]" : host;
  tls_name_ = host;
  if (tls_ && !config_.tls_server_name.empty()) {
    tls_name_ = config_.tls_server_name;
    host_for_header = tls_name_;
  }
  bool default_port = (tls_ && port_ == "443") || (!tls_ && port_ == "80");
  host_header_ = default_port ? host_for_header : host_for_header + ":" + port_;
  if (!tls_) {
    return okStatus();
  }
  ctx_ = SSL_CTX_new(TLS_client_method());
  if (ctx_ == nullptr) {
    return Status(Code::Internal, "cannot create a TLS context: " + sslErrors());
  }
  SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
  // Read-ahead: one recv takes a whole answer (not a 5-byte record header, then the record).
  SSL_CTX_set_read_ahead(ctx_, 1);
  // Only HTTP/1.1 is spoken here (servers then never choose h2).
  static const unsigned char kAlpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  SSL_CTX_set_alpn_protos(ctx_, kAlpn, sizeof kAlpn);
  if (config_.insecure_skip_tls_verify) {
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_NONE, nullptr);
  } else {
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    if (!config_.ca_pem.empty()) {
      X509_STORE* store = SSL_CTX_get_cert_store(ctx_);
      BIO* bio = BIO_new_mem_buf(config_.ca_pem.data(), static_cast<int>(config_.ca_pem.size()));
      STACK_OF(X509_INFO)* infos = PEM_X509_INFO_read_bio(bio, nullptr, nullptr, nullptr);
      BIO_free(bio);
      int added = 0;
      if (infos != nullptr) {
        for (int i = 0; i < sk_X509_INFO_num(infos); ++i) {
          X509_INFO* info = sk_X509_INFO_value(infos, i);
          if (info->x509 != nullptr && X509_STORE_add_cert(store, info->x509) == 1) {
            ++added;
          }
        }
        sk_X509_INFO_pop_free(infos, X509_INFO_free);
      }
      ERR_clear_error();
      if (added == 0) {
        return Status(Code::InvalidArgument, "the CA bundle holds no usable certificate");
      }
    } else if (SSL_CTX_set_default_verify_paths(ctx_) != 1) {
      ERR_clear_error();
    }
  }
  return okStatus();
}

std::unique_ptr<HttpTransport::Conn> HttpTransport::takeIdle(uint64_t generation) {
  std::lock_guard lock(mu_);
  while (!idle_.empty()) {
    auto c = std::move(idle_.back());
    idle_.pop_back();
    if (c->generation() == generation) {
      return c;
    }
  }
  return nullptr;
}

void HttpTransport::putIdle(std::unique_ptr<Conn> conn) {
  conn->shrink();
  std::lock_guard lock(mu_);
  if (idle_.size() < kMaxIdle) {
    conn->reused = true;
    idle_.push_back(std::move(conn));
  }
}

StatusOr<std::unique_ptr<HttpTransport::Conn>> HttpTransport::connect(
    const Credentials::Current& creds, Clock_::time_point deadline, std::stop_token stop) {
  std::shared_ptr<ClientCert> cert;
  uint64_t generation = creds.cert ? creds.cert->generation : 0;
  if (creds.cert && tls_) {
    std::lock_guard lock(mu_);
    if (!cert_ || cert_->generation != generation) {
      auto parsed = ClientCert::parse(*creds.cert);
      if (!parsed.ok()) {
        return parsed.status();
      }
      cert_ = std::move(parsed).value();
    }
    cert = cert_;
  }
  auto connect_deadline = std::min(deadline, Clock_::now() + options_.connect_timeout);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int gai = getaddrinfo(connect_host_.c_str(), port_.c_str(), &hints, &res);
  if (gai != 0) {
    return Status(Code::Unavailable,
                  fmt::format("cannot resolve {}: {}", connect_host_, gai_strerror(gai)));
  }
  int fd = -1;
  std::string last_error = "no address";
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) {
      last_error = std::strerror(errno);
      continue;
    }
    int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(connect_deadline - Clock_::now());
      pollfd p{fd, POLLOUT, 0};
      int pr = 0;
      // In slices, so that a stop request is noticed while the server does not answer.
      while (left.count() > 0 && !stop.stop_requested()) {
        auto slice = std::min(left, std::chrono::milliseconds(100));
        pr = ::poll(&p, 1, static_cast<int>(slice.count()));
        if (pr != 0) {
          break;
        }
        left =
            std::chrono::duration_cast<std::chrono::milliseconds>(connect_deadline - Clock_::now());
      }
      if (pr == 1) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        errno = err;
      } else {
        rc = -1;
        errno = pr == 0 ? ETIMEDOUT : errno;
      }
    }
    if (rc == 0) {
      break;
    }
    last_error = std::strerror(errno);
    ::close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0 && stop.stop_requested()) {
    return Status(Code::Cancelled, "request cancelled");
  }
  if (fd < 0) {
    return Status(Code::Unavailable,
                  fmt::format("cannot connect to {}:{}: {}", connect_host_, port_, last_error));
  }
  int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  int idle = 30;
  int interval = 15;
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  SSL* ssl = nullptr;
  if (tls_) {
    ssl = SSL_new(ctx_);
    if (ssl == nullptr) {
      ::close(fd);
      return Status(Code::Internal, "cannot create a TLS session: " + sslErrors());
    }
    BIO* bio = BIO_new(socketMethod());
    if (bio == nullptr) {
      SSL_free(ssl);
      ::close(fd);
      return Status(Code::Internal, "cannot create a socket BIO: " + sslErrors());
    }
    // The BIO's data slot holds the descriptor itself, never dereferenced (bioRead, bioWrite).
    // NOLINTNEXTLINE(performance-no-int-to-ptr)
    BIO_set_data(bio, reinterpret_cast<void*>(static_cast<intptr_t>(fd)));
    SSL_set_bio(ssl, bio, bio);
  }
  auto conn = std::make_unique<Conn>(fd, ssl, generation);
  if (!tls_) {
    std::lock_guard lock(mu_);
    ++opened_;
    return conn;
  }
  bool ip = isIpLiteral(tls_name_);
  if (!ip) {
    SSL_set_tlsext_host_name(ssl, tls_name_.c_str());
  }
  if (!config_.insecure_skip_tls_verify) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (ip ? X509_VERIFY_PARAM_set1_ip_asc(param, tls_name_.c_str()) != 1
           : X509_VERIFY_PARAM_set1_host(param, tls_name_.c_str(), 0) != 1) {
      return Status(Code::Internal, "cannot set the TLS peer name: " + sslErrors());
    }
  }
  if (cert) {
    if (SSL_use_certificate(ssl, cert->cert) != 1 || SSL_use_PrivateKey(ssl, cert->key) != 1) {
      return Status(Code::InvalidArgument, "the client certificate was refused: " + sslErrors());
    }
    for (int i = 0; i < sk_X509_num(cert->chain); ++i) {
      SSL_add1_chain_cert(ssl, sk_X509_value(cert->chain, i));
    }
  }
  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(connect_deadline - Clock_::now());
  conn->setReceiveTimeout(std::max(left, std::chrono::milliseconds(1)));
  int r = 0;
  {
    ShutdownOnStop cancel(stop, fd);  // a handshake the server never answers
    r = stop.stop_requested() ? -1 : SSL_connect(ssl);
  }
  if (r != 1 && stop.stop_requested()) {
    return Status(Code::Cancelled, "request cancelled");
  }
  if (r != 1) {
    int e = SSL_get_error(ssl, r);
    long verify = SSL_get_verify_result(ssl);
    std::string detail = sslErrors();
    if (verify != X509_V_OK) {
      detail =
          fmt::format("certificate verification failed: {}", X509_verify_cert_error_string(verify));
    } else if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      return Status(Code::DeadlineExceeded,
                    fmt::format("TLS handshake with {}:{} timed out", connect_host_, port_));
    } else if (detail.empty()) {
      detail = fmt::format("error {}", e);
    }
    return Status(Code::Unavailable,
                  fmt::format("TLS handshake with {}:{} failed: {}", connect_host_, port_, detail));
  }
  std::lock_guard lock(mu_);
  ++opened_;
  return conn;
}

Status HttpTransport::perform(const Request& request, const Credentials::Current& creds,
                              std::stop_token stop, Response* response, std::string* body) {
  // A batch of one: the same connection handling, retry and cancellation.
  Exchange e;
  e.request = request;
  performBatch(std::span(&e, 1), creds, stop, std::chrono::microseconds(0));
  *response = std::move(e.response);
  if (e.status.ok() && body != nullptr) {
    if (body->empty()) {
      *body = std::move(e.body);
    } else {
      body->append(e.body);
    }
  }
  return e.status;
}

void HttpTransport::performBatch(std::span<Exchange> batch, const Credentials::Current& creds,
                                 std::stop_token stop, std::chrono::microseconds gather) {
  if (batch.empty()) {
    return;
  }
  const Request& first = batch.front().request;
  auto deadline =
      first.timeout.count() > 0 ? Clock_::now() + first.timeout : Clock_::time_point::max();
  uint64_t generation = creds.cert ? creds.cert->generation : 0;
  size_t next = 0;          // the first exchange still without an outcome
  bool fresh_only = false;  // after a kept-alive connection turned out closed
  while (next < batch.size()) {
    auto rest = batch.subspan(next);
    auto failRest = [&](size_t from, const Status& st) {
      for (size_t i = from; i < rest.size(); ++i) {
        rest[i].status = st;
      }
    };
    if (stop.stop_requested()) {
      failRest(0, Status(Code::Cancelled, "request cancelled"));
      return;
    }
    std::unique_ptr<Conn> conn;
    while (!fresh_only && (conn = takeIdle(generation)) && !conn->idleAndOpen()) {
      conn.reset();
    }
    if (!conn) {
      auto made = connect(creds, deadline, stop);
      if (!made.ok()) {
        failRest(0, made.status());
        return;
      }
      conn = std::move(made).value();
    }
    bool retry_fresh = false;
    bool reusable = false;
    {
      ShutdownOnStop cancel(stop, conn->fd());
      conn->startExchange();
      conn->setReceiveTimeout(receiveTimeout(deadline));
      // Every request, in one write.
      conn->out.clear();
      for (auto& e : rest) {
        e.response = Response{};
        e.body.clear();
        format(e.request, &conn->out);
      }
      Status sent;
      if (first.before_send != nullptr) {
        sent = (*first.before_send)();
      }
      if (sent.ok() && !conn->writeAll(conn->out)) {
        sent = failure(*conn, stop, deadline, "sending");
        retry_fresh = conn->reused && !fresh_only && sent.code() == Code::Unavailable;
      }
      if (!sent.ok() && !retry_fresh) {
        failRest(0, sent);
        return;
      }
      conn->gather = sent.ok() ? gather : std::chrono::microseconds(0);
      conn->gather_stop = stop;
      for (size_t i = 0; sent.ok() && i < rest.size(); ++i) {
        bool last = i + 1 == rest.size();
        bool nothing_received = false;
        Status st = readAnswer(*conn, rest[i].request, stop, deadline, !last, &rest[i].response,
                               &rest[i].body, &nothing_received, &reusable);
        if (!st.ok()) {
          // A kept-alive connection the server closed just as we reused it: send again, once.
          if (i == 0 && nothing_received && conn->reused && !fresh_only &&
              st.code() == Code::Unavailable && !stop.stop_requested()) {
            retry_fresh = true;
            break;
          }
          failRest(i, stop.stop_requested() ? Status(Code::Cancelled, "request cancelled") : st);
          return;
        }
        rest[i].status = okStatus();
        ++next;
        if (!reusable && !last) {
          // The server closes the connection after this answer, so it did not act on the
          // requests after it (RFC 9112, 9.6): they are sent again on another connection.
          break;
        }
      }
      conn->gather = std::chrono::microseconds(0);
    }
    fresh_only = retry_fresh;
    if (next == batch.size() && reusable && !stop.stop_requested()) {
      putIdle(std::move(conn));
    }
  }
}

std::chrono::milliseconds HttpTransport::receiveTimeout(Clock_::time_point deadline) const {
  if (deadline == Clock_::time_point::max()) {
    return options_.stall;
  }
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock_::now());
  return std::max(std::chrono::milliseconds(1), std::min(options_.stall, left));
}

Status HttpTransport::failure(const Conn& conn, std::stop_token stop, Clock_::time_point deadline,
                              std::string_view what) const {
  if (stop.stop_requested()) {
    return Status(Code::Cancelled, "request cancelled");
  }
  if (conn.timedOut() || Clock_::now() >= deadline) {
    return Status(Code::DeadlineExceeded,
                  fmt::format("request to {}:{} timed out ({})", connect_host_, port_, what));
  }
  std::string detail = conn.error().empty() ? std::string("connection closed") : conn.error();
  return Status(Code::Unavailable,
                fmt::format("request to {}:{} failed: {}", connect_host_, port_, detail));
}

void HttpTransport::format(const Request& request, std::string* out) const {
  out->append(request.method).append(" ").append(path_prefix_).append(request.target);
  out->append(" HTTP/1.1\r\nHost: ").append(host_header_).append("\r\n");
  if (request.headers != nullptr) {
    for (const auto& h : *request.headers) {
      out->append(h).append("\r\n");
    }
  }
  if (request.send_body) {
    out->append("Content-Length: ").append(std::to_string(request.body.size())).append("\r\n");
  }
  out->append("\r\n");
  if (request.send_body) {
    out->append(request.body);
  }
}

Status HttpTransport::readAnswer(Conn& conn, const Request& request, std::stop_token stop,
                                 Clock_::time_point deadline, bool more_follow, Response* response,
                                 std::string* body, bool* nothing_received, bool* reusable) {
  auto failed = [&](std::string_view what) {
    *nothing_received = conn.received() == 0;
    return failure(conn, stop, deadline, what);
  };
  // What follows an answer on the connection belongs to the next pipelined answer, if any.
  auto done = [&](bool close) {
    *reusable = !close && (more_follow || conn.buffered().empty());
    if (!more_follow) {
      conn.resetBuffer();
    }
    return okStatus();
  };

  // The answer's head (skipping 1xx interim answers).
  bool head_request = request.method == "HEAD";
  int code = 0;
  bool chunked = false;
  bool close = false;
  int64_t content_length = -1;
  while (true) {
    size_t end = std::string_view::npos;
    while ((end = conn.buffered().find("\r\n\r\n")) == std::string_view::npos) {
      if (conn.buffered().size() > kMaxHeaderBytes) {
        return Status(Code::Unavailable, "answer headers too large");
      }
      if (!conn.readMore()) {
        return failed("reading the answer");
      }
    }
    std::string_view head = conn.buffered().substr(0, end + 2);
    size_t line_end = head.find("\r\n");
    std::string_view status_line = head.substr(0, line_end);
    // "HTTP/1.1 200 OK"
    bool http10 = status_line.substr(0, 8) == "HTTP/1.0";
    if (status_line.size() < 12 || status_line.substr(0, 5) != "HTTP/") {
      return Status(Code::Unavailable, "malformed answer from the server");
    }
    std::string_view code_text = status_line.substr(9, 3);
    code = 0;
    std::from_chars(code_text.data(), code_text.data() + code_text.size(), code);
    if (code < 100 || code > 999) {
      return Status(Code::Unavailable, "malformed status line from the server");
    }
    chunked = false;
    close = http10;
    content_length = -1;
    response->retry_after_seconds = -1;
    response->warnings.clear();
    size_t p = line_end + 2;
    while (p < head.size()) {
      size_t e = head.find("\r\n", p);
      std::string_view line = head.substr(p, e - p);
      p = e + 2;
      auto field = http::splitField(line);
      if (!field) {
        continue;
      }
      auto [name, value] = *field;
      if (http::iequals(name, "content-length")) {
        int64_t n = -1;
        auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
        if (ec != std::errc() || ptr != value.data() + value.size() || n < 0) {
          return Status(Code::Unavailable, "malformed Content-Length from the server");
        }
        content_length = n;
      } else if (http::iequals(name, "transfer-encoding")) {
        chunked = http::hasToken(value, "chunked");
      } else if (http::iequals(name, "connection")) {
        if (http::hasToken(value, "close")) {
          close = true;
        } else if (http::hasToken(value, "keep-alive")) {
          close = false;
        }
      } else if (http::iequals(name, "retry-after")) {
        if (long seconds = http::retryAfterSeconds(value); seconds >= 0) {
          response->retry_after_seconds = seconds;
        }
      } else if (http::iequals(name, "warning")) {
        response->warnings.push_back(http::warningText(value));
      }
    }
    conn.consume(end + 4);
    if (code >= 100 && code < 200 && code != 101) {
      continue;  // interim answer
    }
    break;
  }
  response->code = code;

  bool keep = body != nullptr && !(request.discard_success_body && code >= 200 && code < 300);
  auto sink = [&](std::string_view data) {
    if (keep) {
      body->append(data);
    }
  };
  bool no_body = head_request || code == 204 || code == 304;
  if (no_body) {
    return done(close);
  }
  if (chunked) {
    while (true) {
      size_t eol;
      while ((eol = conn.buffered().find("\r\n")) == std::string_view::npos) {
        if (conn.buffered().size() > 1024 || !conn.readMore()) {
          return failed("reading a chunk size");
        }
      }
      std::string_view size_line = conn.buffered().substr(0, eol);
      size_t semi = size_line.find(';');
      size_line = http::trimField(size_line.substr(0, semi));
      uint64_t size = 0;
      auto [ptr, ec] =
          std::from_chars(size_line.data(), size_line.data() + size_line.size(), size, 16);
      if (ec != std::errc() || ptr != size_line.data() + size_line.size()) {
        return Status(Code::Unavailable, "malformed chunk size from the server");
      }
      conn.consume(eol + 2);
      if (size == 0) {
        // Trailers, then an empty line.
        while (true) {
          while ((eol = conn.buffered().find("\r\n")) == std::string_view::npos) {
            if (conn.buffered().size() > kMaxHeaderBytes || !conn.readMore()) {
              return failed("reading the trailers");
            }
          }
          conn.consume(eol + 2);
          if (eol == 0) {
            break;
          }
        }
        break;
      }
      uint64_t left = size;
      while (left > 0) {
        if (conn.buffered().empty() && !conn.readMore()) {
          return failed("reading a chunk");
        }
        size_t take = static_cast<size_t>(std::min<uint64_t>(left, conn.buffered().size()));
        sink(conn.buffered().substr(0, take));
        conn.consume(take);
        left -= take;
      }
      while (conn.buffered().size() < 2) {
        if (!conn.readMore()) {
          return failed("reading a chunk end");
        }
      }
      if (conn.buffered().substr(0, 2) != "\r\n") {
        return Status(Code::Unavailable, "malformed chunk from the server");
      }
      conn.consume(2);
    }
  } else if (content_length >= 0) {
    uint64_t left = static_cast<uint64_t>(content_length);
    while (left > 0) {
      if (conn.buffered().empty() && !conn.readMore()) {
        return failed("reading the body");
      }
      size_t take = static_cast<size_t>(std::min<uint64_t>(left, conn.buffered().size()));
      sink(conn.buffered().substr(0, take));
      conn.consume(take);
      left -= take;
    }
  } else {
    // Delimited by the end of the connection.
    while (true) {
      sink(conn.buffered());
      conn.consume(conn.buffered().size());
      if (!conn.readMore()) {
        if (conn.eof()) {
          break;
        }
        return failed("reading the body");
      }
    }
    close = true;
  }
  return done(close);
}

}  // namespace ccm::kube
