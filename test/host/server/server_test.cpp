// Socket tests of SecureServer over TLS on 127.0.0.1 (ephemeral ports): health endpoints,
// /metrics, the authentication/authorization chain end to end, TLS verification,
// certificate sources and their errors, request limits, slow clients and shutdown.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "host/server/secure_server.hpp"
#include "host/tls/self_signed.hpp"
#include "test/host/server/review_api_fake.hpp"
#include "test/host/server/tls_test_client.hpp"

namespace ccm::server {
namespace {

using namespace std::chrono_literals;
using testing::Reply;
using testing::ReviewApiFake;
using testing::TlsClientOptions;
using testing::TlsTestClient;
namespace fs = std::filesystem;
namespace beast = boost::beast;
namespace http = boost::beast::http;

tls::CertificateOptions certOptions(std::string cn, std::vector<std::string> dns = {},
                                    std::vector<std::string> ips = {}) {
  tls::CertificateOptions o;
  o.common_name = std::move(cn);
  o.dns_names = std::move(dns);
  o.ip_addresses = std::move(ips);
  return o;
}

ServerOptions testOptions() {
  ServerOptions o;
  o.bind_address = "127.0.0.1";
  o.secure_port = 0;
  o.pick_free_port = true;
  return o;
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ccm-server-test-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string readFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeFile(const fs::path& p, const std::string& data) {
  std::ofstream out(p);
  out << data;
}

// A running server with a review policy: token "good" is alice (may read /metrics and
// /healthz/<check>), "admin" is in system:masters, "nobody" may read nothing.
struct Served {
  HealthChecks health;
  metrics::Registry registry;
  testing::Policy policy;
  ReviewApiFake api{policy.responder()};
  std::unique_ptr<SecureServer> server;

  explicit Served(ServerOptions options = testOptions(), bool with_api = true) {
    policy.tokens["good"] = {"alice", {"dev"}};
    policy.tokens["admin"] = {"root", {"system:masters"}};
    policy.tokens["nobody"] = {"mallory", {}};
    policy.allowed_paths["alice"] = {"/metrics", "/healthz/failing", "/healthz/ping",
                                     "/healthz/unknown", "/nothing-here", "/metrics/slis",
                                     "/configz"};
    ServerDependencies deps;
    deps.health = &health;
    deps.metrics = &registry;
    if (with_api) {
      deps.authentication_api = &api;
      deps.authorization_api = &api;
    }
    server = std::make_unique<SecureServer>(std::move(options), deps);
    Status st = server->start();
    REQUIRE_MESSAGE(st.ok(), st.toString());
    REQUIRE(server->serving());
    REQUIRE(server->port() != 0);
  }

  TlsClientOptions client(std::string host = "localhost") const {
    TlsClientOptions c;
    c.ca_pem = server->caPem();
    c.host = std::move(host);
    return c;
  }
  Reply get(const std::string& target, const std::map<std::string, std::string>& headers = {}) {
    beast::error_code ec;
    Reply r = TlsTestClient::get(server->port(), client(), target, headers, &ec);
    REQUIRE_MESSAGE(!ec, target, ": ", ec.message());
    return r;
  }
};

const std::map<std::string, std::string> kAlice = {{"Authorization", "Bearer good"}};

}  // namespace

TEST_CASE("health endpoints over HTTPS") {
  Served s;
  Reply r = s.get("/healthz");
  CHECK(r.status == 200);
  CHECK(r.body == "ok");
  CHECK(r.header("content-type") == "text/plain; charset=utf-8");
  CHECK(r.header("x-content-type-options") == "nosniff");
  CHECK(s.get("/livez").body == "ok");
  CHECK(s.get("/readyz?verbose").body == "[+]ping ok\nreadyz check passed\n");

  // Checks added while the server runs are served at once.
  REQUIRE(s.health
              .add(
                  "failing", [] { return Status(Code::Unavailable, "the secret reason"); },
                  Probes::readiness())
              .ok());
  r = s.get("/readyz");
  CHECK(r.status == 500);
  CHECK(r.body == "[+]ping ok\n[-]failing failed: reason withheld\nreadyz check failed\n");
  CHECK(s.get("/healthz").status == 500);
  CHECK(s.get("/livez").status == 200);
  r = s.get("/healthz?exclude=failing&verbose=true");
  CHECK(r.status == 200);
  CHECK(r.body == "[+]ping ok\n[+]failing excluded: ok\nhealthz check passed\n");

  // Single checks are not always-allowed paths: they need authorization, then show reasons.
  CHECK(s.get("/healthz/failing").status == 403);
  r = s.get("/healthz/failing", kAlice);
  CHECK(r.status == 500);
  CHECK(r.body.find("the secret reason") != std::string::npos);
  CHECK(s.get("/healthz/ping", kAlice).body == "ok");
  CHECK(s.get("/healthz/unknown", kAlice).status == 404);
  CHECK(s.get("/nothing-here", kAlice).status == 404);
}

TEST_CASE("/metrics: content type, registry, process metrics, build info") {
  Served s;
  s.registry.counter("ccm_test_events_total", "Test events.", {"kind"})->labels({"a"}).inc(3);
  Reply r = s.get("/metrics", kAlice);
  REQUIRE(r.status == 200);
  CHECK(r.header("content-type") == "text/plain; version=0.0.4; charset=utf-8");
  CHECK(r.body.find("# TYPE ccm_test_events_total counter\n") != std::string::npos);
  CHECK(r.body.find("ccm_test_events_total{kind=\"a\"} 3\n") != std::string::npos);
  for (const char* name : {"process_cpu_seconds_total ", "process_resident_memory_bytes ",
                           "process_virtual_memory_bytes ", "process_open_fds ", "process_max_fds ",
                           "process_start_time_seconds ", "ccm_build_info{version=\"0.1.0\"",
                           "apiserver_delegated_authn_request_total{code=\"201\"} 1",
                           "apiserver_delegated_authz_request_total{code=\"201\"} 1"}) {
    CHECK_MESSAGE(r.body.find(name) != std::string::npos, name);
  }
  // The process metrics are read at scrape time: the server's open connection counts.
  CHECK(s.registry.valueForTest("process_open_fds") >= 4);

  // HEAD: same headers, no body.
  TlsTestClient c(s.server->port(), s.client());
  REQUIRE(!c.open());
  Reply head;
  REQUIRE(!c.request(http::verb::head, "/metrics", &head, kAlice));
  CHECK(head.status == 200);
  CHECK(head.body.empty());
  CHECK(std::stoul(head.header("content-length")) > 100);
  // Other methods are served too after authorization, as upstream's handler does.
  Reply post;
  REQUIRE(!c.request(http::verb::post, "/metrics", &post, {{"Authorization", "Bearer admin"}}));
  CHECK(post.status == 200);
}

TEST_CASE("/metrics/slis: a gauge and a counter per health check run, behind authorization") {
  Served s;
  REQUIRE(s.health.add("failing", [] { return Status(Code::Unavailable, "down"); },
                       Probes::readiness())
              .ok());
  CHECK(s.get("/metrics/slis").status == 403);  // anonymous
  CHECK(s.get("/livez").status == 200);
  CHECK(s.get("/livez").status == 200);
  CHECK(s.get("/readyz").status == 500);
  Reply r = s.get("/metrics/slis", kAlice);
  REQUIRE(r.status == 200);
  CHECK(r.header("content-type") == "text/plain; version=0.0.4; charset=utf-8");
  for (const char* line :
       {"# HELP kubernetes_healthcheck [STABLE] This metric records the result of a single "
        "healthcheck.\n",
        "# TYPE kubernetes_healthcheck gauge\n",
        "kubernetes_healthcheck{name=\"ping\",type=\"livez\"} 1\n",
        "kubernetes_healthcheck{name=\"failing\",type=\"readyz\"} 0\n",
        "# TYPE kubernetes_healthchecks_total counter\n",
        "kubernetes_healthchecks_total{name=\"ping\",status=\"success\",type=\"livez\"} 2\n",
        "kubernetes_healthchecks_total{name=\"ping\",status=\"success\",type=\"readyz\"} 1\n",
        "kubernetes_healthchecks_total{name=\"failing\",status=\"error\",type=\"readyz\"} 1\n"}) {
    CHECK_MESSAGE(r.body.find(line) != std::string::npos, line, "\n", r.body);
  }
  // Only the SLI metrics: the main registry stays at /metrics.
  CHECK(r.body.find("process_cpu_seconds_total") == std::string::npos);
}

TEST_CASE("/configz: the configuration as JSON, behind authorization") {
  ServerOptions o = testOptions();
  o.configz = R"({"cloudcontrollermanager.config.k8s.io":{"Generic":{}}})";
  Served s(o);
  CHECK(s.get("/configz").status == 403);
  Reply r = s.get("/configz", kAlice);
  REQUIRE(r.status == 200);
  CHECK(r.header("content-type") == "application/json");
  CHECK(r.header("x-content-type-options") == "nosniff");
  CHECK(r.body == o.configz);
  Served none;  // no configuration given: not served
  CHECK(none.get("/configz", kAlice).status == 404);
}

TEST_CASE("a bad bearer token on /healthz, /livez, /readyz: 401 as upstream; no token: 200") {
  Served s;
  for (const char* path : {"/healthz", "/livez", "/readyz"}) {
    CAPTURE(path);
    Reply bad = s.get(path, {{"Authorization", "Bearer not-a-token"}});
    CHECK(bad.status == 401);
    CHECK(bad.header("content-type") == "application/json");
    CHECK(bad.body.find(R"("reason":"Unauthorized")") != std::string::npos);
    CHECK(bad.body.find(R"("code":401)") != std::string::npos);
    Reply anonymous = s.get(path);
    CHECK(anonymous.status == 200);
    CHECK(anonymous.body == "ok");
    // A valid token is allowed on an always-allowed path without a SubjectAccessReview.
    Reply good = s.get(path, {{"Authorization", "Bearer nobody"}});
    CHECK(good.status == 200);
  }
}

TEST_CASE("POST /healthz answers 200 as upstream's healthz handler (it ignores the method)") {
  Served s;
  TlsTestClient c(s.server->port(), s.client());
  REQUIRE(!c.open());
  for (http::verb verb : {http::verb::post, http::verb::put, http::verb::delete_}) {
    CAPTURE(static_cast<int>(verb));
    Reply r;
    REQUIRE(!c.request(verb, "/healthz", &r));
    CHECK(r.status == 200);
    CHECK(r.body == "ok");
  }
  Reply livez;
  REQUIRE(!c.request(http::verb::post, "/livez?verbose", &livez));
  CHECK(livez.status == 200);
  CHECK(livez.body == "[+]ping ok\nlivez check passed\n");
}

TEST_CASE("plain HTTP to the TLS port: 'HTTP/1.0 400 Bad Request', as Go's server answers") {
  Served s;
  for (const char* request : {"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
                              "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
                              "HEAD /livez HTTP/1.0\r\n\r\n"}) {
    CAPTURE(request);
    TlsTestClient c(s.server->port(), s.client());
    REQUIRE(!c.connect());
    REQUIRE(!c.writeTcp(request));
    std::string answer;
    beast::error_code ec = c.readAllTcp(&answer);
    CHECK(ec != beast::error::timeout);  // the server closed the connection itself
    CHECK(answer ==
          "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n");
  }
  // The port still speaks TLS to the next client.
  CHECK(s.get("/healthz").status == 200);
}

TEST_CASE("/metrics refuses unauthenticated and unauthorized callers") {
  Served s;
  Reply anon = s.get("/metrics");
  CHECK(anon.status == 403);
  CHECK(anon.header("content-type") == "application/json");
  CHECK(anon.body.find(R"("reason":"Forbidden")") != std::string::npos);
  CHECK(anon.body.find(R"(User \"system:anonymous\" cannot get path \"/metrics\")") !=
        std::string::npos);
  CHECK(anon.body.find("process_cpu") == std::string::npos);

  Reply bad = s.get("/metrics", {{"Authorization", "Bearer not-a-token"}});
  CHECK(bad.status == 401);
  CHECK(bad.body.find(R"("reason":"Unauthorized")") != std::string::npos);

  Reply nobody = s.get("/metrics", {{"Authorization", "Bearer nobody"}});
  CHECK(nobody.status == 403);
  CHECK(nobody.body.find("mallory") != std::string::npos);

  CHECK(s.get("/metrics", {{"Authorization", "Bearer admin"}}).status == 200);
  CHECK(s.get("/metrics", kAlice).status == 200);
}

TEST_CASE("an API server that cannot answer gets 500, never an allow") {
  ServerDependencies deps;
  HealthChecks health;
  metrics::Registry registry;
  ReviewApiFake down([](const std::string&, const std::string&) -> kube::ApiResult<std::string> {
    return kube::ApiStatus::transport("connection refused");
  });
  deps.health = &health;
  deps.metrics = &registry;
  deps.authentication_api = &down;
  deps.authorization_api = &down;
  SecureServer server(testOptions(), deps);
  REQUIRE(server.start().ok());
  TlsClientOptions c;
  c.ca_pem = server.caPem();
  CHECK(TlsTestClient::get(server.port(), c, "/metrics").status == 500);
  CHECK(TlsTestClient::get(server.port(), c, "/metrics", kAlice).status == 500);
  CHECK(TlsTestClient::get(server.port(), c, "/healthz").status == 200);
}

TEST_CASE("without API clients only the always-allowed paths are served") {
  ServerOptions o = testOptions();
  o.always_allow_paths = {"/healthz"};
  Served s(o, /*with_api=*/false);
  CHECK(s.get("/healthz").status == 200);
  CHECK(s.get("/readyz").status == 403);
  CHECK(s.get("/metrics", kAlice).status == 403);
  CHECK(s.api.calls(testing::kTokenReviewPath) == 0);
}

TEST_CASE("an empty --authorization-always-allow-paths opens nothing") {
  ServerOptions o = testOptions();
  o.always_allow_paths = {};
  Served s(o);
  CHECK(s.get("/healthz").status == 403);
  CHECK(s.get("/healthz", kAlice).status == 403);
  CHECK(s.get("/healthz", {{"Authorization", "Bearer admin"}}).status == 200);
}

TEST_CASE("keep-alive: several requests on one connection") {
  Served s;
  TlsTestClient c(s.server->port(), s.client());
  REQUIRE(!c.open());
  for (int i = 0; i < 5; ++i) {
    Reply r;
    REQUIRE(!c.request(http::verb::get, i % 2 ? "/metrics" : "/healthz", &r, kAlice));
    CHECK(r.status == 200);
  }
  // Connection: close is honoured: the server closes after the answer.
  Reply r;
  REQUIRE(!c.request(http::verb::get, "/healthz", &r, {{"Connection", "close"}}));
  CHECK(r.status == 200);
  auto ec = c.waitClosedTls();
  CHECK(ec != beast::error::timeout);
}

TEST_CASE("TLS: verification against the generated CA, names, protocol versions") {
  Served s;
  REQUIRE_FALSE(s.server->caPem().empty());
  beast::error_code ec;
  CHECK(TlsTestClient::get(s.server->port(), s.client("localhost"), "/healthz", {}, &ec).status ==
        200);
  CHECK_MESSAGE(!ec, ec.message());
  CHECK(TlsTestClient::get(s.server->port(), s.client("127.0.0.1"), "/healthz", {}, &ec).status ==
        200);
  CHECK_MESSAGE(!ec, ec.message());

  SUBCASE("another CA is refused") {
    auto other = tls::generateCa(certOptions("other-ca"));
    REQUIRE(other.ok());
    TlsClientOptions c = s.client();
    c.ca_pem = other->certificate_pem;
    TlsTestClient client(s.server->port(), c);
    REQUIRE(!client.connect());
    CHECK(client.handshake());
  }
  SUBCASE("no CA at all is refused") {
    TlsClientOptions c = s.client();
    c.ca_pem.clear();
    TlsTestClient client(s.server->port(), c);
    REQUIRE(!client.connect());
    CHECK(client.handshake());
  }
  SUBCASE("a name the certificate does not carry is refused") {
    TlsTestClient client(s.server->port(), s.client("wrong-host.example"));
    REQUIRE(!client.connect());
    CHECK(client.handshake());
    TlsTestClient ip(s.server->port(), s.client("10.1.2.3"));
    REQUIRE(!ip.connect());
    CHECK(ip.handshake());
  }
  SUBCASE("TLS 1.1 is refused, 1.2 accepted") {
    TlsClientOptions old = s.client();
    old.max_tls_version = TLS1_1_VERSION;
    TlsTestClient client(s.server->port(), old);
    REQUIRE(!client.connect());
    CHECK(client.handshake());
    TlsClientOptions v12 = s.client();
    v12.max_tls_version = TLS1_2_VERSION;
    TlsTestClient ok(s.server->port(), v12);
    REQUIRE(!ok.connect());
    CHECK_MESSAGE(!ok.handshake(), "TLS 1.2 must be accepted");
  }
}

TEST_CASE("--tls-cert-file and --tls-private-key-file") {
  TempDir dir;
  auto ca = tls::generateCa(certOptions("test-ca"));
  REQUIRE(ca.ok());
  auto leaf = tls::issueServerCertificate(*ca, certOptions("ccm", {"ccm.example"}, {"127.0.0.1"}));
  REQUIRE(leaf.ok());
  const fs::path crt = dir.path / "tls.crt";
  const fs::path key = dir.path / "tls.key";
  writeFile(crt, leaf->certificate_pem);
  writeFile(key, leaf->private_key_pem);

  SUBCASE("a valid pair is served") {
    ServerOptions o = testOptions();
    o.tls_cert_file = crt.string();
    o.tls_private_key_file = key.string();
    o.cert_dir = (dir.path / "ignored").string();  // the files win over --cert-dir
    SecureServer server(o, {});
    Status st = server.start();
    REQUIRE_MESSAGE(st.ok(), st.toString());
    CHECK(server.caPem().empty());
    CHECK_FALSE(fs::exists(dir.path / "ignored"));
    TlsClientOptions c;
    c.ca_pem = ca->certificate_pem;
    c.host = "ccm.example";
    beast::error_code ec;
    CHECK(TlsTestClient::get(server.port(), c, "/healthz", {}, &ec).status == 200);
    CHECK_MESSAGE(!ec, ec.message());
    c.host = "localhost";  // not in this certificate
    TlsTestClient wrong(server.port(), c);
    REQUIRE(!wrong.connect());
    CHECK(wrong.handshake());
  }
  auto startError = [](ServerOptions o) {
    SecureServer server(std::move(o), {});
    Status st = server.start();
    CHECK_FALSE(server.serving());
    return st;
  };
  SUBCASE("a missing file is named") {
    ServerOptions o = testOptions();
    o.tls_cert_file = (dir.path / "absent.crt").string();
    o.tls_private_key_file = key.string();
    Status st = startError(o);
    CHECK(st.message() ==
          "--tls-cert-file " + o.tls_cert_file + ": cannot read: No such file or directory");
  }
  SUBCASE("a file without a certificate is named") {
    writeFile(dir.path / "garbage.crt", "not a certificate\n");
    ServerOptions o = testOptions();
    o.tls_cert_file = (dir.path / "garbage.crt").string();
    o.tls_private_key_file = key.string();
    CHECK(startError(o).message() ==
          "--tls-cert-file " + o.tls_cert_file + ": no PEM certificate found");
  }
  SUBCASE("a file without a key is named") {
    ServerOptions o = testOptions();
    o.tls_cert_file = crt.string();
    o.tls_private_key_file = crt.string();
    CHECK(startError(o).message().rfind(
              "--tls-private-key-file " + crt.string() + ": no PEM private key found", 0) == 0);
  }
  SUBCASE("a key of another certificate is refused") {
    auto other = tls::issueServerCertificate(*ca, certOptions("other"));
    REQUIRE(other.ok());
    writeFile(dir.path / "other.key", other->private_key_pem);
    ServerOptions o = testOptions();
    o.tls_cert_file = crt.string();
    o.tls_private_key_file = (dir.path / "other.key").string();
    CHECK(startError(o).message() == "--tls-private-key-file " + o.tls_private_key_file +
                                         " does not match the certificate in --tls-cert-file " +
                                         crt.string());
  }
  SUBCASE("one without the other is refused") {
    ServerOptions o = testOptions();
    o.tls_cert_file = crt.string();
    CHECK(startError(o).message().find("must be given together") != std::string::npos);
  }
}

TEST_CASE("--cert-dir: generated once, then reused") {
  TempDir dir;
  const fs::path certs = dir.path / "certs";
  ServerOptions o = testOptions();
  o.cert_dir = certs.string();
  std::string first_ca;
  std::string first_crt;
  {
    SecureServer server(o, {});
    REQUIRE(server.start().ok());
    first_ca = server.caPem();
    REQUIRE_FALSE(first_ca.empty());
    first_crt = readFile(certs / "cloud-controller-manager.crt");
    CHECK(first_crt.find(first_ca) != std::string::npos);  // leaf + CA
    struct stat st {};
    REQUIRE(::stat((certs / "cloud-controller-manager.key").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    TlsClientOptions c;
    c.ca_pem = first_ca;
    CHECK(TlsTestClient::get(server.port(), c, "/healthz").status == 200);
  }
  {
    SecureServer server(o, {});
    REQUIRE(server.start().ok());
    CHECK(server.caPem() == first_ca);
    CHECK(readFile(certs / "cloud-controller-manager.crt") == first_crt);
    TlsClientOptions c;
    c.ca_pem = first_ca;
    c.host = "127.0.0.1";
    CHECK(TlsTestClient::get(server.port(), c, "/livez").status == 200);
  }
  fs::remove(certs / "cloud-controller-manager.key");
  SecureServer server(o, {});
  Status st = server.start();
  CHECK(st.code() == Code::InvalidArgument);
  CHECK(st.message().find("cloud-controller-manager.key") != std::string::npos);
}

TEST_CASE("--secure-port 0 does not serve; bind errors are start-up errors") {
  ServerOptions o = testOptions();
  o.pick_free_port = false;
  SecureServer off(o, {});
  CHECK(off.start().ok());
  CHECK_FALSE(off.serving());
  CHECK(off.port() == 0);

  ServerOptions bad = testOptions();
  bad.bind_address = "not-an-ip";
  SecureServer s1(bad, {});
  CHECK(s1.start().message() == "--bind-address \"not-an-ip\" is not an IP address");

  Served running;
  ServerOptions taken = testOptions();
  taken.pick_free_port = false;
  taken.secure_port = running.server->port();
  SecureServer s2(taken, {});
  Status st = s2.start();
  CHECK_FALSE(st.ok());
  CHECK(st.message().find("cannot bind 127.0.0.1:" + std::to_string(running.server->port())) !=
        std::string::npos);
}

TEST_CASE("oversized requests are refused and the connection closed") {
  ServerOptions o = testOptions();
  o.max_header_bytes = 4096;
  o.max_body_bytes = 1024;
  Served s(o);
  SUBCASE("headers") {
    TlsTestClient c(s.server->port(), s.client());
    REQUIRE(!c.open());
    Reply r;
    REQUIRE(!c.request(http::verb::get, "/healthz", &r, {{"X-Padding", std::string(8192, 'a')}}));
    CHECK(r.status == 431);
    CHECK(c.waitClosedTls() != beast::error::timeout);
  }
  SUBCASE("a long request line") {
    TlsTestClient c(s.server->port(), s.client());
    REQUIRE(!c.open());
    Reply r;
    REQUIRE(!c.request(http::verb::get, "/healthz?" + std::string(8192, 'x'), &r));
    CHECK(r.status == 431);
  }
  SUBCASE("body") {
    TlsTestClient c(s.server->port(), s.client());
    REQUIRE(!c.open());
    REQUIRE(!c.writeTls("POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n"));
    Reply r;
    REQUIRE(!c.readReply(&r));
    CHECK(r.status == 413);
    CHECK(c.waitClosedTls() != beast::error::timeout);
  }
  SUBCASE("a body within the limit is fine") {
    TlsTestClient c(s.server->port(), s.client());
    REQUIRE(!c.open());
    Reply r;
    REQUIRE(!c.request(http::verb::get, "/healthz", &r, {}, std::string(1000, 'b')));
    CHECK(r.status == 200);
  }
  SUBCASE("garbage") {
    TlsTestClient c(s.server->port(), s.client());
    REQUIRE(!c.open());
    REQUIRE(!c.writeTls("NOT HTTP AT ALL\r\n\r\n"));
    Reply r;
    REQUIRE(!c.readReply(&r));
    CHECK(r.status == 400);
  }
  SUBCASE("an absolute-form target") {
    TlsTestClient c(s.server->port(), s.client());
    REQUIRE(!c.open());
    Reply r;
    REQUIRE(!c.request(http::verb::get, "https://localhost/healthz", &r));
    CHECK(r.status == 400);
  }
}

TEST_CASE("slow and idle clients cannot hold a connection") {
  ServerOptions o = testOptions();
  o.handshake_timeout = 200ms;
  o.read_timeout = 300ms;
  Served s(o);
  SUBCASE("no TLS handshake") {
    TlsTestClient c(s.server->port(), s.client());
    REQUIRE(!c.connect());
    auto ec = c.waitClosedTcp();
    CHECK_MESSAGE(ec != beast::error::timeout, "the server kept a silent connection open");
  }
  SUBCASE("a request that never ends") {
    TlsTestClient c(s.server->port(), s.client());
    REQUIRE(!c.open());
    REQUIRE(!c.writeTls("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "));
    auto ec = c.waitClosedTls();
    CHECK_MESSAGE(ec != beast::error::timeout, "the server waited forever for the headers");
  }
  SUBCASE("an idle keep-alive connection") {
    TlsTestClient c(s.server->port(), s.client());
    REQUIRE(!c.open());
    Reply r;
    REQUIRE(!c.request(http::verb::get, "/healthz", &r));
    CHECK(r.status == 200);
    auto ec = c.waitClosedTls();
    CHECK_MESSAGE(ec != beast::error::timeout, "the server kept an idle connection forever");
  }
  // The server still serves others.
  CHECK(s.get("/healthz").status == 200);
}

TEST_CASE("connections beyond the limit are closed at once") {
  ServerOptions o = testOptions();
  o.max_connections = 2;
  Served s(o);
  TlsTestClient a(s.server->port(), s.client());
  TlsTestClient b(s.server->port(), s.client());
  REQUIRE(!a.open());
  REQUIRE(!b.open());
  TlsTestClient c(s.server->port(), s.client());
  REQUIRE(!c.connect());
  CHECK(c.handshake());  // closed before the handshake
  Reply r;
  REQUIRE(!a.request(http::verb::get, "/healthz", &r));
  CHECK(r.status == 200);
}

TEST_CASE("requests beyond the worker queue bound get 503 at once") {
  ServerOptions o = testOptions();
  o.max_pending_requests = 0;
  Served s(o);
  Reply r = s.get("/metrics", kAlice);
  CHECK(r.status == 503);
  CHECK(r.header("retry-after") == "1");
  CHECK(s.api.calls(testing::kTokenReviewPath) == 0);
  CHECK(s.get("/healthz").status == 200);  // always-allowed paths do not queue
}

TEST_CASE("stop() returns while a review is in flight") {
  Served s;
  s.api.blockCalls();
  std::thread caller([&] {
    beast::error_code ec;
    Reply r = TlsTestClient::get(s.server->port(), s.client(), "/metrics", kAlice, &ec);
    CHECK(r.status == 0);  // the connection was dropped without an answer
    CHECK(ec);
  });
  s.api.waitBlocked(1);
  s.server->stop();
  CHECK_FALSE(s.server->serving());
  CHECK(s.server->port() == 0);
  caller.join();
  s.server->stop();  // idempotent
}

}  // namespace ccm::server
