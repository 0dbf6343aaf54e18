// Authenticated OpenStack API requests.
#include "plugins/openstack/request_timeout.hpp"
#include "plugins/openstack/openstack_client.hpp"

#include <chrono>
#include <regex>

#include "plugins/openstack/http_error.hpp"
#include "plugins/openstack/text.hpp"

namespace ccm::openstack {
namespace {

constexpr const char* kUserAgent = "ccm-openstack/0.1.0";

std::string withSlash(std::string url) {
  if (!endsWith(url, "/")) {
    url += "/";
  }
  return url;
}

// Neutron's resource base: <url>/v2.0/ unless the catalog URL already carries the version.
std::string neutronBase(const std::string& url) {
  std::string u = withSlash(url);
  if (endsWith(u, "/v2.0/")) {
    return u;
  }
  return u + "v2.0/";
}

// Octavia's root: the catalog URL without any version segment.
std::string octaviaRootOf(const std::string& url) {
  static const std::regex kVersion(R"(/v2(\.0)?/?$)");
  return withSlash(std::regex_replace(url, kVersion, ""));
}

// The path of a URL, without scheme, host or query ("/v2.0/routers/x").
// Barbican's versioned base: the catalog may list it with or without "/v1".
std::string barbicanBase(const std::string& url) {
  std::string u = withSlash(url);
  if (endsWith(u, "/v1/")) {
    u.resize(u.size() - 3);
  }
  return u + "v1/";
}

std::string urlPath(const std::string& url) {
  auto scheme = url.find("://");
  size_t start = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  if (start == std::string::npos) {
    return "/";
  }
  return url.substr(start, url.find('?', start) - start);
}

const char* serviceName(Service s) {
  switch (s) {
    case Service::Compute:
      return "compute";
    case Service::Network:
      return "network";
    case Service::LoadBalancer:
      return "load-balancer";
    case Service::KeyManager:
      return "key-manager";
  }
  return "?";
}

}  // namespace

OpenStackClient::OpenStackClient(const Config& config, const sdk::Host& env) : config_(config), env_(env) {
  TlsOptions tls{config.global.ca_file, config.global.cert_file, config.global.key_file,
                 config.global.tls_insecure};
  http_ = std::make_unique<HttpClient>(tls, kUserAgent);
  keystone_ =
      std::make_unique<KeystoneAuth>(config.global, *http_, env, config.metadata.request_timeout);
}

sdk::Status OpenStackClient::start(const sdk::Call& call, bool need_load_balancer) {
  CCM_SDK_RETURN_IF_ERROR(keystone_->start(call));
  const Catalog& catalog = keystone_->catalog();
  const std::string& iface = config_.global.endpoint_type;
  const std::string& region = config_.global.region;
  CCM_SDK_ASSIGN_OR_RETURN(std::string compute, catalog.endpointFor("compute", iface, region));
  CCM_SDK_ASSIGN_OR_RETURN(std::string network, catalog.endpointFor("network", iface, region));
  compute_url_ = withSlash(compute);
  network_url_ = neutronBase(network);
  if (need_load_balancer) {
    CCM_SDK_ASSIGN_OR_RETURN(std::string lb, catalog.endpointFor("load-balancer", iface, region));
    octavia_root_ = octaviaRootOf(lb);
    lb_url_ = octavia_root_ + "v2.0/";
    // Barbican holds the certificates of TLS listeners; a cloud without it serves load
    // balancers all the same, so a missing entry is no error here.
    if (auto km = catalog.endpointFor("key-manager", iface, region); km.ok()) {
      key_manager_url_ = barbicanBase(*km);
    }
  }
  call.info("Resolved OpenStack endpoints",
            {{"compute", compute_url_},
             {"network", network_url_},
             {"load-balancer", lb_url_},
             {"key-manager", key_manager_url_}});
  return {};
}

const std::string& OpenStackClient::baseUrl(Service service) const {
  switch (service) {
    case Service::Compute:
      return compute_url_;
    case Service::Network:
      return network_url_;
    case Service::LoadBalancer:
      return lb_url_;
    case Service::KeyManager:
      return key_manager_url_;
  }
  return compute_url_;
}

sdk::Result<HttpResponse> OpenStackClient::sendOnce(const sdk::Call& call, Service service,
                                                 const std::string& method, const std::string& url,
                                                 const std::string& body,
                                                 const std::string& token) {
  CCM_SDK_ASSIGN_OR_RETURN(auto timeout, requestTimeout(call, config_.metadata.request_timeout));
  HttpRequest req;
  req.method = method;
  req.url = url;
  req.timeout = timeout;
  req.body = body;
  req.headers = {{"Accept", "application/json"}, {"X-Auth-Token", token}};
  if (!body.empty()) {
    req.headers.emplace_back("Content-Type", "application/json");
  }
  bool microversion = service == Service::Compute && nova_microversion_.load();
  if (microversion) {
    req.headers.emplace_back("X-OpenStack-Nova-API-Version", kNovaMicroversion);
    req.headers.emplace_back("OpenStack-API-Version", std::string("compute ") + kNovaMicroversion);
  }
  req.cancelled = [&call] { return !call.checkAlive().ok(); };
  auto resp = http_->send(req);
  if (resp.ok() && microversion && resp->status == 406) {
    // A Nova older than 2.47: fall back to 2.1 (flavor names then cost a GET per flavor).
    call.warning("Nova does not support microversion 2.47; falling back to 2.1",
                 {{"request_id", requestIdOf(*resp)}});
    nova_microversion_.store(false);
    return sendOnce(call, service, method, url, body, token);
  }
  return resp;
}

sdk::Result<HttpResponse> OpenStackClient::request(const sdk::Call& call, Service service,
                                                const std::string& method, const std::string& path,
                                                const Json* body, const std::string& op) {
  std::string url =
      startsWith(path, "http://") || startsWith(path, "https://") ? path : baseUrl(service) + path;
  std::string payload = body != nullptr ? body->dump() : std::string();
  auto started = std::chrono::steady_clock::now();
  CCM_SDK_ASSIGN_OR_RETURN(std::string token, keystone_->token(call));
  auto resp = sendOnce(call, service, method, url, payload, token);
  if (resp.ok() && resp->status == 401) {
    auto fresh = keystone_->renewAfterRejection(call, token);
    if (!fresh.ok()) {
      return fresh.status().withPrefix("re-authenticating after a 401");
    }
    resp = sendOnce(call, service, method, url, payload, *fresh);
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  sdk::Labels labels = {{"request", op}};
  env_.observeSeconds( "openstack_api_request_duration_seconds",
              "Latency of OpenStack API requests", labels, seconds);
  env_.counterAdd( "openstack_api_requests_total", "OpenStack API requests", labels,
              1);
  if (!resp.ok()) {
    env_.counterAdd( "openstack_api_request_errors_total",
                "Failed OpenStack API requests", labels, 1);
    return resp.status();
  }
  if (resp->status < 200 || resp->status > 299) {
    env_.counterAdd( "openstack_api_request_errors_total",
                "Failed OpenStack API requests", labels, 1);
    std::string what = std::string(serviceName(service)) + " " + method + " " + url;
    if (resp->status == 401) {
      what += " (after re-authentication)";
    }
    sdk::Status st = httpError(what, *resp);
    // 404s are routine answers (lookups): a debug line (-v=4); everything else is worth a
    // warning.
    if (resp->status == 404) {
      call.debug("OpenStack API answered 404", {{"op", op},
                                                {"method", method},
                                                {"path", urlPath(url)},
                                                {"status", "404"},
                                                {"request_id", requestIdOf(*resp)}});
    } else {
      call.warning("OpenStack API request failed", {{"op", op},
                                                    {"method", method},
                                                    {"url", url},
                                                    {"status", std::to_string(resp->status)},
                                                    {"request_id", requestIdOf(*resp)}});
    }
    return st;
  }
  call.debug(
      "OpenStack API request",
      {{"op", op}, {"method", method}, {"url", url}, {"status", std::to_string(resp->status)}});
  return resp;
}

sdk::Result<rapidjson::Document> OpenStackClient::getJson(const sdk::Call& call, Service service,
                                                       const std::string& path,
                                                       const std::string& op) {
  CCM_SDK_ASSIGN_OR_RETURN(HttpResponse resp, request(call, service, "GET", path, nullptr, op));
  return parseJson(resp.body);
}

sdk::Result<rapidjson::Document> OpenStackClient::sendJson(const sdk::Call& call, Service service,
                                                        const std::string& method,
                                                        const std::string& path, const Json& body,
                                                        const std::string& op) {
  CCM_SDK_ASSIGN_OR_RETURN(HttpResponse resp, request(call, service, method, path, &body, op));
  if (trim(resp.body).empty()) {
    return rapidjson::Document();
  }
  return parseJson(resp.body);
}

sdk::Status OpenStackClient::forEachPage(const sdk::Call& call, Service service,
                                    const std::string& path, const std::string& links_key,
                                    const std::string& op,
                                    const std::function<bool(const JsonValue& page)>& on_page) {
  std::string next = path;
  for (int pages = 0; !next.empty(); ++pages) {
    if (pages >= 1000) {
      return sdk::Status(CCM_STATUS_INTERNAL, "more than 1000 pages listing " + path);
    }
    CCM_SDK_ASSIGN_OR_RETURN(rapidjson::Document doc, getJson(call, service, next, op));
    if (!on_page(doc)) {
      return {};
    }
    next.clear();
    if (const JsonValue* links = jsonArray(doc, links_key.c_str())) {
      for (const auto& l : links->GetArray()) {
        if (jsonString(l, "rel") == "next") {
          next = jsonString(l, "href");
        }
      }
    }
  }
  return {};
}

}  // namespace ccm::openstack
