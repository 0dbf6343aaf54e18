// ObjectValidator: metadata and kind-specific validation with apimachinery's messages.
#include "kubesim/object_validator.hpp"

#include <algorithm>
#include <set>

#include "kubesim/label_selector.hpp"

namespace ccm::kubesim {
namespace {

constexpr size_t kTotalAnnotationSizeLimit = size_t{256} * 1024;

std::string render(const JsonValue& v) {
  if (v.IsString()) {
    return goQuote({v.GetString(), v.GetStringLength()});
  }
  if (v.IsNull()) {
    return "null";
  }
  return toJson(v);
}

std::string str(const JsonValue& obj, std::string_view name) {
  return std::string(stringMember(obj, name));
}

void addAll(FieldErrors& errs, const std::string& field, std::string_view value,
            const std::vector<std::string>& msgs) {
  for (const auto& m : msgs) {
    errs.push_back(FieldError::invalidString(field, value, m));
  }
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

void validateService(const JsonValue& obj, FieldErrors& errs) {
  const JsonValue* spec = member(obj, "spec");
  if (spec == nullptr) {
    errs.push_back(FieldError::required("spec.ports"));
    return;
  }
  std::string type = str(*spec, "type");
  static const std::vector<std::string> kTypes = {"ClusterIP", "ExternalName", "LoadBalancer",
                                                  "NodePort"};
  if (!type.empty() && std::find(kTypes.begin(), kTypes.end(), type) == kTypes.end()) {
    errs.push_back(FieldError::notSupported("spec.type", type, kTypes));
  }
  const JsonValue* ports = member(*spec, "ports");
  size_t n = ports != nullptr && ports->IsArray() ? ports->Size() : 0;
  if (type == "ExternalName") {
    if (str(*spec, "externalName").empty()) {
      errs.push_back(FieldError::required("spec.externalName"));
    }
    return;
  }
  if (n == 0 && str(*spec, "clusterIP") != "None") {
    errs.push_back(FieldError::required("spec.ports"));
    return;
  }
  std::set<std::string> names;
  std::set<std::pair<int64_t, std::string>> port_protocols;
  for (size_t i = 0; i < n; ++i) {
    const JsonValue& p = (*ports)[static_cast<rapidjson::SizeType>(i)];
    std::string idx = "spec.ports[" + std::to_string(i) + "]";
    std::string name = str(p, "name");
    if (n > 1 && name.empty()) {
      errs.push_back(FieldError::required(idx + ".name"));
    } else if (!name.empty()) {
      addAll(errs, idx + ".name", name, validateDns1123Label(name));
      if (!names.insert(name).second) {
        errs.push_back(FieldError::duplicate(idx + ".name", goQuote(name)));
      }
    }
    const JsonValue* port = member(p, "port");
    int64_t pv = port != nullptr && port->IsInt64() ? port->GetInt64() : 0;
    if (pv < 1 || pv > 65535) {
      errs.push_back(FieldError::invalid(idx + ".port", std::to_string(pv),
                                         "must be between 1 and 65535, inclusive"));
    }
    std::string proto = str(p, "protocol");
    if (!proto.empty() && proto != "TCP" && proto != "UDP" && proto != "SCTP") {
      errs.push_back(FieldError::notSupported(idx + ".protocol", proto, {"SCTP", "TCP", "UDP"}));
    }
    if (!port_protocols.insert({pv, proto}).second) {
      errs.push_back(FieldError::duplicate(idx, "core.ServicePort{Name:" + goQuote(name) +
                                                    ", Protocol:" + goQuote(proto) +
                                                    ", Port:" + std::to_string(pv) + "}"));
    }
    if (const JsonValue* np = member(p, "nodePort"); np != nullptr && np->IsInt64()) {
      int64_t v = np->GetInt64();
      if (v != 0 && (v < 30000 || v > 32767)) {
        errs.push_back(FieldError::invalid(
            idx + ".nodePort", std::to_string(v),
            "provided port is not in the valid range. The range of valid ports is 30000-32767"));
      }
    }
  }
}

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
    for (auto [field, json] : {std::pair{"reportingController", "reportingComponent"},
                               std::pair{"reportingInstance", "reportingInstance"},
                               std::pair{"action", "action"}, std::pair{"reason", "reason"}}) {
      std::string v = str(obj, json);
      if (v.empty()) {
        errs.push_back(FieldError::required(field));
      } else if (v.size() > 128) {
        errs.push_back(FieldError::tooLong(field, 128));
      }
    }
    std::string type = str(obj, "type");
    if (type != "Normal" && type != "Warning") {
      errs.push_back(FieldError::notSupported("type", type, {"Normal", "Warning"}));
    }
    if (str(obj, "message").size() > 1024) {
      errs.push_back(FieldError::tooLong("note", 1024));
    }
  }
  if (v1 != nullptr) {
    const JsonValue* et = member(*v1, "eventTime");
    if (et == nullptr || !et->IsString()) {
      errs.push_back(FieldError::required("eventTime"));
    }
    if (const JsonValue* series = member(*v1, "series"); series && series->IsObject()) {
      const JsonValue* count = member(*series, "count");
      if (count == nullptr || !count->IsInt64() || count->GetInt64() < 2) {
        errs.push_back(FieldError::invalid(
            "series.count", count ? render(*count) : std::string("0"), "should be at least 2"));
      }
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
  } else if (r == "services") {
    validateService(obj, errs);
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
  } else if (r == "secrets") {
    validateDataKeys(obj, "data", errs);
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
    std::string cidr = spec ? str(*spec, "podCIDR") : std::string();
    std::string old_cidr = old_spec ? str(*old_spec, "podCIDR") : std::string();
    if (!old_cidr.empty() && cidr != old_cidr) {
      errs.push_back(FieldError::forbidden(
          "spec.podCIDRs", "node updates may not change podCIDR except from \"\" to valid"));
    }
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
