// SecureServer: the HTTPS endpoint of cloud-controller-manager (--secure-port, 10258):
//
//   /healthz, /livez, /readyz    aggregated health checks (health_checks.hpp);
//   /healthz/<check> ...         one check
//   /metrics                     the host's metrics registry, Prometheus text format 0.0.4,
//                                with process_* metrics read at scrape time and
//                                ccm_build_info
//   /metrics/slis                component-base's SLI metrics: kubernetes_healthcheck and
//                                kubernetes_healthchecks_total, from every health check run
//   /configz                     the component configuration (configz.hpp)
//
// Requests go through delegated authentication and authorization (auth_filter.hpp): paths
// in --authorization-always-allow-paths are open, everything else needs a bearer token the
// API server accepts (TokenReview) for a user it authorizes (SubjectAccessReview). Only GET
// and HEAD are served (405 otherwise, after authorization).
//
// TLS 1.2 or later with the certificate from serving_certificate.hpp; HTTP/1.1 with
// keep-alive. Threads: `io_threads` (default 1) for TLS and HTTP, `worker_threads` (default
// 2) for requests that need the API server; all of them sleep while no request arrives. The
// always-allowed paths are answered on the io thread, so probes never wait behind a slow API
// server.
//
// Usage:
//   server::HealthChecks health;   // outlives the server; controllers add checks any time
//   server::SecureServer srv(server::serverOptionsFrom(opts),
//                            {.health = &health, .metrics = &registry,
//                             .authentication_api = client.get(),
//                             .authorization_api = client.get()});
//   if (Status st = srv.start(); !st.ok()) { /* start-up error: print, exit 1 */ }
//   ...
//   srv.stop();   // or let the destructor do it
//
// THREAD: construct, start() and stop() from one owning thread (not a server thread);
// port(), serving() and caPem() from any thread after start().
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "host/kube/api/kube_api.hpp"
#include "host/runtime/clock.hpp"
#include "host/runtime/metrics.hpp"
#include "host/runtime/status.hpp"
#include "host/server/auth_filter.hpp"
#include "host/server/health_checks.hpp"
#include "host/server/https_connection.hpp"
#include "host/server/process_metrics.hpp"
#include "host/server/server_options.hpp"

namespace ccm::server {

// What the server serves and whom it asks. Everything is borrowed and must outlive the
// server.
struct ServerDependencies {
  HealthChecks* health = nullptr;               // nullptr: a private set with just "ping"
  metrics::Registry* metrics = nullptr;         // nullptr: /metrics answers 404
  kube::KubeApi* authentication_api = nullptr;  // posts TokenReviews
  kube::KubeApi* authorization_api = nullptr;   // posts SubjectAccessReviews
  // Without both APIs every path but the always-allowed ones is forbidden.
  Clock* clock = nullptr;  // cache expiry; nullptr: Clock::real()
};

class SecureServer final : private RequestSink {
 public:
  // Registers the process metrics and ccm_build_info in deps.metrics (when given).
  SecureServer(ServerOptions options, ServerDependencies deps);
  ~SecureServer() override;
  SecureServer(const SecureServer&) = delete;
  SecureServer& operator=(const SecureServer&) = delete;

  // Loads or generates the certificate, binds, and starts serving. With secure_port 0 (and
  // not pick_free_port) it does nothing and returns OK. Errors (bad certificate files — the
  // message names the file —, an address that cannot be bound) are start-up errors. Call
  // at most once.
  Status start();
  // Stops accepting, drops every connection, cancels review calls in flight and joins the
  // threads. Idempotent.
  void stop();

  bool serving() const { return serving_.load(); }
  // The bound port (the kernel's choice with pick_free_port); 0 when not serving.
  uint16_t port() const { return port_.load(); }
  // The CA of a self-signed serving certificate (in memory or in --cert-dir), for clients
  // that verify it; "" when the certificate came from --tls-cert-file.
  std::string caPem() const;

 private:
  struct Runtime;  // Asio objects and threads, alive between start() and stop()

  void onRequest(const std::shared_ptr<HttpsConnection>& connection, HttpRequest request) override;
  HttpResponse handle(const HttpRequest& request, const PeerCertificates* peer,
                      std::stop_token stop);
  HttpResponse route(const std::string& path, const std::string& query);
  void accept();

  const ServerOptions options_;
  std::unique_ptr<HealthChecks> own_health_;
  HealthChecks* health_;
  metrics::Registry* metrics_;
  std::unique_ptr<ProcessMetrics> process_metrics_;
  metrics::Registry sli_registry_;  // /metrics/slis
  metrics::Family<metrics::Gauge>* healthcheck_ = nullptr;
  metrics::Family<metrics::Counter>* healthchecks_total_ = nullptr;
  std::unique_ptr<DelegatingAuthenticator> authn_;
  std::unique_ptr<DelegatingAuthorizer> authz_;
  std::unique_ptr<CertificateAuthenticator> certs_;  // set by start(); null: no CA configured
  AuthFilter auth_;

  std::unique_ptr<Runtime> runtime_;  // owned by the owning thread
  std::atomic<bool> serving_{false};
  std::atomic<uint16_t> port_{0};
  std::atomic<size_t> open_connections_{0};
  std::atomic<size_t> pending_requests_{0};
  std::stop_source stop_source_;
  mutable std::mutex mu_;
  std::string ca_pem_;  // guarded by mu_
};

// Splits a request target into its percent-decoded path and its raw query. False when the
// target is not an origin-form path ("/...") or has a bad escape or a NUL.
bool splitTarget(std::string_view target, std::string* path, std::string* query);

// The values of a query parameter (percent-decoded, '+' as space); `present` tells whether
// the key appears at all (also bare, as in "?verbose").
std::vector<std::string> queryValues(std::string_view query, std::string_view key,
                                     bool* present = nullptr);

}  // namespace ccm::server
