// KubesimServer: wiring, start-up, restarts and shutdown.
#include "kubesim/kubesim_server.hpp"

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <unistd.h>

#include <boost/asio/steady_timer.hpp>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>

#include "host/log/log.hpp"
#include "kubesim/cluster_bootstrap.hpp"
#include "kubesim/state_file.hpp"

namespace ccm::kubesim {
namespace {

const ResourceType& T(std::string_view group, std::string_view resource) {
  return *ResourceRegistry::builtin().find(group, "v1", resource);
}

std::string randomToken() {
  std::random_device rd;
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 40; ++i) {
    out.push_back(kHex[rd() & 15]);
  }
  return out;
}

Status ensureObject(ObjectWriter& writer, const ResourceType& type, const std::string& json) {
  JsonDocument doc;
  doc.Parse(json.data(), json.size());
  auto r = writer.create(type, doc, doc.GetAllocator(), false);
  if (!r.ok() && r.error().code() != 409) {
    return Status(Code::InvalidArgument, r.error().message());
  }
  return okStatus();
}

}  // namespace

KubesimServer::KubesimServer(KubesimOptions options) : options_(std::move(options)) {}

KubesimServer::~KubesimServer() {
  stop();
}

std::string KubesimServer::serverUrl() const {
  std::string host = options_.bind_address;
  if (host == "0.0.0.0" || host == "::") {
    host = "127.0.0.1";
  }
  if (host.find(':') != std::string::npos) {
    host = "[" + host + "]";
  }
  return "https://" + host + ":" + std::to_string(port());
}

namespace {

// ALPN as kube-apiserver answers it: h2 when offered, else http/1.1, else no protocol.
int selectAlpn(SSL* /*ssl*/, const unsigned char** out, unsigned char* outlen,
               const unsigned char* in, unsigned int inlen, void* /*arg*/) {
  for (std::string_view want : {std::string_view("h2"), std::string_view("http/1.1")}) {
    unsigned int i = 0;
    while (i < inlen) {
      unsigned int len = in[i];
      if (i + 1 + len > inlen) {
        break;
      }
      if (std::string_view(reinterpret_cast<const char*>(in + i + 1), len) == want) {
        *out = in + i + 1;
        *outlen = static_cast<unsigned char>(len);
        return SSL_TLSEXT_ERR_OK;
      }
      i += 1 + len;
    }
  }
  return SSL_TLSEXT_ERR_NOACK;
}

}  // namespace

Status KubesimServer::setUpTls() {
  namespace ssl = boost::asio::ssl;
  tls_ = std::make_unique<ssl::context>(ssl::context::tls_server);
  tls_->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                    ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  boost::system::error_code ec;
  const auto& server = pki_.server();
  tls_->use_certificate_chain(boost::asio::buffer(server.certificate_pem), ec);
  if (!ec) {
    tls_->use_private_key(boost::asio::buffer(server.private_key_pem), ssl::context::pem, ec);
  }
  std::string bundle = pki_.clientCaBundle();
  if (!ec) {
    tls_->add_certificate_authority(boost::asio::buffer(bundle), ec);
  }
  if (ec) {
    return Status(Code::InvalidArgument, "TLS set-up failed: " + ec.message());
  }
  // Ask for (but do not require) a client certificate, naming our CA so clients pick theirs.
  tls_->set_verify_mode(ssl::verify_peer);
  SSL_CTX* ctx = tls_->native_handle();
  BIO* bio = BIO_new_mem_buf(bundle.data(), static_cast<int>(bundle.size()));
  while (X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    SSL_CTX_add_client_CA(ctx, ca);
    X509_free(ca);
  }
  BIO_free(bio);
  static const unsigned char kSessionContext[] = "kubesim";
  SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof(kSessionContext) - 1);
  SSL_CTX_set_alpn_select_cb(ctx, &selectAlpn, nullptr);
  return okStatus();
}

Status KubesimServer::start() {
  if (options_.cert_dir.empty()) {
    std::string tmpl =
        (std::getenv("TMPDIR") ? std::string(std::getenv("TMPDIR")) : "/tmp") + "/kubesim-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      return Status(Code::Unavailable, "cannot create a temporary certificate directory");
    }
    options_.cert_dir = tmpl;
  }
  ClusterPki::Options pki_opts{options_.cert_dir, options_.tls_cert_file, options_.tls_key_file,
                               options_.client_ca_file};
  CCM_RETURN_IF_ERROR(pki_.load(pki_opts));
  ccm::log::registerSecret(pki_.adminToken());

  tokens_ = std::make_unique<ServiceAccountTokens>(pki_.serviceAccountSecret(),
                                                   options_.token_expiry_leeway);
  store_ = std::make_unique<ObjectStore>(
      ResourceRegistry::builtin(),
      ObjectStore::Options{options_.watch_history, options_.watch_cache_lag});
  auto service_ranges = ServiceAllocator::parseServiceRanges(options_.service_cluster_ip_range);
  if (!service_ranges.ok()) {
    return Status(Code::InvalidArgument, service_ranges.error().message());
  }
  const std::vector<IpCidr>& ranges = service_ranges.value();
  allocator_ = std::make_unique<ServiceAllocator>(
      *store_, ranges.front(),
      ranges.size() > 1 ? std::optional<IpCidr>(ranges[1]) : std::nullopt);
  writer_ = std::make_unique<ObjectWriter>(*store_, *allocator_);
  authn_ = std::make_unique<Authenticator>(
      *tokens_, [this](std::string_view ns, std::string_view name) -> std::optional<std::string> {
        ObjectPtr sa = store_->get(T("", "serviceaccounts"), ns, name);
        if (!sa) {
          return std::nullopt;
        }
        return sa->uid;
      });
  UserInfo admin;
  admin.name = ClusterPki::kAdminUser;
  admin.groups = {"system:masters"};
  authn_->addToken(pki_.adminToken(), admin);
  if (!options_.token_auth_file.empty()) {
    CCM_RETURN_IF_ERROR(authn_->loadTokenFile(options_.token_auth_file));
  }
  authz_ = std::make_unique<RbacAuthorizer>(*store_);
  if (options_.record_authz) {
    authz_recorder_ = std::make_unique<AuthzRecorder>();
    authz_->setRecorder(authz_recorder_.get());
  }
  store_->addObserver([this](const WatchEvent& ev) {
    if (ResourceRegistry::builtin().at(ev.type_id).group == "rbac.authorization.k8s.io") {
      authz_->invalidate();
    }
  });
  Discovery::VersionInfo version;
  version.git_version = options_.server_version;
  {
    std::string v = options_.server_version.substr(options_.server_version[0] == 'v' ? 1 : 0);
    size_t dot = v.find('.');
    version.major = v.substr(0, dot);
    std::string minor = dot == std::string::npos ? "0" : v.substr(dot + 1);
    version.minor = minor.substr(0, minor.find('.'));
  }
  auto surface = ServedSurface::forVersion(options_.server_version);
  if (!surface.ok()) {
    return surface.status();
  }
  discovery_ = std::make_unique<Discovery>(ResourceRegistry::builtin(), version, *surface);
  ResourceHandler::Options ropts;
  ropts.bookmark_interval = options_.bookmark_interval;
  ropts.min_request_timeout = options_.min_request_timeout;
  ropts.watch_list = options_.watch_list;
  ropts.surface = *surface;
  resources_ = std::make_unique<ResourceHandler>(*store_, *writer_, ropts);
  reviews_ = std::make_unique<ReviewHandler>(*store_, *authn_, *authz_, *tokens_);
  admin_ = std::make_unique<AdminApi>(*this);
  for (const auto& f : options_.faults) {
    faults_.add(f);
  }
  faults_.setLatency(options_.latency, options_.latency_jitter);

  KubeletSimulator::Options kopts;
  kopts.node_prefix = options_.node_prefix;
  kopts.heartbeat_period = options_.heartbeat_period;
  kopts.status_period = options_.node_status_period;
  kopts.node.kubelet_version = options_.kubelet_version;
  kopts.node.provided_node_ip = options_.provided_node_ip;
  kubelets_ = std::make_unique<KubeletSimulator>(*writer_, kopts);
  BuiltinControllers::Options copts;
  copts.event_ttl = options_.event_ttl;
  copts.root_ca_pem = pki_.ca().certificate_pem;
  controllers_ = std::make_unique<BuiltinControllers>(*writer_, copts);

  CCM_RETURN_IF_ERROR(setUpTls());
  api_ = std::make_unique<ApiServer>(ApiServer::Parts{
      io_, *store_, *authn_, *authz_, *discovery_, *resources_, *reviews_, faults_, *admin_,
      [this] { return "127.0.0.1:" + std::to_string(port()); }, *surface});
  work_.emplace(io_.get_executor());
  for (int i = 0; i < std::max(1, options_.threads); ++i) {
    io_threads_.emplace_back([this, i] {
      std::string name = "kubesim-io-" + std::to_string(i);
      pthread_setname_np(pthread_self(), name.c_str());
      io_.run();
    });
  }
  http_ = std::make_unique<HttpServer>(io_, *tls_, *api_);
  api_->setTransportStats(&http_->stats());

  if (!options_.state_file.empty() && std::filesystem::exists(options_.state_file)) {
    auto snap = StateFile::load(options_.state_file);
    if (!snap.ok()) {
      return snap.status();
    }
    store_->load(snap.value());
    ccm::log::info("loaded state", {{"file", options_.state_file},
                                    {"objects", snap.value().objects.size()},
                                    {"resourceVersion", snap.value().rv}});
  }
  controllers_->start();
  CCM_RETURN_IF_ERROR(http_->listen(options_.bind_address, options_.port));
  CCM_RETURN_IF_ERROR(seedCluster());

  kubelets_->start();
  if (options_.nodes > 0) {
    std::vector<std::string> ready;
    std::vector<std::string> not_ready;
    for (int i = 1; i <= options_.nodes; ++i) {
      std::string name = NodeFactory::nodeName(options_.node_prefix, i);
      bool nr = std::find(options_.not_ready.begin(), options_.not_ready.end(), name) !=
                options_.not_ready.end();
      (nr ? not_ready : ready).push_back(name);
    }
    CCM_RETURN_IF_ERROR(kubelets_->addNamedNodes(ready, "True"));
    CCM_RETURN_IF_ERROR(kubelets_->addNamedNodes(not_ready, "False"));
  }
  for (const auto& [sa, file] : options_.sa_tokens) {
    size_t slash = sa.find('/');
    if (slash == std::string::npos) {
      return Status(Code::InvalidArgument, "--sa-token wants namespace/name=file, got " + sa);
    }
    auto creds = serviceAccountCredentials(sa.substr(0, slash), sa.substr(slash + 1),
                                           options_.sa_token_ttl, true, "");
    if (!creds.ok()) {
      return creds.status();
    }
    CCM_RETURN_IF_ERROR(writeFileAtomically(file, creds.value().token));
  }
  controllers_->drain();
  // The watch cache starts from a list at the current state: nothing older can be watched
  // (a watch from "1" gets 410, as on any real server with history).
  store_->compact();
  compactor_ = std::make_unique<Compactor>(io_, *store_, options_.compaction_interval);
  compactor_->start();
  CCM_RETURN_IF_ERROR(writeOutputs());
  return okStatus();
}

Status KubesimServer::seedCluster() {
  CCM_RETURN_IF_ERROR(ClusterBootstrap::seed(*writer_, pki_.ca().certificate_pem));
  if (!options_.manifests.empty()) {
    auto loaded = ClusterBootstrap::loadManifests(*writer_, options_.manifests);
    if (!loaded.ok()) {
      return loaded.status();
    }
    ccm::log::info("loaded manifests",
                   {{"applied", loaded.value().applied}, {"ignored", loaded.value().ignored}});
  }
  CCM_RETURN_IF_ERROR(ClusterBootstrap::publishEndpoint(*writer_, port()));
  authz_->invalidate();
  return okStatus();
}

Status KubesimServer::writeOutputs() {
  std::string url = serverUrl();
  if (!options_.kubeconfig_out.empty()) {
    ClusterPki::Credentials c;
    c.user_name = ClusterPki::kAdminUser;
    c.token = pki_.adminToken();
    CCM_RETURN_IF_ERROR(pki_.writeKubeconfig(options_.kubeconfig_out, url, c));
  }
  if (!options_.cert_kubeconfig_out.empty()) {
    ClusterPki::Credentials c;
    c.user_name = std::string(ClusterPki::kAdminUser) + "-cert";
    c.client = pki_.admin();
    CCM_RETURN_IF_ERROR(pki_.writeKubeconfig(options_.cert_kubeconfig_out, url, c));
  }
  std::string ready = R"({"port":)" + std::to_string(port()) + R"(,"url":)" + jsonString(url) +
                      R"(,"kubeconfig":)" + jsonString(options_.kubeconfig_out) +
                      R"(,"certKubeconfig":)" + jsonString(options_.cert_kubeconfig_out) +
                      R"(,"certDir":)" + jsonString(options_.cert_dir) + R"(,"pid":)" +
                      std::to_string(::getpid()) + "}";
  if (!options_.ready_file.empty()) {
    CCM_RETURN_IF_ERROR(writeFileAtomically(options_.ready_file, ready + "\n"));
  }
  std::cout << "kubesim ready: url=" << url << " port=" << port()
            << " kubeconfig=" << options_.kubeconfig_out << " cert-dir=" << options_.cert_dir
            << std::endl;
  return okStatus();
}

void KubesimServer::stop() {
  if (stopped_ || !store_) {
    return;
  }
  stopped_ = true;
  { std::lock_guard lock(restart_mu_); }
  if (restart_thread_.joinable()) {
    restart_thread_.join();
  }
  if (compactor_) {
    compactor_->stop();
  }
  if (kubelets_) {
    kubelets_->stop();
  }
  if (controllers_) {
    controllers_->stop();
  }
  if (http_) {
    http_->stop();
  }
  if (store_) {
    store_->closeAllWatchers();
  }
  work_.reset();
  io_.stop();
  for (auto& t : io_threads_) {
    t.join();
  }
  io_threads_.clear();
  if (!options_.state_file.empty()) {
    auto s = saveState(options_.state_file);
    if (!s.ok()) {
      ccm::log::error("saving state failed", {{"error", s.toString()}});
    }
  }
}

Status KubesimServer::saveState(const std::string& path) {
  return StateFile::save(store_->snapshot(), path);
}

void KubesimServer::restartAsync(bool keep_state, std::chrono::milliseconds down) {
  std::lock_guard lock(restart_mu_);
  if (restart_thread_.joinable()) {
    restart_thread_.join();
  }
  restart_thread_ = std::thread([this, keep_state, down] {
    pthread_setname_np(pthread_self(), "restart");
    std::lock_guard lock(restart_mu_);
    doRestart(keep_state, down);
  });
}

void KubesimServer::doRestart(bool keep_state, std::chrono::milliseconds down) {
  // Let the admin answer leave before every connection is dropped.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ccm::log::info("restarting", {{"keepState", keep_state}});
  http_->pause();
  // A restarting API server says GOAWAY on its HTTP/2 connections before it goes.
  if (http_->goAwayAll(true) > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  http_->closeAll();
  store_->closeAllWatchers();
  kubelets_->stop();
  controllers_->drain();
  if (keep_state) {
    ObjectStore::Snapshot snap = store_->snapshot();
    if (!options_.state_file.empty()) {
      // Go through the file, as a process restart would.
      auto saved = StateFile::save(snap, options_.state_file);
      auto loaded = saved.ok() ? StateFile::load(options_.state_file)
                               : StatusOr<ObjectStore::Snapshot>(saved);
      if (loaded.ok()) {
        snap = std::move(loaded.value());
      } else {
        ccm::log::error("state file round trip failed", {{"error", loaded.status().toString()}});
      }
    }
    store_->load(snap);
  } else {
    store_->clear();
    auto s = seedCluster();
    if (!s.ok()) {
      ccm::log::error("re-seeding after restart failed", {{"error", s.toString()}});
    }
    kubelets_->reregisterMissing();
  }
  authz_->invalidate();
  std::this_thread::sleep_for(down);
  auto s = http_->resume();
  if (!s.ok()) {
    ccm::log::error("cannot listen again after restart", {{"error", s.toString()}});
  }
  kubelets_->start();
  ++restarts_;
  ccm::log::info("restarted", {{"resourceVersion", store_->currentRv()}});
}

StatusOr<KubesimServer::IssuedCredentials> KubesimServer::serviceAccountCredentials(
    const std::string& ns, const std::string& name, std::chrono::seconds ttl, bool create,
    const std::string& kubeconfig_path) {
  if (create) {
    CCM_RETURN_IF_ERROR(ensureObject(*writer_, T("", "namespaces"),
                                     R"({"metadata":{"name":)" + jsonString(ns) + "}}"));
    CCM_RETURN_IF_ERROR(ensureObject(
        *writer_, T("", "serviceaccounts"),
        R"({"metadata":{"name":)" + jsonString(name) + R"(,"namespace":)" + jsonString(ns) + "}}"));
  }
  auto issued = reviews_->issueToken(ns, name, ttl);
  if (!issued.ok()) {
    return Status(Code::NotFound, issued.error().message());
  }
  IssuedCredentials out;
  out.user = "system:serviceaccount:" + ns + ":" + name;
  out.token = issued.value().token;
  if (!kubeconfig_path.empty()) {
    ClusterPki::Credentials c;
    c.user_name = out.user;
    c.token = out.token;
    CCM_RETURN_IF_ERROR(pki_.writeKubeconfig(kubeconfig_path, serverUrl(), c, ns));
    out.kubeconfig = kubeconfig_path;
  }
  return out;
}

StatusOr<KubesimServer::IssuedCredentials> KubesimServer::userCredentials(
    const std::string& user, const std::vector<std::string>& groups, bool certificate,
    const std::string& kubeconfig_path) {
  IssuedCredentials out;
  out.user = user;
  ClusterPki::Credentials c;
  c.user_name = user;
  if (certificate) {
    auto pair = pki_.issueClientCertificate(user, groups);
    if (!pair.ok()) {
      return pair.status();
    }
    c.client = pair.value();
  } else {
    out.token = randomToken();
    UserInfo info;
    info.name = user;
    info.groups = groups;
    authn_->addToken(out.token, info);
    c.token = out.token;
  }
  if (!kubeconfig_path.empty()) {
    CCM_RETURN_IF_ERROR(pki_.writeKubeconfig(kubeconfig_path, serverUrl(), c));
    out.kubeconfig = kubeconfig_path;
  }
  return out;
}

}  // namespace ccm::kubesim
