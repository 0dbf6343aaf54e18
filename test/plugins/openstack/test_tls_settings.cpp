// Unit tests of the TLS pieces linked directly: Barbican references, the TLS settings of a
// Service (annotation over config, SNI list), the ports TLS accepts and the listener fields.
#include <doctest/doctest.h>

#include "plugins/openstack/barbican_client.hpp"
#include "plugins/openstack/lb_settings.hpp"
#include "plugins/openstack/lb_tls.hpp"

using namespace ccm::openstack;

TEST_CASE("Barbican references: the last two parts name the kind and the ID") {
  auto c = parseBarbicanRef("https://kms.example:9311/v1/containers/1c2d/");
  REQUIRE(c.ok());
  CHECK(c->kind == "containers");
  CHECK(c->id == "1c2d");
  auto s = parseBarbicanRef(" https://kms.example/key-manager/v1/secrets/abc ");
  REQUIRE(s.ok());
  CHECK(s->kind == "secrets");
  CHECK(s->id == "abc");
  CHECK(parseBarbicanRef("secrets/abc").ok());
  for (const char* bad : {"", "abc", "/abc", "https://kms/v1/orders/1", "https://kms/v1/containers/",
                          "//x"}) {
    auto r = parseBarbicanRef(bad);
    CHECK_MESSAGE(r.status().code() == CCM_STATUS_INVALID_ARGUMENT, bad);
  }
}

TEST_CASE("TLS settings: annotation over config, SNI list, TCP ports only") {
  ccm::sdk::Service svc;
  svc.namespace_ = "ns";
  svc.name = "web";
  svc.uid = "12345678-90ab-cdef-1234-567890abcdef";
  svc.ports = {{"https", "TCP", 443, 30443, "", ""}};
  LoadBalancerConfig cfg;
  auto s = buildLbSettings(cfg, "prod", svc);
  REQUIRE(s.ok());
  CHECK_FALSE(tlsTerminated(*s));

  cfg.default_tls_container_ref = "https://kms/v1/containers/cfg";
  s = buildLbSettings(cfg, "prod", svc);
  REQUIRE(s.ok());
  CHECK(s->tls_container_ref == "https://kms/v1/containers/cfg");
  CHECK(s->tls_container_source == "[LoadBalancer] default-tls-container-ref");

  svc.annotations = {
      {"loadbalancer.openstack.org/default-tls-container-ref", "https://kms/v1/containers/ann"},
      {"loadbalancer.openstack.org/sni-container-refs",
       " https://kms/v1/containers/a ,, https://kms/v1/containers/b"}};
  s = buildLbSettings(cfg, "prod", svc);
  REQUIRE(s.ok());
  CHECK(s->tls_container_ref == "https://kms/v1/containers/ann");
  CHECK(s->tls_container_source ==
        "annotation loadbalancer.openstack.org/default-tls-container-ref");
  CHECK(s->sni_container_refs ==
        std::vector<std::string>{"https://kms/v1/containers/a", "https://kms/v1/containers/b"});
  CHECK(checkTlsPorts(*s, svc).ok());

  Json l = Json::object();
  addListenerTls(l, *s);
  std::string body = l.dump();
  CHECK(body.find("\"default_tls_container_ref\":\"https://kms/v1/containers/ann\"") !=
        std::string::npos);
  CHECK(body.find("sni_container_refs") != std::string::npos);

  OctaviaListener have;
  have.default_tls_container_ref = "https://kms/v1/containers/ann";
  have.sni_container_refs = {"https://kms/v1/containers/b", "https://kms/v1/containers/a"};
  Json upd = Json::object();
  CHECK_FALSE(addListenerTlsChanges(upd, have, *s));  // SNI compared as a set
  have.default_tls_container_ref = "https://kms/v1/containers/old";
  CHECK(addListenerTlsChanges(upd, have, *s));
  CHECK(upd.dump().find("containers/ann") != std::string::npos);

  svc.ports.push_back({"dns", "UDP", 53, 30053, "", ""});
  ccm::sdk::Status ports = checkTlsPorts(*s, svc);
  CHECK(ports.code() == CCM_STATUS_INVALID_ARGUMENT);
  CHECK(ports.message().find("port 53 is UDP") != std::string::npos);

  // An empty annotation turns the config's default off; SNI alone is refused.
  svc.annotations = {{"loadbalancer.openstack.org/default-tls-container-ref", ""}};
  s = buildLbSettings(cfg, "prod", svc);
  REQUIRE(s.ok());
  CHECK_FALSE(tlsTerminated(*s));
  svc.annotations.emplace("loadbalancer.openstack.org/sni-container-refs",
                          "https://kms/v1/containers/a");
  auto sni_only = buildLbSettings(cfg, "prod", svc);
  CHECK(sni_only.status().code() == CCM_STATUS_INVALID_ARGUMENT);
}
