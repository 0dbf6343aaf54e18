// The service controller against kubesim and the real fake-cloud.so: the finalizer, the
// ingress written from the cloud's answer, type changes and deletions cleaned up, host updates
// when nodes join and leave, retry-after and throttling from the cloud, classes ignored.
// Run by run_with_kubesim.py (see meson.build). Each test uses its own namespace, nodes and
// cloud state, and cleans up after itself.
#include <doctest/doctest.h>

#include "host/controllers/common/well_known.hpp"
#include "host/controllers/service/service_controller.hpp"
#include "host/log/log.hpp"
#include "test/support/controller_harness.hpp"
#include "test/support/live_harness.hpp"

namespace ccm::controllers::service {
namespace {

using ccm::testing::LiveHarness;
using ccm::testing::waitUntil;

std::unique_ptr<Controller> startController(LiveHarness& h) {
  return ccm::testing::startController(h, makeServiceController);
}

bool hasFinalizer(LiveHarness& h, const std::string& ns, const std::string& name) {
  auto svc = h.services().get(ns + "/" + name);
  return svc && svc->hasFinalizer(keys::kLoadBalancerCleanupFinalizer);
}

// Deletes the services (the controller removes the finalizers) and the nodes.
void cleanUp(LiveHarness& h, const std::string& ns, const std::vector<std::string>& services,
             const std::vector<std::string>& nodes) {
  for (const auto& s : services) {
    h.deleteService(ns, s);
  }
  CHECK(waitUntil([&] {
    for (const auto& s : services) {
      if (h.services().get(ns + "/" + s))
        return false;
    }
    return true;
  }));
  for (const auto& n : nodes) {
    h.deleteNode(n);
  }
  CHECK(waitUntil([&] {
    for (const auto& n : nodes) {
      if (h.nodes().get(n))
        return false;
    }
    return true;
  }));
}

}  // namespace

TEST_CASE(
    "a LoadBalancer service gets the finalizer, a cloud LB and its ingress; deletion cleans up") {
  LiveHarness h;
  h.createNamespace("svc-a");
  h.createNode("svc-a-n1");
  h.createNode("svc-a-n2");
  REQUIRE(waitUntil([&] { return h.nodes().get("svc-a-n2") != nullptr; }));
  auto c = startController(h);
  h.createService("svc-a", "web");
  REQUIRE(waitUntil([&] { return !h.ingressIp("svc-a", "web").empty(); }));
  CHECK(hasFinalizer(h, "svc-a", "web"));
  auto lb = h.cloudLb("svc-a", "web");
  REQUIRE(lb);
  CHECK(lb->ip == h.ingressIp("svc-a", "web"));
  CHECK(lb->nodes == std::vector<std::string>{"svc-a-n1", "svc-a-n2"});
  // Events are sent by the broadcaster's thread: wait for them.
  CHECK(waitUntil([&] {
    auto reasons = h.eventReasons("svc-a", "web");
    return reasons.count("EnsuringLoadBalancer") >= 1 && reasons.count("EnsuredLoadBalancer") >= 1;
  }));

  // Deleting it: the finalizer holds the object until the LB is gone.
  h.deleteService("svc-a", "web");
  REQUIRE(waitUntil([&] { return !h.services().get("svc-a/web"); }));
  CHECK_FALSE(h.cloudLb("svc-a", "web"));
  CHECK(h.cloud().lb_deletes == 1);
  CHECK(waitUntil([&] {
    auto reasons = h.eventReasons("svc-a", "web");
    return reasons.count("DeletingLoadBalancer") == 1 && reasons.count("DeletedLoadBalancer") == 1;
  }));
  cleanUp(h, "svc-a", {}, {"svc-a-n1", "svc-a-n2"});
  c->stop();
}

TEST_CASE("type changes away from and back to LoadBalancer; classes are ignored") {
  LiveHarness h;
  h.createNamespace("svc-b");
  auto c = startController(h);
  h.createService("svc-b", "flip");
  h.createService("svc-b", "classy", "LoadBalancer", R"(,"loadBalancerClass":"example.com/other")");
  REQUIRE(waitUntil([&] { return !h.ingressIp("svc-b", "flip").empty(); }));

  h.patchService("svc-b", "flip", R"({"spec":{"type":"ClusterIP"}})");
  REQUIRE(waitUntil([&] {
    return !h.cloudLb("svc-b", "flip") && !hasFinalizer(h, "svc-b", "flip") &&
           h.ingressIp("svc-b", "flip").empty();
  }));
  // NodePort keeps... nothing of ours either; back to LoadBalancer makes a new one.
  h.patchService("svc-b", "flip", R"({"spec":{"type":"LoadBalancer"}})");
  REQUIRE(waitUntil([&] { return !h.ingressIp("svc-b", "flip").empty(); }));
  CHECK(hasFinalizer(h, "svc-b", "flip"));
  CHECK(h.cloudLb("svc-b", "flip"));

  CHECK_FALSE(h.cloudLb("svc-b", "classy"));
  CHECK_FALSE(hasFinalizer(h, "svc-b", "classy"));
  CHECK(h.cloud().load_balancers.size() == 1);
  cleanUp(h, "svc-b", {"flip", "classy"}, {});
  CHECK(h.cloud().load_balancers.empty());
  c->stop();
}

TEST_CASE("--load-balancer-class: the claimed class and Services without one; others untouched") {
  LiveHarness h;
  h.options.load_balancer_classes = {"ccm.example.com/cloud"};
  h.createNamespace("svc-lbc");
  h.createNode("svc-lbc-n1");
  REQUIRE(waitUntil([&] { return h.nodes().get("svc-lbc-n1") != nullptr; }));
  // Another implementation's Service, already served by it (its own status), before ccm starts.
  h.createService("svc-lbc", "metallb", "LoadBalancer",
                  R"(,"loadBalancerClass":"metallb.io/metallb")");
  auto st = h.client().patch(kube::serviceStatusPath("svc-lbc", "metallb"),
                             kube::PatchType::Merge,
                             R"({"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.50"}]}}})");
  REQUIRE_MESSAGE(st.ok(), st.status().toString());
  auto c = startController(h);
  h.createService("svc-lbc", "plain");
  h.createService("svc-lbc", "claimed", "LoadBalancer",
                  R"(,"loadBalancerClass":"ccm.example.com/cloud")");
  REQUIRE(waitUntil([&] {
    return !h.ingressIp("svc-lbc", "plain").empty() && !h.ingressIp("svc-lbc", "claimed").empty();
  }));
  CHECK(hasFinalizer(h, "svc-lbc", "plain"));
  CHECK(hasFinalizer(h, "svc-lbc", "claimed"));
  auto lb = h.cloudLb("svc-lbc", "claimed");
  REQUIRE(lb);
  CHECK(lb->ip == h.ingressIp("svc-lbc", "claimed"));
  CHECK(lb->nodes == std::vector<std::string>{"svc-lbc-n1"});

  // A change to the other class's Service, then one to ours: once ours is through, the other
  // one has still been left alone (its status, no finalizer, no cloud load balancer, no event).
  h.patchService("svc-lbc", "metallb", R"({"metadata":{"annotations":{"example.com/a":"b"}}})");
  h.patchService("svc-lbc", "claimed", R"({"spec":{"ports":[{"name":"http","protocol":"TCP",)"
                                       R"("port":81,"targetPort":8080}]}})");
  REQUIRE(waitUntil([&] {
    auto l = h.cloudLb("svc-lbc", "claimed");
    return l && l->ensures >= 2;
  }));
  CHECK(h.ingressIp("svc-lbc", "metallb") == "192.0.2.50");
  CHECK_FALSE(hasFinalizer(h, "svc-lbc", "metallb"));
  CHECK_FALSE(h.cloudLb("svc-lbc", "metallb"));
  CHECK(h.eventReasons("svc-lbc", "metallb").empty());
  CHECK(h.cloud().load_balancers.size() == 2);

  cleanUp(h, "svc-lbc", {"plain", "claimed", "metallb"}, {"svc-lbc-n1"});
  CHECK(h.cloud().load_balancers.empty());
  c->stop();
}

TEST_CASE("nodes joining and leaving update every LB once; readiness flaps do nothing") {
  LiveHarness h;
  h.createNamespace("svc-c");
  h.createNode("svc-c-n1");
  REQUIRE(waitUntil([&] { return h.nodes().get("svc-c-n1") != nullptr; }));
  auto c = startController(h);
  std::vector<std::string> names;
  for (int i = 0; i < 8; ++i) {
    names.push_back("s" + std::to_string(i));
    h.createService("svc-c", names.back());
  }
  REQUIRE(waitUntil([&] {
    for (const auto& n : names) {
      if (h.ingressIp("svc-c", n).empty())
        return false;
    }
    return true;
  }));
  h.createNode("svc-c-n2");
  REQUIRE(waitUntil([&] {
    auto st = h.cloud();
    if (st.load_balancers.size() != names.size())
      return false;
    for (const auto& lb : st.load_balancers) {
      if (lb.nodes.size() != 2)
        return false;
    }
    return true;
  }));
  for (const auto& lb : h.cloud().load_balancers) {
    CHECK(lb.host_updates == 1);
  }
  // A readiness flap (status-only change) does not touch the load balancers.
  for (int round = 0; round < 3; ++round) {
    std::string status = round % 2 == 0 ? "False" : "True";
    auto r = h.client().patch(
        kube::nodeStatusPath("svc-c-n2"), kube::PatchType::Strategic,
        R"({"status":{"conditions":[{"type":"Ready","status":")" + status + R"("}]}})");
    REQUIRE_MESSAGE(r.ok(), r.status().toString());
  }
  h.deleteNode("svc-c-n1");
  REQUIRE(waitUntil([&] {
    for (const auto& lb : h.cloud().load_balancers) {
      if (lb.nodes != std::vector<std::string>{"svc-c-n2"})
        return false;
    }
    return true;
  }));
  for (const auto& lb : h.cloud().load_balancers) {
    CHECK(lb.host_updates == 2);
  }
  // The counter moves when the call has returned to the controller: wait for it.
  CHECK(waitUntil([&] {
    return h.registry.valueForTest("service_controller_loadbalancer_sync_total") ==
           2.0 * static_cast<double>(names.size());
  }));
  cleanUp(h, "svc-c", names, {"svc-c-n2"});
  c->stop();
}

TEST_CASE("the cloud's retry-after is honoured (faults and throttling)") {
  LiveHarness h(
      "faults:\n"
      "  - {op: ensureLoadBalancer, code: UNAVAILABLE, message: cloud API down, count: 2, "
      "retryAfter: 200ms}\n");
  h.createNamespace("svc-d");
  auto c = startController(h);
  h.createService("svc-d", "web");
  REQUIRE(waitUntil([&] { return !h.ingressIp("svc-d", "web").empty(); }));
  CHECK(waitUntil(
      [&] { return h.eventReasons("svc-d", "web").count("SyncLoadBalancerFailed") >= 1; }));
  // Throttled: 20 services against 5 calls/s with a 300 ms retry-after all get there.
  h.writeCloud("throttle: {qps: 5, burst: 2, retryAfter: 300ms}\n");
  REQUIRE(h.waitForCloudAnswer(Code::ResourceExhausted));
  std::vector<std::string> names;
  for (int i = 0; i < 20; ++i) {
    names.push_back("t" + std::to_string(i));
    h.createService("svc-d", names.back());
  }
  REQUIRE(waitUntil([&] {
    for (const auto& n : names) {
      if (h.ingressIp("svc-d", n).empty())
        return false;
    }
    return true;
  }));
  CHECK(h.cloud().load_balancers.size() == 21);
  CHECK(h.metricSum("ccm_provider_fake_cloud_throttled_total", "ensureLoadBalancer") > 0);
  h.writeCloud("");
  REQUIRE(h.waitForCloudAnswer(Code::Ok));
  names.push_back("web");
  cleanUp(h, "svc-d", names, {});
  CHECK(h.cloud().load_balancers.empty());
  c->stop();
}

TEST_CASE("a service whose finalizer is stripped before deletion still loses its LB") {
  LiveHarness h;
  h.createNamespace("svc-e");
  auto c = startController(h);
  h.createService("svc-e", "web");
  REQUIRE(waitUntil([&] { return !h.ingressIp("svc-e", "web").empty(); }));
  // Someone removes our finalizer, then deletes the service: it vanishes at once.
  h.patchService("svc-e", "web", R"({"metadata":{"finalizers":null}})");
  h.deleteService("svc-e", "web");
  REQUIRE(waitUntil([&] { return !h.services().get("svc-e/web"); }));
  REQUIRE(waitUntil([&] { return !h.cloudLb("svc-e", "web"); }));
  c->stop();
}

}  // namespace ccm::controllers::service
