// SecureServer against kubesim (run by test/host/kube/run_with_kubesim.py with
// testdata/tokens.csv and testdata/rbac.yaml): real TokenReviews and SubjectAccessReviews
// decided by RBAC. The server reviews as service account kube-system/ccm-reviewer, bound to
// system:auth-delegator, like a deployed cloud-controller-manager.
#include <doctest/doctest.h>
#include <rapidjson/document.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "test/support/test_files.hpp"
#include "host/kube/transport/kube_client.hpp"
#include "host/server/secure_server.hpp"
#include "test/host/server/openssl_pki.hpp"
#include "test/host/server/tls_test_client.hpp"

namespace ccm::server {
namespace {

using testing::Reply;
using testing::TlsClientOptions;
using testing::TlsTestClient;

std::string env(const char* name) { return ccm::testing::requiredEnv(name, "run_with_kubesim.py"); }

using ccm::testing::readFile;

std::unique_ptr<kube::KubeClient> clientWithToken(const std::string& token) {
  kube::RestConfig config;
  config.server = env("KUBESIM_URL");
  config.ca_pem = readFile(env("KUBESIM_CERT_DIR") + "/ca.crt");
  config.token = token;
  kube::ClientOptions o;
  o.qps = 0;
  auto rest = kube::RestClient::create(config, o);
  REQUIRE_MESSAGE(rest.ok(), rest.status().toString());
  return std::make_unique<kube::KubeClient>(std::move(rest).value());
}

std::unique_ptr<kube::KubeClient> admin() {
  kube::ClientOptions o;
  o.kubeconfig = env("KUBESIM_KUBECONFIG");
  o.qps = 0;
  auto c = kube::KubeClient::create(o);
  REQUIRE_MESSAGE(c.ok(), c.status().toString());
  return std::move(c).value();
}

// A token for a service account, through the TokenRequest API.
std::string serviceAccountToken(kube::KubeClient& adm, const std::string& ns,
                                const std::string& name) {
  kube::CallOptions call;
  call.want_response = true;
  auto r = adm.create(kube::ResourcePath{"v1", "serviceaccounts", ns, name, "token"},
                      R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest",)"
                      R"("spec":{"expirationSeconds":3600}})",
                      call);
  REQUIRE_MESSAGE(r.ok(), r.status().toString());
  rapidjson::Document d;
  d.Parse(r->c_str());
  REQUIRE(d.IsObject());
  return d["status"]["token"].GetString();
}

std::string adminToken() {
  std::string t = readFile(env("KUBESIM_CERT_DIR") + "/admin.token");
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r'))
    t.pop_back();
  return t;
}

ServerOptions testOptions() {
  ServerOptions o;
  o.bind_address = "127.0.0.1";
  o.secure_port = 0;
  o.pick_free_port = true;
  return o;
}

struct Server {
  metrics::Registry registry;
  HealthChecks health;
  std::unique_ptr<kube::KubeClient> reviewer;
  std::unique_ptr<SecureServer> server;

  Server(std::unique_ptr<kube::KubeClient> client, ServerOptions options = testOptions())
      : reviewer(std::move(client)) {
    ServerDependencies deps;
    deps.health = &health;
    deps.metrics = &registry;
    deps.authentication_api = reviewer.get();
    deps.authorization_api = reviewer.get();
    server = std::make_unique<SecureServer>(std::move(options), deps);
    Status st = server->start();
    REQUIRE_MESSAGE(st.ok(), st.toString());
  }

  Reply get(const std::string& target, const std::string& token = "") {
    TlsClientOptions c;
    c.ca_pem = server->caPem();
    std::map<std::string, std::string> headers;
    if (!token.empty())
      headers["Authorization"] = "Bearer " + token;
    boost::beast::error_code ec;
    Reply r = TlsTestClient::get(server->port(), c, target, headers, &ec);
    REQUIRE_MESSAGE(!ec, target, ": ", ec.message());
    return r;
  }
};

}  // namespace

TEST_CASE("scraping /metrics is decided by the API server's RBAC") {
  auto adm = admin();
  Server s(clientWithToken(serviceAccountToken(*adm, "kube-system", "ccm-reviewer")));

  Reply ok = s.get("/metrics", "metrics-reader-token");
  CHECK(ok.status == 200);
  CHECK(ok.header("content-type") == "text/plain; version=0.0.4; charset=utf-8");
  CHECK(ok.body.find("process_cpu_seconds_total") != std::string::npos);
  CHECK(ok.body.find("ccm_build_info{") != std::string::npos);

  CHECK(s.get("/metrics", "scraper-token").status == 200);  // bound through its group
  CHECK(s.get("/metrics", serviceAccountToken(*adm, "monitoring", "prometheus")).status == 200);
  CHECK(s.get("/metrics", adminToken()).status == 200);  // system:masters

  Reply forbidden = s.get("/metrics", "no-rights-token");
  CHECK(forbidden.status == 403);
  CHECK(forbidden.body.find(R"(User \"nobody\" cannot get path \"/metrics\")") !=
        std::string::npos);
  CHECK(forbidden.body.find("process_cpu") == std::string::npos);

  Reply anonymous = s.get("/metrics");
  CHECK(anonymous.status == 403);
  CHECK(anonymous.body.find("system:anonymous") != std::string::npos);

  Reply bad = s.get("/metrics", "not-a-valid-token");
  CHECK(bad.status == 401);
  CHECK(s.get("/metrics", serviceAccountToken(*adm, "monitoring", "prometheus") + "x").status ==
        401);

  // Health probes need no token; a single check is not an always-allowed path.
  CHECK(s.get("/healthz").status == 200);
  CHECK(s.get("/readyz").status == 200);
  CHECK(s.get("/healthz/ping").status == 403);
  CHECK(s.get("/healthz/ping", "metrics-reader-token").status == 403);
  CHECK(s.get("/healthz/ping", adminToken()).status == 200);

  // The review calls were counted.
  CHECK(s.registry.valueForTest("apiserver_delegated_authn_request_total", {"201"}) >= 5);
  CHECK(s.registry.valueForTest("apiserver_delegated_authz_request_total", {"201"}) >= 4);
}

TEST_CASE("client certificates and front-proxy headers, authorized by the API server's RBAC") {
  testing::OpenSslPki pki;
  pki.ca("client-ca");
  pki.ca("proxy-ca");
  pki.issue("reader", "/CN=metrics-reader", "client-ca");
  pki.issue("scraper", "/CN=some-scraper/O=scrapers", "client-ca");
  pki.issue("nobody", "/CN=nobody", "client-ca");
  pki.issue("proxy", "/CN=front-proxy-client", "proxy-ca");
  auto adm = admin();
  ServerOptions o = testOptions();
  o.client_ca_file = pki.path("client-ca.crt");
  o.request_header.client_ca_file = pki.path("proxy-ca.crt");
  o.request_header.allowed_names = {"front-proxy-client"};
  Server s(clientWithToken(serviceAccountToken(*adm, "kube-system", "ccm-reviewer")), o);
  auto get = [&](const std::string& cert, const std::map<std::string, std::string>& headers) {
    TlsClientOptions c;
    c.ca_pem = s.server->caPem();
    c.client_cert_pem = testing::readPkiFile(pki.dir / (cert + ".crt"));
    c.client_key_pem = testing::readPkiFile(pki.dir / (cert + ".key"));
    boost::beast::error_code ec;
    Reply r = TlsTestClient::get(s.server->port(), c, "/metrics", headers, &ec);
    REQUIRE_MESSAGE(!ec, ec.message());
    return r;
  };
  CHECK(get("reader", {}).status == 200);
  CHECK(get("scraper", {}).status == 200);  // bound through its O (group)
  Reply denied = get("nobody", {});
  CHECK(denied.status == 403);
  CHECK(denied.body.find(R"(User \"nobody\" cannot get path \"/metrics\")") != std::string::npos);
  CHECK(get("proxy", {{"X-Remote-User", "metrics-reader"}}).status == 200);
  CHECK(get("proxy", {{"X-Remote-User", "nobody"}, {"X-Remote-Group", "scrapers"}}).status == 200);
  CHECK(get("proxy", {{"X-Remote-User", "nobody"}}).status == 403);
  // Headers from a client that is not the front proxy are not believed.
  CHECK(get("nobody", {{"X-Remote-User", "metrics-reader"}}).status == 403);
  // No TokenReview was needed for any of these (no series at all), only reviews of access.
  CHECK(s.registry.valueForTest("apiserver_delegated_authn_request_total", {"201"}) < 1);
  // (identical users and groups are answered from the cache: 4 distinct ones)
  CHECK(s.registry.valueForTest("apiserver_delegated_authz_request_total", {"201"}) == 4);
}

TEST_CASE("without always-allowed paths the anonymous user is reviewed too") {
  auto adm = admin();
  ServerOptions o = testOptions();
  o.always_allow_paths = {};
  Server s(clientWithToken(serviceAccountToken(*adm, "kube-system", "ccm-reviewer")), o);
  // system:public-info-viewer grants /readyz to system:unauthenticated in Kubernetes (and
  // kubesim); nothing grants /metrics.
  CHECK(s.get("/readyz").status == 200);
  CHECK(s.get("/metrics").status == 403);
  CHECK(s.get("/metrics", "metrics-reader-token").status == 200);
}

TEST_CASE("a reviewer without system:auth-delegator gets errors, and nothing is allowed") {
  auto adm = admin();
  Server s(clientWithToken(serviceAccountToken(*adm, "kube-system", "ccm-no-rights")));
  CHECK(s.get("/metrics", "metrics-reader-token").status == 500);
  CHECK(s.get("/metrics").status == 500);
  CHECK(s.get("/healthz").status == 200);
}

}  // namespace ccm::server
