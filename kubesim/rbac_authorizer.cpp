// RbacAuthorizer: compiling RBAC objects into a subject index and evaluating rules.
#include "kubesim/rbac_authorizer.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "kubesim/api_error.hpp"
#include "kubesim/authz_recorder.hpp"

namespace ccm::kubesim {
namespace {

bool contains(const std::vector<std::string>& list, std::string_view v) {
  return std::find(list.begin(), list.end(), v) != list.end();
}

std::vector<std::string> stringList(const JsonValue& obj, std::string_view name) {
  std::vector<std::string> out;
  const JsonValue* v = member(obj, name);
  if (v != nullptr && v->IsArray()) {
    for (const auto& e : v->GetArray()) {
      if (e.IsString()) {
        out.emplace_back(e.GetString(), e.GetStringLength());
      }
    }
  }
  return out;
}

std::map<std::string, std::string> stringMap(const JsonValue* v) {
  std::map<std::string, std::string> out;
  if (v != nullptr && v->IsObject()) {
    for (auto it = v->MemberBegin(); it != v->MemberEnd(); ++it) {
      if (it->value.IsString()) {
        out.emplace(it->name.GetString(), it->value.GetString());
      }
    }
  }
  return out;
}

// metav1.LabelSelector (matchLabels + matchExpressions) against a label map.
bool selectorMatches(const JsonValue& sel, const std::map<std::string, std::string>& labels) {
  for (const auto& [k, v] : stringMap(member(sel, "matchLabels"))) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) {
      return false;
    }
  }
  const JsonValue* exprs = member(sel, "matchExpressions");
  if (exprs != nullptr && exprs->IsArray()) {
    for (const auto& e : exprs->GetArray()) {
      std::string key(stringMember(e, "key"));
      std::string_view op = stringMember(e, "operator");
      auto values = stringList(e, "values");
      auto it = labels.find(key);
      bool has = it != labels.end();
      if (op == "In" && !(has && contains(values, it->second))) {
        return false;
      }
      if (op == "NotIn" && has && contains(values, it->second)) {
        return false;
      }
      if (op == "Exists" && !has) {
        return false;
      }
      if (op == "DoesNotExist" && has) {
        return false;
      }
    }
  }
  return true;
}

JsonDocument parse(const StoredObject& obj) {
  JsonDocument doc;
  doc.Parse(obj.json.data(), obj.json.size());
  return doc;
}

}  // namespace

bool PolicyRule::matches(const AuthorizationAttributes& a) const {
  if (!contains(verbs, "*") && !contains(verbs, a.verb)) {
    return false;
  }
  if (!a.resource_request) {
    for (const auto& url : non_resource_urls) {
      if (url == "*" || url == a.path) {
        return true;
      }
      if (!url.empty() && url.back() == '*' &&
          a.path.compare(0, url.size() - 1, url, 0, url.size() - 1) == 0) {
        return true;
      }
    }
    return false;
  }
  if (!contains(api_groups, "*") && !contains(api_groups, a.api_group)) {
    return false;
  }
  std::string combined = a.subresource.empty() ? a.resource : a.resource + "/" + a.subresource;
  bool resource_ok = false;
  for (const auto& r : resources) {
    if (r == "*" || r == combined) {
      resource_ok = true;
      break;
    }
    if (!a.subresource.empty() && r.size() == a.subresource.size() + 2 &&
        r.compare(0, 2, "*/") == 0 && r.compare(2, std::string::npos, a.subresource) == 0) {
      resource_ok = true;
      break;
    }
  }
  if (!resource_ok) {
    return false;
  }
  if (resource_names.empty()) {
    return true;
  }
  return !a.name.empty() && contains(resource_names, a.name);
}

std::string PolicyRule::toJson() const {
  std::string out = "{";
  auto add = [&](std::string_view name, const std::vector<std::string>& values) {
    if (values.empty()) {
      return;
    }
    out += (out.size() > 1 ? ",\"" : "\"") + std::string(name) + "\":[";
    for (size_t i = 0; i < values.size(); ++i) {
      out += (i ? "," : "") + jsonString(values[i]);
    }
    out += "]";
  };
  add("verbs", verbs);
  add("apiGroups", api_groups);
  add("resources", resources);
  add("resourceNames", resource_names);
  add("nonResourceURLs", non_resource_urls);
  return out + "}";
}

PolicyRule PolicyRule::fromJson(const JsonValue& rule) {
  PolicyRule r;
  r.verbs = stringList(rule, "verbs");
  r.api_groups = stringList(rule, "apiGroups");
  r.resources = stringList(rule, "resources");
  r.resource_names = stringList(rule, "resourceNames");
  r.non_resource_urls = stringList(rule, "nonResourceURLs");
  return r;
}

struct RbacAuthorizer::Snapshot {
  // "User:<name>" / "Group:<name>" -> grants
  std::unordered_map<std::string, std::vector<Grant>> by_subject;
};

RbacAuthorizer::RbacAuthorizer(const ObjectStore& store) : store_(store) {}

std::shared_ptr<const RbacAuthorizer::Snapshot> RbacAuthorizer::current() const {
  std::lock_guard lock(mu_);
  if (dirty_.exchange(false) || !snapshot_) {
    snapshot_ = build();
  }
  return snapshot_;
}

std::shared_ptr<const RbacAuthorizer::Snapshot> RbacAuthorizer::build() const {
  const auto& reg = ResourceRegistry::builtin();
  const std::string group = "rbac.authorization.k8s.io";
  auto snap = std::make_shared<Snapshot>();

  using Rules = std::vector<PolicyRule>;
  struct ClusterRoleInfo {
    Rules own;
    std::map<std::string, std::string> labels;
    std::vector<JsonDocument> selectors;
    Rules effective;
  };
  std::map<std::string, ClusterRoleInfo> cluster_roles;
  auto list = [&](std::string_view resource) {
    auto r = store_.list(*reg.find(group, "v1", resource), {});
    return r.ok() ? r.value().items : std::vector<ObjectPtr>{};
  };
  for (const auto& obj : list("clusterroles")) {
    JsonDocument doc = parse(*obj);
    ClusterRoleInfo info;
    if (const JsonValue* rules = member(doc, "rules"); rules && rules->IsArray()) {
      for (const auto& r : rules->GetArray()) {
        info.own.push_back(PolicyRule::fromJson(r));
      }
    }
    info.labels = stringMap(memberPath(doc, {"metadata", "labels"}));
    if (const JsonValue* sels = memberPath(doc, {"aggregationRule", "clusterRoleSelectors"});
        sels && sels->IsArray()) {
      for (const auto& s : sels->GetArray()) {
        JsonDocument d;
        d.CopyFrom(s, d.GetAllocator());
        info.selectors.push_back(std::move(d));
      }
    }
    info.effective = info.own;
    cluster_roles.emplace(obj->name, std::move(info));
  }
  // Aggregation to a fixed point (aggregated roles may themselves aggregate).
  for (int pass = 0; pass < 5; ++pass) {
    bool changed = false;
    for (auto& [name, info] : cluster_roles) {
      if (info.selectors.empty()) {
        continue;
      }
      Rules agg = info.own;
      for (const auto& [other_name, other] : cluster_roles) {
        if (other_name == name) {
          continue;
        }
        for (const auto& sel : info.selectors) {
          if (selectorMatches(sel, other.labels)) {
            agg.insert(agg.end(), other.effective.begin(), other.effective.end());
            break;
          }
        }
      }
      if (agg.size() != info.effective.size()) {
        info.effective = std::move(agg);
        changed = true;
      }
    }
    if (!changed) {
      break;
    }
  }
  std::map<std::string, std::shared_ptr<const Rules>> cluster_rules;
  for (auto& [name, info] : cluster_roles) {
    cluster_rules[name] = std::make_shared<const Rules>(std::move(info.effective));
  }
  std::map<std::string, std::shared_ptr<const Rules>> role_rules;  // "ns/name"
  for (const auto& obj : list("roles")) {
    JsonDocument doc = parse(*obj);
    auto rules = std::make_shared<Rules>();
    if (const JsonValue* rs = member(doc, "rules"); rs && rs->IsArray()) {
      for (const auto& r : rs->GetArray()) {
        rules->push_back(PolicyRule::fromJson(r));
      }
    }
    role_rules[obj->ns + "/" + obj->name] = std::move(rules);
  }

  auto addBinding = [&](const StoredObject& obj, bool cluster) {
    JsonDocument doc = parse(obj);
    const JsonValue* ref = member(doc, "roleRef");
    if (ref == nullptr) {
      return;
    }
    std::string_view kind = stringMember(*ref, "kind");
    std::string role(stringMember(*ref, "name"));
    std::shared_ptr<const Rules> rules;
    std::string role_id;
    if (kind == "ClusterRole") {
      auto it = cluster_rules.find(role);
      if (it != cluster_rules.end()) {
        rules = it->second;
        role_id = "ClusterRole/" + role;
      }
    } else if (kind == "Role" && !cluster) {
      auto it = role_rules.find(obj.ns + "/" + role);
      if (it != role_rules.end()) {
        rules = it->second;
        role_id = "Role/" + obj.ns + "/" + role;
      }
    }
    if (!rules) {
      return;
    }
    const JsonValue* subjects = member(doc, "subjects");
    if (subjects == nullptr || !subjects->IsArray()) {
      return;
    }
    for (const auto& s : subjects->GetArray()) {
      std::string_view skind = stringMember(s, "kind");
      std::string name(stringMember(s, "name"));
      std::string key;
      if (skind == "User") {
        key = "User:" + name;
      } else if (skind == "Group") {
        key = "Group:" + name;
      } else if (skind == "ServiceAccount") {
        std::string ns(stringMember(s, "namespace"));
        if (ns.empty()) {
          ns = obj.ns;
        }
        key = "User:system:serviceaccount:" + ns;
        key.append(":").append(name);
      } else {
        continue;
      }
      std::string binding_id = cluster ? "ClusterRoleBinding/" : "RoleBinding/";
      if (!cluster) {
        binding_id.append(obj.ns).append("/");
      }
      binding_id += obj.name;
      // The RBAC authorizer's reason: binding (name/namespace), role, subject (a service
      // account as name/namespace).
      std::string subject_name = name;
      if (skind == "ServiceAccount") {
        std::string_view sns = stringMember(s, "namespace");
        subject_name += "/" + std::string(sns.empty() ? std::string_view(obj.ns) : sns);
      }
      std::string reason =
          "RBAC: allowed by " + std::string(cluster ? "ClusterRoleBinding " : "RoleBinding ") +
          goQuote(cluster ? obj.name : obj.name + "/" + obj.ns) + " of " + std::string(kind) + " " +
          goQuote(role) + " to " + std::string(skind) + " " + goQuote(subject_name);
      snap->by_subject[key].push_back({cluster ? std::string() : obj.ns, rules,
                                       std::move(binding_id), role_id, std::move(reason)});
    }
  };
  for (const auto& obj : list("clusterrolebindings")) {
    addBinding(*obj, true);
  }
  for (const auto& obj : list("rolebindings")) {
    addBinding(*obj, false);
  }
  return snap;
}

RbacAuthorizer::Decision RbacAuthorizer::authorize(const AuthorizationAttributes& a,
                                                   std::string_view source) const {
  Decision d = evaluate(a);
  if (recorder_ != nullptr) {
    recorder_->record(a, source, d);
  }
  return d;
}

RbacAuthorizer::Decision RbacAuthorizer::evaluate(const AuthorizationAttributes& a) const {
  if (a.user.inGroup("system:masters")) {
    return {true, "system:masters", "", "", -1, nullptr, ""};
  }
  auto snap = current();
  Decision d;
  auto check = [&](const std::string& key) -> bool {
    auto it = snap->by_subject.find(key);
    if (it == snap->by_subject.end()) {
      return false;
    }
    for (const auto& grant : it->second) {
      if (!grant.ns.empty() && grant.ns != a.ns) {
        continue;
      }
      for (size_t i = 0; i < grant.rules->size(); ++i) {
        if ((*grant.rules)[i].matches(a)) {
          d.allowed = true;
          d.binding = grant.binding;
          d.role = grant.role;
          d.rule_index = static_cast<int>(i);
          d.rules = grant.rules;
          d.review_reason = grant.reason;
          return true;
        }
      }
    }
    return false;
  };
  if (check("User:" + a.user.name)) {
    return d;
  }
  for (const auto& g : a.user.groups) {
    if (check("Group:" + g)) {
      return d;
    }
  }
  return d;
}

std::string RbacAuthorizer::forbiddenMessage(const AuthorizationAttributes& a) {
  if (!a.resource_request) {
    return "User " + goQuote(a.user.name) + " cannot " + a.verb + " path " + goQuote(a.path);
  }
  std::string resource = a.resource;
  if (!a.subresource.empty()) {
    resource += "/" + a.subresource;
  }
  std::string msg = "User " + goQuote(a.user.name) + " cannot " + a.verb + " resource " +
                    goQuote(resource) + " in API group " + goQuote(a.api_group);
  if (!a.ns.empty()) {
    return msg + " in the namespace " + goQuote(a.ns);
  }
  return msg + " at the cluster scope";
}

}  // namespace ccm::kubesim
