// The request shapes real clients send (kube-api-protocol.md 4.3 and 7.4): the cloud node and
// route controllers' node status patches, taint and finalizer patches, kubectl cordon, taint,
// label and patch, the service controller's status and finalizer patches, event and lease
// updates, applied to realistic objects.
#include <doctest/doctest.h>

#include <string>

#include "test/kubesim/patch/patch_test_util.hpp"

namespace ccm::kubesim {
namespace {

using testing::applied;
using testing::canonical;
using testing::smp;

// A node as the kubelet left it: uninitialized taint, four conditions, two addresses.
constexpr const char* kNode = R"({
  "kind":"Node","apiVersion":"v1",
  "metadata":{"name":"n1","uid":"6a0f2b7e-0000-4000-8000-000000000001","resourceVersion":"100",
    "creationTimestamp":"2026-07-24T09:00:00Z",
    "labels":{"kubernetes.io/hostname":"n1","kubernetes.io/os":"linux"},
    "annotations":{"node.alpha.kubernetes.io/ttl":"0"}},
  "spec":{"podCIDR":"10.244.1.0/24","podCIDRs":["10.244.1.0/24"],
    "taints":[{"key":"node.cloudprovider.kubernetes.io/uninitialized","value":"true","effect":"NoSchedule"},
              {"key":"node.kubernetes.io/not-ready","effect":"NoSchedule"}]},
  "status":{
    "capacity":{"cpu":"4","memory":"8Gi","pods":"110"},
    "conditions":[
      {"type":"MemoryPressure","status":"False","lastHeartbeatTime":"2026-07-24T10:00:00Z","lastTransitionTime":"2026-07-24T09:00:00Z","reason":"KubeletHasSufficientMemory","message":"kubelet has sufficient memory available"},
      {"type":"DiskPressure","status":"False","lastHeartbeatTime":"2026-07-24T10:00:00Z","lastTransitionTime":"2026-07-24T09:00:00Z","reason":"KubeletHasNoDiskPressure","message":"kubelet has no disk pressure"},
      {"type":"PIDPressure","status":"False","lastHeartbeatTime":"2026-07-24T10:00:00Z","lastTransitionTime":"2026-07-24T09:00:00Z","reason":"KubeletHasSufficientPID","message":"kubelet has sufficient PID available"},
      {"type":"Ready","status":"True","lastHeartbeatTime":"2026-07-24T10:00:00Z","lastTransitionTime":"2026-07-24T09:00:05Z","reason":"KubeletReady","message":"kubelet is posting ready status"}],
    "addresses":[{"type":"InternalIP","address":"10.0.0.4"},{"type":"Hostname","address":"n1"}],
    "daemonEndpoints":{"kubeletEndpoint":{"Port":10250}},
    "nodeInfo":{"kubeletVersion":"v1.36.0","operatingSystem":"linux","architecture":"amd64"},
    "images":[{"names":["registry.k8s.io/pause:3.10"],"sizeBytes":320368}]}})";

// kNode with the given spec and status parts replaced, for expected results.
std::string node(std::string_view metadataExtra, std::string_view spec, std::string_view conditions,
                 std::string_view addresses) {
  std::string out = R"({"kind":"Node","apiVersion":"v1",
    "metadata":{"name":"n1","uid":"6a0f2b7e-0000-4000-8000-000000000001","resourceVersion":"100",
      "creationTimestamp":"2026-07-24T09:00:00Z",
      "labels":{"kubernetes.io/hostname":"n1","kubernetes.io/os":"linux"},
      "annotations":{"node.alpha.kubernetes.io/ttl":"0"})";
  out += metadataExtra;
  out += R"(},"spec":)";
  out += spec;
  out += R"(,"status":{"capacity":{"cpu":"4","memory":"8Gi","pods":"110"},"conditions":)";
  out += conditions;
  out += R"(,"addresses":)";
  out += addresses;
  out += R"(,"daemonEndpoints":{"kubeletEndpoint":{"Port":10250}},
    "nodeInfo":{"kubeletVersion":"v1.36.0","operatingSystem":"linux","architecture":"amd64"},
    "images":[{"names":["registry.k8s.io/pause:3.10"],"sizeBytes":320368}]}})";
  return out;
}

constexpr const char* kSpec = R"({"podCIDR":"10.244.1.0/24","podCIDRs":["10.244.1.0/24"],
    "taints":[{"key":"node.cloudprovider.kubernetes.io/uninitialized","value":"true","effect":"NoSchedule"},
              {"key":"node.kubernetes.io/not-ready","effect":"NoSchedule"}]})";
constexpr const char* kMemory =
    R"({"type":"MemoryPressure","status":"False","lastHeartbeatTime":"2026-07-24T10:00:00Z","lastTransitionTime":"2026-07-24T09:00:00Z","reason":"KubeletHasSufficientMemory","message":"kubelet has sufficient memory available"})";
constexpr const char* kDisk =
    R"({"type":"DiskPressure","status":"False","lastHeartbeatTime":"2026-07-24T10:00:00Z","lastTransitionTime":"2026-07-24T09:00:00Z","reason":"KubeletHasNoDiskPressure","message":"kubelet has no disk pressure"})";
constexpr const char* kPid =
    R"({"type":"PIDPressure","status":"False","lastHeartbeatTime":"2026-07-24T10:00:00Z","lastTransitionTime":"2026-07-24T09:00:00Z","reason":"KubeletHasSufficientPID","message":"kubelet has sufficient PID available"})";
constexpr const char* kReady =
    R"({"type":"Ready","status":"True","lastHeartbeatTime":"2026-07-24T10:00:00Z","lastTransitionTime":"2026-07-24T09:00:05Z","reason":"KubeletReady","message":"kubelet is posting ready status"})";
constexpr const char* kAddresses =
    R"([{"type":"InternalIP","address":"10.0.0.4"},{"type":"Hostname","address":"n1"}])";

std::string conditions(std::initializer_list<std::string_view> items) {
  std::string out = "[";
  for (std::string_view item : items) {
    out += out.size() > 1 ? "," : "";
    out += item;
  }
  return out + "]";
}

constexpr const char* kNetworkUnavailable =
    R"({"type":"NetworkUnavailable","status":"False","lastHeartbeatTime":"2026-07-24T10:05:00Z","lastTransitionTime":"2026-07-24T10:05:00Z","reason":"RouteCreated","message":"RouteController created a route"})";

constexpr const char* kService = R"({
  "kind":"Service","apiVersion":"v1",
  "metadata":{"name":"web","namespace":"default","uid":"6a0f2b7e-0000-4000-8000-000000000002","resourceVersion":"200"},
  "spec":{"type":"LoadBalancer","selector":{"app":"web"},"clusterIP":"10.96.0.10","clusterIPs":["10.96.0.10"],
    "ports":[{"name":"http","protocol":"TCP","port":80,"targetPort":8080,"nodePort":30080}],
    "ipFamilies":["IPv4"],"ipFamilyPolicy":"SingleStack","externalTrafficPolicy":"Cluster"},
  "status":{"loadBalancer":{}}})";

constexpr const char* kFinalizer = "service.kubernetes.io/load-balancer-cleanup";

TEST_SUITE("kubesim-patch real requests") {
  TEST_CASE("route controller: NetworkUnavailable with $setElementOrder, addresses replaced") {
    std::string body = R"({"status":{
        "$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"DiskPressure"},
          {"type":"PIDPressure"},{"type":"Ready"},{"type":"NetworkUnavailable"}],
        "conditions":[)" +
                       std::string(kNetworkUnavailable) + R"(],
        "addresses":[{"type":"InternalIP","address":"10.0.0.5"},{"type":"Hostname","address":"n1"},
          {"$patch":"replace"}]}})";
    CHECK_EQ(
        smp("Node", kNode, body),
        canonical(node("", kSpec, conditions({kMemory, kDisk, kPid, kReady, kNetworkUnavailable}),
                       R"([{"type":"InternalIP","address":"10.0.0.5"},
                                {"type":"Hostname","address":"n1"}])")));
  }

  TEST_CASE("route controller again: the existing condition is updated in place") {
    std::string first = R"({"status":{
        "$setElementOrder/conditions":[{"type":"NetworkUnavailable"},{"type":"MemoryPressure"},
          {"type":"DiskPressure"},{"type":"PIDPressure"},{"type":"Ready"}],
        "conditions":[)" +
                        std::string(kNetworkUnavailable) + R"(]}})";
    std::string afterFirst = smp("Node", kNode, first);
    CHECK_EQ(
        afterFirst,
        canonical(node("", kSpec, conditions({kNetworkUnavailable, kMemory, kDisk, kPid, kReady}),
                       kAddresses)));
    std::string second = R"({"status":{
        "$setElementOrder/conditions":[{"type":"NetworkUnavailable"},{"type":"MemoryPressure"},
          {"type":"DiskPressure"},{"type":"PIDPressure"},{"type":"Ready"}],
        "conditions":[{"type":"NetworkUnavailable","status":"True","reason":"NoRouteCreated",
                       "message":"RouteController failed to create a route",
                       "lastTransitionTime":"2026-07-24T10:06:00Z"}]}})";
    constexpr const char* kUpdated =
        R"({"type":"NetworkUnavailable","status":"True","lastHeartbeatTime":"2026-07-24T10:05:00Z","lastTransitionTime":"2026-07-24T10:06:00Z","reason":"NoRouteCreated","message":"RouteController failed to create a route"})";
    CHECK_EQ(smp("Node", afterFirst, second),
             canonical(node("", kSpec, conditions({kUpdated, kMemory, kDisk, kPid, kReady}),
                            kAddresses)));
  }

  TEST_CASE("cloud node controller: addresses with several entries of one type replaced") {
    constexpr const char* kAddressPatch = R"({"status":{"addresses":[
        {"type":"InternalIP","address":"10.0.0.4"},{"type":"InternalIP","address":"10.0.0.14"},
        {"type":"ExternalIP","address":"203.0.113.4"},{"type":"Hostname","address":"n1"},
        {"$patch":"replace"}]}})";
    std::string once = smp("Node", kNode, kAddressPatch);
    CHECK_EQ(once, canonical(node("", kSpec, conditions({kMemory, kDisk, kPid, kReady}),
                                  R"([{"type":"InternalIP","address":"10.0.0.4"},
                                      {"type":"InternalIP","address":"10.0.0.14"},
                                      {"type":"ExternalIP","address":"203.0.113.4"},
                                      {"type":"Hostname","address":"n1"}])")));
    // Idempotent, and removing an address works because the list is replaced.
    CHECK_EQ(smp("Node", once, kAddressPatch), once);
    CHECK_EQ(smp("Node", once, R"({"status":{"addresses":[
                 {"type":"InternalIP","address":"10.0.0.4"},{"type":"Hostname","address":"n1"},
                 {"$patch":"replace"}]}})"),
             canonical(node("", kSpec, conditions({kMemory, kDisk, kPid, kReady}), kAddresses)));
  }

  TEST_CASE("kubelet heartbeat: conditions merged with $setElementOrder, nothing else touched") {
    std::string body = R"({"status":{
        "$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"DiskPressure"},
          {"type":"PIDPressure"},{"type":"Ready"}],
        "conditions":[{"lastHeartbeatTime":"2026-07-24T10:00:40Z","type":"MemoryPressure"},
                      {"lastHeartbeatTime":"2026-07-24T10:00:40Z","type":"DiskPressure"},
                      {"lastHeartbeatTime":"2026-07-24T10:00:40Z","type":"PIDPressure"},
                      {"lastHeartbeatTime":"2026-07-24T10:00:40Z","type":"Ready"}]}})";
    std::string result = smp("Node", kNode, body);
    std::string expected = node("", kSpec, conditions({kMemory, kDisk, kPid, kReady}), kAddresses);
    for (size_t at = expected.find("10:00:00Z"); at != std::string::npos;
         at = expected.find("10:00:00Z", at)) {
      expected.replace(at, 9, "10:00:40Z");
    }
    CHECK_EQ(result, canonical(expected));
  }

  TEST_CASE("taints: full list with the resourceVersion precondition field") {
    // cloud-provider's taint removal after initialisation.
    CHECK_EQ(smp("Node", kNode,
                 R"({"metadata":{"resourceVersion":"100"},
                     "spec":{"taints":[{"key":"node.kubernetes.io/not-ready","effect":"NoSchedule"}]}})"),
             canonical(node("",
                            R"({"podCIDR":"10.244.1.0/24","podCIDRs":["10.244.1.0/24"],
                                "taints":[{"key":"node.kubernetes.io/not-ready","effect":"NoSchedule"}]})",
                            conditions({kMemory, kDisk, kPid, kReady}), kAddresses)));
    // kubectl taint nodes n1 dedicated=gpu:NoSchedule: the complete new list.
    CHECK_EQ(smp("Node", kNode,
                 R"({"spec":{"taints":[
                     {"effect":"NoSchedule","key":"node.cloudprovider.kubernetes.io/uninitialized","value":"true"},
                     {"effect":"NoSchedule","key":"node.kubernetes.io/not-ready"},
                     {"effect":"NoSchedule","key":"dedicated","value":"gpu"}]}})"),
             canonical(node("",
                            R"({"podCIDR":"10.244.1.0/24","podCIDRs":["10.244.1.0/24"],
                                "taints":[{"key":"node.cloudprovider.kubernetes.io/uninitialized","value":"true","effect":"NoSchedule"},
                                          {"key":"node.kubernetes.io/not-ready","effect":"NoSchedule"},
                                          {"key":"dedicated","value":"gpu","effect":"NoSchedule"}]})",
                            conditions({kMemory, kDisk, kPid, kReady}), kAddresses)));
    // Removing every taint: the generated patch sets the list to null.
    CHECK_EQ(smp("Node", kNode, R"({"spec":{"taints":null}})"),
             canonical(node("", R"({"podCIDR":"10.244.1.0/24","podCIDRs":["10.244.1.0/24"]})",
                            conditions({kMemory, kDisk, kPid, kReady}), kAddresses)));
  }

  TEST_CASE("kubectl cordon and uncordon") {
    std::string cordoned = smp("Node", kNode, R"({"spec":{"unschedulable":true}})");
    CHECK_EQ(cordoned,
             canonical(node(
                 "",
                 R"({"podCIDR":"10.244.1.0/24","podCIDRs":["10.244.1.0/24"],"unschedulable":true,
                                "taints":[{"key":"node.cloudprovider.kubernetes.io/uninitialized","value":"true","effect":"NoSchedule"},
                                          {"key":"node.kubernetes.io/not-ready","effect":"NoSchedule"}]})",
                 conditions({kMemory, kDisk, kPid, kReady}), kAddresses)));
    CHECK_EQ(smp("Node", cordoned, R"({"spec":{"unschedulable":null}})"), canonical(kNode));
  }

  TEST_CASE("kubectl label and annotate (merge patch) and kubectl patch (all types)") {
    std::string labelled =
        applied(PatchType::Merge, "Node", kNode, R"({"metadata":{"labels":{"zone":"a"}}})");
    CHECK(labelled.find(R"("zone":"a")") != std::string::npos);
    CHECK(labelled.find(R"("kubernetes.io/hostname":"n1")") != std::string::npos);
    CHECK_EQ(
        applied(PatchType::Merge, "Node", labelled, R"({"metadata":{"labels":{"zone":null}}})"),
        canonical(kNode));
    CHECK_EQ(
        applied(PatchType::Json, "Node", kNode,
                R"([{"op":"add","path":"/metadata/annotations/example.com~1owner","value":"me"},
                         {"op":"remove","path":"/metadata/annotations/example.com~1owner"}])"),
        canonical(kNode));
    // The Python client sends a list body as JSON patch.
    std::string viaJson = applied(PatchType::Json, "Node", kNode,
                                  R"([{"op":"add","path":"/spec/unschedulable","value":true}])");
    CHECK_EQ(viaJson, smp("Node", kNode, R"({"spec":{"unschedulable":true}})"));
  }

  TEST_CASE("service controller: finalizer added and removed on /status") {
    std::string added =
        smp("Service", kService,
            std::string(R"({"metadata":{"finalizers":[")") + kFinalizer + R"("]}})");
    CHECK(added.find(std::string(R"("finalizers":[")") + kFinalizer + R"("])") !=
          std::string::npos);
    // Removing the last finalizer leaves no finalizers field, as on a real server.
    CHECK_EQ(smp("Service", added,
                 std::string(R"({"metadata":{"$deleteFromPrimitiveList/finalizers":[")") +
                     kFinalizer + R"("]}})"),
             canonical(kService));
    // With another finalizer present the generated patches carry $setElementOrder.
    std::string withOther =
        smp("Service", kService, R"({"metadata":{"finalizers":["example.com/keep"]}})");
    std::string both =
        smp("Service", withOther,
            std::string(R"({"metadata":{"$setElementOrder/finalizers":["example.com/keep",")") +
                kFinalizer + R"("],"finalizers":[")" + kFinalizer + R"("]}})");
    CHECK(both.find(std::string(R"("finalizers":["example.com/keep",")") + kFinalizer + R"("])") !=
          std::string::npos);
    CHECK_EQ(smp("Service", both,
                 std::string(R"({"metadata":{"$deleteFromPrimitiveList/finalizers":[")") +
                     kFinalizer + R"("],"$setElementOrder/finalizers":["example.com/keep"]}})"),
             withOther);
  }

  TEST_CASE("service controller: load balancer status replaces the ingress list") {
    std::string withIngress = smp(
        "Service", kService, R"({"status":{"loadBalancer":{"ingress":[{"ip":"203.0.113.7"}]}}})");
    CHECK(withIngress.find(R"("status":{"loadBalancer":{"ingress":[{"ip":"203.0.113.7"}]}})") !=
          std::string::npos);
    std::string moved =
        smp("Service", withIngress,
            R"({"status":{"loadBalancer":{"ingress":[{"ip":"203.0.113.8","ipMode":"VIP"},
                                                                     {"hostname":"lb.example.com"}]}}})");
    CHECK(moved.find(
              R"("ingress":[{"ip":"203.0.113.8","ipMode":"VIP"},{"hostname":"lb.example.com"}])") !=
          std::string::npos);
    CHECK_EQ(smp("Service", moved, R"({"status":{"loadBalancer":{"ingress":null}}})"),
             canonical(kService));
  }

  TEST_CASE("service ports merge by port") {
    std::string result = smp("Service", kService,
                             R"({"spec":{"$setElementOrder/ports":[{"port":80},{"port":443}],
                        "ports":[{"name":"https","port":443,"protocol":"TCP","targetPort":8443}]}})");
    CHECK(
        result.find(
            R"("ports":[{"name":"http","nodePort":30080,"port":80,"protocol":"TCP","targetPort":8080},{"name":"https","port":443,"protocol":"TCP","targetPort":8443}])") !=
        std::string::npos);
  }

  TEST_CASE("event recorder count bump and lease renewal") {
    constexpr const char* kEvent = R"({"kind":"Event","apiVersion":"v1",
      "metadata":{"name":"n1.17f0","namespace":"default"},
      "involvedObject":{"kind":"Node","name":"n1","uid":"u1"},"reason":"Synced","message":"m1",
      "count":1,"firstTimestamp":"2026-07-24T10:00:00Z","lastTimestamp":"2026-07-24T10:00:00Z",
      "type":"Normal","source":{"component":"cloud-node-controller"}})";
    CHECK_EQ(smp("Event", kEvent,
                 R"({"count":2,"lastTimestamp":"2026-07-24T10:01:00Z","message":"m2"})"),
             canonical(R"({"kind":"Event","apiVersion":"v1",
      "metadata":{"name":"n1.17f0","namespace":"default"},
      "involvedObject":{"kind":"Node","name":"n1","uid":"u1"},"reason":"Synced","message":"m2",
      "count":2,"firstTimestamp":"2026-07-24T10:00:00Z","lastTimestamp":"2026-07-24T10:01:00Z",
      "type":"Normal","source":{"component":"cloud-node-controller"}})"));
    constexpr const char* kLease = R"({"kind":"Lease","apiVersion":"coordination.k8s.io/v1",
      "metadata":{"name":"ccm","namespace":"kube-system"},
      "spec":{"holderIdentity":"a","leaseDurationSeconds":15,
              "acquireTime":"2026-07-24T10:00:00.000000Z","renewTime":"2026-07-24T10:00:00.000000Z"}})";
    CHECK_EQ(smp("Lease", kLease, R"({"spec":{"renewTime":"2026-07-24T10:00:02.123456Z"}})"),
             canonical(R"({"kind":"Lease","apiVersion":"coordination.k8s.io/v1",
      "metadata":{"name":"ccm","namespace":"kube-system"},
      "spec":{"holderIdentity":"a","leaseDurationSeconds":15,
              "acquireTime":"2026-07-24T10:00:00.000000Z","renewTime":"2026-07-24T10:00:02.123456Z"}})"));
  }
}

}  // namespace
}  // namespace ccm::kubesim
