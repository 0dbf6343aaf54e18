// RestClient implementation: handle pool, per-request setup, retries, metrics.
#include "host/kube/transport/rest_client.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>

#include "host/kube/transport/curl_transfer.hpp"
#include "host/kube/transport/http_headers.hpp"
#include "host/kube/transport/http_transport.hpp"
#include "host/log/log.hpp"

namespace ccm::kube {

using detail::CurlTransfer;

namespace {

constexpr int kMaxRetries = 10;
// An answer the server asks to be sent again after its Retry-After (client-go's rule).
bool retryLater(long code, long retry_after) {
  return (code == 429 || code >= 500) && retry_after >= 0;
}
constexpr size_t kMaxIdleHandles = 64;
constexpr size_t kErrorBodyLimit = size_t{64} * 1024;
// A non-watch request that receives nothing for this long is considered dead (the API
// server's own request timeout is 60 s).
constexpr long kStallSeconds = 120;

std::once_flag g_curl_init;  // curl_global_init must run once per process

const std::vector<double>& latencyBuckets() {
  static const std::vector<double> b{0.005, 0.025, 0.1, 0.25, 0.5,  1.0,
                                     2.0,   4.0,   8.0, 15.0, 30.0, 60.0};
  return b;
}

}  // namespace

// ---- CurlTransfer callbacks -------------------------------------------------------------------

size_t CurlTransfer::onWrite(char* data, size_t size, size_t n, void* self) {
  auto* t = static_cast<CurlTransfer*>(self);
  size_t len = size * n;
  if (t->body == nullptr) {
    return len;
  }
  if (t->body_limit > 0 && t->body->size() + len > t->body_limit) {
    if (t->pause_when_full) {
      if (!t->body->empty()) {
        t->paused = true;
        return CURL_WRITEFUNC_PAUSE;
      }
    } else {
      size_t room = t->body_limit > t->body->size() ? t->body_limit - t->body->size() : 0;
      t->body->append(data, std::min(room, len));
      return len;
    }
  }
  t->body->append(data, len);
  return len;
}

size_t CurlTransfer::onHeader(char* data, size_t size, size_t n, void* self) {
  auto* t = static_cast<CurlTransfer*>(self);
  size_t len = size * n;
  std::string_view line(data, len);
  if (line == "\r\n" || line == "\n") {
    long code = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
    if (code >= 200) {
      t->headers_done = true;
    }
    return len;
  }
  if (http::iequals(line.substr(0, 5), "HTTP/")) {
    // A new header block (after 100 Continue): forget what an earlier one said.
    t->retry_after_seconds = -1;
    t->warnings.clear();
    return len;
  }
  auto field = http::splitField(line);
  if (!field) {
    return len;
  }
  if (http::iequals(field->name, "retry-after")) {
    if (long seconds = http::retryAfterSeconds(field->value); seconds >= 0) {
      t->retry_after_seconds = seconds;
    }
  } else if (http::iequals(field->name, "warning")) {
    t->warnings.push_back(http::warningText(field->value));
  }
  return len;
}

// ---- metrics ----------------------------------------------------------------------------------

struct RestClient::Metrics {
  metrics::Family<metrics::Counter>* requests = nullptr;
  metrics::Histogram* duration[5] = {};
  metrics::Histogram* limiter[5] = {};
  std::mutex mu;
  std::unordered_map<std::string, metrics::Counter*> by_code_method;  // guarded by mu
};

std::string_view verbName(Verb verb) {
  switch (verb) {
    case Verb::Get:
      return "GET";
    case Verb::Post:
      return "POST";
    case Verb::Put:
      return "PUT";
    case Verb::Patch:
      return "PATCH";
    case Verb::Delete:
      return "DELETE";
  }
  return "GET";
}

std::string_view acceptHeader(const Request& request) {
  // The metadata-only form first, then the whole object from servers that do not offer it
  // (the API server before 1.15, or a proxy in front of it that rewrites nothing).
  return request.metadata_answer
             ? "Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, "
               "application/json, */*"
             : "Accept: application/json, */*";
}

// ---- construction -----------------------------------------------------------------------------

StatusOr<std::unique_ptr<RestClient>> RestClient::create(const RestConfig& config,
                                                         const ClientOptions& options, Clock& clock,
                                                         metrics::Registry* registry) {
  std::call_once(g_curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::unique_ptr<RestClient> client(new RestClient(config, options, clock, registry));
  CCM_RETURN_IF_ERROR(client->init());
  return client;
}

RestClient::RestClient(RestConfig config, const ClientOptions& options, Clock& clock,
                       metrics::Registry* registry)
    : config_(std::move(config)),
      user_agent_(options.user_agent.empty() ? defaultUserAgent("cloud-controller-manager", "", "")
                                             : options.user_agent),
      timeout_(options.timeout),
      connect_timeout_(options.connect_timeout),
      clock_(clock),
      credentials_(config_, clock),
      bucket_(effectiveQps(options.qps), effectiveBurst(options.qps, options.burst), clock),
      registry_(registry) {}

void RestClient::initMetrics() {
  if (registry_ == nullptr) {
    return;
  }
  metrics_ = std::make_unique<Metrics>();
  metrics_->requests =
      registry_->counter("rest_client_requests_total",
                         "Number of HTTP requests, partitioned by status code, method, and host.",
                         {"code", "host", "method"});
  auto* duration =
      registry_->histogram("rest_client_request_duration_seconds",
                           "Request latency in seconds. Broken down by verb, and host.",
                           latencyBuckets(), {"verb", "host"});
  auto* limiter = registry_->histogram(
      "rest_client_rate_limiter_duration_seconds",
      "Client side rate limiter latency in seconds. Broken down by verb, and host.",
      latencyBuckets(), {"verb", "host"});
  for (int v = 0; v < 5; ++v) {
    std::string verb(verbName(static_cast<Verb>(v)));
    if (duration != nullptr) {
      metrics_->duration[v] = &duration->labels({verb, host_label_});
    }
    if (limiter != nullptr) {
      metrics_->limiter[v] = &limiter->labels({verb, host_label_});
    }
  }
}

Status RestClient::init() {
  // Split scheme://host[:port][/prefix].
  const std::string& server = config_.server;
  size_t scheme_end = server.find("://");
  if (scheme_end == std::string::npos) {
    return Status(Code::InvalidArgument, fmt::format("server \"{}\" is not a URL", server));
  }
  std::string scheme = server.substr(0, scheme_end);
  size_t host_start = scheme_end + 3;
  size_t path_start = server.find('/', host_start);
  std::string authority = server.substr(
      host_start, path_start == std::string::npos ? std::string::npos : path_start - host_start);
  std::string prefix = path_start == std::string::npos ? "" : server.substr(path_start);
  std::string host = authority;
  std::string port = scheme == "https" ? "443" : "80";
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    host = authority.substr(0, close + 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':') {
      port = authority.substr(close + 2);
    }
  } else if (size_t colon = authority.rfind(':'); colon != std::string::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  host_label_ = host + ":" + port;
  url_base_ = server;
  if (!config_.tls_server_name.empty() && scheme == "https") {
    // Connect to the real address but speak TLS (SNI, verification) to the given name.
    url_base_ = fmt::format("https://{}:{}{}", config_.tls_server_name, port, prefix);
    std::string real_host = host;
    if (real_host.size() > 1 && real_host.front() == '[') {
      real_host = real_host.substr(1, real_host.size() - 2);
    }
    connect_to_ = fmt::format("{}:{}:{}:{}", config_.tls_server_name, port, real_host, port);
  }
  initMetrics();
  if (HttpTransport::usableFor(config_)) {
    HttpTransport::Options o;
    o.connect_timeout = connect_timeout_;
    o.stall = std::chrono::seconds(kStallSeconds);
    auto http = HttpTransport::create(config_, o);
    if (http.ok()) {
      http_ = std::move(http).value();
    } else {
      // libcurl reports the same problem at the first request.
      ccm::log::warning("Using libcurl for every request", {{"reason", http.status().toString()}});
    }
  }
  share_ = curl_share_init();
  curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  curl_share_setopt(share_, CURLSHOPT_USERDATA, this);
  curl_share_setopt(
      share_, CURLSHOPT_LOCKFUNC, +[](CURL*, curl_lock_data data, curl_lock_access, void* self) {
        static_cast<RestClient*>(self)->share_locks_[data].lock();
      });
  curl_share_setopt(
      share_, CURLSHOPT_UNLOCKFUNC, +[](CURL*, curl_lock_data data, void* self) {
        static_cast<RestClient*>(self)->share_locks_[data].unlock();
      });
  // Validate the credentials and TLS material once, so a broken configuration fails at
  // start-up rather than at the first request.
  Credentials::Current creds;
  Status st = credentials_.get(&creds);
  if (!st.ok()) {
    return st;
  }
  auto t = acquire(creds);
  if (!t) {
    return Status(Code::Internal, "cannot create a libcurl handle");
  }
  release(std::move(t));
  return okStatus();
}

RestClient::~RestClient() {
  {
    std::lock_guard lock(pool_mu_);
    for (auto& t : pool_) {
      destroy(std::move(t));
    }
    pool_.clear();
  }
  if (share_ != nullptr) {
    curl_share_cleanup(share_);
  }
}

// ---- handles ----------------------------------------------------------------------------------

Status RestClient::configureHandle(CurlTransfer& t, const Credentials::Current& creds) {
  CURL* h = t.easy;
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_SHARE, share_);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, t.error);
  curl_easy_setopt(h, CURLOPT_USERAGENT, user_agent_.c_str());
  curl_easy_setopt(h, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 15L);
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(connect_timeout_.count()));
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &CurlTransfer::onWrite);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &CurlTransfer::onHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(h, CURLOPT_SSLVERSION, static_cast<long>(CURL_SSLVERSION_TLSv1_2));
  if (config_.insecure_skip_tls_verify) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  } else {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
  }
  if (!config_.ca_pem.empty()) {
    curl_blob blob{const_cast<char*>(config_.ca_pem.data()), config_.ca_pem.size(), CURL_BLOB_COPY};
    if (curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob) != CURLE_OK) {
      return Status(Code::InvalidArgument, "libcurl rejected the CA bundle");
    }
  }
  if (!connect_to_.empty()) {
    // The list must outlive the handle: keep it in the handle's private storage.
    curl_slist* list = curl_slist_append(nullptr, connect_to_.c_str());
    curl_easy_setopt(h, CURLOPT_CONNECT_TO, list);
    curl_easy_setopt(h, CURLOPT_PRIVATE, list);
  }
  if (!config_.proxy_url.empty()) {
    curl_easy_setopt(h, CURLOPT_PROXY, config_.proxy_url.c_str());
  }
  if (creds.cert) {
    curl_blob cert{const_cast<char*>(creds.cert->cert_pem.data()), creds.cert->cert_pem.size(),
                   CURL_BLOB_COPY};
    curl_blob key{const_cast<char*>(creds.cert->key_pem.data()), creds.cert->key_pem.size(),
                  CURL_BLOB_COPY};
    curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    if (curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key) != CURLE_OK) {
      return Status(Code::InvalidArgument, "libcurl rejected the client certificate");
    }
    t.cert_generation = creds.cert->generation;
  }
  return okStatus();
}

std::unique_ptr<CurlTransfer> RestClient::acquire(const Credentials::Current& creds) {
  uint64_t gen = creds.cert ? creds.cert->generation : 0;
  {
    std::lock_guard lock(pool_mu_);
    while (!pool_.empty()) {
      auto t = std::move(pool_.back());
      pool_.pop_back();
      if (t->cert_generation == gen) {
        return t;
      }
      destroy(std::move(t));
    }
  }
  auto t = std::make_unique<CurlTransfer>();
  t->easy = curl_easy_init();
  if (t->easy == nullptr) {
    return nullptr;
  }
  Status st = configureHandle(*t, creds);
  if (!st.ok()) {
    ccm::log::error("Cannot configure the HTTP client", {{"error", st.toString()}});
  }
  return t;
}

void RestClient::release(std::unique_ptr<CurlTransfer> t) {
  if (!t) {
    return;
  }
  t->body = nullptr;
  std::lock_guard lock(pool_mu_);
  if (pool_.size() < kMaxIdleHandles) {
    pool_.push_back(std::move(t));
    return;
  }
  destroy(std::move(t));
}

void RestClient::destroy(std::unique_ptr<CurlTransfer> t) {
  if (!t || t->easy == nullptr) {
    return;
  }
  char* priv = nullptr;
  curl_easy_getinfo(t->easy, CURLINFO_PRIVATE, &priv);
  curl_easy_cleanup(t->easy);
  curl_slist_free_all(reinterpret_cast<curl_slist*>(priv));
}

void RestClient::prepare(CurlTransfer& t, const Request& request, const Credentials::Current& creds,
                         curl_slist** headers, bool streaming,
                         std::chrono::milliseconds max_duration) {
  CURL* h = t.easy;
  std::string url = url_base_ + request.path;
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  bool has_body = !request.body.empty() || request.verb == Verb::Post ||
                  request.verb == Verb::Put || request.verb == Verb::Patch;
  if (has_body) {
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(request.body.size()));
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, std::string(verbName(request.verb)).c_str());
  } else {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.verb == Verb::Get ? nullptr : "DELETE");
  }
  curl_slist* list = curl_slist_append(nullptr, std::string(acceptHeader(request)).c_str());
  if (has_body) {
    list = curl_slist_append(list, fmt::format("Content-Type: {}", request.content_type).c_str());
  }
  // No "Expect: 100-continue" round trip for large bodies.
  list = curl_slist_append(list, "Expect:");
  if (!creds.authorization.empty()) {
    list = curl_slist_append(list, ("Authorization: " + creds.authorization).c_str());
  }
  if (!config_.impersonate_user.empty()) {
    list = curl_slist_append(list, ("Impersonate-User: " + config_.impersonate_user).c_str());
    for (const auto& g : config_.impersonate_groups) {
      list = curl_slist_append(list, ("Impersonate-Group: " + g).c_str());
    }
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
  *headers = list;
  std::chrono::milliseconds total = streaming                     ? max_duration
                                    : request.timeout.count() > 0 ? request.timeout
                                                                  : timeout_;
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(total.count()));
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, streaming ? 0L : 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, streaming ? 0L : kStallSeconds);
}

// ---- helpers ----------------------------------------------------------------------------------

bool RestClient::throttle(Verb verb, std::stop_token stop) {
  std::chrono::nanoseconds waited{0};
  bool ok = bucket_.wait(stop, &waited);
  double seconds = std::chrono::duration<double>(waited).count();
  if (seconds > 1.0) {
    ccm::log::infoV(1, "Waited before sending request due to client-side throttling",
                    {{"seconds", seconds}, {"verb", verbName(verb)}});
  } else if (seconds > 0.05) {
    ccm::log::infoV(3, "Waited before sending request due to client-side throttling",
                    {{"seconds", seconds}, {"verb", verbName(verb)}});
  }
  if (metrics_ && metrics_->limiter[static_cast<int>(verb)] != nullptr) {
    metrics_->limiter[static_cast<int>(verb)]->observe(seconds);
  }
  return ok;
}

void RestClient::record(Verb verb, const std::string& code, std::chrono::steady_clock::duration d) {
  if (!metrics_) {
    return;
  }
  int v = static_cast<int>(verb);
  if (metrics_->duration[v] != nullptr) {
    metrics_->duration[v]->observe(std::chrono::duration<double>(d).count());
  }
  if (metrics_->requests == nullptr) {
    return;
  }
  std::string key = fmt::format("{}/{}", code, verbName(verb));
  metrics::Counter* c = nullptr;
  {
    std::lock_guard lock(metrics_->mu);
    auto it = metrics_->by_code_method.find(key);
    if (it != metrics_->by_code_method.end()) {
      c = it->second;
    }
  }
  if (c == nullptr) {
    c = &metrics_->requests->labels({code, host_label_, std::string(verbName(verb))});
    std::lock_guard lock(metrics_->mu);
    metrics_->by_code_method.emplace(key, c);
  }
  c->inc();
}

void RestClient::logWarnings(const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) {
    std::lock_guard lock(warn_mu_);
    if (warned_.size() < 1024 && warned_.insert(w).second) {
      ccm::log::warning("API server warning", {{"warning", w}});
    }
  }
}

ApiStatus RestClient::transportError(CURLcode code, const CurlTransfer& t) const {
  std::string detail = t.error[0] != '\0' ? std::string(t.error) : curl_easy_strerror(code);
  if (code == CURLE_OPERATION_TIMEDOUT) {
    return ApiStatus(0, Reason::Transport,
                     fmt::format("request to {} timed out: {}", host_label_, detail));
  }
  return ApiStatus::transport(fmt::format("request to {} failed: {}", host_label_, detail));
}

// ---- call / stream ----------------------------------------------------------------------------

void RestClient::setWriteGuard(WriteGuard guard) {
  if (!guard) {
    write_guard_.store(nullptr, std::memory_order_release);
    return;
  }
  std::lock_guard lock(guards_mu_);
  guards_.push_back(std::make_unique<const WriteGuard>(std::move(guard)));
  write_guard_.store(guards_.back().get(), std::memory_order_release);
}

ApiResult<Response> RestClient::call(const Request& request, std::stop_token stop) {
  bool reauthenticated = false;
  for (int attempt = 0;; ++attempt) {
    if (!throttle(request.verb, stop)) {
      return ApiStatus::cancelled();
    }
    if (ApiStatus refused = askWriteGuard(request); !refused.ok()) {
      return refused;
    }
    Credentials::Current creds;
    Status cs = credentials_.get(&creds);
    if (!cs.ok()) {
      return ApiStatus(0, Reason::Unauthorized, cs.message());
    }
    Response response;
    long code = 0;
    long retry_after = -1;
    std::vector<std::string> warnings;
    ApiStatus sent =
        http_ ? sendHttp(request, creds, stop, &response, &code, &retry_after, &warnings)
              : sendCurl(request, creds, stop, &response, &code, &retry_after, &warnings);
    if (!sent.ok()) {
      return sent;
    }
    logWarnings(warnings);
    if (code >= 200 && code < 300) {
      response.code = static_cast<int>(code);
      if (!request.want_body) {
        response.body.clear();
      }
      return response;
    }
    if (code == 401 && !reauthenticated && credentials_.onUnauthorized()) {
      reauthenticated = true;
      continue;
    }
    if (retryLater(code, retry_after) && attempt < kMaxRetries) {
      ccm::log::infoV(2, "Server asked to retry later",
                      {{"code", code},
                       {"retryAfterSeconds", retry_after},
                       {"verb", verbName(request.verb)},
                       {"attempt", attempt + 1}});
      if (!sleepFor(std::chrono::seconds(retry_after), stop)) {
        return ApiStatus::cancelled();
      }
      continue;
    }
    return ApiStatus::fromResponse(static_cast<int>(code), response.body,
                                   std::chrono::seconds(std::max(retry_after, 0L)));
  }
}

ApiStatus RestClient::sendCurl(const Request& request, const Credentials::Current& creds,
                               std::stop_token stop, Response* response, long* code,
                               long* retry_after, std::vector<std::string>* warnings) {
  auto t = acquire(creds);
  if (!t) {
    return ApiStatus::transport("cannot create a libcurl handle");
  }
  t->begin(&response->body, 0, false);
  curl_slist* headers = nullptr;
  prepare(*t, request, creds, &headers, false, {});
  if (stop.stop_possible()) {
    curl_easy_setopt(t->easy, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(t->easy, CURLOPT_XFERINFODATA, &stop);
    curl_easy_setopt(
        t->easy, CURLOPT_XFERINFOFUNCTION,
        +[](void* p, curl_off_t, curl_off_t, curl_off_t, curl_off_t) -> int {
          return static_cast<std::stop_token*>(p)->stop_requested() ? 1 : 0;
        });
  } else {
    curl_easy_setopt(t->easy, CURLOPT_NOPROGRESS, 1L);
  }
  auto start = std::chrono::steady_clock::now();
  CURLcode rc = curl_easy_perform(t->easy);
  auto elapsed = std::chrono::steady_clock::now() - start;
  curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, nullptr);
  curl_slist_free_all(headers);
  curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, code);
  *retry_after = t->retry_after_seconds;
  *warnings = std::move(t->warnings);
  if (rc != CURLE_OK) {
    ApiStatus err =
        rc == CURLE_ABORTED_BY_CALLBACK ? ApiStatus::cancelled() : transportError(rc, *t);
    destroy(std::move(t));  // connection state unknown
    record(request.verb, "<error>", elapsed);
    return err;
  }
  release(std::move(t));
  record(request.verb, std::to_string(*code), elapsed);
  return ApiStatus();
}

HttpTransport::Request RestClient::httpRequest(const Request& request,
                                               const Credentials::Current& creds,
                                               std::vector<std::string>* headers) const {
  bool has_body = !request.body.empty() || request.verb == Verb::Post ||
                  request.verb == Verb::Put || request.verb == Verb::Patch;
  headers->reserve(6 + config_.impersonate_groups.size());
  headers->emplace_back("User-Agent: " + user_agent_);
  headers->emplace_back(acceptHeader(request));
  if (has_body) {
    headers->emplace_back(fmt::format("Content-Type: {}", request.content_type));
  }
  if (!creds.authorization.empty()) {
    headers->emplace_back("Authorization: " + creds.authorization);
  }
  if (!config_.impersonate_user.empty()) {
    headers->emplace_back("Impersonate-User: " + config_.impersonate_user);
    for (const auto& g : config_.impersonate_groups) {
      headers->emplace_back("Impersonate-Group: " + g);
    }
  }
  HttpTransport::Request r;
  r.method = verbName(request.verb);
  r.target = request.path;
  r.headers = headers;
  r.body = request.body;
  r.send_body = has_body;
  r.discard_success_body = !request.want_body;
  r.timeout = request.timeout.count() > 0 ? request.timeout : timeout_;
  return r;
}

ApiStatus RestClient::askWriteGuard(const Request& request) const {
  const WriteGuard* guard =
      request.verb != Verb::Get ? write_guard_.load(std::memory_order_acquire) : nullptr;
  return guard != nullptr ? (*guard)(request) : ApiStatus();
}

std::function<Status()> RestClient::fenceFor(const Request& request, ApiStatus* refused) const {
  // The write guard once more, right before the bytes go out: call() asked it before the
  // connection was made, and a pause in between (a TLS handshake, a frozen process) must not
  // let a write through that the guard would now refuse.
  const WriteGuard* guard =
      request.verb != Verb::Get ? write_guard_.load(std::memory_order_acquire) : nullptr;
  if (guard == nullptr) {
    return {};
  }
  return [guard, &request, refused]() {
    *refused = (*guard)(request);
    return refused->ok() ? Status() : Status(Code::Cancelled, refused->message());
  };
}

ApiStatus RestClient::httpFailure(Verb verb, const Status& st,
                                  std::chrono::steady_clock::duration elapsed) {
  record(verb, "<error>", elapsed);
  if (st.code() == Code::Cancelled) {
    return ApiStatus::cancelled();
  }
  return ApiStatus(0, Reason::Transport, st.message());
}

ApiStatus RestClient::sendHttp(const Request& request, const Credentials::Current& creds,
                               std::stop_token stop, Response* response, long* code,
                               long* retry_after, std::vector<std::string>* warnings) {
  std::vector<std::string> headers;
  HttpTransport::Request r = httpRequest(request, creds, &headers);
  ApiStatus refused;
  std::function<Status()> fence = fenceFor(request, &refused);
  if (fence) {
    r.before_send = &fence;
  }
  HttpTransport::Response answer;
  auto start = std::chrono::steady_clock::now();
  Status st = http_->perform(r, creds, stop, &answer, &response->body);
  auto elapsed = std::chrono::steady_clock::now() - start;
  if (!refused.ok()) {
    return refused;
  }
  if (!st.ok()) {
    return httpFailure(request.verb, st, elapsed);
  }
  *code = answer.code;
  *retry_after = answer.retry_after_seconds;
  *warnings = std::move(answer.warnings);
  record(request.verb, std::to_string(*code), elapsed);
  return ApiStatus();
}

std::vector<ApiResult<Response>> RestClient::callBatch(std::span<const Request> requests,
                                                       std::stop_token stop,
                                                       std::chrono::microseconds gather) {
  std::vector<ApiResult<Response>> results;
  results.reserve(requests.size());
  if (!http_ || requests.size() < 2) {
    for (const auto& r : requests) {
      results.push_back(call(r, stop));
    }
    return results;
  }
  auto failAll = [&](const ApiStatus& st) {
    results.assign(requests.size(), ApiResult<Response>(st));
    return results;
  };
  for (const auto& r : requests) {
    if (!throttle(r.verb, stop)) {
      return failAll(ApiStatus::cancelled());
    }
  }
  // The batch goes out as one write: the guard's answer for its first write stands for all.
  const Request* first_write = nullptr;
  for (const auto& r : requests) {
    if (r.verb != Verb::Get) {
      first_write = &r;
      break;
    }
  }
  ApiStatus refused;
  std::function<Status()> fence;
  if (first_write != nullptr) {
    if (ApiStatus no = askWriteGuard(*first_write); !no.ok()) {
      return failAll(no);
    }
    fence = fenceFor(*first_write, &refused);
  }
  Credentials::Current creds;
  if (Status cs = credentials_.get(&creds); !cs.ok()) {
    return failAll(ApiStatus(0, Reason::Unauthorized, cs.message()));
  }
  std::vector<std::vector<std::string>> headers(requests.size());
  std::vector<HttpTransport::Exchange> batch(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    batch[i].request = httpRequest(requests[i], creds, &headers[i]);
  }
  if (fence) {
    batch.front().request.before_send = &fence;
  }
  auto start = std::chrono::steady_clock::now();
  http_->performBatch(batch, creds, stop, gather);
  auto elapsed = std::chrono::steady_clock::now() - start;
  if (!refused.ok()) {
    return failAll(refused);
  }
  // Answers call() would retry are retried through it, after one re-authentication or one
  // wait for the whole batch (its requests were sent at the same moment).
  std::optional<bool> renewed;
  bool waited = false;
  for (size_t i = 0; i < requests.size(); ++i) {
    const Request& request = requests[i];
    HttpTransport::Exchange& e = batch[i];
    if (!e.status.ok()) {
      results.push_back(httpFailure(request.verb, e.status, elapsed));
      continue;
    }
    int code = e.response.code;
    long retry_after = e.response.retry_after_seconds;
    record(request.verb, std::to_string(code), elapsed);
    logWarnings(e.response.warnings);
    if (code >= 200 && code < 300) {
      results.push_back(Response{code, request.want_body ? std::move(e.body) : std::string()});
      continue;
    }
    if (code == 401) {
      if (!renewed) {
        renewed = credentials_.onUnauthorized();
      }
      if (*renewed) {
        results.push_back(call(request, stop));
        continue;
      }
    } else if (retryLater(code, retry_after)) {
      if (!waited) {
        ccm::log::infoV(
            2, "Server asked to retry later",
            {{"code", code}, {"retryAfterSeconds", retry_after}, {"verb", verbName(request.verb)}});
        waited = true;
        if (!sleepFor(std::chrono::seconds(retry_after), stop)) {
          results.push_back(ApiStatus::cancelled());
          continue;
        }
      }
      results.push_back(stop.stop_requested() ? ApiResult<Response>(ApiStatus::cancelled())
                                              : call(request, stop));
      continue;
    }
    results.push_back(
        ApiStatus::fromResponse(code, e.body, std::chrono::seconds(std::max(retry_after, 0L))));
  }
  return results;
}

ApiResult<std::unique_ptr<ResponseStream>> RestClient::stream(const Request& request,
                                                              std::stop_token stop,
                                                              StreamOptions options) {
  bool reauthenticated = false;
  for (int attempt = 0;; ++attempt) {
    if (!throttle(request.verb, stop)) {
      return ApiStatus::cancelled();
    }
    Credentials::Current creds;
    Status cs = credentials_.get(&creds);
    if (!cs.ok()) {
      return ApiStatus(0, Reason::Unauthorized, cs.message());
    }
    auto t = acquire(creds);
    if (!t) {
      return ApiStatus::transport("cannot create a libcurl handle");
    }
    curl_slist* headers = nullptr;
    prepare(*t, request, creds, &headers, true, options.max_duration);
    curl_easy_setopt(t->easy, CURLOPT_NOPROGRESS, 1L);
    std::unique_ptr<ResponseStream> s(
        new ResponseStream(this, std::move(t), stop, std::move(options)));
    auto start = std::chrono::steady_clock::now();
    bool opened = s->open();
    // libcurl copied the header list when the transfer started.
    curl_easy_setopt(s->transfer_->easy, CURLOPT_HTTPHEADER, nullptr);
    curl_slist_free_all(headers);
    auto elapsed = std::chrono::steady_clock::now() - start;
    if (!opened) {
      record(request.verb, "<error>", elapsed);
      if (s->endState() == ResponseStream::End::Cancelled) {
        return ApiStatus::cancelled();
      }
      return ApiStatus::transport(fmt::format("request to {} failed: {}", host_label_, s->error()));
    }
    long code = s->httpCode();
    record(request.verb, std::to_string(code), elapsed);
    logWarnings(s->transfer_->warnings);
    if (code >= 200 && code < 300) {
      return s;
    }
    long retry_after = s->transfer_->retry_after_seconds;
    s->drain(kErrorBodyLimit);
    std::string body = std::move(s->buffer_);
    options = std::move(s->options_);
    s.reset();
    if (code == 401 && !reauthenticated && credentials_.onUnauthorized()) {
      reauthenticated = true;
      continue;
    }
    if (retryLater(code, retry_after) && attempt < kMaxRetries) {
      if (!sleepFor(std::chrono::seconds(retry_after), stop)) {
        return ApiStatus::cancelled();
      }
      continue;
    }
    return ApiStatus::fromResponse(static_cast<int>(code), body,
                                   std::chrono::seconds(std::max(retry_after, 0L)));
  }
}

}  // namespace ccm::kube
