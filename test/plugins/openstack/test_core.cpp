// Unit tests of the plugin's core helpers, linked directly: gcfg values, text and IP helpers,
// the address rules, provider IDs, Keystone bodies and catalog, load balancer settings.
#include <doctest/doctest.h>

#include "plugins/openstack/gcfg_values.hpp"
#include "plugins/openstack/instances.hpp"
#include "plugins/openstack/ip_address.hpp"
#include "plugins/openstack/keystone.hpp"
#include "plugins/openstack/lb_dual_stack.hpp"
#include "plugins/openstack/lb_settings.hpp"
#include "plugins/openstack/node_addresses.hpp"
#include "plugins/openstack/routes.hpp"
#include "plugins/openstack/text.hpp"

using namespace ccm::openstack;
using std::chrono::nanoseconds;

TEST_CASE("gcfg booleans, integers and Go durations") {
  for (const char* t : {"true", "YES", "On", "1"}) {
    CHECK(parseGcfgBool(t) == true);
  }
  for (const char* f : {"false", "no", "OFF", "0"}) {
    CHECK(parseGcfgBool(f) == false);
  }
  CHECK_FALSE(parseGcfgBool("y").has_value());
  CHECK(parseGcfgInt("42") == 42);
  CHECK(parseGcfgInt("-7") == -7);
  CHECK(parseGcfgInt("0x1F") == 31);
  CHECK(parseGcfgInt("017") == 15);
  CHECK(parseGcfgInt("0") == 0);
  CHECK_FALSE(parseGcfgInt("09").has_value());
  CHECK_FALSE(parseGcfgInt("1e3").has_value());
  CHECK_FALSE(parseGcfgInt("").has_value());
  CHECK(parseGoDuration("5s") == std::chrono::seconds(5));
  CHECK(parseGoDuration("1m30s") == std::chrono::seconds(90));
  CHECK(parseGoDuration("1.5h") == std::chrono::minutes(90));
  CHECK(parseGoDuration("300ms") == std::chrono::milliseconds(300));
  CHECK(parseGoDuration("2us") == std::chrono::microseconds(2));
  CHECK(parseGoDuration("\xC2\xB5s") == std::nullopt);  // a unit needs a number
  CHECK(parseGoDuration("3\xC2\xB5s") == std::chrono::microseconds(3));
  CHECK(parseGoDuration("10ns") == nanoseconds(10));
  CHECK(parseGoDuration("-1s") == std::chrono::seconds(-1));
  CHECK(parseGoDuration("0") == nanoseconds(0));
  CHECK_FALSE(parseGoDuration("5").has_value());
  CHECK_FALSE(parseGoDuration("5 s").has_value());
  CHECK_FALSE(parseGoDuration("5d").has_value());
  CHECK_FALSE(parseGoDuration("").has_value());
}

TEST_CASE("text helpers") {
  CHECK(sanitizeZone("zone 1 (east)") == "zone-1-east");
  CHECK(sanitizeZone("..nova__") == "nova");
  CHECK(sanitizeZone(std::string(80, 'a')).size() == 63);
  CHECK(isValidLabelValue(""));
  CHECK(isValidLabelValue("m1.small"));
  CHECK_FALSE(isValidLabelValue("-x"));
  CHECK_FALSE(isValidLabelValue("a b"));
  CHECK_FALSE(isValidLabelValue(std::string(64, 'a')));
  CHECK(truncateUtf8("h\xC3\xA9llo", 2) == "h");  // never splits the two-byte é
  CHECK(truncateUtf8("abc", 10) == "abc");
  CHECK(quoteRegex("node-1.example") == "node-1\\.example");
  CHECK(urlEncode("a b/c=d") == "a%20b%2Fc%3Dd");
  CHECK(fnv1aHex("") == "811c9dc5");
  CHECK(splitAny(" a, b ,,c ", ",") == std::vector<std::string>{"a", "b", "c"});
}

TEST_CASE("IP addresses and CIDRs") {
  auto c = Cidr::parse("10.1.2.3/16");
  REQUIRE(c);
  CHECK(c->toString() == "10.1.0.0/16");
  CHECK(c->contains(*IpAddress::parse("10.1.255.1")));
  CHECK_FALSE(c->contains(*IpAddress::parse("10.2.0.1")));
  CHECK_FALSE(c->contains(*IpAddress::parse("fd00::1")));
  auto v6 = Cidr::parse("fd00:0:0:1::5/64");
  REQUIRE(v6);
  CHECK(v6->toString() == "fd00:0:0:1::/64");
  CHECK(ipFamilyOf("fd00::1") == 6);
  CHECK(ipFamilyOf("1.2.3.4/32") == 4);
  CHECK(ipFamilyOf("1.2.3.4/33") == 0);
  CHECK(ipFamilyOf("nope") == 0);
  CHECK_FALSE(Cidr::parse("10.0.0.0").has_value());
  CHECK_FALSE(Cidr::parse("10.0.0.0/").has_value());
}

TEST_CASE("provider IDs") {
  CHECK(parseProviderId("openstack:///abc")->server_id == "abc");
  CHECK(parseProviderId("openstack://R1/abc")->region == "R1");
  CHECK(parseProviderId("/abc")->server_id == "abc");
  CHECK(parseProviderId("R1/abc")->region == "R1");
  CHECK_FALSE(parseProviderId("abc").ok());
  CHECK_FALSE(parseProviderId("openstack:///a/b").ok());
  CHECK_FALSE(parseProviderId("gce:///abc").ok());
}

TEST_CASE("address rules: public networks replace, filtered networks remove, sort order") {
  Server s;
  s.addresses = {{"private", "10.0.0.5", 4, "fixed"},
                 {"private", "203.0.113.5", 4, "floating"},
                 {"ext", "10.0.0.5", 4, "fixed"},
                 {"other", "10.9.0.5", 4, "fixed"}};
  Port port;
  port.status = "ACTIVE";
  port.fixed_ips = {{"s", "10.0.0.5"}, {"s", "10.9.0.5"}};
  NetworkingConfig cfg;
  // Nothing configured: everything fixed is internal.
  auto a = mapNodeAddresses(s, {port}, {}, cfg);
  CHECK(a == std::vector<ccm::sdk::NodeAddress>{{"InternalIP", "10.0.0.5"},
                                      {"InternalIP", "10.9.0.5"},
                                      {"ExternalIP", "203.0.113.5"}});
  // "ext" is public: every earlier entry of 10.0.0.5 goes, then it is external.
  cfg.public_network_names = {"ext"};
  a = mapNodeAddresses(s, {port}, {}, cfg);
  CHECK(a == std::vector<ccm::sdk::NodeAddress>{{"InternalIP", "10.9.0.5"},
                                      {"ExternalIP", "10.0.0.5"},
                                      {"InternalIP", "10.0.0.5"},
                                      {"ExternalIP", "203.0.113.5"}});
  // Only "private" is internal: "other"'s address disappears, the Neutron one included.
  cfg.public_network_names.clear();
  cfg.internal_network_names = {"private"};
  a = mapNodeAddresses(s, {port}, {}, cfg);
  CHECK(a == std::vector<ccm::sdk::NodeAddress>{{"InternalIP", "10.0.0.5"}, {"ExternalIP", "203.0.113.5"}});

  std::vector<ccm::sdk::NodeAddress> sorted = {{"Hostname", "h"},
                                     {"InternalIP", "10.0.0.9"},
                                     {"ExternalIP", "203.0.113.1"},
                                     {"InternalIP", "10.0.0.2"},
                                     {"InternalIP", "192.168.1.1"}};
  sortNodeAddresses(sorted, {*Cidr::parse("203.0.113.0/24"), *Cidr::parse("10.0.0.0/8")});
  CHECK(sorted == std::vector<ccm::sdk::NodeAddress>{{"ExternalIP", "203.0.113.1"},
                                           {"InternalIP", "10.0.0.2"},
                                           {"InternalIP", "10.0.0.9"},
                                           {"Hostname", "h"},
                                           {"InternalIP", "192.168.1.1"}});
}

TEST_CASE("Keystone auth bodies") {
  GlobalConfig g;
  g.username = "u";
  g.password = "p";
  g.user_domain_name = "D";
  g.tenant_id = "t";
  CHECK(buildAuthBody(g).dump() ==
        R"({"auth":{"identity":{"methods":["password"],"password":{"user":{"name":"u",)"
        R"("domain":{"name":"D"},"password":"p"}}},"scope":{"project":{"id":"t"}}}})");
  GlobalConfig ac;
  ac.application_credential_id = "id";
  ac.application_credential_secret = "s";
  ac.tenant_id = "ignored";
  CHECK(buildAuthBody(ac).dump() == R"({"auth":{"identity":{"methods":["application_credential"],)"
                                    R"("application_credential":{"id":"id","secret":"s"}}}})");
  GlobalConfig tok;
  tok.token = "T";
  tok.password = "unused";
  tok.domain_name = "D";
  CHECK(buildAuthBody(tok).dump() ==
        R"({"auth":{"identity":{"methods":["token"],"token":{"id":"T"}},)"
        R"("scope":{"domain":{"name":"D"}}}})");
}

TEST_CASE("RFC 3339 times") {
  CHECK(parseRfc3339("1970-01-01T00:00:01Z") == 1000000000);
  CHECK(parseRfc3339("1970-01-01T00:00:01.5Z") == 1500000000);
  CHECK(parseRfc3339("1970-01-01T01:00:00+01:00") == 0);
  CHECK(parseRfc3339("2026-07-23T10:00:00.000000Z").has_value());
  CHECK_FALSE(parseRfc3339("yesterday").has_value());
}

TEST_CASE("catalog endpoint selection") {
  Catalog c;
  c.services = {{"compute",
                 "nova",
                 {{"public", "R1", "R1", "http://r1-public"},
                  {"internal", "", "R2", "http://r2-internal"},
                  {"public", "R2", "R2", "http://r2-public"}}},
                {"network", "neutron", {{"public", "R1", "R1", ""}}}};
  CHECK(*c.endpointFor("compute", "public", "R2") == "http://r2-public");
  CHECK(*c.endpointFor("compute", "internal", "R2") == "http://r2-internal");  // by region_id
  CHECK(*c.endpointFor("compute", "public", "") == "http://r1-public");
  CHECK(c.endpointFor("compute", "admin", "R1").status().code() == CCM_STATUS_NOT_FOUND);
  CHECK_FALSE(c.endpointFor("network", "public", "R1").ok());  // empty URL skipped
  CHECK_FALSE(c.endpointFor("volume", "public", "R1").ok());
}

TEST_CASE("load balancer names and settings precedence") {
  ccm::sdk::Service svc;
  svc.namespace_ = "ns";
  svc.name = "web";
  svc.uid = "12345678-90ab-cdef-1234-567890abcdef";
  LoadBalancerConfig cfg;
  cfg.subnet_id = "cfg-subnet";
  cfg.floating_network_id = "cfg-fip-net";
  cfg.classes["gold"] = LoadBalancerClass{"class-fip-net", "", "", "", "", "class-subnet", ""};
  auto s = buildLbSettings(cfg, "prod", svc);
  REQUIRE(s.ok());
  CHECK(s->lb_name == "kube_service_prod_ns_web");
  CHECK(s->legacy_name == "a1234567890abcdef1234567890abcde");
  CHECK(s->vip_subnet_id == "cfg-subnet");
  CHECK(s->floating_network_id == "cfg-fip-net");

  svc.annotations = {{"loadbalancer.openstack.org/class", "gold"},
                     {"loadbalancer.openstack.org/floating-network-id", "ann-fip-net"},
                     {"loadbalancer.openstack.org/subnet-id", "ann-subnet"}};
  s = buildLbSettings(cfg, "prod", svc);
  REQUIRE(s.ok());
  CHECK(s->floating_network_id == "class-fip-net");  // the class wins for floating IPs
  CHECK(s->vip_subnet_id == "ann-subnet");           // the annotation wins for the VIP

  svc.annotations = {{"loadbalancer.openstack.org/class", "silver"}};
  CHECK(buildLbSettings(cfg, "prod", svc).status().code() == CCM_STATUS_INVALID_ARGUMENT);

  svc.annotations = {{"loadbalancer.openstack.org/keep-floatingip", "yes"}};
  auto bad = buildLbSettings(cfg, "prod", svc);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("keep-floatingip") != std::string::npos);

  svc.annotations = {{"loadbalancer.openstack.org/health-monitor-timeout", "9"},
                     {"loadbalancer.openstack.org/health-monitor-delay", "3"},
                     {"loadbalancer.openstack.org/enable-health-monitor", "true"}};
  CHECK_FALSE(buildLbSettings(cfg, "prod", svc).ok());

  svc.annotations.clear();
  svc.name = std::string(300, 'x');
  s = buildLbSettings(cfg, "prod", svc);
  REQUIRE(s.ok());
  CHECK(s->lb_name.size() == 255);
}

TEST_CASE("route tags fit Neutron's 60 characters") {
  std::string tag = routeTag("a-very-long-cluster-name-that-goes-on-and-on",
                             "fd00:1234:5678:9abc:def0:1234:5678:9abc/128");
  CHECK(tag.size() <= 60);
  CHECK(tag.find('/') == std::string::npos);
  CHECK(routeTag("kubernetes", "10.244.1.0/24") != routeTag("other", "10.244.1.0/24"));
}

TEST_CASE("dual-stack helpers: policy from the JSON, families, IPv6 name, ingress order") {
  CHECK(ipFamilyPolicyOf(R"({"spec":{"ipFamilyPolicy":"RequireDualStack"}})") ==
        "RequireDualStack");
  CHECK(ipFamilyPolicyOf(R"({"spec":{}})").empty());
  CHECK(ipFamilyPolicyOf("not json").empty());
  CHECK(ipFamilyPolicyOf("").empty());

  ccm::sdk::Service svc;
  svc.ip_families = {"IPv4"};
  CHECK_FALSE(wantsDualStack(svc));
  svc.ip_families = {"IPv6", "IPv4"};
  CHECK(wantsDualStack(svc));
  svc.object_json = R"({"spec":{"ipFamilyPolicy":"PreferDualStack"}})";
  CHECK(wantsDualStack(svc));
  svc.object_json = R"({"spec":{"ipFamilyPolicy":"SingleStack"}})";
  CHECK_FALSE(wantsDualStack(svc));

  CHECK(ipv6LoadBalancerName("kube_service_k_ns_web") == "kube_service_k_ns_web_ipv6");
  std::string long_name(255, 'a');
  std::string v6 = ipv6LoadBalancerName(long_name);
  CHECK(v6.size() == 255);
  CHECK(v6.substr(250) == "_ipv6");

  ccm::sdk::LoadBalancerStatus st;
  st.ingress.push_back({"203.0.113.5", "", "VIP", {}});
  addIpv6Ingress(st, "fd00::5", true);
  REQUIRE(st.ingress.size() == 2);
  CHECK(st.ingress[0].ip == "fd00::5");
  CHECK(st.ingress[0].ip_mode == "VIP");
  ccm::sdk::LoadBalancerStatus named;
  named.ingress.push_back({"", "lb.example.com", "", {}});
  addIpv6Ingress(named, "fd00::5", false);
  CHECK(named.ingress.size() == 1);  // a published hostname stands for both families
}
