// Load balancers with Octavia's ovn provider (lb-provider = ovn) through the ABI against the
// simulator, whose Octavia refuses what the ovn driver refuses (501): dual-stack gets the
// "<name>_ipv6" load balancer instead of an additional VIP, TLS termination, x-forwarded-for,
// proxy-protocol and another lb-method are refused with INVALID_ARGUMENT before anything is
// made, and an SCTP port's health monitor (ovn has TCP and UDP-CONNECT only) is left out.
#include <doctest/doctest.h>

#include <set>

#include "test/plugins/openstack/test_support.hpp"

using namespace ccm::openstack::testing;

namespace {

const std::string kName = "kube_service_kubernetes_default_web";

struct Fixture : SimFixture {
  Fixture() { addServerNode("node-1", "10.0.0.11", "fd00::11"); }

  Provider& ovn(const std::string& lb_extra = "") {
    return provider(cloudConf(
        sim, "", std::string(kLbSection) + "lb-provider = ovn\n" + lb_extra + "\n# ovn\n"));
  }

  static Service web() {
    Service s;
    s.name = "web";
    s.ports = {{"http", "TCP", 80, 30080}};
    return s;
  }

  // The Service is refused as INVALID_ARGUMENT naming `setting`, and Octavia was not asked
  // to make anything.
  void refusedBeforeAnything(Provider& p, const Service& s, const std::string& setting) {
    sim.clearRequests();
    auto r = p.ensure(s, nodes);
    CHECK(r.status == CCM_STATUS_INVALID_ARGUMENT);
    CHECK_MESSAGE(r.error.find(setting) != std::string::npos, r.error);
    CHECK_MESSAGE(r.error.find("ovn provider") != std::string::npos, r.error);
    CHECK(countMutations(sim) == 0);
    CHECK(sim.state()["loadbalancers"].Size() == 0);
  }
};

}  // namespace

TEST_CASE_FIXTURE(Fixture, "ovn dual-stack: a second load balancer, no additional VIP") {
  Service s = web();
  s.ip_families = {"IPv4", "IPv6"};
  s.object_json = ipFamilyPolicyJson("RequireDualStack");
  auto r = ovn().ensureSettled(s, nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  REQUIRE(r.lb_status->size() == 2);
  CHECK((*r.lb_status)[1].ip.rfind("fd00::", 0) == 0);
  auto st = sim.state();
  std::set<std::string> names;
  for (const auto& lb : st["loadbalancers"].GetArray()) {
    names.insert(str(lb, "name"));
    CHECK(str(lb, "provider") == "ovn");
    CHECK(lb["additional_vips"].Size() == 0);
  }
  CHECK(names == std::set<std::string>{kName, kName + "_ipv6"});
  const auto* pool = byName(st, "pools", "pool_0_" + kName + "_ipv6");
  REQUIRE(pool != nullptr);
  CHECK(str(*pool, "lb_algorithm") == "SOURCE_IP_PORT");

  auto del = ovn().removeSettled(s);
  REQUIRE_MESSAGE(del.ok(), del.error);
  CHECK(sim.state()["loadbalancers"].Size() == 0);
}

TEST_CASE_FIXTURE(Fixture, "ovn: TLS termination is refused before anything is made") {
  std::string ref = str(sim.post("/_sim/barbican/containers", "{}"), "container_ref");
  Service s = web();
  s.annotations = {{"loadbalancer.openstack.org/default-tls-container-ref", ref}};
  refusedBeforeAnything(ovn(), s, "default-tls-container-ref");
  refusedBeforeAnything(ovn("default-tls-container-ref = " + ref + "\n"), web(),
                        "[LoadBalancer] default-tls-container-ref");
}

TEST_CASE_FIXTURE(Fixture, "ovn: x-forwarded-for, proxy-protocol and lb-method are refused") {
  Service xff = web();
  xff.annotations = {{"loadbalancer.openstack.org/x-forwarded-for", "true"}};
  refusedBeforeAnything(ovn(), xff, "x-forwarded-for");
  Service proxy = web();
  proxy.annotations = {{"loadbalancer.openstack.org/proxy-protocol", "true"}};
  refusedBeforeAnything(ovn(), proxy, "proxy-protocol");
  refusedBeforeAnything(ovn("lb-method = ROUND_ROBIN\n"), web(), "lb-method = ROUND_ROBIN");
}

TEST_CASE_FIXTURE(Fixture, "ovn: TCP monitors are made, an SCTP port gets none") {
  Service s = web();
  s.ports.push_back({"sctp", "SCTP", 90, 30090});
  s.annotations = {{"loadbalancer.openstack.org/enable-health-monitor", "true"}};
  auto r = ovn().ensureSettled(s, nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  auto st = sim.state();
  std::set<std::string> types;
  for (const auto& m : st["healthmonitors"].GetArray()) {
    types.insert(str(m, "type"));
  }
  CHECK(types == std::set<std::string>{"TCP"});
  CHECK(host.logged("no health monitor of this type"));
  CHECK(st["listeners"].Size() == 2);
}
