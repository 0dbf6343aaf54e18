// ObjectValidator: metadata and kind-specific validation with apimachinery's messages.
#include "kubesim/object_validator.hpp"

#include <algorithm>
#include <set>

#include "kubesim/field_checks.hpp"
#include "kubesim/ip_text.hpp"
#include "kubesim/label_selector.hpp"
#include "kubesim/service_validator.hpp"

namespace ccm::kubesim {
namespace {

using namespace fieldcheck;  // NOLINT(google-build-using-namespace)

constexpr size_t kTotalAnnotationSizeLimit = size_t{256} * 1024;
// core.MaxSecretSize: the limit on a ConfigMap's or Secret's data.
constexpr size_t kMaxDataSize = size_t{1024} * 1024;

std::string render(const JsonValue& v) {
  if (v.IsString()) {
    return goQuote({v.GetString(), v.GetStringLength()});
  }
  if (v.IsNull()) {
    return "null";
  }
  return toJson(v);
}

std::vector<std::string> pathSegmentName(std::string_view name) {
  if (name == "." || name == "..") {
    return {"may not be '" + std::string(name) + "'"};
  }
  std::vector<std::string> out;
  if (name.find('/') != std::string_view::npos) {
    out.push_back("may not contain '/'");
  }
  if (name.find('%') != std::string_view::npos) {
    out.push_back("may not contain '%'");
  }
  return out;
}

std::vector<std::string> validateName(const ResourceType& type, std::string_view name) {
  if (type.resource == "namespaces") {
    return validateDns1123Label(name);
  }
  if (type.resource == "services") {
    return validateDns1035Label(name);
  }
  if (type.group == "rbac.authorization.k8s.io") {
    return pathSegmentName(name);
  }
  return validateDns1123Subdomain(name);
}

bool isConfigKey(std::string_view k) {
  if (k.empty() || k.size() > 253 || k == "." || k == "..") {
    return false;
  }
  return std::all_of(k.begin(), k.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
}

// The summed length of a data map's values; base64 values count decoded.
size_t dataSize(const JsonValue& obj, std::string_view field, bool base64) {
  const JsonValue* data = member(obj, field);
  size_t total = 0;
  if (data == nullptr || !data->IsObject()) {
    return 0;
  }
  for (auto it = data->MemberBegin(); it != memberEnd(*data); ++it) {
    if (!it->value.IsString()) {
      continue;
    }
    size_t len = it->value.GetStringLength();
    if (base64) {
      std::string_view v(it->value.GetString(), len);
      size_t pad = 0;
      while (pad < 2 && pad < v.size() && v[v.size() - 1 - pad] == '=') {
        ++pad;
      }
      len = len / 4 * 3 - pad;
    }
    total += len;
  }
  return total;
}

void validateDataKeys(const JsonValue& obj, std::string_view field, FieldErrors& errs) {
  const JsonValue* data = member(obj, field);
  if (data == nullptr || !data->IsObject()) {
    return;
  }
  for (auto it = data->MemberBegin(); it != data->MemberEnd(); ++it) {
    std::string_view k(it->name.GetString(), it->name.GetStringLength());
    if (!isConfigKey(k)) {
      errs.push_back(FieldError::invalidString(
          std::string(field) + "[" + std::string(k) + "]", k,
          "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
          "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
          "'[-._a-zA-Z0-9]+')"));
    }
  }
}

void validateTaints(const JsonValue& spec, FieldErrors& errs) {
  const JsonValue* taints = member(spec, "taints");
  if (taints == nullptr || !taints->IsArray()) {
    return;
  }
  std::set<std::pair<std::string, std::string>> seen;
  for (rapidjson::SizeType i = 0; i < taints->Size(); ++i) {
    const JsonValue& t = (*taints)[i];
    std::string idx = "spec.taints[" + std::to_string(i) + "]";
    std::string key = str(t, "key");
    std::string value = str(t, "value");
    std::string effect = str(t, "effect");
    addAll(errs, idx + ".key", key, validateQualifiedName(key));
    auto vmsgs = validateLabelValue(value);
    if (!vmsgs.empty()) {
      std::string joined;
      for (size_t j = 0; j < vmsgs.size(); ++j) {
        joined += (j ? ";" : "") + vmsgs[j];
      }
      errs.push_back(FieldError::invalidString(idx + ".value", value, joined));
    }
    if (effect.empty()) {
      errs.push_back(FieldError::required(idx + ".effect"));
    } else if (effect != "NoSchedule" && effect != "PreferNoSchedule" && effect != "NoExecute") {
      errs.push_back(FieldError::notSupported(idx + ".effect", effect,
                                              {"NoSchedule", "PreferNoSchedule", "NoExecute"}));
    }
    if (!seen.insert({key, effect}).second) {
      errs.push_back(
          FieldError::duplicate(idx,
                                "core.Taint{Key:" + goQuote(key) + ", Value:" + goQuote(value) +
                                    ", Effect:" + goQuote(effect) + ", TimeAdded:(*v1.Time)(nil)}",
                                "taints must be unique by key and effect pair"));
    }
  }
}

// ValidateNode's pod CIDR rules (on the internal podCIDRs list; podCIDR is folded into it
// before validation, see ObjectWriter).
void validatePodCidrs(const JsonValue& obj, FieldErrors& errs) {
  std::vector<std::string> cidrs = stringArray(memberPath(obj, {"spec", "podCIDRs"}));
  if (cidrs.empty()) {
    return;
  }
  int v4 = 0;
  int v6 = 0;
  bool all_valid = true;
  std::string parse_error;  // k8s.io/utils/net ParseCIDRs' error for the first bad one
  for (size_t i = 0; i < cidrs.size(); ++i) {
    auto c = parseCidr(cidrs[i]);
    if (!c) {
      if (all_valid) {
        parse_error = "invalid CIDR[" + std::to_string(i) + "]: <nil> (invalid CIDR address: " +
                      cidrs[i] + ")";
      }
      all_valid = false;
      errs.push_back(FieldError::invalid("spec.podCIDRs[" + std::to_string(i) + "]",
                                         goStringSlice(cidrs), "must be valid CIDR"));
      continue;
    }
    (c->base.v4 ? v4 : v6)++;
  }
  if (cidrs.size() > 1) {
    if (!all_valid) {
      errs.push_back({FieldError::Type::Internal, "spec.podCIDRs", "", false,
                      "invalid PodCIDRs. failed to check with dual stack with error:" +
                          parse_error});
    }
    bool dual = all_valid && v4 == 1 && v6 == 1;
    if (!dual || cidrs.size() > 2) {
      errs.push_back(FieldError::invalid("spec.podCIDRs", goStringSlice(cidrs),
                                         "may specify no more than one CIDR for each IP family"));
    }
    std::set<std::string> seen;
    for (size_t i = 0; i < cidrs.size(); ++i) {
      if (!seen.insert(cidrs[i]).second) {
        errs.push_back(FieldError::duplicate("spec.podCIDRs[" + std::to_string(i) + "]",
                                             goQuote(cidrs[i])));
      }
    }
  }
}

// ValidateNodeUpdate: the same (type, address) twice in status.addresses.
void validateNodeAddresses(const JsonValue& obj, FieldErrors& errs) {
  const JsonValue* addrs = memberPath(obj, {"status", "addresses"});
  if (addrs == nullptr || !addrs->IsArray()) {
    return;
  }
  std::set<std::pair<std::string, std::string>> seen;
  for (rapidjson::SizeType i = 0; i < addrs->Size(); ++i) {
    std::string type = str((*addrs)[i], "type");
    std::string address = str((*addrs)[i], "address");
    if (!seen.insert({type, address}).second) {
      errs.push_back(FieldError::duplicate(
          "status.addresses[" + std::to_string(i) + "]",
          "core.NodeAddress{Type:" + goQuote(type) + ", Address:" + goQuote(address) + "}"));
    }
  }
}

// The API server's event validation: the legacy rules every Event passes (namespace against
// involvedObject; for events with eventTime the reporting fields), then for events.k8s.io/v1
// creates the strict ones. Field paths are the core/v1 names even through events.k8s.io.
void validateEvent(const JsonValue& obj, const JsonValue* v1, FieldErrors& errs) {
  std::string ns = std::string(stringMember(*member(obj, "metadata"), "namespace"));
  const JsonValue* inv = member(obj, "involvedObject");
  std::string inv_ns = inv != nullptr ? str(*inv, "namespace") : std::string();
  const JsonValue* event_time = member(obj, "eventTime");
  bool new_style = event_time != nullptr && event_time->IsString();
  if (!new_style) {
    if (inv_ns.empty()) {
      if (!ns.empty() && ns != "default") {
        errs.push_back(FieldError::invalidString("involvedObject.namespace", inv_ns,
                                                 "does not match event.namespace"));
      }
    } else if (ns != inv_ns) {
      errs.push_back(FieldError::invalidString("involvedObject.namespace", inv_ns,
                                               "does not match event.namespace"));
    }
  } else {
    // A cluster-scoped subject (a Node) may only be reported in default or kube-system.
    if (inv_ns.empty() && ns != "default" && ns != "kube-system") {
      errs.push_back(FieldError::invalidString("involvedObject.namespace", inv_ns,
                                               "does not match event.namespace"));
    }
    std::string controller = str(obj, "reportingComponent");
    if (controller.empty()) {
      errs.push_back(FieldError::required("reportingController"));
    }
    addAll(errs, "reportingController", controller, validateQualifiedName(controller));
    for (auto [field, json] : {std::pair{"reportingInstance", "reportingInstance"},
                               std::pair{"action", "action"}, std::pair{"reason", "reason"}}) {
      std::string v = str(obj, json);
      if (v.empty()) {
        errs.push_back(FieldError::required(field));
      }
      if (v.size() > 128) {
        errs.push_back(FieldError::invalidString(field, "", "can have at most 128 characters"));
      }
    }
    if (str(obj, "message").size() > 1024) {
      errs.push_back(FieldError::invalidString("message", "", "can have at most 1024 characters"));
    }
  }
  addAll(errs, "namespace", ns, validateDns1123Subdomain(ns));
  if (v1 == nullptr) {
    return;
  }
  // events.k8s.io/v1 creates.
  if (const JsonValue* series = member(*v1, "series"); series && series->IsObject()) {
    const JsonValue* count = member(*series, "count");
    if (count == nullptr || !count->IsInt64() || count->GetInt64() < 2) {
      errs.push_back(FieldError::invalidString("series.count", "", "should be at least 2"));
    }
    const JsonValue* last = member(*series, "lastObservedTime");
    if (last == nullptr || !last->IsString()) {
      errs.push_back(FieldError::required("series.lastObservedTime"));
    }
  }
  const JsonValue* et = member(*v1, "eventTime");
  if (et == nullptr || !et->IsString()) {
    errs.push_back(FieldError::required("eventTime"));
  }
  std::string type = str(obj, "type");
  if (type != "Normal" && type != "Warning") {
    errs.push_back(FieldError::invalidString("type", "", "has invalid value: " + type));
  }
  for (auto [field, json] : {std::pair{"firstTimestamp", "deprecatedFirstTimestamp"},
                             std::pair{"lastTimestamp", "deprecatedLastTimestamp"}}) {
    if (const JsonValue* t = member(*v1, json); t && t->IsString()) {
      errs.push_back(FieldError::invalidString(field, "", "needs to be unset"));
    }
  }
  if (const JsonValue* c = member(*v1, "deprecatedCount"); c && c->IsInt64() && c->GetInt64()) {
    errs.push_back(FieldError::invalidString("count", "", "needs to be unset"));
  }
  if (const JsonValue* src = member(*v1, "deprecatedSource"); src && src->IsObject()) {
    if (!str(*src, "component").empty() || !str(*src, "host").empty()) {
      errs.push_back(FieldError::invalidString("source", "", "needs to be unset"));
    }
  }
}

}  // namespace

void ObjectValidator::validateMeta(const ResourceType& type, const JsonValue& obj,
                                   FieldErrors& errs) {
  const JsonValue* meta = member(obj, "metadata");
  if (meta == nullptr || !meta->IsObject()) {
    errs.push_back(FieldError::required("metadata.name", "name or generateName is required"));
    return;
  }
  std::string name = str(*meta, "name");
  if (name.empty()) {
    errs.push_back(FieldError::required("metadata.name", "name or generateName is required"));
  } else {
    addAll(errs, "metadata.name", name, validateName(type, name));
  }
  if (type.namespaced) {
    std::string ns = str(*meta, "namespace");
    if (ns.empty()) {
      errs.push_back(FieldError::required("metadata.namespace"));
    }
  } else if (!str(*meta, "namespace").empty() && type.resource != "namespaces") {
    errs.push_back(FieldError::forbidden("metadata.namespace", "not allowed on this type"));
  }
  if (const JsonValue* labels = member(*meta, "labels"); labels && labels->IsObject()) {
    for (auto it = labels->MemberBegin(); it != labels->MemberEnd(); ++it) {
      std::string_view k(it->name.GetString(), it->name.GetStringLength());
      addAll(errs, "metadata.labels", k, validateQualifiedName(k));
      if (it->value.IsString()) {
        std::string_view v(it->value.GetString(), it->value.GetStringLength());
        addAll(errs, "metadata.labels", v, validateLabelValue(v));
      }
    }
  }
  if (const JsonValue* ann = member(*meta, "annotations"); ann && ann->IsObject()) {
    size_t total = 0;
    for (auto it = ann->MemberBegin(); it != ann->MemberEnd(); ++it) {
      std::string k(it->name.GetString(), it->name.GetStringLength());
      std::string lower = k;
      std::transform(lower.begin(), lower.end(), lower.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      addAll(errs, "metadata.annotations", k, validateQualifiedName(lower));
      total += k.size() + (it->value.IsString() ? it->value.GetStringLength() : 0);
    }
    if (total > kTotalAnnotationSizeLimit) {
      errs.push_back(
          FieldError::tooLong("metadata.annotations", static_cast<int>(kTotalAnnotationSizeLimit)));
    }
  }
  if (const JsonValue* fin = member(*meta, "finalizers"); fin && fin->IsArray()) {
    for (rapidjson::SizeType i = 0; i < fin->Size(); ++i) {
      if ((*fin)[i].IsString()) {
        std::string_view f((*fin)[i].GetString(), (*fin)[i].GetStringLength());
        addAll(errs, "metadata.finalizers[" + std::to_string(i) + "]", f, validateQualifiedName(f));
      }
    }
  }
}

void ObjectValidator::validateKind(const ResourceType& type, const JsonValue& obj,
                                   FieldErrors& errs) {
  const std::string& r = type.resource;
  if (r == "nodes") {
    if (const JsonValue* spec = member(obj, "spec")) {
      validateTaints(*spec, errs);
    }
    validatePodCidrs(obj, errs);
  } else if (r == "services") {
    validateService(obj, errs);
    validateLoadBalancerStatus(obj, errs);
  } else if (r == "leases") {
    if (const JsonValue* spec = member(obj, "spec")) {
      const JsonValue* d = member(*spec, "leaseDurationSeconds");
      if (d != nullptr && d->IsInt64() && d->GetInt64() <= 0) {
        errs.push_back(
            FieldError::invalid("spec.leaseDurationSeconds", render(*d), "must be greater than 0"));
      }
      const JsonValue* t = member(*spec, "leaseTransitions");
      if (t != nullptr && t->IsInt64() && t->GetInt64() < 0) {
        errs.push_back(FieldError::invalid("spec.leaseTransitions", render(*t),
                                           "must be greater than or equal to 0"));
      }
    }
  } else if (r == "configmaps") {
    validateDataKeys(obj, "data", errs);
    validateDataKeys(obj, "binaryData", errs);
    // The values' total size (binaryData decoded), refused for the whole object: the field
    // path is the empty path, which the API server prints as "[]".
    if (dataSize(obj, "data", false) + dataSize(obj, "binaryData", true) > kMaxDataSize) {
      errs.push_back(FieldError::tooLong("[]", static_cast<int>(kMaxDataSize)));
    }
  } else if (r == "secrets") {
    validateDataKeys(obj, "data", errs);
    if (dataSize(obj, "data", true) > kMaxDataSize) {
      errs.push_back(FieldError::tooLong("data", static_cast<int>(kMaxDataSize)));
    }
  } else if (r == "pods") {
    const JsonValue* containers = memberPath(obj, {"spec", "containers"});
    if (containers == nullptr || !containers->IsArray() || containers->Empty()) {
      errs.push_back(FieldError::required("spec.containers"));
    } else {
      for (rapidjson::SizeType i = 0; i < containers->Size(); ++i) {
        std::string idx = "spec.containers[" + std::to_string(i) + "]";
        if (str((*containers)[i], "name").empty()) {
          errs.push_back(FieldError::required(idx + ".name"));
        }
        if (str((*containers)[i], "image").empty()) {
          errs.push_back(FieldError::required(idx + ".image"));
        }
      }
    }
  } else if (r == "clusterrolebindings" || r == "rolebindings") {
    const JsonValue* ref = member(obj, "roleRef");
    std::string kind = ref ? str(*ref, "kind") : std::string();
    if (kind.empty()) {
      errs.push_back(FieldError::required("roleRef.kind"));
    } else if (kind != "ClusterRole" && (r == "clusterrolebindings" || kind != "Role")) {
      errs.push_back(FieldError::notSupported(
          "roleRef.kind", kind,
          r == "clusterrolebindings" ? std::vector<std::string>{"ClusterRole"}
                                     : std::vector<std::string>{"Role", "ClusterRole"}));
    }
    if (ref == nullptr || str(*ref, "name").empty()) {
      errs.push_back(FieldError::required("roleRef.name"));
    }
  }
}

FieldErrors ObjectValidator::validateCreate(const ResourceType& type, const JsonValue& obj,
                                            const JsonValue* events_v1_view) {
  FieldErrors errs;
  validateMeta(type, obj, errs);
  validateKind(type, obj, errs);
  if (type.resource == "events") {
    validateEvent(obj, events_v1_view, errs);
  }
  return errs;
}

FieldErrors ObjectValidator::validateUpdate(const ResourceType& type, const JsonValue& obj,
                                            const JsonValue& old) {
  FieldErrors errs;
  validateMeta(type, obj, errs);
  validateKind(type, obj, errs);
  const JsonValue* meta = member(obj, "metadata");
  const JsonValue* old_meta = member(old, "metadata");
  if (meta != nullptr && old_meta != nullptr) {
    std::string uid = str(*meta, "uid");
    if (uid != str(*old_meta, "uid")) {
      errs.push_back(FieldError::invalidString("metadata.uid", uid, "field is immutable"));
    }
    // No new finalizers once deletion started.
    if (member(*old_meta, "deletionTimestamp") != nullptr) {
      std::set<std::string> before;
      if (const JsonValue* f = member(*old_meta, "finalizers"); f && f->IsArray()) {
        for (const auto& e : f->GetArray()) {
          if (e.IsString()) {
            before.insert(e.GetString());
          }
        }
      }
      std::vector<std::string> added;
      if (const JsonValue* f = member(*meta, "finalizers"); f && f->IsArray()) {
        for (const auto& e : f->GetArray()) {
          if (e.IsString() && !before.count(e.GetString())) {
            added.emplace_back(e.GetString());
          }
        }
      }
      if (!added.empty()) {
        std::string list = "[]string{";
        for (size_t i = 0; i < added.size(); ++i) {
          list += (i ? ", " : "") + goQuote(added[i]);
        }
        list += "}";
        errs.push_back(FieldError::forbidden(
            "metadata.finalizers",
            "no new finalizers can be added if the object is being deleted, found new "
            "finalizers " +
                list));
      }
    }
  }
  if (type.resource == "nodes") {
    const JsonValue* spec = member(obj, "spec");
    const JsonValue* old_spec = member(old, "spec");
    std::string pid = spec ? str(*spec, "providerID") : std::string();
    std::string old_pid = old_spec ? str(*old_spec, "providerID") : std::string();
    if (!old_pid.empty() && pid != old_pid) {
      errs.push_back(FieldError::forbidden(
          "spec.providerID", "node updates may not change providerID except from \"\" to valid"));
    }
    // podCIDRs may go from empty to set, never change after.
    std::vector<std::string> cidrs = stringArray(spec ? member(*spec, "podCIDRs") : nullptr);
    std::vector<std::string> old_cidrs =
        stringArray(old_spec ? member(*old_spec, "podCIDRs") : nullptr);
    if (!old_cidrs.empty()) {
      size_t changes = 1;
      if (cidrs.size() == old_cidrs.size()) {
        changes = 0;
        for (size_t i = 0; i < old_cidrs.size(); ++i) {
          changes += old_cidrs[i] != cidrs[i] ? 1 : 0;
        }
      }
      for (size_t k = 0; k < changes; ++k) {
        errs.push_back(FieldError::forbidden(
            "spec.podCIDRs", "node updates may not change podCIDR except from \"\" to valid"));
      }
    }
    validateNodeAddresses(obj, errs);
  } else if (type.resource == "services") {
    validateServiceUpdate(obj, old, errs);
  } else if (type.resource == "clusterrolebindings" || type.resource == "rolebindings") {
    const JsonValue* ref = member(obj, "roleRef");
    const JsonValue* old_ref = member(old, "roleRef");
    if (ref != nullptr && old_ref != nullptr &&
        (str(*ref, "kind") != str(*old_ref, "kind") ||
         str(*ref, "name") != str(*old_ref, "name"))) {
      errs.push_back(FieldError::invalid("roleRef",
                                         "rbac.RoleRef{APIGroup:" + goQuote(str(*ref, "apiGroup")) +
                                             ", Kind:" + goQuote(str(*ref, "kind")) +
                                             ", Name:" + goQuote(str(*ref, "name")) + "}",
                                         "cannot change roleRef"));
    }
  }
  return errs;
}

}  // namespace ccm::kubesim
