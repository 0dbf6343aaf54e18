// SecureServer: listener, threads, dispatch between io and worker threads, routing.
#include "host/server/secure_server.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <optional>

#include "host/log/json_string.hpp"
#include "host/log/log.hpp"
#include "host/runtime/text.hpp"
#include "host/runtime/thread_name.hpp"
#include "host/server/serving_certificate.hpp"

namespace ccm::server {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

constexpr const char* kTextPlain = "text/plain; charset=utf-8";
constexpr const char* kPrometheusText = "text/plain; version=0.0.4; charset=utf-8";
// Go's default TLS 1.2 suites: forward secrecy and AEAD only. TLS 1.3 uses OpenSSL's.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

HttpResponse makeResponse(http::status status, std::string_view content_type, std::string body) {
  HttpResponse r{status, 11};
  r.set(http::field::content_type, content_type);
  r.set(http::field::cache_control, "no-cache, private");
  r.set("X-Content-Type-Options", "nosniff");
  r.body() = std::move(body);
  return r;
}


// A metav1.Status answer, as the API server's filters write them.
HttpResponse statusResponse(int code, std::string_view reason, std::string_view message) {
  std::string body = R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
                     R"("message":)";
  json::appendString(body, message);
  body += R"(,"reason":)";
  json::appendString(body, reason);
  body += R"(,"details":{},"code":)" + std::to_string(code) + "}\n";
  return makeResponse(static_cast<http::status>(code), "application/json", std::move(body));
}

HttpResponse accessDenied(const AccessDecision& d) {
  switch (d.http_status) {
    case 401:
      return statusResponse(401, "Unauthorized", d.message);
    case 403:
      return statusResponse(403, "Forbidden", d.message);
    default:
      return statusResponse(500, "InternalError", d.message);
  }
}

// Percent-decoding; false on a bad escape or a decoded NUL (no path or query value served
// here may hold one).
bool percentDecode(std::string_view in, bool plus_is_space, std::string* out) {
  auto decoded = text::percentDecode(in, plus_is_space);
  if (!decoded || decoded->find('\0') != std::string::npos) {
    return false;
  }
  *out = std::move(*decoded);
  return true;
}

// The verb a SubjectAccessReview asks about for a non-resource path, as the API server's
// request info maps HTTP methods: GET/HEAD get, POST create, PUT update, PATCH patch,
// DELETE delete; any other method in lower case.
std::string authorizationVerb(const HttpRequest& request) {
  switch (request.method()) {
    case http::verb::get:
    case http::verb::head:
      return "get";
    case http::verb::post:
      return "create";
    case http::verb::put:
      return "update";
    case http::verb::patch:
      return "patch";
    case http::verb::delete_:
      return "delete";
    default:
      break;
  }
  std::string verb(request.method_string());
  for (char& c : verb) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return verb;
}

bool isHealthPath(std::string_view path, HealthEndpoint* endpoint, std::string* check) {
  static const std::pair<std::string_view, HealthEndpoint> kPaths[] = {
      {"/healthz", HealthEndpoint::Healthz},
      {"/livez", HealthEndpoint::Livez},
      {"/readyz", HealthEndpoint::Readyz}};
  for (const auto& [prefix, which] : kPaths) {
    if (path == prefix) {
      *endpoint = which;
      check->clear();
      return true;
    }
    if (path.size() > prefix.size() + 1 && path.substr(0, prefix.size()) == prefix &&
        path[prefix.size()] == '/' && path.find('/', prefix.size() + 1) == std::string_view::npos) {
      *endpoint = which;
      *check = std::string(path.substr(prefix.size() + 1));
      return true;
    }
  }
  return false;
}

}  // namespace

bool splitTarget(std::string_view target, std::string* path, std::string* query) {
  if (target.empty() || target.front() != '/') {
    return false;
  }
  size_t q = target.find('?');
  std::string_view raw_path = target.substr(0, q);
  *query = q == std::string_view::npos ? std::string() : std::string(target.substr(q + 1));
  size_t hash = query->find('#');
  if (hash != std::string::npos) {
    query->erase(hash);
  }
  return percentDecode(raw_path, false, path);
}

std::vector<std::string> queryValues(std::string_view query, std::string_view key, bool* present) {
  std::vector<std::string> out;
  if (present != nullptr) {
    *present = false;
  }
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    size_t eq = pair.find('=');
    std::string k;
    std::string v;
    if (!percentDecode(pair.substr(0, eq), true, &k)) {
      continue;
    }
    if (k != key) {
      continue;
    }
    if (present != nullptr) {
      *present = true;
    }
    if (eq != std::string_view::npos && percentDecode(pair.substr(eq + 1), true, &v)) {
      out.push_back(std::move(v));
    }
  }
  return out;
}

struct SecureServer::Runtime {
  net::io_context io{1};
  net::io_context work;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_guard;
  net::ssl::context tls{net::ssl::context::tls_server};
  std::optional<tcp::acceptor> acceptor;
  std::optional<net::steady_timer> retry_timer;
  std::vector<std::thread> threads;
};

SecureServer::SecureServer(ServerOptions options, ServerDependencies deps)
    : options_(std::move(options)),
      own_health_(deps.health == nullptr ? std::make_unique<HealthChecks>() : nullptr),
      health_(deps.health != nullptr ? deps.health : own_health_.get()),
      metrics_(deps.metrics),
      auth_({}, nullptr, nullptr) {
  Clock& clock = deps.clock != nullptr ? *deps.clock : Clock::real();
  if (metrics_ != nullptr) {
    process_metrics_ = std::make_unique<ProcessMetrics>(*metrics_);
    registerBuildInfo(*metrics_, options_.build_info);
  }
  if (deps.authentication_api != nullptr && deps.authorization_api != nullptr) {
    authn_ = std::make_unique<DelegatingAuthenticator>(*deps.authentication_api,
                                                       options_.token_cache_ttl, clock, metrics_,
                                                       options_.review_timeout);
    authz_ = std::make_unique<DelegatingAuthorizer>(
        *deps.authorization_api, options_.authorized_cache_ttl, options_.unauthorized_cache_ttl,
        clock, metrics_, options_.review_timeout);
  }
  auth_ = AuthFilter(options_.always_allow_paths, authn_.get(), authz_.get());

  // component-base's SLI metrics (slis package): the last result of each check per endpoint,
  // and a count of results.
  healthcheck_ = sli_registry_.gauge("kubernetes_healthcheck",
                                     "This metric records the result of a single healthcheck.",
                                     {"name", "type"}, metrics::Stability::Stable);
  healthchecks_total_ = sli_registry_.counter(
      "kubernetes_healthchecks_total", "This metric records the results of all healthcheck.",
      {"name", "status", "type"}, metrics::Stability::Stable);
  health_->setObserver([this](std::string_view check, HealthEndpoint endpoint, bool passed) {
    std::string name(check);
    std::string type(endpointName(endpoint));
    healthcheck_->labels({name, type}).set(passed ? 1 : 0);
    healthchecks_total_->labels({name, passed ? "success" : "error", type}).inc();
  });
}

SecureServer::~SecureServer() {
  stop();
  health_->setObserver(nullptr);
}

std::string SecureServer::caPem() const {
  std::lock_guard lock(mu_);
  return ca_pem_;
}

Status SecureServer::start() {
  if (runtime_ != nullptr) {
    return Status(Code::FailedPrecondition, "the secure server was already started");
  }
  if (options_.secure_port == 0 && !options_.pick_free_port) {
    log::info("Secure serving is disabled (--secure-port=0)");
    return okStatus();
  }
  if (options_.secure_port < 0 || options_.secure_port > 65535) {
    return Status(Code::InvalidArgument, "--secure-port " + std::to_string(options_.secure_port) +
                                             " must be between 0 and 65535");
  }
  boost::system::error_code ec;
  net::ip::address address = net::ip::make_address(options_.bind_address, ec);
  if (ec) {
    return Status(Code::InvalidArgument,
                  "--bind-address \"" + options_.bind_address + "\" is not an IP address");
  }

  CertificateSources sources;
  sources.tls_cert_file = options_.tls_cert_file;
  sources.tls_private_key_file = options_.tls_private_key_file;
  sources.cert_dir = options_.cert_dir;
  sources.extra_ip_addresses = {options_.bind_address};
  auto cert = loadServingCertificate(sources);
  if (!cert.ok()) {
    return cert.status();
  }

  auto certs = CertificateAuthenticator::fromFiles(options_.client_ca_file,
                                                  options_.request_header);
  if (!certs.ok()) {
    return certs.status();
  }
  certs_ = std::move(*certs);

  auto rt = std::make_unique<Runtime>();
  auto& tls = rt->tls;
  tls.set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                  net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                  net::ssl::context::no_tlsv1_1 | net::ssl::context::single_dh_use);
  SSL_CTX* native = tls.native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_cipher_list(native, kTls12Ciphers);
  SSL_CTX_sess_set_cache_size(native, 256);
  if (certs_ != nullptr) {
    // Ask for a client certificate but accept any at the handshake, as Go's
    // RequestClientCert: the authenticators verify it against their own CA for each request.
    SSL_CTX_set_verify(native, SSL_VERIFY_PEER, [](int, X509_STORE_CTX*) { return 1; });
    SSL_CTX_set_client_CA_list(native, certs_->caNames());
    static constexpr unsigned char kSessionContext[] = "ccm-secure-port";
    SSL_CTX_set_session_id_context(native, kSessionContext, sizeof kSessionContext - 1);
  }
  tls.use_certificate_chain(net::buffer(cert->chain_pem), ec);
  if (ec) {
    return Status(Code::InvalidArgument,
                  "serving certificate (" + cert->description + "): " + ec.message());
  }
  tls.use_private_key(net::buffer(cert->key_pem), net::ssl::context::pem, ec);
  if (ec) {
    return Status(Code::InvalidArgument,
                  "serving key (" + cert->description + "): " + ec.message());
  }
  {
    std::lock_guard lock(mu_);
    ca_pem_ = cert->ca_pem;
  }

  uint16_t port = options_.pick_free_port ? 0 : static_cast<uint16_t>(options_.secure_port);
  tcp::endpoint endpoint(address, port);
  auto& acceptor = rt->acceptor.emplace(rt->io);
  const std::string where = options_.bind_address + ":" + std::to_string(port);
  auto listenError = [&](const char* what) {
    return Status(Code::Unavailable, "--bind-address/--secure-port: cannot " + std::string(what) +
                                         " " + where + ": " + ec.message());
  };
  acceptor.open(endpoint.protocol(), ec);
  if (ec) {
    return listenError("open a socket for");
  }
  acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (options_.reuse_port) {
    int one = 1;
    if (::setsockopt(acceptor.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
      ec.assign(errno, boost::system::system_category());
      return listenError("set SO_REUSEPORT on");
    }
  }
  acceptor.bind(endpoint, ec);
  if (ec) {
    return listenError("bind");
  }
  acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return listenError("listen on");
  }
  port_.store(acceptor.local_endpoint().port());
  rt->retry_timer.emplace(rt->io);
  rt->work_guard.emplace(rt->work.get_executor());

  runtime_ = std::move(rt);
  accept();
  for (int i = 0; i < std::max(1, options_.io_threads); ++i) {
    runtime_->threads.emplace_back([this] {
      runtime::nameThisThread("ccm-https-io");
      runtime_->io.run();
    });
  }
  for (int i = 0; i < std::max(1, options_.worker_threads); ++i) {
    runtime_->threads.emplace_back([this] {
      runtime::nameThisThread("ccm-https-work");
      runtime_->work.run();
    });
  }
  serving_.store(true);
  log::info("Serving securely", {{"address", options_.bind_address},
                                 {"port", static_cast<int>(port_.load())},
                                 {"certificate", cert->description}});
  return okStatus();
}

void SecureServer::stop() {
  if (runtime_ == nullptr) {
    return;
  }
  serving_.store(false);
  stop_source_.request_stop();  // review calls in flight return early
  runtime_->io.stop();
  runtime_->work_guard.reset();
  runtime_->work.stop();
  for (auto& t : runtime_->threads) {
    t.join();
  }
  // Destroying the contexts destroys the handlers still queued, and with them the
  // connections (their sockets close).
  runtime_->acceptor.reset();
  runtime_->retry_timer.reset();
  runtime_.reset();
  port_.store(0);
  log::info("Stopped secure serving");
}

void SecureServer::accept() {
  runtime_->acceptor->async_accept(
      net::make_strand(runtime_->io), [this](boost::system::error_code ec, tcp::socket socket) {
        if (ec == net::error::operation_aborted || !runtime_->acceptor->is_open()) {
          return;
        }
        if (ec) {
          // Out of descriptors or memory: wait a little instead of spinning.
          log::warning("Secure port accept failed", {{"err", ec.message()}});
          runtime_->retry_timer->expires_after(std::chrono::milliseconds(200));
          runtime_->retry_timer->async_wait([this](boost::system::error_code wait_ec) {
            if (!wait_ec) {
              accept();
            }
          });
          return;
        }
        if (open_connections_.fetch_add(1) >= options_.max_connections) {
          open_connections_.fetch_sub(1);
          log::infoV(2, "Secure port connection refused: too many connections",
                     {{"limit", options_.max_connections}});
          boost::system::error_code ignored;
          socket.close(ignored);
        } else {
          ConnectionLimits limits;
          limits.max_header_bytes = options_.max_header_bytes;
          limits.max_body_bytes = options_.max_body_bytes;
          limits.handshake_timeout = options_.handshake_timeout;
          limits.read_timeout = options_.read_timeout;
          limits.write_timeout = options_.write_timeout;
          std::make_shared<HttpsConnection>(std::move(socket), runtime_->tls,
                                            static_cast<RequestSink&>(*this), limits,
                                            &open_connections_)
              ->start();
        }
        accept();
      });
}

void SecureServer::onRequest(const std::shared_ptr<HttpsConnection>& connection,
                             HttpRequest request) {
  std::string path;
  std::string query;
  if (!splitTarget(request.target(), &path, &query)) {
    connection->respond(makeResponse(http::status::bad_request, kTextPlain,
                                     "bad request: the target must be an absolute path\n"));
    return;
  }
  auto header = request.find(http::field::authorization);
  std::string_view authorization =
      header == request.end() ? std::string_view() : std::string_view(header->value());
  if (!auth_.needsReview(authorization, path)) {
    // No API call needed: answer on this thread.
    connection->respond(handle(request, connection->peerCertificates(), {}));
    return;
  }
  if (pending_requests_.fetch_add(1) >= options_.max_pending_requests) {
    pending_requests_.fetch_sub(1);
    auto r = makeResponse(http::status::service_unavailable, kTextPlain,
                          "too many requests in progress\n");
    r.set(http::field::retry_after, "1");
    connection->respond(std::move(r));
    return;
  }
  net::post(runtime_->work, [this, connection, request = std::move(request)] {
    pending_requests_.fetch_sub(1);
    connection->respond(
        handle(request, connection->peerCertificates(), stop_source_.get_token()));
  });
}

HttpResponse SecureServer::handle(const HttpRequest& request, const PeerCertificates* peer,
                                  std::stop_token stop) {
  std::string path;
  std::string query;
  if (!splitTarget(request.target(), &path, &query)) {
    return makeResponse(http::status::bad_request, kTextPlain, "bad request\n");
  }
  std::string verb = authorizationVerb(request);
  auto header = request.find(http::field::authorization);
  std::string_view authorization =
      header == request.end() ? std::string_view() : std::string_view(header->value());
  CertificateAuthentication cert;
  if (certs_ != nullptr) {
    HeaderList headers;
    for (const auto& field : request) {
      headers.emplace_back(std::string_view(field.name_string()), std::string_view(field.value()));
    }
    cert = certs_->authenticate(peer, headers);
  }
  AccessDecision access = auth_.check(authorization, path, verb, std::move(stop), &cert);
  HttpResponse r = access.allowed() ? route(path, query) : accessDenied(access);
  log::infoV(5, "Secure port request",
             {{"verb", request.method_string()},
              {"path", path},
              {"user", access.user},
              {"code", r.result_int()}});
  return r;
}

HttpResponse SecureServer::route(const std::string& path, const std::string& query) {
  HealthEndpoint endpoint{};
  std::string check;
  const bool health = isHealthPath(path, &endpoint, &check);
  const bool metrics = path == "/metrics" && metrics_ != nullptr;
  if (path == "/metrics/slis") {
    return makeResponse(http::status::ok, kPrometheusText, sli_registry_.exposition());
  }
  if (path == "/configz" && !options_.configz.empty()) {
    auto r = makeResponse(http::status::ok, "application/json", options_.configz);
    r.set("X-Content-Type-Options", "nosniff");
    return r;
  }
  if (!health && !metrics) {
    return makeResponse(http::status::not_found, kTextPlain, "404 page not found\n");
  }
  // Any method: upstream's health and metrics handlers do not look at it either.
  if (metrics) {
    if (process_metrics_ != nullptr) {
      process_metrics_->update();
    }
    return makeResponse(http::status::ok, kPrometheusText, metrics_->exposition());
  }
  HealthAnswer answer;
  if (!check.empty()) {
    answer = health_->evaluateOne(endpoint, check);
  } else {
    bool verbose = false;
    queryValues(query, "verbose", &verbose);
    std::vector<std::string> exclude;
    for (const auto& v : queryValues(query, "exclude")) {
      size_t start = 0;
      while (start <= v.size()) {
        size_t comma = v.find(',', start);
        std::string item = v.substr(start, comma == std::string::npos ? comma : comma - start);
        while (!item.empty() && item.front() == ' ') {
          item.erase(0, 1);
        }
        while (!item.empty() && item.back() == ' ') {
          item.pop_back();
        }
        if (!item.empty()) {
          exclude.push_back(std::move(item));
        }
        if (comma == std::string::npos) {
          break;
        }
        start = comma + 1;
      }
    }
    answer = health_->evaluate(endpoint, verbose, exclude);
  }
  return makeResponse(static_cast<http::status>(answer.http_status), kTextPlain,
                      std::move(answer.body));
}

}  // namespace ccm::server
