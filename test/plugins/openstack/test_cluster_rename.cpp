// --cluster-name changed: the Service's load balancer, found through the load-balancer-id
// annotation written back under the old name, is renamed with its listeners, pools, monitors,
// tags and floating IP description (as OCCM does), then served as the Service's own; a shared
// one, one with another description or with manage-security-groups on is refused and left
// alone (another cluster's, with none of this cluster's nodes, is in test_load_balancers.cpp).
#include <doctest/doctest.h>

#include <vector>

#include "test/plugins/openstack/test_support.hpp"

using namespace ccm::openstack::testing;

namespace {

const std::string kOld = "kube_service_old_default_web";
const std::string kNew = "kube_service_new_default_web";

struct Fixture : SimFixture {
  Fixture() {
    for (int i = 1; i <= 2; ++i) {
      addServerNode("node-" + std::to_string(i), "10.0.0." + std::to_string(10 + i));
    }
  }

  Provider& p(const std::string& lb_extra = "") {
    return provider(cloudConf(sim, "", std::string(kLbSection) + lb_extra + "\n"));
  }

  static Service web(const std::string& lb_id = "") {
    Service s;
    s.name = "web";
    s.ports = {{"http", "TCP", 80, 30080}, {"dns", "UDP", 53, 30053}};
    s.annotations = {{"loadbalancer.openstack.org/enable-health-monitor", "true"}};
    if (!lb_id.empty()) {
      s.annotations.push_back({"loadbalancer.openstack.org/load-balancer-id", lb_id});
    }
    return s;
  }

  // The load balancer made under --cluster-name=old; its ID.
  std::string madeUnderOld(Provider& prov) {
    auto r = prov.ensureSettled(web(), nodes, 10, "old");
    REQUIRE_MESSAGE(r.ok(), r.error);
    auto st = sim.state();
    REQUIRE(st["loadbalancers"].Size() == 1);
    return str(st["loadbalancers"][0], "id");
  }

  static std::vector<std::string> names(const rapidjson::Document& st, const char* kind) {
    std::vector<std::string> out;
    for (const auto& o : st[kind].GetArray()) {
      out.push_back(str(o, "name"));
    }
    return out;
  }

  static bool hasTag(const rapidjson::Value& o, const std::string& tag) {
    for (const auto& t : o["tags"].GetArray()) {
      if (t.GetString() == tag) {
        return true;
      }
    }
    return false;
  }
};

}  // namespace

TEST_CASE_FIXTURE(Fixture, "the old cluster's load balancer is renamed and kept") {
  std::string id = madeUnderOld(p());
  auto before = sim.state();
  std::string fip = str(before["floatingips"][0], "floating_ip_address");
  size_t ports = before["ports"].Size();

  auto r = p().ensureSettled(web(id), nodes, 10, "new");
  REQUIRE_MESSAGE(r.ok(), r.error);
  REQUIRE(r.lb_status->size() == 1);
  CHECK((*r.lb_status)[0].ip == fip);
  CHECK(host.logged("Renaming the Service's load balancer"));

  auto st = sim.state();
  REQUIRE(st["loadbalancers"].Size() == 1);
  const auto& lb = st["loadbalancers"][0];
  CHECK(str(lb, "id") == id);
  CHECK(str(lb, "name") == kNew);
  CHECK(str(lb, "description") == "Kubernetes external service default/web from cluster new");
  CHECK(hasTag(lb, kNew));
  CHECK_FALSE(hasTag(lb, kOld));
  for (const char* kind : {"listeners", "pools", "healthmonitors"}) {
    auto n = names(st, kind);
    CHECK(n.size() == 2);
    for (const std::string& name : n) {
      CHECK_MESSAGE(name.ends_with("_" + kNew), name);
    }
  }
  for (const auto& l : st["listeners"].GetArray()) {
    CHECK(hasTag(l, kNew));
    CHECK_FALSE(hasTag(l, kOld));
  }
  REQUIRE(st["floatingips"].Size() == 1);
  CHECK(str(st["floatingips"][0], "description") ==
        "Floating IP for Kubernetes external service default/web from cluster new");
  CHECK(st["ports"].Size() == ports);

  // Now the Service's own: nothing more to change, and deleting it removes everything.
  sim.clearRequests();
  auto again = p().ensureSettled(web(id), nodes, 10, "new");
  REQUIRE_MESSAGE(again.ok(), again.error);
  CHECK(countMutations(sim) == 0);
  auto del = p().removeSettled(web(id), 10, "new");
  REQUIRE_MESSAGE(del.ok(), del.error);
  st = sim.state();
  CHECK(st["loadbalancers"].Size() == 0);
  CHECK(st["floatingips"].Size() == 0);
}

TEST_CASE_FIXTURE(Fixture, "a rename cut short is finished by the next call") {
  std::string id = madeUnderOld(p());
  // The first listener rename fails: the pools and monitors are renamed, the rest is not.
  sim.post("/_sim/fault", R"({"path":"/listeners/","method":"PUT","status":503,"count":1})");
  auto r = p().ensure(web(id), nodes, "new");
  CHECK_FALSE(r.ok());
  auto st = sim.state();
  CHECK(str(st["loadbalancers"][0], "name") == kOld);
  auto again = p().ensureSettled(web(id), nodes, 10, "new");
  REQUIRE_MESSAGE(again.ok(), again.error);
  st = sim.state();
  CHECK(str(st["loadbalancers"][0], "name") == kNew);
  for (const std::string& name : names(st, "listeners")) {
    CHECK_MESSAGE(name.ends_with("_" + kNew), name);
  }
}

TEST_CASE_FIXTURE(Fixture, "shared, re-described or with manage-security-groups: left alone") {
  std::string id = madeUnderOld(p());
  auto refused = [&](Provider& prov, const std::string& why) {
    sim.clearRequests();
    auto r = prov.ensure(web(id), nodes, "new");
    CHECK(r.status == CCM_STATUS_FAILED_PRECONDITION);
    CHECK_MESSAGE(r.error.find(why) != std::string::npos, r.error);
    CHECK(countMutations(sim) == 0);
    CHECK(str(sim.state()["loadbalancers"][0], "name") == kOld);
  };
  refused(p("manage-security-groups = true\n"), "manage-security-groups");

  sim.post("/_sim/set_lb",
           R"({"id":")" + id + R"(","tags":[")" + kOld + R"(","kube_service_old_default_api"]})");
  refused(p(), "other Services share it");

  sim.post("/_sim/set_lb",
           R"({"id":")" + id + R"(","tags":[")" + kOld + R"("],"description":"hand made"})");
  refused(p(), "its description is not");
}
