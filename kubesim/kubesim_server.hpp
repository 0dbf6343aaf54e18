// KubesimServer: one running kubesim — owns and wires the credentials, object store, writers,
// authn/authz, handlers, HTTPS server and its io threads, simulated kubelets, built-in
// controllers, fault injector and admin API; performs start-up (bootstrap or state file,
// manifests, nodes, kubeconfigs, ready file), in-process restarts and shutdown.
//
// THREAD: start/stop from the owning thread; the admin operations may be called from any
// thread (restart runs on its own short-lived thread).
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "host/runtime/status.hpp"
#include "kubesim/admin_api.hpp"
#include "kubesim/api_server.hpp"
#include "kubesim/authenticator.hpp"
#include "kubesim/authz_recorder.hpp"
#include "kubesim/builtin_controllers.hpp"
#include "kubesim/cluster_pki.hpp"
#include "kubesim/compactor.hpp"
#include "kubesim/discovery.hpp"
#include "kubesim/fault_injector.hpp"
#include "kubesim/http_server.hpp"
#include "kubesim/kubelet_simulator.hpp"
#include "kubesim/object_store.hpp"
#include "kubesim/object_writer.hpp"
#include "kubesim/rbac_authorizer.hpp"
#include "kubesim/resource_handler.hpp"
#include "kubesim/review_handler.hpp"
#include "kubesim/service_account_tokens.hpp"
#include "kubesim/service_allocator.hpp"

namespace ccm::kubesim {

struct KubesimOptions {
  std::string bind_address = "127.0.0.1";
  uint16_t port = 0;
  int threads = 2;
  std::string cert_dir;  // empty: a fresh temporary directory
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string client_ca_file;
  std::string token_auth_file;
  std::string kubeconfig_out;       // admin, bearer token
  std::string cert_kubeconfig_out;  // admin, client certificate
  std::string ready_file;
  std::vector<std::string> manifests;
  int nodes = 0;
  std::string node_prefix = "node-";
  std::vector<std::string> not_ready;
  std::chrono::milliseconds heartbeat_period{10000};
  std::chrono::milliseconds node_status_period{60000};
  bool provided_node_ip = false;
  std::string kubelet_version = "v1.32.0";
  std::string service_cluster_ip_range = "10.96.0.0/12";
  size_t watch_history = 5000;
  std::chrono::milliseconds compaction_interval{300000};  // 0: never compact on a timer
  std::chrono::milliseconds watch_cache_lag{10};          // rv=0 reads trail writes this much
  std::chrono::milliseconds bookmark_interval{60000};
  std::chrono::seconds min_request_timeout{1800};
  bool watch_list = true;
  std::chrono::seconds event_ttl{3600};
  std::string state_file;
  std::vector<std::pair<std::string, std::string>> sa_tokens;  // "ns/name" -> file
  std::chrono::seconds sa_token_ttl{86400};
  std::chrono::seconds token_expiry_leeway = ServiceAccountTokens::kLeeway;
  std::vector<FaultRule> faults;
  std::chrono::milliseconds latency{0};
  std::chrono::milliseconds latency_jitter{0};
  std::string server_version = "v1.32.0";
  bool record_authz = false;  // keep authorization decisions for GET /admin/authz
};

class KubesimServer {
 public:
  explicit KubesimServer(KubesimOptions options);
  ~KubesimServer();

  Status start();
  // Stops serving; saves the state file when one is configured.
  void stop();

  uint16_t port() const { return http_ ? http_->port() : 0; }
  std::string serverUrl() const;
  const KubesimOptions& options() const { return options_; }

  // --- admin operations ---
  // Asynchronous: drops every connection and watch, keeps or loses the objects, loses the
  // watch history, refuses connections for `down`, then serves again. restarts() counts
  // completed restarts.
  void restartAsync(bool keep_state, std::chrono::milliseconds down);
  uint64_t restarts() const { return restarts_.load(); }
  size_t closeWatches() { return store_->closeAllWatchers(); }
  // Drops every connection but the caller's (`keep_peer`), which the caller closes after
  // its answer: nothing opened after that answer is touched.
  size_t closeConnections(std::string_view keep_peer = {}) { return http_->closeAll(keep_peer); }
  size_t connectionCount() const { return http_->connectionCount(); }
  HttpServer& http() { return *http_; }
  const ApiServer& api() const { return *api_; }
  void compact() { store_->compact(); }
  Status saveState(const std::string& path);

  // Mints credentials; writes a kubeconfig when kubeconfig_path is set.
  struct IssuedCredentials {
    std::string user;
    std::string token;
    std::string kubeconfig;
  };
  StatusOr<IssuedCredentials> serviceAccountCredentials(const std::string& ns,
                                                        const std::string& name,
                                                        std::chrono::seconds ttl, bool create,
                                                        const std::string& kubeconfig_path);
  StatusOr<IssuedCredentials> userCredentials(const std::string& user,
                                              const std::vector<std::string>& groups,
                                              bool certificate, const std::string& kubeconfig_path);

  ObjectStore& store() { return *store_; }
  ObjectWriter& writer() { return *writer_; }
  KubeletSimulator& kubelets() { return *kubelets_; }
  FaultInjector& faults() { return faults_; }
  ClusterPki& pki() { return pki_; }
  // The recorded authorization decisions; nullptr without --record-authz.
  AuthzRecorder* authzRecorder() { return authz_recorder_.get(); }

 private:
  Status setUpTls();
  Status seedCluster();
  void doRestart(bool keep_state, std::chrono::milliseconds down);
  Status writeOutputs();

  KubesimOptions options_;
  ClusterPki pki_;
  std::unique_ptr<ServiceAccountTokens> tokens_;
  std::unique_ptr<ObjectStore> store_;
  std::unique_ptr<ServiceAllocator> allocator_;
  std::unique_ptr<ObjectWriter> writer_;
  std::unique_ptr<Authenticator> authn_;
  std::unique_ptr<RbacAuthorizer> authz_;
  std::unique_ptr<AuthzRecorder> authz_recorder_;
  std::unique_ptr<Discovery> discovery_;
  std::unique_ptr<ResourceHandler> resources_;
  std::unique_ptr<ReviewHandler> reviews_;
  FaultInjector faults_;
  std::unique_ptr<AdminApi> admin_;
  std::unique_ptr<KubeletSimulator> kubelets_;
  std::unique_ptr<BuiltinControllers> controllers_;

  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::unique_ptr<boost::asio::ssl::context> tls_;
  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<Compactor> compactor_;  // after io_: its timer must go first
  std::vector<std::thread> io_threads_;

  std::mutex restart_mu_;  // one restart at a time
  std::thread restart_thread_;
  std::atomic<uint64_t> restarts_{0};
  bool stopped_ = false;
};

}  // namespace ccm::kubesim
