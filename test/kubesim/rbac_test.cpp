// Unit tests: RBAC rule matching, bindings (cluster and namespaced, users, groups, service
// accounts), aggregation, system:masters, the Forbidden message, the matching binding/role/rule
// of a decision and the decision recorder.
#include <doctest/doctest.h>

#include "kubesim/authz_recorder.hpp"
#include "kubesim/object_store.hpp"
#include "kubesim/rbac_authorizer.hpp"

namespace ccm::kubesim {
namespace {

const ResourceType& rbac(std::string_view r) {
  return *ResourceRegistry::builtin().find("rbac.authorization.k8s.io", "v1", r);
}

void put(ObjectStore& store, const ResourceType& type, const std::string& json) {
  JsonDocument doc;
  doc.Parse(json.c_str());
  REQUIRE_FALSE(doc.HasParseError());
  auto p = prepareObject(type, doc, doc.GetAllocator());
  REQUIRE(store.put(type, store.get(type, p.ns, p.name), p).status ==
          ObjectStore::CommitStatus::Ok);
}

PolicyRule rule(const std::string& json) {
  JsonDocument doc;
  doc.Parse(json.c_str());
  return PolicyRule::fromJson(doc);
}

AuthorizationAttributes attrs(std::string user, std::vector<std::string> groups, std::string verb,
                              std::string group, std::string resource, std::string ns = "",
                              std::string name = "", std::string sub = "") {
  AuthorizationAttributes a;
  a.user.name = std::move(user);
  a.user.groups = std::move(groups);
  a.verb = std::move(verb);
  a.api_group = std::move(group);
  a.resource = std::move(resource);
  a.ns = std::move(ns);
  a.name = std::move(name);
  a.subresource = std::move(sub);
  return a;
}

TEST_CASE("policy rules match verbs, groups, resources, subresources and names") {
  auto r = rule(R"({"apiGroups":[""],"resources":["nodes","nodes/status"],"verbs":["get","patch"]})");
  CHECK(r.matches(attrs("u", {}, "get", "", "nodes")));
  CHECK(r.matches(attrs("u", {}, "patch", "", "nodes", "", "n1", "status")));
  CHECK_FALSE(r.matches(attrs("u", {}, "delete", "", "nodes")));
  CHECK_FALSE(r.matches(attrs("u", {}, "get", "apps", "nodes")));
  CHECK_FALSE(r.matches(attrs("u", {}, "get", "", "services")));

  auto star = rule(R"({"apiGroups":["*"],"resources":["*"],"verbs":["*"]})");
  CHECK(star.matches(attrs("u", {}, "deletecollection", "x.io", "things", "", "", "status")));

  auto subs = rule(R"({"apiGroups":[""],"resources":["*/status"],"verbs":["update"]})");
  CHECK(subs.matches(attrs("u", {}, "update", "", "pods", "", "p", "status")));
  CHECK_FALSE(subs.matches(attrs("u", {}, "update", "", "pods", "", "p")));

  auto named = rule(R"({"apiGroups":[""],"resources":["configmaps"],"verbs":["get"],"resourceNames":["a"]})");
  CHECK(named.matches(attrs("u", {}, "get", "", "configmaps", "ns", "a")));
  CHECK_FALSE(named.matches(attrs("u", {}, "get", "", "configmaps", "ns", "b")));
  CHECK_FALSE(named.matches(attrs("u", {}, "get", "", "configmaps", "ns", "")));

  auto urls = rule(R"({"nonResourceURLs":["/healthz","/api/*"],"verbs":["get"]})");
  AuthorizationAttributes nr;
  nr.resource_request = false;
  nr.verb = "get";
  nr.path = "/api/v1";
  CHECK(urls.matches(nr));
  nr.path = "/metrics";
  CHECK_FALSE(urls.matches(nr));
}

TEST_CASE("bindings grant by user, group and service account, in scope") {
  ObjectStore store(ResourceRegistry::builtin(), {});
  RbacAuthorizer authz(store);
  put(store, rbac("clusterroles"),
      R"({"metadata":{"name":"node-reader"},"rules":[{"apiGroups":[""],"resources":["nodes"],"verbs":["get","list"]}]})");
  put(store, rbac("clusterrolebindings"),
      R"({"metadata":{"name":"b1"},"roleRef":{"kind":"ClusterRole","name":"node-reader"},"subjects":[{"kind":"User","name":"alice"},{"kind":"Group","name":"ops"},{"kind":"ServiceAccount","name":"ccm","namespace":"kube-system"}]})");
  put(store, rbac("roles"),
      R"({"metadata":{"name":"cm","namespace":"team"},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["*"]}]})");
  put(store, rbac("rolebindings"),
      R"({"metadata":{"name":"rb","namespace":"team"},"roleRef":{"kind":"Role","name":"cm"},"subjects":[{"kind":"ServiceAccount","name":"bot"}]})");
  authz.invalidate();

  CHECK(authz.authorize(attrs("alice", {}, "list", "", "nodes")).allowed);
  CHECK(authz.authorize(attrs("someone", {"ops"}, "get", "", "nodes")).allowed);
  CHECK(authz.authorize(attrs("system:serviceaccount:kube-system:ccm", {}, "get", "", "nodes")).allowed);
  CHECK_FALSE(authz.authorize(attrs("alice", {}, "delete", "", "nodes")).allowed);
  CHECK_FALSE(authz.authorize(attrs("bob", {}, "list", "", "nodes")).allowed);
  // Role binding: only in its namespace; the SA subject defaults to the binding namespace.
  CHECK(authz.authorize(attrs("system:serviceaccount:team:bot", {}, "create", "", "configmaps", "team")).allowed);
  CHECK_FALSE(authz.authorize(attrs("system:serviceaccount:team:bot", {}, "create", "", "configmaps", "other")).allowed);
  CHECK_FALSE(authz.authorize(attrs("system:serviceaccount:team:bot", {}, "list", "", "configmaps", "")).allowed);
  // system:masters is allowed everything.
  CHECK(authz.authorize(attrs("root", {"system:masters"}, "escalate", "x", "y")).allowed);

  // A RoleBinding may reference a ClusterRole; changes apply after invalidate().
  put(store, rbac("rolebindings"),
      R"({"metadata":{"name":"rb2","namespace":"team"},"roleRef":{"kind":"ClusterRole","name":"node-reader"},"subjects":[{"kind":"User","name":"carol"}]})");
  CHECK_FALSE(authz.authorize(attrs("carol", {}, "get", "", "nodes", "team")).allowed);  // stale
  authz.invalidate();
  CHECK(authz.authorize(attrs("carol", {}, "get", "", "nodes", "team")).allowed);
  CHECK_FALSE(authz.authorize(attrs("carol", {}, "get", "", "nodes")).allowed);  // cluster scope
}

TEST_CASE("aggregated cluster roles collect the rules of matching roles") {
  ObjectStore store(ResourceRegistry::builtin(), {});
  RbacAuthorizer authz(store);
  put(store, rbac("clusterroles"),
      R"({"metadata":{"name":"agg"},"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"agg":"yes"}}]},"rules":[]})");
  put(store, rbac("clusterroles"),
      R"({"metadata":{"name":"part","labels":{"agg":"yes"}},"rules":[{"apiGroups":["coordination.k8s.io"],"resources":["leases"],"verbs":["get"]}]})");
  put(store, rbac("clusterrolebindings"),
      R"({"metadata":{"name":"b"},"roleRef":{"kind":"ClusterRole","name":"agg"},"subjects":[{"kind":"Group","name":"g"}]})");
  authz.invalidate();
  CHECK(authz.authorize(attrs("u", {"g"}, "get", "coordination.k8s.io", "leases", "kube-system")).allowed);
  CHECK_FALSE(authz.authorize(attrs("u", {"g"}, "update", "coordination.k8s.io", "leases", "kube-system")).allowed);
}

TEST_CASE("decisions name the binding, role and rule that allowed them") {
  ObjectStore store(ResourceRegistry::builtin(), {});
  RbacAuthorizer authz(store);
  put(store, rbac("clusterroles"),
      R"({"metadata":{"name":"ccm"},"rules":[{"apiGroups":[""],"resources":["nodes"],"verbs":["get"]},{"apiGroups":[""],"resources":["nodes/status"],"verbs":["patch"]}]})");
  put(store, rbac("clusterrolebindings"),
      R"({"metadata":{"name":"ccm-b"},"roleRef":{"kind":"ClusterRole","name":"ccm"},"subjects":[{"kind":"ServiceAccount","name":"ccm","namespace":"kube-system"}]})");
  put(store, rbac("roles"),
      R"({"metadata":{"name":"le","namespace":"kube-system"},"rules":[{"apiGroups":["coordination.k8s.io"],"resources":["leases"],"verbs":["get","update"],"resourceNames":["ccm"]}]})");
  put(store, rbac("rolebindings"),
      R"({"metadata":{"name":"le-b","namespace":"kube-system"},"roleRef":{"kind":"Role","name":"le"},"subjects":[{"kind":"ServiceAccount","name":"ccm"}]})");
  authz.invalidate();
  const std::string sa = "system:serviceaccount:kube-system:ccm";

  auto d = authz.authorize(attrs(sa, {}, "patch", "", "nodes", "", "n1", "status"));
  REQUIRE(d.allowed);
  CHECK(d.binding == "ClusterRoleBinding/ccm-b");
  CHECK(d.role == "ClusterRole/ccm");
  CHECK(d.rule_index == 1);
  REQUIRE(d.rules);
  CHECK((*d.rules)[1].toJson() ==
        R"({"verbs":["patch"],"apiGroups":[""],"resources":["nodes/status"]})");

  d = authz.authorize(
      attrs(sa, {}, "update", "coordination.k8s.io", "leases", "kube-system", "ccm"));
  REQUIRE(d.allowed);
  CHECK(d.binding == "RoleBinding/kube-system/le-b");
  CHECK(d.role == "Role/kube-system/le");
  CHECK(d.rule_index == 0);
  CHECK(
      (*d.rules)[0].toJson() ==
      R"({"verbs":["get","update"],"apiGroups":["coordination.k8s.io"],"resources":["leases"],"resourceNames":["ccm"]})");

  d = authz.authorize(attrs(sa, {}, "delete", "", "nodes", "", "n1"));
  CHECK_FALSE(d.allowed);
  CHECK(d.binding.empty());
  CHECK(d.rule_index == -1);
  CHECK_FALSE(d.rules);

  d = authz.authorize(attrs("root", {"system:masters"}, "delete", "", "nodes"));
  CHECK(d.allowed);
  CHECK(d.reason == "system:masters");
  CHECK(d.binding.empty());
}

TEST_CASE("the recorder keeps each distinct decision once, with a count, per user") {
  ObjectStore store(ResourceRegistry::builtin(), {});
  RbacAuthorizer authz(store);
  put(store, rbac("clusterroles"),
      R"({"metadata":{"name":"r"},"rules":[{"apiGroups":[""],"resources":["nodes"],"verbs":["list"]}]})");
  put(store, rbac("clusterrolebindings"),
      R"({"metadata":{"name":"b"},"roleRef":{"kind":"ClusterRole","name":"r"},"subjects":[{"kind":"User","name":"alice"}]})");
  authz.invalidate();
  // Nothing is recorded before a recorder is set.
  CHECK(authz.authorize(attrs("alice", {}, "list", "", "nodes")).allowed);
  AuthzRecorder recorder(3);
  authz.setRecorder(&recorder);
  CHECK(recorder.toJson() == R"({"decisions":[],"dropped":0})");

  authz.authorize(attrs("alice", {"g"}, "list", "", "nodes"));
  authz.authorize(attrs("alice", {"g"}, "list", "", "nodes"));
  authz.authorize(attrs("alice", {"g"}, "delete", "", "nodes", "", "n1"));
  AuthorizationAttributes nr;
  nr.user.name = "bob";
  nr.resource_request = false;
  nr.verb = "get";
  nr.path = "/metrics";
  authz.authorize(nr, "review");
  CHECK(
      recorder.toJson() ==
      R"({"decisions":[)"
      R"({"user":"alice","groups":["g"],"source":"request","verb":"list","apiGroup":"","resource":"nodes","subresource":"","namespace":"","name":"","allowed":true,"binding":"ClusterRoleBinding/b","role":"ClusterRole/r","ruleIndex":0,"rule":{"verbs":["list"],"apiGroups":[""],"resources":["nodes"]},"count":2},)"
      R"({"user":"alice","groups":["g"],"source":"request","verb":"delete","apiGroup":"","resource":"nodes","subresource":"","namespace":"","name":"n1","allowed":false,"binding":"","role":"","ruleIndex":-1,"rule":null,"count":1},)"
      R"({"user":"bob","groups":[],"source":"review","verb":"get","nonResourceURL":"/metrics","allowed":false,"binding":"","role":"","ruleIndex":-1,"rule":null,"count":1}],"dropped":0})");
  CHECK(
      recorder.toJson("bob") ==
      R"({"decisions":[{"user":"bob","groups":[],"source":"review","verb":"get","nonResourceURL":"/metrics","allowed":false,"binding":"","role":"","ruleIndex":-1,"rule":null,"count":1}],"dropped":0})");
  // Full: a new distinct decision is dropped, a known one still counts.
  authz.authorize(attrs("carol", {}, "get", "", "pods", "default", "p"));
  authz.authorize(attrs("alice", {"g"}, "list", "", "nodes"));
  CHECK(recorder.toJson("carol") == R"({"decisions":[],"dropped":1})");
  CHECK(recorder.toJson("alice").find(R"("count":3)") != std::string::npos);
  CHECK(recorder.clear() == 3);
  CHECK(recorder.toJson() == R"({"decisions":[],"dropped":0})");
  authz.setRecorder(nullptr);
}

TEST_CASE("forbidden messages match the API server's") {
  CHECK(RbacAuthorizer::forbiddenMessage(attrs("bob", {}, "list", "", "nodes")) ==
        "User \"bob\" cannot list resource \"nodes\" in API group \"\" at the cluster scope");
  CHECK(RbacAuthorizer::forbiddenMessage(
            attrs("bob", {}, "patch", "", "nodes", "", "n1", "status")) ==
        "User \"bob\" cannot patch resource \"nodes/status\" in API group \"\" at the cluster scope");
  CHECK(RbacAuthorizer::forbiddenMessage(
            attrs("bob", {}, "get", "coordination.k8s.io", "leases", "kube-system")) ==
        "User \"bob\" cannot get resource \"leases\" in API group \"coordination.k8s.io\" in the "
        "namespace \"kube-system\"");
  AuthorizationAttributes nr;
  nr.user.name = "bob";
  nr.resource_request = false;
  nr.verb = "get";
  nr.path = "/metrics";
  CHECK(RbacAuthorizer::forbiddenMessage(nr) == "User \"bob\" cannot get path \"/metrics\"");
}

}  // namespace
}  // namespace ccm::kubesim
