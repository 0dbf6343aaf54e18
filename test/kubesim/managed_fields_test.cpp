// managedFields bookkeeping: manager names, FieldsV1 sets, ownership moves between managers.
#include "kubesim/managed_fields.hpp"

#include <doctest/doctest.h>

#include <string>

#include "kubesim/json_util.hpp"
#include "kubesim/resource_registry.hpp"

namespace ccm::kubesim {
namespace {

const ResourceType& typeOf(std::string_view group, std::string_view resource) {
  return *ResourceRegistry::builtin().find(group, group.empty() ? "v1" : "v1", resource);
}

// Writes `next` over `prev` (nullptr: create) as manager; returns the resulting object.
std::string write(const ResourceType& type, const std::string* prev, const std::string& next,
                  std::string_view manager, std::string_view subresource = "") {
  JsonDocument old;
  if (prev != nullptr) {
    old.Parse(prev->data(), prev->size());
  }
  JsonDocument doc;
  doc.Parse(next.data(), next.size());
  recordManagedFields(type, doc, prev != nullptr ? &old : nullptr, manager, subresource,
                      doc.GetAllocator());
  return toJson(doc);
}

// The fieldsV1 of manager's entry (with subresource), or "" when it has none.
std::string fieldsOf(const std::string& object, std::string_view manager,
                     std::string_view subresource = "") {
  JsonDocument doc;
  doc.Parse(object.data(), object.size());
  const JsonValue* list = memberPath(doc, {"metadata", "managedFields"});
  if (list == nullptr) {
    return {};
  }
  for (const auto& e : list->GetArray()) {
    if (stringMember(e, "manager") == manager && stringMember(e, "subresource") == subresource) {
      return toJson(*member(e, "fieldsV1"));
    }
  }
  return {};
}

// obj with its managedFields replaced by those of `from` (what a client PUTs back after a read).
std::string withEntriesOf(const std::string& from, const std::string& obj) {
  JsonDocument src;
  src.Parse(from.data(), from.size());
  JsonDocument dst;
  dst.Parse(obj.data(), obj.size());
  if (const JsonValue* mf = memberPath(src, {"metadata", "managedFields"})) {
    JsonValue copy;
    copy.CopyFrom(*mf, dst.GetAllocator());
    setMember(*member(dst, "metadata"), "managedFields", std::move(copy), dst.GetAllocator());
  }
  return toJson(dst);
}

TEST_CASE("the manager named after a User-Agent") {
  CHECK(managerFromUserAgent("kubectl/v1.32.0 (linux/amd64) kubernetes/abc") == "kubectl");
  CHECK(managerFromUserAgent("cloud-controller-manager/v1.26.0") == "cloud-controller-manager");
  CHECK(managerFromUserAgent("no-slash") == "no-slash");
  CHECK(managerFromUserAgent("").empty());
  CHECK(managerFromUserAgent("a\tb\x01"
                             "c/1") == "abc");
  CHECK(managerFromUserAgent(std::string(300, 'x')) == std::string(128, 'x'));
  // A multi-byte character that would cross the limit is left out whole.
  CHECK(managerFromUserAgent(std::string(127, 'x') + "\xc3\xa9") == std::string(127, 'x'));
}

TEST_CASE("create: the creator owns what it set, maps and list items carry '.'") {
  const ResourceType& cms = typeOf("", "configmaps");
  std::string cm = write(cms, nullptr,
                         R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a",)"
                         R"("namespace":"d","uid":"u","labels":{"x":"1"},)"
                         R"("finalizers":["f1"]},"data":{"k":"v"}})",
                         "creator");
  CHECK(fieldsOf(cm, "creator") ==
        R"({"f:data":{".":{},"f:k":{}},"f:metadata":{"f:finalizers":{".":{},"v:\"f1\"":{}},)"
        R"("f:labels":{".":{},"f:x":{}}}})");
}

TEST_CASE("update: changed fields move to the writer, removed fields leave everyone") {
  const ResourceType& cms = typeOf("", "configmaps");
  std::string v1 =
      write(cms, nullptr,
            R"({"metadata":{"name":"a","labels":{"x":"1","y":"2"}},"data":{"k":"v"}})", "creator");
  std::string v2 = write(cms, &v1,
                         withEntriesOf(v1, R"({"metadata":{"name":"a","labels":{"x":"9","y":"2"}},)"
                                           R"("data":{"k":"v","n":"new"}})"),
                         "editor");
  CHECK(fieldsOf(v2, "editor") == R"({"f:data":{"f:n":{}},"f:metadata":{"f:labels":{"f:x":{}}}})");
  CHECK(fieldsOf(v2, "creator") ==
        R"({"f:data":{".":{},"f:k":{}},"f:metadata":{"f:labels":{".":{},"f:y":{}}}})");
  // Removing the editor's only label and data key: its entry empties and goes.
  std::string v3 = write(cms, &v2,
                         withEntriesOf(v2, R"({"metadata":{"name":"a","labels":{"y":"2"}},)"
                                           R"("data":{"k":"v"}})"),
                         "creator");
  CHECK(fieldsOf(v3, "editor").empty());
  // A no-op write leaves the entries exactly as they were.
  std::string v4 = write(cms, &v3, v3, "someone-else");
  CHECK(v4 == v3);
}

TEST_CASE("keyed lists, status subresource and the reset") {
  const ResourceType& nodes = typeOf("", "nodes");
  std::string n1 = write(nodes, nullptr,
                         R"({"metadata":{"name":"n"},"spec":{"podCIDRs":["10.0.0.0/24"]},)"
                         R"("status":{"conditions":[{"type":"Ready","status":"True"}]}})",
                         "kubelet");
  CHECK(fieldsOf(n1, "kubelet") == R"({"f:spec":{"f:podCIDRs":{".":{},"v:\"10.0.0.0/24\"":{}}}})");
  CHECK(fieldsOf(n1, "kubelet", "status") ==
        R"({"f:status":{"f:conditions":{".":{},"k:{\"type\":\"Ready\"}":{".":{},"f:status":{},)"
        R"("f:type":{}}}}})");
  std::string n2 = write(nodes, &n1,
                         withEntriesOf(n1, R"({"metadata":{"name":"n"},"spec":{"podCIDRs":)"
                                           R"(["10.0.0.0/24"]},"status":{"conditions":[{"type":)"
                                           R"("Ready","status":"False"}],"addresses":[{"type":)"
                                           R"("InternalIP","address":"10.1.1.1"}]}})"),
                         "ccm", "status");
  CHECK(
      fieldsOf(n2, "ccm", "status") ==
      R"({"f:status":{"f:addresses":{".":{},"k:{\"type\":\"InternalIP\"}":{".":{},)"
      R"("f:address":{},"f:type":{}}},"f:conditions":{"k:{\"type\":\"Ready\"}":{"f:status":{}}}}})");
  CHECK(fieldsOf(n2, "kubelet", "status") ==
        R"({"f:status":{"f:conditions":{".":{},"k:{\"type\":\"Ready\"}":{".":{},"f:type":{}}}}})");
  // managedFields: [] resets; only this write's change is then recorded.
  std::string reset = R"({"metadata":{"name":"n","managedFields":[]},"spec":{"podCIDRs":)"
                      R"(["10.0.0.0/24"],"unschedulable":true}})";
  std::string n3 = write(nodes, &n2, reset, "cordon");
  CHECK(fieldsOf(n3, "cordon") == R"({"f:spec":{"f:unschedulable":{}}})");
  CHECK(fieldsOf(n3, "kubelet").empty());
  CHECK(fieldsOf(n3, "ccm", "status").empty());
}

}  // namespace
}  // namespace ccm::kubesim
