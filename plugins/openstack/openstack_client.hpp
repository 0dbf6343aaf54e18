// OpenStackClient: authenticated requests to Nova, Neutron and Octavia. It resolves each
// service's endpoint from the Keystone catalog once, sends the token, re-authenticates and
// retries once on 401, bounds every request by the call's deadline, maps error responses to
// sdk::Status (logging the request ID), follows "<collection>_links" pages and records metrics.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "plugins/openstack/config.hpp"
#include "ccm/provider.hpp"
#include "plugins/openstack/http_client.hpp"
#include "plugins/openstack/json.hpp"
#include "plugins/openstack/keystone.hpp"

namespace ccm::openstack {

// KeyManager (Barbican) is optional: its base URL is empty when the catalog has none.
enum class Service { Compute, Network, LoadBalancer, KeyManager };

// The Nova microversion asked for: 2.47 embeds the flavor (with its name) in servers.
inline constexpr const char* kNovaMicroversion = "2.47";

// THREAD: every method may be called from any thread after start().
class OpenStackClient {
 public:
  OpenStackClient(const Config& config, const sdk::Host& env);

  // Authenticates and resolves the compute, network and (when load balancers are enabled)
  // load-balancer endpoints. Lifecycle only.
  sdk::Status start(const sdk::Call& call, bool need_load_balancer);

  // Sends a request. path is relative to the service's base URL ("servers/ID",
  // "lbaas/loadbalancers?name=x") or an absolute URL (a "next" link). A non-2xx answer is an
  // error sdk::Status (404 -> NOT_FOUND, ...). op names the request in metrics and logs.
  sdk::Result<HttpResponse> request(const sdk::Call& call, Service service,
                                 const std::string& method, const std::string& path,
                                 const Json* body, const std::string& op);

  // GET and parse the JSON answer.
  sdk::Result<rapidjson::Document> getJson(const sdk::Call& call, Service service,
                                        const std::string& path, const std::string& op);

  // Sends a JSON body and parses the JSON answer (an empty body parses as null).
  sdk::Result<rapidjson::Document> sendJson(const sdk::Call& call, Service service,
                                         const std::string& method, const std::string& path,
                                         const Json& body, const std::string& op);

  // GETs path and every "next" page (<links_key>: [{"rel":"next","href":...}]), calling
  // on_page with each parsed page; stops early when on_page returns false.
  sdk::Status forEachPage(const sdk::Call& call, Service service, const std::string& path,
                     const std::string& links_key, const std::string& op,
                     const std::function<bool(const JsonValue& page)>& on_page);

  const std::string& baseUrl(Service service) const;
  // Octavia's unversioned root (for the version list).
  const std::string& octaviaRoot() const { return octavia_root_; }
  // Whether Nova accepted the 2.47 microversion so far (false after a 406).
  bool novaMicroversion() const { return nova_microversion_.load(); }
  KeystoneAuth& keystone() { return *keystone_; }
  const sdk::Host& env() { return env_; }

 private:
  sdk::Result<HttpResponse> sendOnce(const sdk::Call& call, Service service,
                                  const std::string& method, const std::string& url,
                                  const std::string& body, const std::string& token);

  const Config& config_;
  const sdk::Host& env_;
  std::unique_ptr<HttpClient> http_;
  std::unique_ptr<KeystoneAuth> keystone_;
  std::string compute_url_;  // written by start() only
  std::string network_url_;
  std::string lb_url_;
  std::string octavia_root_;
  std::string key_manager_url_;  // empty: no key-manager in the catalog
  std::atomic<bool> nova_microversion_{true};
};

}  // namespace ccm::openstack
