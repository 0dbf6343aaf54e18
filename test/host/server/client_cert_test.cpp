// Socket tests of client-certificate (--client-ca-file) and request-header
// (--requestheader-*) authentication on the secure port, with real TLS client certificates
// made by the openssl command in a temporary directory: accepted users and groups, wrong CA,
// front proxy not in --requestheader-allowed-names, no certificate, and user headers ignored
// unless a verified front proxy sends them.
#include <doctest/doctest.h>

#include "host/server/secure_server.hpp"
#include "test/host/server/openssl_pki.hpp"
#include "test/host/server/review_api_fake.hpp"
#include "test/host/server/tls_test_client.hpp"

namespace ccm::server {
namespace {

using testing::Reply;
using testing::ReviewApiFake;
using testing::TlsClientOptions;
using testing::TlsTestClient;

using Pki = testing::OpenSslPki;
using testing::readPkiFile;
using testing::writePkiFile;

// A server with --client-ca-file=client-ca.crt, --requestheader-client-ca-file=proxy-ca.crt
// and --requestheader-allowed-names=front-proxy-client, and a review policy: alice and group
// readers may read /metrics; everyone else nothing.
struct CertServed {
  Pki pki;
  testing::Policy policy;
  ReviewApiFake api{policy.responder()};
  metrics::Registry registry;
  std::unique_ptr<SecureServer> server;

  CertServed() {
    pki.ca("client-ca");
    pki.ca("proxy-ca");
    pki.ca("other-ca");
    pki.issue("alice", "/CN=alice/O=dev", "client-ca");
    pki.issue("carol", "/CN=carol/O=dev/O=readers", "client-ca");
    pki.issue("bob", "/CN=bob", "client-ca");
    pki.issue("root", "/CN=root/O=system:masters", "client-ca");
    pki.issue("stranger", "/CN=alice/O=readers", "other-ca");
    pki.issue("server-only", "/CN=alice", "client-ca", "server_only");
    pki.issue("proxy", "/CN=front-proxy-client", "proxy-ca");
    pki.issue("other-proxy", "/CN=some-proxy", "proxy-ca");
    policy.tokens["good"] = {"alice", {"dev"}};
    policy.allowed_paths["alice"] = {"/metrics"};
    policy.allowed_paths["readers"] = {"/metrics"};

    ServerOptions o;
    o.bind_address = "127.0.0.1";
    o.secure_port = 0;
    o.pick_free_port = true;
    o.client_ca_file = pki.path("client-ca.crt");
    o.request_header.client_ca_file = pki.path("proxy-ca.crt");
    o.request_header.allowed_names = {"front-proxy-client"};
    o.request_header.username_headers = {"X-Remote-User"};
    o.request_header.group_headers = {"X-Remote-Group"};
    o.request_header.extra_headers_prefixes = {"X-Remote-Extra-"};
    ServerDependencies deps;
    deps.metrics = &registry;
    deps.authentication_api = &api;
    deps.authorization_api = &api;
    server = std::make_unique<SecureServer>(std::move(o), deps);
    Status st = server->start();
    REQUIRE_MESSAGE(st.ok(), st.toString());
  }

  // GET as the holder of certificate `name` ("" for none).
  Reply get(const std::string& name, const std::string& target,
            const std::map<std::string, std::string>& headers = {}) {
    TlsClientOptions c;
    c.ca_pem = server->caPem();
    if (!name.empty()) {
      c.client_cert_pem = readPkiFile(pki.dir / (name + ".crt"));
      c.client_key_pem = readPkiFile(pki.dir / (name + ".key"));
    }
    boost::beast::error_code ec;
    Reply r = TlsTestClient::get(server->port(), c, target, headers, &ec);
    REQUIRE_MESSAGE(!ec, target, ": ", ec.message());
    return r;
  }
  // The user names of the SubjectAccessReviews posted so far.
  std::vector<std::string> reviewedUsers() const {
    std::vector<std::string> out;
    for (const auto& b : api.bodies()) {
      if (b.find("SubjectAccessReview") == std::string::npos) {
        continue;
      }
      size_t at = b.find("\"user\":\"");
      if (at != std::string::npos) {
        at += 8;
        out.push_back(b.substr(at, b.find('"', at) - at));
      }
    }
    return out;
  }
};

const std::map<std::string, std::string> kProxyHeaders = {
    {"X-Remote-User", "alice"}, {"X-Remote-Group", "dev"}, {"X-Remote-Extra-Scope", "read"}};

}  // namespace

TEST_CASE("client certificates signed by --client-ca-file authenticate their CN and O") {
  CertServed s;
  CHECK(s.get("alice", "/metrics").status == 200);
  CHECK(s.get("carol", "/metrics").status == 200);  // through the group
  CHECK(s.get("bob", "/metrics").status == 403);    // authenticated, not authorized
  CHECK(s.get("root", "/metrics").status == 200);   // system:masters: no review
  CHECK(s.reviewedUsers() == std::vector<std::string>{"alice", "carol", "bob"});
  CHECK(s.api.calls(testing::kTokenReviewPath) == 0);
  auto bodies = s.api.bodies();
  REQUIRE(!bodies.empty());
  CHECK(bodies[0].find("\"system:authenticated\"") != std::string::npos);
  CHECK(s.get("bob", "/healthz").status == 200);
}

TEST_CASE("a certificate from another CA, or not for client use, is refused (401)") {
  CertServed s;
  Reply r = s.get("stranger", "/metrics");
  CHECK(r.status == 401);
  CHECK(r.body.find("Unauthorized") != std::string::npos);
  CHECK(s.get("stranger", "/healthz").status == 401);  // authentication before always-allow
  CHECK(s.get("server-only", "/metrics").status == 401);
  // A bearer token the API server accepts still authenticates the request.
  CHECK(s.get("stranger", "/metrics", {{"Authorization", "Bearer good"}}).status == 200);
  CHECK(s.get("stranger", "/metrics", {{"Authorization", "Bearer bad"}}).status == 401);
}

TEST_CASE("no certificate: the token decides, or the request is anonymous") {
  CertServed s;
  CHECK(s.get("", "/metrics").status == 403);
  CHECK(s.get("", "/healthz").status == 200);
  CHECK(s.get("", "/metrics", {{"Authorization", "Bearer good"}}).status == 200);
  CHECK(s.reviewedUsers() == std::vector<std::string>{"system:anonymous", "alice"});
}

TEST_CASE("request headers from a verified front proxy name the user, groups and extra") {
  CertServed s;
  CHECK(s.get("proxy", "/metrics", kProxyHeaders).status == 200);
  CHECK(s.get("proxy", "/metrics", {{"x-remote-user", "mallory"}}).status == 403);
  CHECK(s.get("proxy", "/metrics", {{"X-Remote-User", "mallory"}, {"X-Remote-Group", "readers"}})
            .status == 200);
  CHECK(s.reviewedUsers() == std::vector<std::string>{"alice", "mallory", "mallory"});
  auto bodies = s.api.bodies();
  REQUIRE(!bodies.empty());
  CHECK(bodies[0].find(R"("groups":["dev","system:authenticated"])") != std::string::npos);
  CHECK(bodies[0].find(R"("extra":{"scope":["read"]})") != std::string::npos);
  // A verified proxy without a user header is not a user: its certificate is not one the
  // client CA signed either, so nothing authenticates it.
  CHECK(s.get("proxy", "/metrics").status == 401);
}

TEST_CASE("a front proxy not in --requestheader-allowed-names is refused") {
  CertServed s;
  CHECK(s.get("other-proxy", "/metrics", kProxyHeaders).status == 401);
  CHECK(s.get("other-proxy", "/healthz", kProxyHeaders).status == 401);
  CHECK(s.reviewedUsers().empty());
}

TEST_CASE("user headers are ignored without a verified front-proxy certificate") {
  CertServed s;
  // A client certificate from the client CA: the certificate's user, not the header's.
  CHECK(s.get("bob", "/metrics", kProxyHeaders).status == 403);
  // No certificate at all: anonymous.
  CHECK(s.get("", "/metrics", kProxyHeaders).status == 403);
  CHECK(s.reviewedUsers() == std::vector<std::string>{"bob", "system:anonymous"});
}

TEST_CASE("bad CA files stop the start with the flag and the file named") {
  Pki pki;
  writePkiFile(pki.dir / "empty.crt", "");
  writePkiFile(pki.dir / "junk.crt",
               "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n");
  auto start = [&](const std::string& client_ca, const std::string& proxy_ca) {
    ServerOptions o;
    o.bind_address = "127.0.0.1";
    o.pick_free_port = true;
    o.secure_port = 0;
    o.client_ca_file = client_ca;
    o.request_header.client_ca_file = proxy_ca;
    SecureServer srv(std::move(o), {});
    return srv.start();
  };
  Status st = start(pki.path("missing.crt"), "");
  CHECK(st.message() == "--client-ca-file " + pki.path("missing.crt") + ": cannot read the file");
  st = start("", pki.path("empty.crt"));
  CHECK(st.message() == "--requestheader-client-ca-file " + pki.path("empty.crt") +
                            ": the file holds no PEM certificate");
  st = start(pki.path("junk.crt"), "");
  CHECK(st.message().find("--client-ca-file " + pki.path("junk.crt") +
                          ": not a PEM certificate bundle") == 0);
}

}  // namespace ccm::server
