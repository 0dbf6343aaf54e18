// Discovery: version, legacy discovery and OpenAPI v3 documents.
#include "kubesim/discovery.hpp"

#include <functional>
#include <set>

#include "kubesim/json_util.hpp"
#include "kubesim/schema.hpp"

namespace ccm::kubesim {
namespace {

std::string strList(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    out += (i ? "," : "") + jsonString(v[i]);
  }
  return out + "]";
}

std::string groupVersionJson(const std::string& gv, const std::string& version) {
  return R"({"groupVersion":)" + jsonString(gv) + R"(,"version":)" + jsonString(version) + "}";
}

std::string groupJson(const ApiGroupInfo& g) {
  std::string gv = g.name + "/" + g.version;
  return R"({"name":)" + jsonString(g.name) + R"(,"versions":[)" + groupVersionJson(gv, g.version) +
         R"(],"preferredVersion":)" + groupVersionJson(gv, g.version) + "}";
}

std::string fnvHash(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%016llX%016llX", static_cast<unsigned long long>(h),
                static_cast<unsigned long long>(h) * 31 + s.size());
  return buf;
}

std::string packageFor(const std::string& group) {
  if (group.empty()) {
    return "io.k8s.api.core.v1.";
  }
  std::string first = group.substr(0, group.find('.'));
  return "io.k8s.api." + first + ".v1.";
}

bool isMetaStruct(const std::string& name) {
  static const std::set<std::string> kMeta = {
      "ObjectMeta",    "OwnerReference",           "ManagedFieldsEntry", "Condition",
      "LabelSelector", "LabelSelectorRequirement", "DeleteOptions",      "Preconditions"};
  return kMeta.count(name) > 0;
}

std::string schemaName(const std::string& group, const std::string& struct_name) {
  if (isMetaStruct(struct_name)) {
    return "io.k8s.apimachinery.pkg.apis.meta.v1." + struct_name;
  }
  std::string n = struct_name == "EventsV1Event" ? "Event" : struct_name;
  return packageFor(group) + n;
}

}  // namespace

Discovery::Discovery(const ResourceRegistry& registry, VersionInfo version, ServedSurface surface)
    : registry_(registry), version_info_(std::move(version)), surface_(surface) {
  version_ = R"({"major":)" + jsonString(version_info_.major) + R"(,"minor":)" +
             jsonString(version_info_.minor) + R"(,"gitVersion":)" +
             jsonString(version_info_.git_version) +
             R"(,"gitCommit":"0000000000000000000000000000000000000000","gitTreeState":"clean",)"
             R"("buildDate":"2026-01-01T00:00:00Z","goVersion":"go1.23.0","compiler":"gc",)"
             R"("platform":"linux/amd64"})";
  std::string groups;
  for (const auto& g : registry_.groups()) {
    if (g.name.empty() || !surface_.servesGroupVersion(g.name, g.version)) {
      continue;
    }
    groups += (groups.empty() ? "" : ",") + groupJson(g);
    groups_[g.name] = R"({"kind":"APIGroup","apiVersion":"v1",)" + groupJson(g).substr(1);
  }
  group_list_ = R"({"kind":"APIGroupList","apiVersion":"v1","groups":[)" + groups + "]}";
  std::string index;
  for (const auto& g : registry_.groups()) {
    if (!surface_.servesGroupVersion(g.name, g.version)) {
      continue;
    }
    std::string key = g.name.empty() ? g.version : g.name + "/" + g.version;
    resource_lists_[key] = renderResourceList(g.name, g.version);
    std::string path = g.name.empty() ? "api/" + g.version : "apis/" + g.name + "/" + g.version;
    std::string doc = renderOpenApi(g.name, g.version);
    index += (index.empty() ? "" : ",") + jsonString(path) + R"(:{"serverRelativeURL":)" +
             jsonString("/openapi/v3/" + path + "?hash=" + fnvHash(doc)) + "}";
    openapi_docs_[path] = std::move(doc);
  }
  openapi_index_ = R"({"paths":{)" + index + "}}";
}

std::string Discovery::apiVersions(const std::string& server_address) const {
  return R"({"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":)" +
         jsonString(server_address) + "}]}";
}

std::optional<std::string> Discovery::apiGroup(std::string_view group) const {
  auto it = groups_.find(std::string(group));
  if (it == groups_.end()) {
    return std::nullopt;
  }
  return it->second;
}

std::optional<std::string> Discovery::resourceList(std::string_view group,
                                                   std::string_view version) const {
  std::string key =
      group.empty() ? std::string(version) : std::string(group) + "/" + std::string(version);
  auto it = resource_lists_.find(key);
  if (it == resource_lists_.end()) {
    return std::nullopt;
  }
  return it->second;
}

std::optional<std::string> Discovery::openApiDocument(std::string_view path) const {
  auto it = openapi_docs_.find(std::string(path));
  if (it == openapi_docs_.end()) {
    return std::nullopt;
  }
  return it->second;
}

std::string Discovery::renderResourceList(const std::string& group,
                                          const std::string& version) const {
  std::string gv = group.empty() ? version : group + "/" + version;
  std::string items;
  for (const auto& t : registry_.all()) {
    if (t.group != group || t.version != version || !surface_.serves(t)) {
      continue;
    }
    std::string e = R"({"name":)" + jsonString(t.resource) + R"(,"singularName":)" +
                    jsonString(t.singular) + R"(,"namespaced":)" +
                    (t.namespaced ? "true" : "false") + R"(,"kind":)" + jsonString(t.kind) +
                    R"(,"verbs":)" + strList(t.verbs);
    if (!t.short_names.empty()) {
      e += R"(,"shortNames":)" + strList(t.short_names);
    }
    if (!t.categories.empty()) {
      e += R"(,"categories":)" + strList(t.categories);
    }
    e += R"(,"storageVersionHash":)" + jsonString(fnvHash(gv + t.resource).substr(0, 11) + "=") +
         "}";
    items += (items.empty() ? "" : ",") + e;
    for (const auto& sub : t.subresources) {
      std::string s;
      if (sub == "token") {
        s = R"({"name":)" + jsonString(t.resource + "/token") +
            R"(,"singularName":"","namespaced":true,"group":"authentication.k8s.io","version":"v1","kind":"TokenRequest","verbs":["create"]})";
      } else {
        s = R"({"name":)" + jsonString(t.resource + "/" + sub) +
            R"(,"singularName":"","namespaced":)" + (t.namespaced ? "true" : "false") +
            R"(,"kind":)" + jsonString(t.kind) + R"(,"verbs":["get","patch","update"]})";
      }
      items += "," + s;
    }
  }
  return R"({"kind":"APIResourceList","apiVersion":"v1","groupVersion":)" + jsonString(gv) +
         R"(,"resources":[)" + items + "]}";
}

std::string Discovery::renderOpenApi(const std::string& group, const std::string& version) const {
  const Schema& schema = Schema::builtin();
  // Structs reachable from this group-version's kinds.
  std::map<std::string, std::string> roots;  // struct -> kind
  for (const auto& t : registry_.all()) {
    if (t.group == group && t.version == version && surface_.serves(t)) {
      roots[schema.rootFor(t.group, t.kind)] = t.kind;
    }
  }
  std::set<std::string> reachable;
  std::function<void(const Schema::TypeRef&)> visitType;
  std::function<void(const std::string&)> visit = [&](const std::string& name) {
    if (!reachable.insert(name).second) {
      return;
    }
    if (const auto* def = schema.structDef(name)) {
      for (const auto& [f, t] : def->fields) {
        visitType(t);
      }
    }
  };
  visitType = [&](const Schema::TypeRef& t) {
    if (t.kind == Schema::Kind::Struct) {
      visit(t.struct_name);
    }
    if (t.element) {
      visitType(*t.element);
    }
  };
  for (const auto& [root, kind] : roots) {
    visit(root);
  }

  std::function<std::string(const Schema::TypeRef&)> typeSchema =
      [&](const Schema::TypeRef& t) -> std::string {
    switch (t.kind) {
      case Schema::Kind::String:
        return R"({"type":"string"})";
      case Schema::Kind::Int32:
        return R"({"type":"integer","format":"int32"})";
      case Schema::Kind::Int64:
        return R"({"type":"integer","format":"int64"})";
      case Schema::Kind::Bool:
        return R"({"type":"boolean"})";
      case Schema::Kind::Number:
        return R"({"type":"number","format":"double"})";
      case Schema::Kind::Quantity:
        return R"({"type":"string","description":"Quantity"})";
      case Schema::Kind::IntOrString:
        return R"({"type":"string","format":"int-or-string"})";
      case Schema::Kind::Time:
      case Schema::Kind::MicroTime:
        return R"({"type":"string","format":"date-time"})";
      case Schema::Kind::Bytes:
        return R"({"type":"string","format":"byte"})";
      case Schema::Kind::Any:
        return R"({"type":"object","x-kubernetes-preserve-unknown-fields":true})";
      case Schema::Kind::Struct:
        return R"({"allOf":[{"$ref":"#/components/schemas/)" + schemaName(group, t.struct_name) +
               R"("}]})";
      case Schema::Kind::Map:
        return R"({"type":"object","additionalProperties":)" + typeSchema(*t.element) + "}";
      case Schema::Kind::Array:
        return R"({"type":"array","items":)" + typeSchema(*t.element) + "}";
    }
    return "{}";
  };

  std::string schemas;
  for (const auto& name : reachable) {
    const auto* def = schema.structDef(name);
    if (def == nullptr) {
      continue;
    }
    std::string props;
    for (const auto& [f, t] : def->fields) {
      if (!surface_.knowsField(name, f)) {
        continue;
      }
      props += (props.empty() ? "" : ",") + jsonString(f) + ":" + typeSchema(t);
    }
    std::string s = R"({"type":"object","properties":{)" + props + "}";
    if (auto it = roots.find(name); it != roots.end()) {
      s += R"(,"x-kubernetes-group-version-kind":[{"group":)" + jsonString(group) + R"(,"kind":)" +
           jsonString(it->second) + R"(,"version":)" + jsonString(version) + "}]";
    }
    s += "}";
    schemas += (schemas.empty() ? "" : ",") + jsonString(schemaName(group, name)) + ":" + s;
  }

  const std::string params =
      R"([{"name":"dryRun","in":"query","schema":{"type":"string","uniqueItems":true}},)"
      R"({"name":"fieldManager","in":"query","schema":{"type":"string","uniqueItems":true}},)"
      R"({"name":"fieldValidation","in":"query","schema":{"type":"string","uniqueItems":true}},)"
      R"({"name":"force","in":"query","schema":{"type":"boolean","uniqueItems":true}}])";
  std::string paths;
  std::string prefix = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  for (const auto& t : registry_.all()) {
    if (t.group != group || t.version != version || !t.stored || !surface_.serves(t)) {
      continue;
    }
    std::string gvk = R"({"group":)" + jsonString(group) + R"(,"kind":)" + jsonString(t.kind) +
                      R"(,"version":)" + jsonString(version) + "}";
    std::string ref = R"({"$ref":"#/components/schemas/)" +
                      schemaName(group, schema.rootFor(t.group, t.kind)) + R"("})";
    std::string base =
        t.namespaced ? prefix + "/namespaces/{namespace}/" + t.resource : prefix + "/" + t.resource;
    auto op = [&](const std::string& action, const std::string& id) {
      std::string out = R"({"operationId":)" + jsonString(id);
      out.append(
             R"(,"responses":{"200":{"description":"OK","content":{"application/json":{"schema":)")
          .append(ref)
          .append(R"(}}}},"x-kubernetes-action":)")
          .append(jsonString(action))
          .append(R"(,"x-kubernetes-group-version-kind":)")
          .append(gvk);
      if (action == "patch") {
        out.append(R"(,"parameters":)").append(params);
      }
      out += '}';
      return out;
    };
    std::string item = R"({"get":)" + op("get", "read" + t.kind) + R"(,"put":)" +
                       op("put", "replace" + t.kind) + R"(,"patch":)" +
                       op("patch", "patch" + t.kind) + R"(,"delete":)" +
                       op("delete", "delete" + t.kind) + "}";
    auto addPath = [&](const std::string& path, const std::string& operations) {
      if (!paths.empty()) {
        paths += ',';
      }
      paths.append(jsonString(path)).append(":").append(operations);
    };
    addPath(base + "/{name}", item);
    addPath(base, R"({"get":)" + op("list", "list" + t.kind) + R"(,"post":)" +
                      op("post", "create" + t.kind) + "}");
    if (t.hasSubresource("status")) {
      addPath(base + "/{name}/status", R"({"get":)" + op("get", "read" + t.kind + "Status") +
                                           R"(,"put":)" + op("put", "replace" + t.kind + "Status") +
                                           R"(,"patch":)" +
                                           op("patch", "patch" + t.kind + "Status") + "}");
    }
  }
  return R"({"openapi":"3.0.0","info":{"title":"Kubernetes","version":)" +
         jsonString(version_info_.git_version) + R"(},"paths":{)" + paths +
         R"(},"components":{"schemas":{)" + schemas + "}}}";
}

}  // namespace ccm::kubesim
