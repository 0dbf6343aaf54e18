// Unit tests of application/strategic-merge-patch+json: map merging and null deletion, atomic
// lists, lists merged by key, scalar sets, every directive ($patch in maps and as list elements,
// $setElementOrder, $deleteFromPrimitiveList, $retainKeys), ordering, and the error answers.
#include <doctest/doctest.h>

#include <string>

#include "kubesim/patch/patch_schema.hpp"
#include "test/kubesim/patch/patch_test_util.hpp"

namespace ccm::kubesim {
namespace {

using testing::canonical;
using testing::rejected;
using testing::smp;

PatchError smpRejected(std::string_view kind, std::string_view target, std::string_view body,
                       std::string* detail = nullptr) {
  return rejected(PatchType::Strategic, kind, target, body, detail);
}

constexpr const char* kConditions =
    R"({"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"},
                                {"type":"MemoryPressure","status":"False"},
                                {"type":"DiskPressure","status":"False","message":"ok"}]}})";

TEST_SUITE("kubesim-patch strategic merge patch") {
  TEST_CASE("maps merge recursively; null deletes; unknown keys are added") {
    CHECK_EQ(smp("Node",
                 R"({"metadata":{"name":"n1","labels":{"a":"1","b":"2"}},"spec":{"podCIDR":"p"}})",
                 R"({"metadata":{"labels":{"a":null,"c":"3"}},"spec":{"providerID":"x://1",
                     "missing":null}})"),
             canonical(R"({"metadata":{"name":"n1","labels":{"b":"2","c":"3"}},
                           "spec":{"podCIDR":"p","providerID":"x://1"}})"));
    // Service spec.selector is mapType=atomic for SSA, but strategic merge still merges it.
    CHECK_EQ(smp("Service", R"({"spec":{"selector":{"app":"a","tier":"web"}}})",
                 R"({"spec":{"selector":{"tier":"db"}}})"),
             canonical(R"({"spec":{"selector":{"app":"a","tier":"db"}}})"));
  }

  TEST_CASE("new values lose their nulls and the maps that carry $patch") {
    CHECK_EQ(smp("Node", R"({"spec":{}})",
                 R"({"spec":{"configSource":{"configMap":{"name":"x","namespace":null}},
                             "gone":{"$patch":"delete"},"alsoGone":{"$patch":"replace","a":1},
                             "list":[{"a":1,"b":null},{"$patch":"delete"}]}})"),
             canonical(R"({"spec":{"configSource":{"configMap":{"name":"x"}},"list":[{"a":1}]}})"));
  }

  TEST_CASE("a value of another type replaces") {
    CHECK_EQ(smp("Node", R"({"spec":{"a":"s"}})", R"({"spec":{"a":{"b":1,"c":null}}})"),
             canonical(R"({"spec":{"a":{"b":1}}})"));
    CHECK_EQ(smp("Node", R"({"spec":{"a":{"b":1}}})", R"({"spec":{"a":[1]}})"),
             canonical(R"({"spec":{"a":[1]}})"));
    CHECK_EQ(smp("Node", R"({"spec":{"a":[1]}})", R"({"spec":{"a":"x"}})"),
             canonical(R"({"spec":{"a":"x"}})"));
    CHECK_EQ(smp("Node", R"({"spec":{"a":3}})", R"({"spec":{"a":3.5}})"),
             canonical(R"({"spec":{"a":3.5}})"));
  }

  TEST_CASE("lists without a merge strategy are atomic") {
    CHECK_EQ(smp("Node",
                 R"({"spec":{"taints":[{"key":"a","effect":"NoSchedule"},
                                       {"key":"b","effect":"NoExecute"}]}})",
                 R"({"spec":{"taints":[{"key":"c","value":null,"effect":"NoSchedule"}]}})"),
             canonical(R"({"spec":{"taints":[{"key":"c","effect":"NoSchedule"}]}})"));
    CHECK_EQ(smp("Node", R"({"status":{"images":[{"names":["a"]},{"names":["b"]}]}})",
                 R"({"status":{"images":[{"names":["c"]}]}})"),
             canonical(R"({"status":{"images":[{"names":["c"]}]}})"));
    CHECK_EQ(smp("Service",
                 R"({"spec":{"externalIPs":["1.1.1.1","2.2.2.2"],"clusterIPs":["10.0.0.1"],
                             "ipFamilies":["IPv4"]}})",
                 R"({"spec":{"externalIPs":["3.3.3.3"],"clusterIPs":["10.0.0.2","fd00::2"],
                             "ipFamilies":["IPv4","IPv6"]}})"),
             canonical(R"({"spec":{"externalIPs":["3.3.3.3"],"clusterIPs":["10.0.0.2","fd00::2"],
                                   "ipFamilies":["IPv4","IPv6"]}})"));
    CHECK_EQ(
        smp("Service",
            R"({"status":{"loadBalancer":{"ingress":[{"hostname":"a.example"},{"ip":"1.2.3.4"}]}}})",
            R"({"status":{"loadBalancer":{"ingress":[{"ip":"5.6.7.8"}]}}})"),
        canonical(R"({"status":{"loadBalancer":{"ingress":[{"ip":"5.6.7.8"}]}}})"));
    CHECK_EQ(smp("Endpoints", R"({"subsets":[{"addresses":[{"ip":"1.1.1.1"}]}]})",
                 R"({"subsets":[{"addresses":[{"ip":"2.2.2.2"}]}]})"),
             canonical(R"({"subsets":[{"addresses":[{"ip":"2.2.2.2"}]}]})"));
    CHECK_EQ(
        smp("EndpointSlice", R"({"endpoints":[{"addresses":["1.1.1.1"]}],"ports":[{"port":80}]})",
            R"({"endpoints":[{"addresses":["2.2.2.2"]}]})"),
        canonical(R"({"endpoints":[{"addresses":["2.2.2.2"]}],"ports":[{"port":80}]})"));
    CHECK_EQ(smp("Namespace", R"({"spec":{"finalizers":["kubernetes"]}})",
                 R"({"spec":{"finalizers":["other"]}})"),
             canonical(R"({"spec":{"finalizers":["other"]}})"));
    CHECK_EQ(smp("Pod", R"({"spec":{"tolerations":[{"key":"a"}]}})",
                 R"({"spec":{"tolerations":[{"key":"b"}]}})"),
             canonical(R"({"spec":{"tolerations":[{"key":"b"}]}})"));
    CHECK_EQ(
        smp("ClusterRole", R"({"rules":[{"verbs":["get"]}]})", R"({"rules":[{"verbs":["list"]}]})"),
        canonical(R"({"rules":[{"verbs":["list"]}]})"));
  }

  TEST_CASE("unknown kinds: every list is atomic except the metadata ones") {
    CHECK_EQ(smp("Widget",
                 R"({"metadata":{"finalizers":["a"],"ownerReferences":[{"uid":"1","name":"x"}]},
                     "status":{"conditions":[{"type":"A"}]}})",
                 R"({"metadata":{"$setElementOrder/finalizers":["a","b"],"finalizers":["b"],
                                 "ownerReferences":[{"uid":"1","controller":true}]},
                     "status":{"conditions":[{"type":"B"}]}})"),
             canonical(R"({"metadata":{"finalizers":["a","b"],
                                       "ownerReferences":[{"uid":"1","name":"x","controller":true}]},
                           "status":{"conditions":[{"type":"B"}]}})"));
    CHECK_EQ(smp("ConfigMap", R"({"data":{"a":"1","b":"2"}})", R"({"data":{"b":null,"c":"3"}})"),
             canonical(R"({"data":{"a":"1","c":"3"}})"));
  }

  TEST_CASE("lists merge by key: matched items merge, others stay, new items go first") {
    CHECK_EQ(smp("Node", kConditions,
                 R"({"status":{"conditions":[{"type":"DiskPressure","status":"True","message":null},
                                             {"type":"PIDPressure","status":"False"}]}})"),
             canonical(R"({"status":{"conditions":[
                 {"type":"Ready","status":"True","reason":"KubeletReady"},
                 {"type":"MemoryPressure","status":"False"},
                 {"type":"DiskPressure","status":"True"},
                 {"type":"PIDPressure","status":"False"}]}})"));
    // Without $setElementOrder a new item goes before the live items that follow it in no order.
    CHECK_EQ(smp("Node", kConditions,
                 R"({"status":{"conditions":[{"type":"NetworkUnavailable","status":"False"}]}})"),
             canonical(R"({"status":{"conditions":[
                 {"type":"NetworkUnavailable","status":"False"},
                 {"type":"Ready","status":"True","reason":"KubeletReady"},
                 {"type":"MemoryPressure","status":"False"},
                 {"type":"DiskPressure","status":"False","message":"ok"}]}})"));
    // The patch's relative order wins over the live order for the items it names.
    CHECK_EQ(smp("Node", kConditions,
                 R"({"status":{"conditions":[{"type":"DiskPressure"},{"type":"Ready"}]}})"),
             canonical(R"({"status":{"conditions":[
                 {"type":"MemoryPressure","status":"False"},
                 {"type":"DiskPressure","status":"False","message":"ok"},
                 {"type":"Ready","status":"True","reason":"KubeletReady"}]}})"));
    // Null fields of an added item are dropped.
    CHECK_EQ(smp("Node", R"({"status":{}})",
                 R"({"status":{"conditions":[{"type":"Ready","reason":null,"status":"True"}]}})"),
             canonical(R"({"status":{"conditions":[{"type":"Ready","status":"True"}]}})"));
  }

  TEST_CASE("merge keys of other kinds and nested merge lists") {
    CHECK_EQ(smp("Service",
                 R"({"spec":{"ports":[{"name":"http","port":80,"targetPort":8080},
                                      {"name":"https","port":443,"targetPort":8443}]}})",
                 R"({"spec":{"ports":[{"port":443,"targetPort":9443}]}})"),
             canonical(R"({"spec":{"ports":[{"name":"http","port":80,"targetPort":8080},
                                            {"name":"https","port":443,"targetPort":9443}]}})"));
    CHECK_EQ(smp("Pod",
                 R"({"spec":{"containers":[{"name":"app","image":"v1",
                                            "env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],
                                            "ports":[{"containerPort":80}]},
                                           {"name":"side","image":"s1"}]}})",
                 R"({"spec":{"containers":[{"name":"app","image":"v2",
                                            "env":[{"name":"B","value":"3"}]}]}})"),
             canonical(R"({"spec":{"containers":[{"name":"app","image":"v2",
                                                  "env":[{"name":"A","value":"1"},{"name":"B","value":"3"}],
                                                  "ports":[{"containerPort":80}]},
                                                 {"name":"side","image":"s1"}]}})"));
    CHECK_EQ(smp("Node", R"({"metadata":{"ownerReferences":[{"uid":"1","name":"a"}]}})",
                 R"({"metadata":{"ownerReferences":[{"uid":"2","name":"b"}]}})"),
             canonical(R"({"metadata":{"ownerReferences":[{"uid":"2","name":"b"},
                                                          {"uid":"1","name":"a"}]}})"));
    CHECK_EQ(
        smp("ServiceAccount", R"({"secrets":[{"name":"a"}],"imagePullSecrets":[{"name":"p"}]})",
            R"({"secrets":[{"name":"b"}],"imagePullSecrets":[{"name":"q"}]})"),
        canonical(R"({"secrets":[{"name":"b"},{"name":"a"}],"imagePullSecrets":[{"name":"q"}]})"));
    CHECK_EQ(smp("Pod", R"({"status":{"podIPs":[{"ip":"10.0.0.1"}]}})",
                 R"({"status":{"podIPs":[{"ip":"10.0.0.1"},{"ip":"fd00::1"}]}})"),
             canonical(R"({"status":{"podIPs":[{"ip":"10.0.0.1"},{"ip":"fd00::1"}]}})"));
  }

  TEST_CASE("an item matches the first live item with its key (duplicate keys stay)") {
    CHECK_EQ(smp("Node",
                 R"({"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.1"},
                                            {"type":"InternalIP","address":"10.0.0.2"},
                                            {"type":"Hostname","address":"n1"}]}})",
                 R"({"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.9"}]}})"),
             canonical(R"({"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.9"},
                                                  {"type":"InternalIP","address":"10.0.0.2"},
                                                  {"type":"Hostname","address":"n1"}]}})"));
    // Two patch items with one key: the second merges into the first one added.
    CHECK_EQ(smp("Node", R"({"status":{"conditions":[]}})",
                 R"({"status":{"conditions":[{"type":"X","a":1},{"type":"X","b":2}]}})"),
             canonical(R"({"status":{"conditions":[{"type":"X","a":1,"b":2}]}})"));
  }

  TEST_CASE("an item merged twice keeps what the first merge put in its nested maps") {
    CHECK_EQ(
        smp("Node", R"({"status":{"conditions":[{"type":"X","sub":{"a":1}}]}})",
            R"({"status":{"conditions":[
                     {"type":"X","sub":{"b":2,"deep":{"c":3}}},
                     {"type":"X","m1":1,"m2":2,"m3":3,"m4":4,"m5":5,"m6":6,"m7":7,"m8":8,
                      "sub":{"deep":{"d":4}}}]}})"),
        canonical(R"({"status":{"conditions":[{"type":"X","sub":{"a":1,"b":2,"deep":{"c":3,"d":4}},
                 "m1":1,"m2":2,"m3":3,"m4":4,"m5":5,"m6":6,"m7":7,"m8":8}]}})"));
  }

  TEST_CASE("duplicate keys in a patch: the last one counts, as in Go") {
    CHECK_EQ(smp("Node", R"({"spec":{"a":{"z":0},"b":1}})",
                 R"({"spec":{"a":{"x":1},"b":2,"a":{"y":2},"b":null}})"),
             canonical(R"({"spec":{"a":{"z":0,"y":2}}})"));
    CHECK_EQ(testing::merge(R"({"a":1})", R"({"a":null,"a":2,"c":{"d":1,"d":null}})"),
             canonical(R"({"a":2,"c":{}})"));
    CHECK_EQ(
        testing::jsonPatch(R"({"a":1})", R"([{"op":"remove","op":"add","path":"/b","value":2}])"),
        canonical(R"({"a":1,"b":2})"));
    // Objects with many keys take another path.
    std::string body = R"({"data":{)";
    std::string expected = R"({"data":{)";
    for (int i = 0; i < 40; ++i) {
      body += "\"k" + std::to_string(i) + "\":\"first\",";
      expected += (i == 0 ? "\"k" : ",\"k") + std::to_string(i) + "\":\"" +
                  (i % 2 == 0 ? "second" : "first") + "\"";
    }
    for (int i = 0; i < 40; i += 2) {
      body += "\"k" + std::to_string(i) + "\":\"second\"" + (i + 2 < 40 ? "," : "");
    }
    body += "}}";
    expected += "}}";
    CHECK_EQ(smp("ConfigMap", R"({"data":{}})", body), canonical(expected));
  }

  TEST_CASE("list element $patch: delete removes every item with the key") {
    CHECK_EQ(smp("Node", kConditions,
                 R"({"status":{"conditions":[{"type":"MemoryPressure","$patch":"delete"}]}})"),
             canonical(R"({"status":{"conditions":[
                 {"type":"Ready","status":"True","reason":"KubeletReady"},
                 {"type":"DiskPressure","status":"False","message":"ok"}]}})"));
    CHECK_EQ(
        smp("Node", R"({"metadata":{"ownerReferences":[{"uid":"1"},{"uid":"2"},{"uid":"1"}]}})",
            R"({"metadata":{"ownerReferences":[{"uid":"1","$patch":"delete"},{"uid":"3"}]}})"),
        canonical(R"({"metadata":{"ownerReferences":[{"uid":"3"},{"uid":"2"}]}})"));
    std::string detail;
    PatchError error = smpRejected("Node", kConditions,
                                   R"({"status":{"conditions":[{"$patch":"delete"}]}})", &detail);
    CHECK_EQ(error.code, 500);
    CHECK_EQ(error.reason, "");
    CHECK_EQ(error.message, "map: map[$patch:delete] does not contain declared merge key: type");
  }

  TEST_CASE("list element $patch: replace replaces the list with the other elements") {
    CHECK_EQ(smp("Node",
                 R"({"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.1"},
                                            {"type":"ExternalIP","address":"1.2.3.4"}]}})",
                 R"({"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.5"},
                                            {"type":"Hostname","address":"n1","x":null},
                                            {"$patch":"replace"}]}})"),
             canonical(R"({"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.5"},
                                                  {"type":"Hostname","address":"n1"}]}})"));
    // Where the list does not exist yet, the directive element is dropped.
    CHECK_EQ(smp("Node", R"({"status":{}})",
                 R"({"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.5"},
                                            {"$patch":"replace"}]}})"),
             canonical(R"({"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.5"}]}})"));
    // Only the directive: the list becomes empty.
    CHECK_EQ(smp("Node", kConditions, R"({"status":{"conditions":[{"$patch":"replace"}]}})"),
             canonical(R"({"status":{"conditions":[]}})"));
    // Replacement items need the merge key too.
    CHECK_EQ(smpRejected("Node", kConditions,
                         R"({"status":{"conditions":[{"status":"x"},{"$patch":"replace"}]}})")
                 .code,
             500);
  }

  TEST_CASE("list element $patch: merge and unknown values are rejected as the Go code does") {
    PatchError error = smpRejected(
        "Node", kConditions, R"({"status":{"conditions":[{"type":"Ready","$patch":"merge"}]}})");
    CHECK_EQ(error.code, 500);
    CHECK_EQ(error.message, "merging lists cannot yet be specified in the patch");
    error = smpRejected("Node", kConditions,
                        R"({"status":{"conditions":[{"type":"Ready","$patch":"bogus"}]}})");
    CHECK_EQ(error.code, 500);
    CHECK_EQ(error.message, "unknown patch type: bogus in map: map[$patch:bogus type:Ready]");
  }

  TEST_CASE("map $patch: replace, delete, and anything else") {
    CHECK_EQ(smp("Service", R"({"spec":{"selector":{"a":"1","b":"2"},"type":"ClusterIP"}})",
                 R"({"spec":{"selector":{"$patch":"replace","c":"3","d":null}}})"),
             canonical(R"({"spec":{"selector":{"c":"3"},"type":"ClusterIP"}})"));
    CHECK_EQ(smp("Service", R"({"spec":{"selector":{"a":"1"},"type":"ClusterIP"}})",
                 R"({"spec":{"selector":{"$patch":"delete"}}})"),
             canonical(R"({"spec":{"selector":{},"type":"ClusterIP"}})"));
    // At the top: the whole object.
    CHECK_EQ(smp("Node", R"({"metadata":{"name":"n1"},"spec":{"a":1}})",
                 R"({"$patch":"replace","metadata":{"name":"n1"},"spec":{"b":2}})"),
             canonical(R"({"metadata":{"name":"n1"},"spec":{"b":2}})"));
    CHECK_EQ(smp("Node", R"({"metadata":{"name":"n1"}})", R"({"$patch":"delete"})"),
             canonical(R"({})"));
    PatchError error = smpRejected("Service", R"({"spec":{"selector":{"a":"1"}}})",
                                   R"({"spec":{"selector":{"$patch":"merge","b":"2"}}})");
    CHECK_EQ(error.code, 500);
    CHECK_EQ(error.message, "unknown patch type: merge in map: map[$patch:merge b:2]");
    CHECK_EQ(smpRejected("Service", R"({"spec":{}})", R"({"spec":{"$patch":5}})").message,
             "unknown patch type: %!s(int64=5) in map: map[$patch:5]");
  }

  TEST_CASE("scalar lists with merge strategy are set unions") {
    CHECK_EQ(
        smp("Node", R"({"metadata":{"finalizers":["a"]}})", R"({"metadata":{"finalizers":["b"]}})"),
        canonical(R"({"metadata":{"finalizers":["b","a"]}})"));
    CHECK_EQ(smp("Node", R"({"metadata":{"finalizers":["a","b"]}})",
                 R"({"metadata":{"finalizers":["c","a"]}})"),
             canonical(R"({"metadata":{"finalizers":["c","a","b"]}})"));
    CHECK_EQ(smp("Node", R"({"metadata":{"finalizers":["a","b"]}})",
                 R"({"metadata":{"finalizers":["a"]}})"),
             canonical(R"({"metadata":{"finalizers":["a","b"]}})"));
    CHECK_EQ(smp("Node", R"({"metadata":{"finalizers":["a"]}})",
                 R"({"metadata":{"finalizers":["b","b","a"]}})"),
             canonical(R"({"metadata":{"finalizers":["b","a"]}})"));
    CHECK_EQ(smp("Node", R"({"spec":{"podCIDRs":["10.244.1.0/24"]}})",
                 R"({"spec":{"podCIDRs":["fd00:1::/64"]}})"),
             canonical(R"({"spec":{"podCIDRs":["fd00:1::/64","10.244.1.0/24"]}})"));
    CHECK_EQ(smp("Node", R"({"spec":{}})", R"({"spec":{"podCIDRs":["10.244.1.0/24"]}})"),
             canonical(R"({"spec":{"podCIDRs":["10.244.1.0/24"]}})"));
  }

  TEST_CASE("$deleteFromPrimitiveList removes values from a scalar list") {
    CHECK_EQ(smp("Node", R"({"metadata":{"finalizers":["a","b","c","b"]}})",
                 R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["b","x"]}})"),
             canonical(R"({"metadata":{"finalizers":["a","c"]}})"));
    // Missing list: nothing to do. Null: the Go code drops the whole list.
    CHECK_EQ(smp("Node", R"({"metadata":{"name":"n"}})",
                 R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["b"]}})"),
             canonical(R"({"metadata":{"name":"n"}})"));
    CHECK_EQ(smp("Node", R"({"metadata":{"name":"n","finalizers":["a"]}})",
                 R"({"metadata":{"$deleteFromPrimitiveList/finalizers":null}})"),
             canonical(R"({"metadata":{"name":"n"}})"));
    // Together with additions in the same patch.
    CHECK_EQ(smp("Node", R"({"spec":{"podCIDRs":["a","b"]}})",
                 R"({"spec":{"podCIDRs":["c"],"$deleteFromPrimitiveList/podCIDRs":["a"]}})"),
             canonical(R"({"spec":{"podCIDRs":["c","b"]}})"));
  }

  TEST_CASE("$setElementOrder fixes the order and never deletes") {
    CHECK_EQ(smp("Node", kConditions,
                 R"({"status":{"$setElementOrder/conditions":[{"type":"DiskPressure"},
                                 {"type":"Ready"},{"type":"MemoryPressure"}]}})"),
             canonical(R"({"status":{"conditions":[
                 {"type":"DiskPressure","status":"False","message":"ok"},
                 {"type":"Ready","status":"True","reason":"KubeletReady"},
                 {"type":"MemoryPressure","status":"False"}]}})"));
    // Live items it does not list stay, interleaved by live order; listed items that do not
    // exist are ignored.
    CHECK_EQ(smp("Node", kConditions,
                 R"({"status":{"$setElementOrder/conditions":[{"type":"Nope"},
                                 {"type":"DiskPressure"},{"type":"MemoryPressure"}]}})"),
             canonical(R"({"status":{"conditions":[
                 {"type":"Ready","status":"True","reason":"KubeletReady"},
                 {"type":"DiskPressure","status":"False","message":"ok"},
                 {"type":"MemoryPressure","status":"False"}]}})"));
    // A new item placed where the directive says.
    CHECK_EQ(smp("Node", kConditions,
                 R"({"status":{"$setElementOrder/conditions":[{"type":"Ready"},
                                 {"type":"MemoryPressure"},{"type":"DiskPressure"},
                                 {"type":"NetworkUnavailable"}],
                               "conditions":[{"type":"NetworkUnavailable","status":"False"}]}})"),
             canonical(R"({"status":{"conditions":[
                 {"type":"Ready","status":"True","reason":"KubeletReady"},
                 {"type":"MemoryPressure","status":"False"},
                 {"type":"DiskPressure","status":"False","message":"ok"},
                 {"type":"NetworkUnavailable","status":"False"}]}})"));
    // Scalars.
    CHECK_EQ(
        smp("Node", R"({"metadata":{"finalizers":["a","b"]}})",
            R"({"metadata":{"$setElementOrder/finalizers":["a","c","b"],"finalizers":["c"]}})"),
        canonical(R"({"metadata":{"finalizers":["a","c","b"]}})"));
    // A list the live object does not have yet.
    CHECK_EQ(
        smp("Node", R"({"status":{}})",
            R"({"status":{"$setElementOrder/conditions":[{"type":"A"},{"type":"X"},{"type":"B"}],
                               "conditions":[{"type":"A","s":null},{"type":"B"}]}})"),
        canonical(R"({"status":{"conditions":[{"type":"A"},{"type":"B"}]}})"));
    // A directive for a list neither side has, and for an atomic list, change nothing.
    CHECK_EQ(smp("Node", R"({"status":{}})",
                 R"({"status":{"$setElementOrder/addresses":[{"type":"A"}]}})"),
             canonical(R"({"status":{}})"));
    CHECK_EQ(smp("Node", R"({"spec":{"taints":[{"key":"a"}]}})",
                 R"({"spec":{"$setElementOrder/taints":[{"key":"b"}],"taints":[{"key":"b"}]}})"),
             canonical(R"({"spec":{"taints":[{"key":"b"}]}})"));
  }

  TEST_CASE("$setElementOrder with the mixed shapes of generated patches") {
    // Deletion and replace elements in the patch list are skipped when checking the order.
    CHECK_EQ(
        smp("Node", kConditions,
            R"({"status":{"$setElementOrder/conditions":[{"type":"DiskPressure"},{"type":"Ready"}],
                               "conditions":[{"type":"MemoryPressure","$patch":"delete"},
                                             {"type":"DiskPressure","status":"True"}]}})"),
        canonical(R"({"status":{"conditions":[
                 {"type":"DiskPressure","status":"True","message":"ok"},
                 {"type":"Ready","status":"True","reason":"KubeletReady"}]}})"));
    CHECK_EQ(smp("Node",
                 R"({"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.1"},
                                            {"type":"Hostname","address":"n1"}]}})",
                 R"({"status":{"$setElementOrder/addresses":[{"type":"InternalIP"},
                                 {"type":"InternalIP"},{"type":"Hostname"}],
                               "addresses":[{"$patch":"replace"},
                                            {"type":"InternalIP","address":"10.0.0.5"},
                                            {"type":"InternalIP","address":"10.0.0.6"},
                                            {"type":"Hostname","address":"n1"}]}})"),
             canonical(R"({"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.5"},
                                                  {"type":"InternalIP","address":"10.0.0.6"},
                                                  {"type":"Hostname","address":"n1"}]}})"));
    // The Go check stops at the end of the directive list, so a trailing replace element after
    // a directive that lists every item is an error on a real server too.
    CHECK_EQ(smpRejected("Node", R"({"status":{"addresses":[{"type":"Hostname","address":"n1"}]}})",
                         R"({"status":{"$setElementOrder/addresses":[{"type":"Hostname"}],
                                       "addresses":[{"type":"Hostname","address":"n2"},
                                                    {"$patch":"replace"}]}})")
                 .code,
             500);
    // Deletions combined with an order directive (the service controller's finalizer removal).
    CHECK_EQ(smp("Service", R"({"metadata":{"finalizers":["a","lb","b"]}})",
                 R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["lb"],
                                 "$setElementOrder/finalizers":["b","a"]}})"),
             canonical(R"({"metadata":{"finalizers":["b","a"]}})"));
  }

  TEST_CASE("$setElementOrder errors") {
    std::string detail;
    PatchError error =
        smpRejected("Node", kConditions,
                    R"({"status":{"$setElementOrder/conditions":[{"type":"B"},{"type":"A"}],
                      "conditions":[{"type":"A"},{"type":"B"}]}})",
                    &detail);
    CHECK_EQ(error.code, 500);
    CHECK_EQ(error.message,
             "the order in patch list:\n[map[type:A] map[type:B]]\n doesn't match "
             "$setElementOrder list:\n[map[type:B] map[type:A]]");
    CHECK_EQ(
        smpRejected("Node", kConditions, R"({"status":{"$setElementOrder/conditions":"Ready"}})")
            .message,
        "expected a []interface {}, but received a string");
    CHECK_EQ(smpRejected("Node", kConditions,
                         R"({"status":{"$setElementOrder/conditions":[{"kind":"Ready"}]}})")
                 .message,
             "map: map[kind:Ready] does not contain declared merge key: type");
    CHECK_EQ(smpRejected("Node", kConditions,
                         R"({"status":{"$setElementOrder/conditions":[{"type":"Ready"}],
                                       "conditions":null}})")
                 .message,
             "expected a []interface {}, but received a %!s(<nil>)");
  }

  TEST_CASE("$retainKeys keeps only the listed keys") {
    CHECK_EQ(
        smp("Pod", R"({"spec":{"volumes":[{"name":"v","emptyDir":{},"hostPath":{"path":"/x"}}]}})",
            R"({"spec":{"volumes":[{"name":"v","$retainKeys":["name","configMap"],
                                         "configMap":{"name":"cm"}}]}})"),
        canonical(R"({"spec":{"volumes":[{"name":"v","configMap":{"name":"cm"}}]}})"));
    CHECK_EQ(smp("Node", R"({"spec":{"s":{"type":"A","a":{"x":1}}}})",
                 R"({"spec":{"s":{"$retainKeys":["type"],"type":"B"}}})"),
             canonical(R"({"spec":{"s":{"type":"B"}}})"));
    PatchError error = smpRejected("Node", R"({"spec":{"s":{"type":"A"}}})",
                                   R"({"spec":{"s":{"$retainKeys":["type"],"other":1}}})");
    CHECK_EQ(error.code, 400);
    CHECK_EQ(error.reason, "BadRequest");
    CHECK_EQ(error.message, "invalid patch format of retainKeys");
    CHECK_EQ(smpRejected("Node", R"({"spec":{"s":{}}})", R"({"spec":{"s":{"$retainKeys":"type"}}})")
                 .code,
             400);
  }

  TEST_CASE("malformed lists are rejected, leaving the object untouched") {
    std::string detail;
    PatchError error = smpRejected("Node", kConditions,
                                   R"({"status":{"conditions":[{"status":"True"}]}})", &detail);
    CHECK_EQ(error.code, 500);
    CHECK_EQ(error.message, "map: map[status:True] does not contain declared merge key: type");
    // A live item without its merge key.
    CHECK_EQ(smpRejected("Node", R"({"status":{"conditions":[{"status":"x"}]}})",
                         R"({"status":{"conditions":[{"type":"Ready"}]}})")
                 .code,
             500);
    // Mixed element types, lists of lists.
    error = smpRejected("Node", R"({"spec":{"podCIDRs":["a"]}})", R"({"spec":{"podCIDRs":[1]}})");
    CHECK_EQ(error.code, 500);
    CHECK_EQ(error.message, "list element types are not identical: [[a] [1]]");
    CHECK_EQ(smpRejected("Node", kConditions, R"({"status":{"conditions":["Ready"]}})").code, 500);
    error = smpRejected("Node", R"({"spec":{"podCIDRs":[]}})", R"({"spec":{"podCIDRs":[["a"]]}})");
    CHECK_EQ(error.code, 422);
    CHECK_EQ(error.reason, "Invalid");
    // A merge-key value that is a map makes the Go code compare maps (a panic there).
    CHECK_EQ(smpRejected("Node", R"({"status":{"conditions":[{"type":{"a":1}}]}})",
                         R"({"status":{"conditions":[{"type":{"a":1}}]}})")
                 .code,
             500);
  }

  TEST_CASE("the patch must be a JSON object") {
    PatchError error = smpRejected("Node", R"({"a":1})", R"([{"a":2}])");
    CHECK_EQ(error.code, 400);
    CHECK_EQ(error.reason, "BadRequest");
    CHECK_EQ(error.message,
             "json: cannot unmarshal array into Go value of type map[string]interface {}");
    CHECK_EQ(smpRejected("Node", R"({"a":1})", R"("x")").message,
             "json: cannot unmarshal string into Go value of type map[string]interface {}");
    CHECK_EQ(smpRejected("Node", R"({"a":1})", "12").message,
             "json: cannot unmarshal number into Go value of type map[string]interface {}");
    CHECK_EQ(smpRejected("Node", R"({"a":1})", "false").message,
             "json: cannot unmarshal bool into Go value of type map[string]interface {}");
    CHECK_EQ(smpRejected("Node", R"({"a":1})", R"({"a":)").message, "invalid JSON patch");
    // null and {} are empty patches.
    CHECK_EQ(smp("Node", R"({"a":1})", "null"), canonical(R"({"a":1})"));
    CHECK_EQ(smp("Node", R"({"a":1})", "{}"), canonical(R"({"a":1})"));
  }

  TEST_CASE("keys that merely start with '$' are ordinary keys") {
    CHECK_EQ(smp("ConfigMap", R"({"data":{}})", R"({"data":{"$x":"1"}})"),
             canonical(R"({"data":{"$x":"1"}})"));
  }

  TEST_CASE("schema tables") {
    const FieldSchema* status = findField(strategicSchemaForKind("Node"), "status");
    REQUIRE(status != nullptr);
    const FieldSchema* addresses = findField(status->fields, "addresses");
    REQUIRE(addresses != nullptr);
    CHECK(addresses->list == ListStrategy::MergeByKey);
    CHECK_EQ(addresses->mergeKey, "type");
    const FieldSchema* spec = findField(strategicSchemaForKind("Node"), "spec");
    REQUIRE(spec != nullptr);
    CHECK(findField(spec->fields, "taints") == nullptr);
    CHECK(findField(spec->fields, "podCIDRs")->list == ListStrategy::MergeScalars);
    auto unknown = strategicSchemaForKind("Widget");
    REQUIRE_EQ(unknown.size(), 1u);
    CHECK_EQ(unknown[0].name, "metadata");
    CHECK(findField(unknown[0].fields, "finalizers")->list == ListStrategy::MergeScalars);
    CHECK_EQ(findField(unknown[0].fields, "ownerReferences")->mergeKey, "uid");
    const FieldSchema* containers =
        findField(findField(strategicSchemaForKind("Pod"), "spec")->fields, "containers");
    REQUIRE(containers != nullptr);
    CHECK_EQ(findField(containers->fields, "env")->mergeKey, "name");
  }
}

}  // namespace
}  // namespace ccm::kubesim
