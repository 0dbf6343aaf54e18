// TLS termination with Barbican through the ABI against the simulator: TERMINATED_HTTPS
// listeners with the certificate reference in front of HTTP pools, the Barbican check before
// anything is made (missing, another project's, malformed), the reference and SNI changed in
// place, TLS switched off, container-store = external, the [LoadBalancer] default and its
// check at start-up, and Octavia's own refusals.
#include <doctest/doctest.h>

#include <set>

#include "test/plugins/openstack/test_support.hpp"

using namespace ccm::openstack::testing;

namespace {

const std::string kName = "kube_service_kubernetes_default_web";
const std::string kTlsAnnotation = "loadbalancer.openstack.org/default-tls-container-ref";
const std::string kSniAnnotation = "loadbalancer.openstack.org/sni-container-refs";

struct Fixture : SimFixture {
  Fixture() { addServerNode("node-1", "10.0.0.11"); }

  Provider& p(const std::string& lb_extra = "") {
    return provider(cloudConf(sim, "", std::string(kLbSection) + lb_extra + "\n"));
  }

  // A new Barbican certificate container (JSON fields of /_sim/barbican/containers); its ref.
  std::string container(const std::string& fields = "") {
    auto doc = sim.post("/_sim/barbican/containers", "{" + fields + "}");
    return str(doc, "container_ref");
  }

  static Service web(const std::string& ref) {
    Service s;
    s.name = "web";
    s.ports = {{"http", "TCP", 80, 30080}, {"https", "TCP", 443, 30443}};
    if (!ref.empty()) {
      s.annotations = {{kTlsAnnotation, ref}};
    }
    return s;
  }

  static std::set<std::string> strings(const rapidjson::Value& v) {
    std::set<std::string> out;
    for (const auto& x : v.GetArray()) {
      out.insert(x.GetString());
    }
    return out;
  }
};

std::string child(const char* kind, int index) {
  return std::string(kind) + "_" + std::to_string(index) + "_" + kName;
}

}  // namespace

TEST_CASE_FIXTURE(Fixture, "a TLS Service gets TERMINATED_HTTPS listeners with the ref, HTTP pools") {
  std::string ref = container();
  auto r = p().ensureSettled(web(ref), nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  auto st = sim.state();
  REQUIRE(st["listeners"].Size() == 2);
  for (int i = 0; i < 2; ++i) {
    const auto* l = byName(st, "listeners", child("listener", i));
    REQUIRE(l != nullptr);
    CHECK(str(*l, "protocol") == "TERMINATED_HTTPS");
    CHECK((*l)["protocol_port"].GetInt() == (i == 0 ? 80 : 443));
    CHECK(str(*l, "default_tls_container_ref") == ref);
    CHECK((*l)["sni_container_refs"].Size() == 0);
    const auto* pool = byName(st, "pools", child("pool", i));
    REQUIRE(pool != nullptr);
    CHECK(str(*pool, "protocol") == "HTTP");
  }
  // The container was read in Barbican first.
  CHECK(countRequests(sim, "GET", "key-manager", "^/v1/containers/") >= 1);

  // A second call changes nothing.
  sim.clearRequests();
  REQUIRE(p().ensureSettled(web(ref), nodes).ok());
  CHECK(countMutations(sim) == 0);
}

TEST_CASE_FIXTURE(Fixture, "a missing or unreadable container refuses the Service, nothing made") {
  std::string missing = container();
  sim.post("/_sim/barbican/delete", "{\"id\":\"" + missing.substr(missing.rfind('/') + 1) + "\"}");
  auto r = p().ensure(web(missing), nodes);
  CHECK(r.status == CCM_STATUS_INVALID_ARGUMENT);
  CHECK(r.error.find(kTlsAnnotation) != std::string::npos);
  CHECK(r.error.find("404") != std::string::npos);

  std::string other = container(R"("project_id":"p-other","creator_id":"u-other")");
  r = p().ensure(web(other), nodes);
  CHECK(r.status == CCM_STATUS_INVALID_ARGUMENT);
  CHECK(r.error.find("not readable") != std::string::npos);
  CHECK(r.error.find("403") != std::string::npos);

  r = p().ensure(web("https://barbican.example/v1/orders/1234"), nodes);
  CHECK(r.status == CCM_STATUS_INVALID_ARGUMENT);
  CHECK(r.error.find("/containers/<id>") != std::string::npos);

  // A UDP port cannot terminate TLS: refused before Barbican is asked.
  Service udp = web(container());
  udp.ports.push_back({"dns", "UDP", 53, 30053});
  r = p().ensure(udp, nodes);
  CHECK(r.status == CCM_STATUS_INVALID_ARGUMENT);
  CHECK(r.error.find("port 53 is UDP") != std::string::npos);

  CHECK(sim.state()["loadbalancers"].Size() == 0);
  CHECK(countMutations(sim) == 0);

  // Another project's container shared with the user through its ACL is fine.
  std::string shared = container(R"("project_id":"p-other","creator_id":"u-other",
                                    "acl_users":["u-demo"],"project_access":false)");
  r = p().ensureSettled(web(shared), nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
}

TEST_CASE_FIXTURE(Fixture, "a new container ref is set on the listeners in place; TLS off recreates") {
  std::string first = container();
  REQUIRE(p().ensureSettled(web(first), nodes).ok());
  auto before = sim.state();
  std::string listener_id = str(*byName(before, "listeners", child("listener", 0)), "id");

  std::string second = container();
  sim.clearRequests();
  auto r = p().ensureSettled(web(second), nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  CHECK(countRequests(sim, "PUT", "load-balancer", "/listeners/") == 2);
  CHECK(countRequests(sim, "POST", "load-balancer", "") == 0);
  CHECK(countRequests(sim, "DELETE", "load-balancer", "") == 0);
  auto st = sim.state();
  const auto* l = byName(st, "listeners", child("listener", 0));
  CHECK(str(*l, "id") == listener_id);
  CHECK(str(*l, "default_tls_container_ref") == second);

  // Octavia cannot change a listener's protocol: switching TLS off replaces the listeners
  // (and their pools) by TCP ones on the same ports.
  r = p().ensureSettled(web(""), nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  st = sim.state();
  REQUIRE(st["listeners"].Size() == 2);
  for (const auto& x : st["listeners"].GetArray()) {
    CHECK(str(x, "protocol") == "TCP");
    CHECK(str(x, "default_tls_container_ref").empty());
  }
  for (const auto& x : st["pools"].GetArray()) {
    CHECK(str(x, "protocol") == "TCP");
  }
}

TEST_CASE_FIXTURE(Fixture, "SNI containers: set, changed in place, checked in Barbican") {
  std::string def = container();
  std::string a = container();
  std::string b = container();
  Service s = web(def);
  s.annotations.push_back({kSniAnnotation, a + ", " + b});
  auto r = p().ensureSettled(s, nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  auto st = sim.state();
  const auto* l = byName(st, "listeners", child("listener", 1));
  CHECK(strings((*l)["sni_container_refs"]) == std::set<std::string>{a, b});

  s.annotations.back().second = b;
  sim.clearRequests();
  REQUIRE(p().ensureSettled(s, nodes).ok());
  CHECK(countRequests(sim, "PUT", "load-balancer", "/listeners/") == 2);
  st = sim.state();
  l = byName(st, "listeners", child("listener", 1));
  CHECK(strings((*l)["sni_container_refs"]) == std::set<std::string>{b});

  std::string gone = container();
  sim.post("/_sim/barbican/delete", "{\"id\":\"" + gone.substr(gone.rfind('/') + 1) + "\"}");
  s.annotations.back().second = b + "," + gone;
  sim.clearRequests();
  r = p().ensure(s, nodes);
  CHECK(r.status == CCM_STATUS_INVALID_ARGUMENT);
  CHECK(r.error.find(kSniAnnotation) != std::string::npos);
  CHECK(countMutations(sim) == 0);

  // SNI alone, without a default certificate, is refused.
  Service sni_only = web("");
  sni_only.annotations = {{kSniAnnotation, a}};
  r = p().ensure(sni_only, nodes);
  CHECK(r.status == CCM_STATUS_INVALID_ARGUMENT);
  CHECK(r.error.find("default certificate") != std::string::npos);
}

TEST_CASE_FIXTURE(Fixture, "x-forwarded-for and proxy-protocol with TLS") {
  std::string ref = container();
  Service s = web(ref);
  s.annotations.push_back({"loadbalancer.openstack.org/x-forwarded-for", "true"});
  REQUIRE(p().ensureSettled(s, nodes).ok());
  auto st = sim.state();
  const auto* l = byName(st, "listeners", child("listener", 0));
  CHECK(str(*l, "protocol") == "TERMINATED_HTTPS");
  CHECK(str((*l)["insert_headers"], "X-Forwarded-For") == "true");
  CHECK(str(*byName(st, "pools", child("pool", 0)), "protocol") == "HTTP");

  s.annotations.back() = {"loadbalancer.openstack.org/proxy-protocol", "true"};
  auto r = p().ensureSettled(s, nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  st = sim.state();
  CHECK(str(*byName(st, "listeners", child("listener", 0)), "protocol") == "TERMINATED_HTTPS");
  CHECK(str(*byName(st, "pools", child("pool", 0)), "protocol") == "PROXY");
}

TEST_CASE_FIXTURE(Fixture, "container-store external: no Barbican check, Octavia has the last word") {
  // Octavia set up with another certificate store takes the reference as it is.
  sim.config(R"({"octavia_checks_tls_refs": false})");
  std::string ref = "https://vault.example/v1/secrets/web-cert";
  auto r = p("container-store = external\n").ensureSettled(web(ref), nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  CHECK(countRequests(sim, "", "key-manager") == 0);
  auto st = sim.state();
  CHECK(str(*byName(st, "listeners", child("listener", 0)), "default_tls_container_ref") == ref);
  REQUIRE(p("container-store = external\n").removeSettled(web(ref)).ok());

  // An Octavia that reads Barbican refuses a container it cannot read (400), and the
  // fully populated create leaves nothing behind.
  sim.config(R"({"octavia_checks_tls_refs": true})");
  std::string other = container(R"("project_id":"p-other","creator_id":"u-other")");
  r = p("container-store = external\n").ensure(web(other), nodes);
  CHECK_FALSE(r.ok());
  CHECK(r.error.find("Could not retrieve certificate") != std::string::npos);
  CHECK(sim.state()["loadbalancers"].Size() == 0);
}

TEST_CASE_FIXTURE(Fixture, "[LoadBalancer] default-tls-container-ref: used by default, checked at start") {
  std::string ref = container();
  auto r = p("default-tls-container-ref = " + ref + "\n").ensureSettled(web(""), nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  auto st = sim.state();
  CHECK(str(*byName(st, "listeners", child("listener", 0)), "default_tls_container_ref") == ref);

  std::string gone = container();
  sim.post("/_sim/barbican/delete", "{\"id\":\"" + gone.substr(gone.rfind('/') + 1) + "\"}");
  auto refused = host.create(
      cloudConf(sim, "", std::string(kLbSection) + "default-tls-container-ref = " + gone + "\n"));
  const CallResult& created = refused.first;
  CHECK_FALSE(created.ok());
  CHECK(created.error.find("[LoadBalancer] default-tls-container-ref") != std::string::npos);
  CHECK(created.error.find("404") != std::string::npos);

  // With container-store = external the configured reference is not looked up.
  sim.clearRequests();
  auto accepted = host.create(cloudConf(sim, "",
                                        std::string(kLbSection) + "default-tls-container-ref = " +
                                            gone + "\ncontainer-store = external\n"));
  const CallResult& ext = accepted.first;
  CHECK_MESSAGE(ext.ok(), ext.error);
  CHECK(countRequests(sim, "", "key-manager") == 0);
}

TEST_CASE_FIXTURE(Fixture, "reconfigure: the configured TLS container is checked again") {
  std::string ref = container();
  std::string lb = std::string(kLbSection) + "default-tls-container-ref = " + ref + "\n";
  // Named members, not a structured binding: clang 14 (the sanitizer build) cannot capture
  // a binding in the lambda doctest's message makes.
  auto created = host.create(cloudConf(sim, "", lb));
  auto& made = created.first;
  auto& prov = created.second;
  REQUIRE_MESSAGE(made.ok(), made.error);
  // The rotation's new config: the seeded application credential instead of the password.
  std::string rotated = "[Global]\nauth-url = " + sim.url() +
                        "/identity/v3\napplication-credential-id = ac-id\n"
                        "application-credential-secret = ac-secret-value\n"
                        "tenant-id = p-demo\nregion = RegionOne\n\n" +
                        lb;

  // The container was deleted since start: the new config is refused, naming the key.
  sim.post("/_sim/barbican/delete", "{\"id\":\"" + ref.substr(ref.rfind('/') + 1) + "\"}");
  sim.clearRequests();
  auto refused = prov->reconfigure(rotated);
  CHECK(refused.status == CCM_STATUS_INVALID_ARGUMENT);
  CHECK_MESSAGE(refused.error.find("[LoadBalancer] default-tls-container-ref") != std::string::npos,
                refused.error);
  CHECK(refused.error.find("404") != std::string::npos);
  CHECK(refused.error.find("running credentials stay") != std::string::npos);
  CHECK(countRequests(sim, "GET", "key-manager") == 1);
  // The password is still what the provider logs in with: with the application credential
  // gone and every token revoked, its calls still work.
  sim.post("/_sim/app_credentials/delete", R"({"id":"ac-id"})");
  sim.post("/_sim/revoke_tokens", "{}");
  auto e = prov->exists(nodes.front());
  CHECK_MESSAGE(e.ok(), e.error);
  CHECK(e.existence == CCM_EXISTENCE_EXISTS);

  // A readable container: the same rotation is accepted.
  sim.post("/_sim/app_credentials",
           R"({"id":"ac-id","name":"ac-name","secret":"ac-secret-value"})");
  std::string fresh = container();
  std::string lb2 = std::string(kLbSection) + "default-tls-container-ref = " + fresh + "\n";
  auto created2 = host.create(cloudConf(sim, "", lb2));
  auto& made2 = created2.first;
  auto& prov2 = created2.second;
  REQUIRE_MESSAGE(made2.ok(), made2.error);
  std::string rotated2 = rotated.substr(0, rotated.find("[LoadBalancer]")) + lb2;
  auto accepted = prov2->reconfigure(rotated2);
  CHECK_MESSAGE(accepted.ok(), accepted.error);
}
