// Patch body builders (RapidJSON writer, so every string is escaped correctly).
#include "host/kube/write/patch_builder.hpp"

#include "host/kube/api/time_format.hpp"
#include "host/kube/write/json_writer.hpp"

namespace ccm::kube {
namespace {

using json::key;
using json::optionalField;
using json::str;
using json::Writer;

void writeMap(Writer& w, const std::map<std::string, std::optional<std::string>>& m) {
  w.StartObject();
  for (const auto& [k, v] : m) {
    key(w, k);
    if (v) {
      str(w, *v);
    } else {
      w.Null();
    }
  }
  w.EndObject();
}

void writeTaint(Writer& w, const TaintSpec& t) {
  w.StartObject();
  key(w, "key");
  str(w, t.key);
  optionalField(w, "value", t.value);
  key(w, "effect");
  str(w, t.effect);
  if (t.time_added != 0) {
    key(w, "timeAdded");
    str(w, formatRfc3339(t.time_added));
  }
  w.EndObject();
}

void writeIngress(Writer& w, const IngressSpec& g) {
  w.StartObject();
  optionalField(w, "ip", g.ip);
  optionalField(w, "hostname", g.hostname);
  optionalField(w, "ipMode", g.ip_mode);
  if (!g.ports.empty()) {
    key(w, "ports");
    w.StartArray();
    for (const auto& p : g.ports) {
      w.StartObject();
      key(w, "port");
      w.Int(p.port);
      key(w, "protocol");
      str(w, p.protocol);
      if (p.error) {
        key(w, "error");
        str(w, *p.error);
      }
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
}

// {"<outer>": {"<inner>": <what write_value writes>}}: the shape of every single-field patch,
// after {"metadata":{"resourceVersion":..}} when `resource_version` is set (a precondition).
template <typename WriteValue>
std::string twoLevelPatch(std::string_view outer, std::string_view inner, WriteValue&& write_value,
                          std::string_view resource_version = {}) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  if (!resource_version.empty()) {
    key(w, "metadata");
    w.StartObject();
    key(w, "resourceVersion");
    str(w, resource_version);
    w.EndObject();
  }
  key(w, outer);
  w.StartObject();
  key(w, inner);
  write_value(w);
  w.EndObject();
  w.EndObject();
  return buf.GetString();
}

std::string finalizerPatch(std::string_view list_key, std::string_view finalizer) {
  return twoLevelPatch("metadata", list_key, [&](Writer& w) {
    w.StartArray();
    str(w, finalizer);
    w.EndArray();
  });
}

}  // namespace

std::vector<TaintSpec> taintSpecs(const NodeList<Taint>& taints) {
  std::vector<TaintSpec> out;
  out.reserve(taints.size());
  for (const auto& t : taints) {
    out.push_back(
        TaintSpec{std::string(t.key), std::string(t.value), std::string(t.effect), t.time_added});
  }
  return out;
}

std::vector<AddressSpec> addressSpecs(const NodeList<NodeAddress>& addresses) {
  std::vector<AddressSpec> out;
  out.reserve(addresses.size());
  for (const auto& a : addresses) {
    out.push_back(AddressSpec{std::string(a.type), std::string(a.address)});
  }
  return out;
}

std::vector<IngressSpec> ingressSpecs(std::span<const LoadBalancerIngress> ingress) {
  std::vector<IngressSpec> out;
  for (const auto& g : ingress) {
    IngressSpec spec{std::string(g.ip), std::string(g.hostname), std::string(g.ip_mode), {}};
    for (const auto& p : g.ports) {
      std::optional<std::string> err;
      if (!p.error.empty()) {
        err = std::string(p.error);
      }
      spec.ports.push_back(PortStatusSpec{p.port, std::string(p.protocol), err});
    }
    out.push_back(std::move(spec));
  }
  return out;
}

NodePatch& NodePatch::resourceVersion(std::string_view rv) {
  rv_ = rv;
  return *this;
}
NodePatch& NodePatch::setLabel(std::string_view k, std::string_view v) {
  labels_[std::string(k)] = std::string(v);
  return *this;
}
NodePatch& NodePatch::removeLabel(std::string_view k) {
  labels_[std::string(k)] = std::nullopt;
  return *this;
}
NodePatch& NodePatch::setAnnotation(std::string_view k, std::string_view v) {
  annotations_[std::string(k)] = std::string(v);
  return *this;
}
NodePatch& NodePatch::removeAnnotation(std::string_view k) {
  annotations_[std::string(k)] = std::nullopt;
  return *this;
}
NodePatch& NodePatch::providerId(std::string_view id) {
  provider_id_ = std::string(id);
  return *this;
}
NodePatch& NodePatch::taints(std::vector<TaintSpec> t) {
  taints_ = std::move(t);
  return *this;
}
NodePatch& NodePatch::podCidrs(std::string_view pod_cidr, std::vector<std::string> pod_cidrs) {
  pod_cidr_ = std::string(pod_cidr);
  pod_cidrs_ = std::move(pod_cidrs);
  return *this;
}

bool NodePatch::empty() const {
  return labels_.empty() && annotations_.empty() && !provider_id_ && !taints_ && !pod_cidr_ &&
         !pod_cidrs_;
}

std::string NodePatch::build() const {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  if (!rv_.empty() || !labels_.empty() || !annotations_.empty()) {
    key(w, "metadata");
    w.StartObject();
    if (!rv_.empty()) {
      key(w, "resourceVersion");
      str(w, rv_);
    }
    if (!labels_.empty()) {
      key(w, "labels");
      writeMap(w, labels_);
    }
    if (!annotations_.empty()) {
      key(w, "annotations");
      writeMap(w, annotations_);
    }
    w.EndObject();
  }
  if (provider_id_ || taints_ || pod_cidr_ || pod_cidrs_) {
    key(w, "spec");
    w.StartObject();
    if (provider_id_) {
      key(w, "providerID");
      str(w, *provider_id_);
    }
    if (pod_cidr_) {
      key(w, "podCIDR");
      str(w, *pod_cidr_);
    }
    if (pod_cidrs_) {
      key(w, "podCIDRs");
      w.StartArray();
      for (const auto& c : *pod_cidrs_) {
        str(w, c);
      }
      w.EndArray();
    }
    if (taints_) {
      key(w, "taints");
      if (taints_->empty()) {
        w.Null();
      } else {
        w.StartArray();
        for (const auto& t : *taints_) {
          writeTaint(w, t);
        }
        w.EndArray();
      }
    }
    w.EndObject();
  }
  w.EndObject();
  return buf.GetString();
}

std::string nodeAddressesPatch(const std::vector<AddressSpec>& addresses,
                               std::string_view resource_version) {
  return twoLevelPatch(
      "status", "addresses",
      [&](Writer& w) {
        w.StartArray();
        for (const auto& a : addresses) {
          w.StartObject();
          key(w, "type");
          str(w, a.type);
          key(w, "address");
          str(w, a.address);
          w.EndObject();
        }
        w.StartObject();
        key(w, "$patch");
        str(w, "replace");
        w.EndObject();
        w.EndArray();
      },
      resource_version);
}

std::string nodeConditionsPatch(const std::vector<ConditionSpec>& conditions) {
  return twoLevelPatch("status", "conditions", [&](Writer& w) {
    w.StartArray();
    for (const auto& c : conditions) {
      w.StartObject();
      key(w, "type");
      str(w, c.type);
      key(w, "status");
      str(w, c.status);
      if (c.last_heartbeat_time != 0) {
        key(w, "lastHeartbeatTime");
        str(w, formatRfc3339(c.last_heartbeat_time));
      }
      if (c.last_transition_time != 0) {
        key(w, "lastTransitionTime");
        str(w, formatRfc3339(c.last_transition_time));
      }
      optionalField(w, "reason", c.reason);
      optionalField(w, "message", c.message);
      w.EndObject();
    }
    w.EndArray();
  });
}

std::string finalizerAddPatch(std::string_view finalizer) {
  return finalizerPatch("finalizers", finalizer);
}

std::string finalizerRemovePatch(std::string_view finalizer) {
  return finalizerPatch("$deleteFromPrimitiveList/finalizers", finalizer);
}

std::string serviceLoadBalancerStatusPatch(const std::vector<IngressSpec>& ingress) {
  return twoLevelPatch("status", "loadBalancer", [&](Writer& w) {
    w.StartObject();
    key(w, "ingress");
    if (ingress.empty()) {
      w.Null();
    } else {
      w.StartArray();
      for (const auto& g : ingress) {
        writeIngress(w, g);
      }
      w.EndArray();
    }
    w.EndObject();
  });
}

std::string labelsMergePatch(const std::map<std::string, std::optional<std::string>>& labels) {
  return twoLevelPatch("metadata", "labels", [&](Writer& w) { writeMap(w, labels); });
}

std::string annotationsMergePatch(
    const std::map<std::string, std::optional<std::string>>& annotations) {
  return twoLevelPatch("metadata", "annotations", [&](Writer& w) { writeMap(w, annotations); });
}

bool ingressEqual(std::span<const LoadBalancerIngress> current,
                  const std::vector<IngressSpec>& desired) {
  return ingressSpecs(current) == desired;
}

}  // namespace ccm::kube
