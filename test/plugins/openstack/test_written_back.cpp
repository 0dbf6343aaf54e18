// The load-balancer-id and load-balancer-address annotations this provider writes back (ABI
// 1.1) read again on later calls: a dual-stack Service keeps both families with them, and
// after its load balancer was deleted (the Service stopped being a LoadBalancer, which
// cannot remove annotations) the stale pair does not block a new load balancer, as it does
// with OCCM (#2751). An ID without the address (set by a user) still names a load balancer
// that must exist.
#include <doctest/doctest.h>

#include "test/plugins/openstack/test_support.hpp"

using namespace ccm::openstack::testing;

namespace {

const std::string kIdKey = "loadbalancer.openstack.org/load-balancer-id";
const std::string kAddressKey = "loadbalancer.openstack.org/load-balancer-address";

struct Fixture : SimFixture {
  Fixture() { addServerNode("node-1", "10.0.0.11", "fd00::11"); }

  Provider& p() { return provider(cloudConf(sim, "", std::string(kLbSection) + "\n")); }

  static Service web() {
    Service s;
    s.name = "web";
    s.ports = {{"http", "TCP", 80, 30080}};
    return s;
  }

  // The Service as the host has it after writing back the ensure's answer.
  Service writtenBack(Service s, const CallResult& r) {
    auto st = sim.state();
    REQUIRE(st["loadbalancers"].Size() >= 1);
    std::string id;
    for (const auto& lb : st["loadbalancers"].GetArray()) {
      if (str(lb, "name") == "kube_service_kubernetes_default_web") {
        id = str(lb, "id");
      }
    }
    REQUIRE_FALSE(id.empty());
    REQUIRE(r.lb_status.has_value());
    s.annotations.push_back({kIdKey, id});
    s.annotations.push_back({kAddressKey, (*r.lb_status)[0].ip});
    return s;
  }
};

}  // namespace

TEST_CASE_FIXTURE(Fixture,
                  "dual-stack: the written-back ID of its own load balancer pins nothing") {
  Service s = web();
  s.ip_families = {"IPv4", "IPv6"};
  s.object_json = ipFamilyPolicyJson("RequireDualStack");
  auto first = p().ensureSettled(s, nodes);
  REQUIRE_MESSAGE(first.ok(), first.error);
  REQUIRE(first.lb_status->size() == 2);
  Service annotated = writtenBack(s, first);
  auto again = p().ensureSettled(annotated, nodes);
  REQUIRE_MESSAGE(again.ok(), again.error);
  CHECK(again.lb_status->size() == 2);
  CHECK(sim.state()["loadbalancers"].Size() == 1);
}

TEST_CASE_FIXTURE(Fixture, "after the load balancer was deleted, the stale pair gets a new one") {
  auto first = p().ensureSettled(web(), nodes);
  REQUIRE_MESSAGE(first.ok(), first.error);
  Service annotated = writtenBack(web(), first);
  // The Service stopped being a LoadBalancer: its load balancer went, the annotations stayed.
  auto del = p().removeSettled(annotated);
  REQUIRE_MESSAGE(del.ok(), del.error);
  REQUIRE(sim.state()["loadbalancers"].Size() == 0);

  // A user's own stale ID (no address beside it) is still refused, naming it.
  Service users = web();
  users.annotations = {annotated.annotations.front()};
  auto refused = p().ensure(users, nodes);
  CHECK(refused.status == CCM_STATUS_FAILED_PRECONDITION);
  CHECK(refused.error.find("does not exist") != std::string::npos);
  CHECK(sim.state()["loadbalancers"].Size() == 0);

  // Back to LoadBalancer with the provider's own stale pair: a new load balancer.
  auto back = p().ensureSettled(annotated, nodes);
  REQUIRE_MESSAGE(back.ok(), back.error);
  auto st = sim.state();
  REQUIRE(st["loadbalancers"].Size() == 1);
  CHECK(str(st["loadbalancers"][0], "id") != annotated.annotations.front().second);
  CHECK(host.logged("names a load balancer that is gone"));
}
