// ClusterBootstrap: namespaces, bootstrap RBAC, the kubernetes Service, manifests.
#include "kubesim/cluster_bootstrap.hpp"

#include <algorithm>
#include <filesystem>

#include "kubesim/cluster_pki.hpp"
#include "kubesim/yaml_json.hpp"

namespace ccm::kubesim {
namespace {

const ResourceType& T(std::string_view group, std::string_view resource) {
  return *ResourceRegistry::builtin().find(group, "v1", resource);
}

// Creates json as type unless it exists.
Status ensure(ObjectWriter& writer, const ResourceType& type, const std::string& json) {
  JsonDocument doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError()) {
    return Status(Code::Internal, "bad bootstrap object: " + json.substr(0, 80));
  }
  if (const JsonValue* meta = member(doc, "metadata");
      meta &&
      writer.store().get(type, stringMember(*meta, "namespace"), stringMember(*meta, "name"))) {
    return okStatus();  // kept state: leave it alone
  }
  auto r = writer.create(type, doc, doc.GetAllocator(), false, nullptr, "kube-apiserver");
  if (!r.ok() && r.error().code() != 409) {
    return Status(Code::Internal, r.error().message());
  }
  return okStatus();
}

std::string clusterRole(const std::string& name, const std::string& rules,
                        const std::string& extra_meta = "") {
  return R"({"metadata":{"name":)" + jsonString(name) +
         R"(,"labels":{"kubernetes.io/bootstrapping":"rbac-defaults"},"annotations":{"rbac.authorization.kubernetes.io/autoupdate":"true"})" +
         extra_meta + R"(},"rules":)" + rules + "}";
}

std::string clusterRoleBinding(const std::string& name, const std::string& role,
                               const std::vector<std::string>& groups) {
  std::string subjects;
  for (const auto& g : groups) {
    subjects += (subjects.empty() ? "" : ",") +
                std::string(R"({"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":)") +
                jsonString(g) + "}";
  }
  return R"({"metadata":{"name":)" + jsonString(name) +
         R"(,"labels":{"kubernetes.io/bootstrapping":"rbac-defaults"},"annotations":{"rbac.authorization.kubernetes.io/autoupdate":"true"}},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":)" +
         jsonString(role) + R"(},"subjects":[)" + subjects + "]}";
}

const char* kReadVerbs = R"(["get","list","watch"])";
const char* kWriteVerbs =
    R"(["create","delete","deletecollection","get","list","patch","update","watch"])";

std::string readWriteRules(bool write, bool rbac) {
  const char* verbs = write ? kWriteVerbs : kReadVerbs;
  std::string rules =
      std::string(
          R"([{"apiGroups":[""],"resources":["configmaps","endpoints","events","persistentvolumeclaims","pods","pods/status","replicationcontrollers","serviceaccounts","services","services/status"],"verbs":)") +
      verbs +
      R"(},{"apiGroups":[""],"resources":["namespaces","namespaces/status"],"verbs":["get","list","watch"]},{"apiGroups":["coordination.k8s.io"],"resources":["leases"],"verbs":)" +
      verbs + R"(},{"apiGroups":["discovery.k8s.io"],"resources":["endpointslices"],"verbs":)" +
      verbs + R"(},{"apiGroups":["events.k8s.io"],"resources":["events"],"verbs":)" + verbs + "}";
  if (write) {
    rules += R"(,{"apiGroups":[""],"resources":["secrets"],"verbs":)" + std::string(kWriteVerbs) +
             R"(},{"apiGroups":[""],"resources":["serviceaccounts/token"],"verbs":["create"]})";
  }
  if (rbac) {
    rules +=
        R"(,{"apiGroups":["rbac.authorization.k8s.io"],"resources":["roles","rolebindings"],"verbs":)" +
        std::string(kWriteVerbs) +
        R"(},{"apiGroups":["authorization.k8s.io"],"resources":["localsubjectaccessreviews"],"verbs":["create"]})";
  }
  return rules + "]";
}

void collectFiles(const std::filesystem::path& p, std::vector<std::string>& out) {
  if (std::filesystem::is_directory(p)) {
    std::vector<std::filesystem::path> entries;
    for (const auto& e : std::filesystem::directory_iterator(p)) {
      entries.push_back(e.path());
    }
    std::sort(entries.begin(), entries.end());
    for (const auto& e : entries) {
      collectFiles(e, out);
    }
    return;
  }
  auto ext = p.extension().string();
  if (ext == ".yaml" || ext == ".yml" || ext == ".json") {
    out.push_back(p.string());
  }
}

bool allowedKind(std::string_view api, std::string_view kind) {
  if (api == "rbac.authorization.k8s.io/v1") {
    return kind == "ClusterRole" || kind == "ClusterRoleBinding" || kind == "Role" ||
           kind == "RoleBinding";
  }
  return api == "v1" && (kind == "ServiceAccount" || kind == "Namespace");
}

}  // namespace

Status ClusterBootstrap::seed(ObjectWriter& writer, const std::string& ca_pem) {
  for (const char* ns : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    CCM_RETURN_IF_ERROR(
        ensure(writer, T("", "namespaces"), R"({"metadata":{"name":)" + jsonString(ns) + "}}"));
  }
  const ResourceType& cr = T("rbac.authorization.k8s.io", "clusterroles");
  const ResourceType& crb = T("rbac.authorization.k8s.io", "clusterrolebindings");
  struct RoleDef {
    std::string name;
    std::string rules;
    std::vector<std::string> groups;
  };
  std::vector<RoleDef> roles = {
      {"cluster-admin",
       R"([{"apiGroups":["*"],"resources":["*"],"verbs":["*"]},{"nonResourceURLs":["*"],"verbs":["*"]}])",
       {"system:masters"}},
      {"system:discovery",
       R"([{"nonResourceURLs":["/api","/api/*","/apis","/apis/*","/healthz","/livez","/openapi","/openapi/*","/readyz","/version","/version/"],"verbs":["get"]}])",
       {"system:authenticated"}},
      {"system:basic-user",
       R"([{"apiGroups":["authorization.k8s.io"],"resources":["selfsubjectaccessreviews","selfsubjectrulesreviews"],"verbs":["create"]},{"apiGroups":["authentication.k8s.io"],"resources":["selfsubjectreviews"],"verbs":["create"]}])",
       {"system:authenticated"}},
      {"system:public-info-viewer",
       R"([{"nonResourceURLs":["/healthz","/livez","/readyz","/version","/version/"],"verbs":["get"]}])",
       {"system:authenticated", "system:unauthenticated"}},
      {"system:auth-delegator",
       R"([{"apiGroups":["authentication.k8s.io"],"resources":["tokenreviews"],"verbs":["create"]},{"apiGroups":["authorization.k8s.io"],"resources":["subjectaccessreviews"],"verbs":["create"]}])",
       {}},
      {"view", readWriteRules(false, false), {}},
      {"edit", readWriteRules(true, false), {}},
      {"admin", readWriteRules(true, true), {}},
  };
  for (const auto& r : roles) {
    CCM_RETURN_IF_ERROR(ensure(writer, cr, clusterRole(r.name, r.rules)));
    if (!r.groups.empty()) {
      CCM_RETURN_IF_ERROR(ensure(writer, crb, clusterRoleBinding(r.name, r.name, r.groups)));
    }
  }
  CCM_RETURN_IF_ERROR(ensure(
      writer, T("rbac.authorization.k8s.io", "roles"),
      R"({"metadata":{"name":"extension-apiserver-authentication-reader","namespace":"kube-system","labels":{"kubernetes.io/bootstrapping":"rbac-defaults"}},"rules":[{"apiGroups":[""],"resources":["configmaps"],"resourceNames":["extension-apiserver-authentication"],"verbs":["get","list","watch"]}]})"));
  CCM_RETURN_IF_ERROR(ensure(
      writer, T("", "configmaps"),
      R"({"metadata":{"name":"extension-apiserver-authentication","namespace":"kube-system"},"data":{"client-ca-file":)" +
          jsonString(ca_pem) + "}}"));
  CCM_RETURN_IF_ERROR(ensure(
      writer, T("", "services"),
      R"({"metadata":{"name":"kubernetes","namespace":"default","labels":{"component":"apiserver","provider":"kubernetes"}},"spec":{"type":"ClusterIP","clusterIP":")" +
          writer.services().kubernetesServiceIp() + R"(","ports":[{"name":"https","port":443,"protocol":"TCP","targetPort":6443}],"sessionAffinity":"None"}})"));
  return okStatus();
}

Status ClusterBootstrap::publishEndpoint(ObjectWriter& writer, uint16_t port) {
  std::string p = std::to_string(port);
  std::string ep =
      R"({"kind":"Endpoints","apiVersion":"v1","metadata":{"name":"kubernetes","namespace":"default","labels":{"endpointslice.kubernetes.io/skip-mirror":"true"}},"subsets":[{"addresses":[{"ip":"127.0.0.1"}],"ports":[{"name":"https","port":)" +
      p + R"(,"protocol":"TCP"}]}]})";
  std::string slice =
      R"({"kind":"EndpointSlice","apiVersion":"discovery.k8s.io/v1","metadata":{"name":"kubernetes","namespace":"default","labels":{"kubernetes.io/service-name":"kubernetes"}},"addressType":"IPv4","endpoints":[{"addresses":["127.0.0.1"],"conditions":{"ready":true}}],"ports":[{"name":"https","port":)" +
      p + R"(,"protocol":"TCP"}]})";
  CCM_RETURN_IF_ERROR(apply(writer, ep));
  return apply(writer, slice);
}

Status ClusterBootstrap::apply(ObjectWriter& writer, const std::string& json) {
  JsonDocument doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return Status(Code::InvalidArgument, "not a JSON object");
  }
  const ResourceType* type = ResourceRegistry::builtin().findApiVersionKind(
      stringMember(doc, "apiVersion"), stringMember(doc, "kind"));
  if (type == nullptr) {
    return Status(Code::InvalidArgument, "unknown kind " + std::string(stringMember(doc, "kind")));
  }
  JsonValue& meta = ensureObject(doc, "metadata", doc.GetAllocator());
  std::string name(stringMember(meta, "name"));
  std::string ns(stringMember(meta, "namespace"));
  if (type->namespaced && ns.empty()) {
    ns = "default";
    setString(meta, "namespace", ns, doc.GetAllocator());
  }
  if (type->namespaced && !writer.store().get(T("", "namespaces"), "", ns)) {
    CCM_RETURN_IF_ERROR(
        ensure(writer, T("", "namespaces"), R"({"metadata":{"name":)" + jsonString(ns) + "}}"));
  }
  if (writer.store().get(*type, ns, name)) {
    auto r = writer.update(
        *type, ns, name, "",
        [&](JsonDocument& cur, const StoredObject&) -> std::optional<ApiError> {
          JsonDocument copy;
          copy.CopyFrom(doc, copy.GetAllocator());
          // Keep identity; replace content.
          JsonValue& m = ensureObject(copy, "metadata", copy.GetAllocator());
          setString(m, "uid", stringMember(*member(cur, "metadata"), "uid"), copy.GetAllocator());
          cur.CopyFrom(copy, cur.GetAllocator());
          return std::nullopt;
        },
        false);
    if (!r.ok()) {
      return Status(Code::InvalidArgument, r.error().message());
    }
    return okStatus();
  }
  auto r = writer.create(*type, doc, doc.GetAllocator(), false);
  if (!r.ok()) {
    return Status(Code::InvalidArgument, r.error().message());
  }
  return okStatus();
}

StatusOr<ClusterBootstrap::LoadResult> ClusterBootstrap::loadManifests(
    ObjectWriter& writer, const std::vector<std::string>& paths) {
  LoadResult result;
  std::vector<std::string> files;
  for (const auto& p : paths) {
    if (!std::filesystem::exists(p)) {
      return Status(Code::NotFound, "no such manifest file or directory: " + p);
    }
    collectFiles(p, files);
  }
  for (const auto& file : files) {
    auto text = readFile(file);
    if (!text.ok()) {
      return text.status();
    }
    auto docs = yamlDocumentsToJson(text.value());
    if (!docs.ok()) {
      return docs.status().withPrefix(file);
    }
    std::vector<std::string> expanded;
    for (const auto& d : docs.value()) {
      JsonDocument doc;
      doc.Parse(d.data(), d.size());
      if (doc.IsObject() && stringMember(doc, "kind") == "List") {
        if (const JsonValue* items = member(doc, "items"); items && items->IsArray()) {
          for (const auto& i : items->GetArray()) {
            expanded.push_back(toJson(i));
          }
        }
      } else {
        expanded.push_back(d);
      }
    }
    for (const auto& d : expanded) {
      JsonDocument doc;
      doc.Parse(d.data(), d.size());
      if (!doc.IsObject() ||
          !allowedKind(stringMember(doc, "apiVersion"), stringMember(doc, "kind"))) {
        ++result.ignored;
        continue;
      }
      auto s = apply(writer, d);
      if (!s.ok()) {
        return s.withPrefix(file);
      }
      ++result.applied;
    }
  }
  return result;
}

}  // namespace ccm::kubesim
