// TablePrinter: column definitions and row cells per resource type.
#include "kubesim/table_printer.hpp"

#include <algorithm>
#include <set>

namespace ccm::kubesim {
namespace {

struct Column {
  const char* name;
  const char* type;
  const char* format;
  int priority;
  const char* description;
};

std::vector<Column> columnsFor(const ResourceType& t) {
  const std::string& r = t.resource;
  constexpr const char* kName =
      "Name must be unique within a namespace. Is required when creating resources, although "
      "some resources may allow a client to request the generation of an appropriate name "
      "automatically. Name is primarily intended for creation idempotence and configuration "
      "definition. Cannot be updated.";
  constexpr const char* kAge =
      "CreationTimestamp is a timestamp representing the server time when this object was "
      "created.";
  if (r == "nodes") {
    return {
        {"Name", "string", "name", 0, kName},
        {"Status", "string", "", 0, "The status of the node"},
        {"Roles", "string", "", 0, "The roles of the node"},
        {"Age", "string", "", 0, kAge},
        {"Version", "string", "", 0, "Kubelet Version reported by the node."},
        {"Internal-IP", "string", "", 1, "List of internal IPs for the node."},
        {"External-IP", "string", "", 1, "List of external IPs for the node."},
        {"OS-Image", "string", "", 1, "OS Image reported by the node."},
        {"Kernel-Version", "string", "", 1, "Kernel Version reported by the node."},
        {"Container-Runtime", "string", "", 1, "Container Runtime Version reported by the node."}};
  }
  if (r == "services") {
    return {{"Name", "string", "name", 0, kName},
            {"Type", "string", "", 0, "The type of the service."},
            {"Cluster-IP", "string", "", 0, "The IP address of the service."},
            {"External-IP", "string", "", 0, "The external IP addresses of the service."},
            {"Port(s)", "string", "", 0, "The ports exposed by the service."},
            {"Age", "string", "", 0, kAge},
            {"Selector", "string", "", 1, "The selector of the service."}};
  }
  if (r == "pods") {
    return {{"Name", "string", "name", 0, kName},
            {"Ready", "string", "", 0,
             "The aggregate readiness state of this pod for accepting traffic."},
            {"Status", "string", "", 0, "The aggregate status of the containers in this pod."},
            {"Restarts", "string", "", 0,
             "The number of times the containers in this pod have been restarted."},
            {"Age", "string", "", 0, kAge},
            {"IP", "string", "", 1, "IP address allocated to the pod."},
            {"Node", "string", "", 1, "Name of the Node that the pod is scheduled to."},
            {"Nominated Node", "string", "", 1, "Name of the node nominated by the scheduler."},
            {"Readiness Gates", "string", "", 1, "Pod readiness gates."}};
  }
  if (r == "events") {
    return {{"Last Seen", "string", "", 0, "Time when last event was observed."},
            {"Type", "string", "", 0, "Type of this event (Normal, Warning)."},
            {"Reason", "string", "", 0,
             "Short, machine understandable string that describes the reason for the transition "
             "into the object's current status."},
            {"Object", "string", "", 0, "The object that this event is about."},
            {"Subobject", "string", "", 1, "The subobject that this event is about."},
            {"Source", "string", "", 1, "The component reporting this event."},
            {"Message", "string", "", 0,
             "A human-readable description of the status of this operation."},
            {"First Seen", "string", "", 1, "The time at which the event was first recorded."},
            {"Count", "string", "", 1, "The number of times this event has occurred."},
            {"Name", "string", "name", 1, kName}};
  }
  if (r == "namespaces") {
    return {{"Name", "string", "name", 0, kName},
            {"Status", "string", "", 0, "The status of the namespace"},
            {"Age", "string", "", 0, kAge}};
  }
  if (r == "leases") {
    return {{"Name", "string", "name", 0, kName},
            {"Holder", "string", "", 0, "The holder of the lease."},
            {"Age", "string", "", 0, kAge}};
  }
  if (r == "configmaps") {
    return {{"Name", "string", "name", 0, kName},
            {"Data", "string", "", 0, "Number of keys in the config map."},
            {"Age", "string", "", 0, kAge}};
  }
  if (r == "secrets") {
    return {{"Name", "string", "name", 0, kName},
            {"Type", "string", "", 0, "The type of the secret."},
            {"Data", "string", "", 0, "The number of keys in the secret."},
            {"Age", "string", "", 0, kAge}};
  }
  if (r == "serviceaccounts") {
    return {{"Name", "string", "name", 0, kName},
            {"Secrets", "string", "", 0,
             "Secrets is the list of secrets allowed to be used by pods running using this "
             "ServiceAccount."},
            {"Age", "string", "", 0, kAge}};
  }
  if (r == "endpoints") {
    return {{"Name", "string", "name", 0, kName},
            {"Endpoints", "string", "", 0, "Endpoints of the service."},
            {"Age", "string", "", 0, kAge}};
  }
  if (r == "endpointslices") {
    return {{"Name", "string", "name", 0, kName},
            {"AddressType", "string", "", 0, "The type of addresses."},
            {"Ports", "string", "", 0, "The ports of the endpoint slice."},
            {"Endpoints", "string", "", 0, "The endpoints of the slice."},
            {"Age", "string", "", 0, kAge}};
  }
  if (r == "daemonsets") {
    return {{"Name", "string", "name", 0, kName},
            {"Desired", "integer", "", 0,
             "The total number of nodes that should be running the daemon pod."},
            {"Current", "integer", "", 0,
             "The number of nodes that are running at least 1 daemon pod and are supposed to run "
             "the daemon pod."},
            {"Ready", "integer", "", 0,
             "The number of nodes that should be running the daemon pod and have one or more of "
             "the daemon pod running and ready."},
            {"Up-to-date", "integer", "", 0,
             "The total number of nodes that are running updated daemon pod"},
            {"Available", "integer", "", 0,
             "The number of nodes that should be running the daemon pod and have one or more of "
             "the daemon pod running and available (ready for at least spec.minReadySeconds)"},
            {"Node Selector", "string", "", 0,
             "NodeSelector is a selector which must be true for the pod to fit on a node."},
            {"Age", "string", "", 0, kAge},
            {"Containers", "string", "", 1, "Names of each container in the template."},
            {"Images", "string", "", 1, "Images referenced by each container in the template."},
            {"Selector", "string", "", 1,
             "A label query over pods that are managed by the daemon set."}};
  }
  if (r == "deployments") {
    return {{"Name", "string", "name", 0, kName},
            {"Ready", "string", "", 0, "Number of the pod with ready state"},
            {"Up-to-date", "string", "", 0,
             "Total number of non-terminated pods targeted by this deployment that have the "
             "desired template spec."},
            {"Available", "string", "", 0,
             "Total number of available pods (ready for at least minReadySeconds) targeted by "
             "this deployment."},
            {"Age", "string", "", 0, kAge},
            {"Containers", "string", "", 1, "Names of each container in the template."},
            {"Images", "string", "", 1, "Images referenced by each container in the template."},
            {"Selector", "string", "", 1, "Label selector for pods."}};
  }
  if (r == "poddisruptionbudgets") {
    return {{"Name", "string", "name", 0, kName},
            {"Min Available", "string", "", 0,
             "The minimum number of pods that must be available simultaneously. This can be "
             "either an integer or a string specifying a percentage, e.g. \"28%\"."},
            {"Max Unavailable", "string", "", 0,
             "The maximum number of pods that may be unavailable. This can be either an integer "
             "or a string specifying a percentage, e.g. \"50%\"."},
            {"Allowed Disruptions", "integer", "", 0,
             "Calculated number of pods that may be disrupted at this time."},
            {"Age", "string", "", 0, kAge}};
  }
  if (r == "clusterrolebindings" || r == "rolebindings") {
    return {{"Name", "string", "name", 0, kName},
            {"Role", "string", "", 0, "Role referenced by this binding."},
            {"Age", "string", "", 0, kAge},
            {"Users", "string", "", 1, "Users in the binding."},
            {"Groups", "string", "", 1, "Groups in the binding."},
            {"ServiceAccounts", "string", "", 1, "ServiceAccounts in the binding."}};
  }
  return {{"Name", "string", "name", 0, kName}, {"Created At", "date", "", 0, kAge}};
}

std::string str(const JsonValue& obj, std::initializer_list<std::string_view> path) {
  const JsonValue* v = memberPath(obj, path);
  return v != nullptr && v->IsString() ? std::string(v->GetString(), v->GetStringLength())
                                       : std::string();
}

std::string joinOr(const std::vector<std::string>& parts, const char* empty) {
  if (parts.empty()) {
    return empty;
  }
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    out += (i ? "," : "") + parts[i];
  }
  return out;
}

std::string age(const JsonValue& obj, std::initializer_list<std::string_view> path, WallTime now) {
  auto t = parseTime(str(obj, path));
  if (!t) {
    return "<unknown>";
  }
  return TablePrinter::humanDuration(std::chrono::duration_cast<std::chrono::seconds>(now - *t));
}

// An int or string member as kubectl prints it ("N/A" when absent).
std::string intOrString(const JsonValue& obj, std::initializer_list<std::string_view> path) {
  const JsonValue* v = memberPath(obj, path);
  if (v == nullptr) {
    return "N/A";
  }
  if (v->IsInt64()) {
    return std::to_string(v->GetInt64());
  }
  return v->IsString() ? std::string(v->GetString(), v->GetStringLength()) : std::string("N/A");
}

int64_t count(const JsonValue& obj, std::initializer_list<std::string_view> path) {
  const JsonValue* v = memberPath(obj, path);
  return v != nullptr && v->IsInt64() ? v->GetInt64() : 0;
}

std::string mapText(const JsonValue* m, const char* empty) {
  std::vector<std::string> parts;
  if (m != nullptr && m->IsObject()) {
    for (auto it = m->MemberBegin(); it != memberEnd(*m); ++it) {
      parts.push_back(std::string(it->name.GetString(), it->name.GetStringLength()) + "=" +
                      (it->value.IsString() ? it->value.GetString() : ""));
    }
  }
  return joinOr(parts, empty);
}

// DaemonSet, Deployment and PodDisruptionBudget rows (kubectl's printers).
std::vector<std::string> workloadCells(const std::string& r, const JsonValue& obj,
                                       const std::string& name, const std::string& created) {
  if (r == "poddisruptionbudgets") {
    return {name, intOrString(obj, {"spec", "minAvailable"}),
            intOrString(obj, {"spec", "maxUnavailable"}),
            std::to_string(count(obj, {"status", "disruptionsAllowed"})), created};
  }
  std::vector<std::string> names;
  std::vector<std::string> images;
  if (const JsonValue* cs = memberPath(obj, {"spec", "template", "spec", "containers"});
      cs != nullptr && cs->IsArray()) {
    for (const auto& c : cs->GetArray()) {
      names.emplace_back(stringMember(c, "name"));
      images.emplace_back(stringMember(c, "image"));
    }
  }
  std::string selector = mapText(memberPath(obj, {"spec", "selector", "matchLabels"}), "<none>");
  if (r == "daemonsets") {
    return {name,
            std::to_string(count(obj, {"status", "desiredNumberScheduled"})),
            std::to_string(count(obj, {"status", "currentNumberScheduled"})),
            std::to_string(count(obj, {"status", "numberReady"})),
            std::to_string(count(obj, {"status", "updatedNumberScheduled"})),
            std::to_string(count(obj, {"status", "numberAvailable"})),
            mapText(memberPath(obj, {"spec", "template", "spec", "nodeSelector"}), "<none>"),
            created,
            joinOr(names, ""),
            joinOr(images, ""),
            selector};
  }
  return {name,
          std::to_string(count(obj, {"status", "readyReplicas"})) + "/" +
              std::to_string(count(obj, {"spec", "replicas"})),
          std::to_string(count(obj, {"status", "updatedReplicas"})),
          std::to_string(count(obj, {"status", "availableReplicas"})),
          created,
          joinOr(names, ""),
          joinOr(images, ""),
          selector};
}

std::vector<std::string> cells(const ResourceType& type, const JsonValue& obj, WallTime now) {
  const std::string& r = type.resource;
  std::string name = str(obj, {"metadata", "name"});
  std::string created = age(obj, {"metadata", "creationTimestamp"}, now);
  if (r == "nodes") {
    std::string status = "Unknown";
    std::vector<std::string> internal;
    std::vector<std::string> external;
    if (const JsonValue* conds = memberPath(obj, {"status", "conditions"});
        conds && conds->IsArray()) {
      for (const auto& c : conds->GetArray()) {
        if (stringMember(c, "type") == "Ready") {
          std::string_view s = stringMember(c, "status");
          status = s == "True" ? "Ready" : s == "False" ? "NotReady" : "Unknown";
        }
      }
    }
    const JsonValue* unsched = memberPath(obj, {"spec", "unschedulable"});
    if (unsched != nullptr && unsched->IsBool() && unsched->GetBool()) {
      status += ",SchedulingDisabled";
    }
    std::set<std::string> roles;
    if (const JsonValue* labels = memberPath(obj, {"metadata", "labels"});
        labels && labels->IsObject()) {
      for (auto it = labels->MemberBegin(); it != labels->MemberEnd(); ++it) {
        std::string_view k(it->name.GetString(), it->name.GetStringLength());
        constexpr std::string_view kPrefix = "node-role.kubernetes.io/";
        if (k.rfind(kPrefix, 0) == 0 && k.size() > kPrefix.size()) {
          roles.insert(std::string(k.substr(kPrefix.size())));
        } else if (k == "kubernetes.io/role" && it->value.IsString()) {
          roles.insert(it->value.GetString());
        }
      }
    }
    if (const JsonValue* addrs = memberPath(obj, {"status", "addresses"});
        addrs && addrs->IsArray()) {
      for (const auto& a : addrs->GetArray()) {
        if (stringMember(a, "type") == "InternalIP") {
          internal.emplace_back(stringMember(a, "address"));
        }
        if (stringMember(a, "type") == "ExternalIP") {
          external.emplace_back(stringMember(a, "address"));
        }
      }
    }
    return {name,
            status,
            joinOr({roles.begin(), roles.end()}, "<none>"),
            created,
            str(obj, {"status", "nodeInfo", "kubeletVersion"}),
            joinOr(internal, "<none>"),
            joinOr(external, "<none>"),
            str(obj, {"status", "nodeInfo", "osImage"}),
            str(obj, {"status", "nodeInfo", "kernelVersion"}),
            str(obj, {"status", "nodeInfo", "containerRuntimeVersion"})};
  }
  if (r == "services") {
    std::string type_name = str(obj, {"spec", "type"});
    std::string cluster_ip = str(obj, {"spec", "clusterIP"});
    std::vector<std::string> ext;
    if (const JsonValue* ips = memberPath(obj, {"spec", "externalIPs"}); ips && ips->IsArray()) {
      for (const auto& ip : ips->GetArray()) {
        if (ip.IsString()) {
          ext.emplace_back(ip.GetString());
        }
      }
    }
    std::string external;
    if (type_name == "LoadBalancer") {
      if (const JsonValue* ing = memberPath(obj, {"status", "loadBalancer", "ingress"});
          ing && ing->IsArray()) {
        for (const auto& i : ing->GetArray()) {
          std::string ip(stringMember(i, "ip"));
          ext.push_back(ip.empty() ? std::string(stringMember(i, "hostname")) : ip);
        }
      }
      external = joinOr(ext, "<pending>");
    } else if (type_name == "ExternalName") {
      external = str(obj, {"spec", "externalName"});
    } else {
      external = joinOr(ext, "<none>");
    }
    std::vector<std::string> ports;
    if (const JsonValue* ps = memberPath(obj, {"spec", "ports"}); ps && ps->IsArray()) {
      for (const auto& p : ps->GetArray()) {
        std::string s;
        if (const JsonValue* port = member(p, "port"); port && port->IsInt()) {
          s = std::to_string(port->GetInt());
        }
        if (const JsonValue* np = member(p, "nodePort"); np && np->IsInt() && np->GetInt() != 0) {
          s += ":" + std::to_string(np->GetInt());
        }
        s += "/" + std::string(stringMember(p, "protocol"));
        ports.push_back(s);
      }
    }
    std::vector<std::string> sel;
    if (const JsonValue* s = memberPath(obj, {"spec", "selector"}); s && s->IsObject()) {
      for (auto it = s->MemberBegin(); it != s->MemberEnd(); ++it) {
        if (it->value.IsString()) {
          sel.push_back(std::string(it->name.GetString()) + "=" + it->value.GetString());
        }
      }
    }
    return {name,
            type_name,
            cluster_ip.empty() ? "<none>" : cluster_ip,
            external,
            joinOr(ports, "<none>"),
            created,
            joinOr(sel, "<none>")};
  }
  if (r == "pods") {
    size_t total = 0;
    size_t ready = 0;
    int64_t restarts = 0;
    if (const JsonValue* cs = memberPath(obj, {"spec", "containers"}); cs && cs->IsArray()) {
      total = cs->Size();
    }
    if (const JsonValue* st = memberPath(obj, {"status", "containerStatuses"});
        st && st->IsArray()) {
      for (const auto& s : st->GetArray()) {
        const JsonValue* rd = member(s, "ready");
        if (rd && rd->IsBool() && rd->GetBool()) {
          ++ready;
        }
        const JsonValue* rc = member(s, "restartCount");
        if (rc && rc->IsInt64()) {
          restarts += rc->GetInt64();
        }
      }
    }
    std::string phase = str(obj, {"status", "phase"});
    std::string reason = str(obj, {"status", "reason"});
    std::string ip = str(obj, {"status", "podIP"});
    std::string node = str(obj, {"spec", "nodeName"});
    return {name,
            std::to_string(ready) + "/" + std::to_string(total),
            reason.empty() ? phase : reason,
            std::to_string(restarts),
            created,
            ip.empty() ? "<none>" : ip,
            node.empty() ? "<none>" : node,
            "<none>",
            "<none>"};
  }
  if (r == "events") {
    bool v1 = type.group == "events.k8s.io";
    std::string last =
        v1 ? age(obj, {"deprecatedLastTimestamp"}, now) : age(obj, {"lastTimestamp"}, now);
    if (last == "<unknown>") {
      last = age(obj, {"eventTime"}, now);
    }
    std::string first =
        v1 ? age(obj, {"deprecatedFirstTimestamp"}, now) : age(obj, {"firstTimestamp"}, now);
    std::string_view ref = v1 ? "regarding" : "involvedObject";
    std::string kind = str(obj, {ref, "kind"});
    std::transform(kind.begin(), kind.end(), kind.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::string object = kind + "/" + str(obj, {ref, "name"});
    std::string source = v1 ? str(obj, {"reportingController"}) : str(obj, {"source", "component"});
    const JsonValue* count = member(obj, v1 ? "deprecatedCount" : "count");
    return {last,
            str(obj, {"type"}),
            str(obj, {"reason"}),
            object,
            str(obj, {ref, "fieldPath"}),
            source,
            str(obj, {v1 ? "note" : "message"}),
            first,
            count && count->IsInt64() ? std::to_string(count->GetInt64()) : std::string("1"),
            name};
  }
  if (r == "namespaces") {
    return {name, str(obj, {"status", "phase"}), created};
  }
  if (r == "leases") {
    return {name, str(obj, {"spec", "holderIdentity"}), created};
  }
  auto countMembers = [&](std::string_view field) -> size_t {
    const JsonValue* v = member(obj, field);
    return v != nullptr && v->IsObject() ? v->MemberCount() : 0;
  };
  if (r == "configmaps") {
    return {name, std::to_string(countMembers("data") + countMembers("binaryData")), created};
  }
  if (r == "secrets") {
    return {name, str(obj, {"type"}), std::to_string(countMembers("data")), created};
  }
  if (r == "serviceaccounts") {
    const JsonValue* s = member(obj, "secrets");
    return {name, std::to_string(s && s->IsArray() ? s->Size() : 0), created};
  }
  if (r == "endpoints") {
    std::vector<std::string> eps;
    if (const JsonValue* subsets = member(obj, "subsets"); subsets && subsets->IsArray()) {
      for (const auto& ss : subsets->GetArray()) {
        const JsonValue* addrs = member(ss, "addresses");
        const JsonValue* ports = member(ss, "ports");
        if (addrs == nullptr || !addrs->IsArray()) {
          continue;
        }
        for (const auto& a : addrs->GetArray()) {
          if (ports != nullptr && ports->IsArray() && !ports->Empty()) {
            for (const auto& p : ports->GetArray()) {
              const JsonValue* port = member(p, "port");
              eps.push_back(std::string(stringMember(a, "ip")) + ":" +
                            (port && port->IsInt() ? std::to_string(port->GetInt()) : ""));
            }
          } else {
            eps.emplace_back(stringMember(a, "ip"));
          }
        }
      }
    }
    return {name, joinOr(eps, "<none>"), created};
  }
  if (r == "endpointslices") {
    std::vector<std::string> ports;
    if (const JsonValue* ps = member(obj, "ports"); ps && ps->IsArray()) {
      for (const auto& p : ps->GetArray()) {
        const JsonValue* port = member(p, "port");
        if (port && port->IsInt()) {
          ports.push_back(std::to_string(port->GetInt()));
        }
      }
    }
    std::vector<std::string> addrs;
    if (const JsonValue* es = member(obj, "endpoints"); es && es->IsArray()) {
      for (const auto& e : es->GetArray()) {
        if (const JsonValue* a = member(e, "addresses"); a && a->IsArray()) {
          for (const auto& ip : a->GetArray()) {
            if (ip.IsString()) {
              addrs.emplace_back(ip.GetString());
            }
          }
        }
      }
    }
    return {name, str(obj, {"addressType"}), joinOr(ports, "<unset>"), joinOr(addrs, "<unset>"),
            created};
  }
  if (r == "daemonsets" || r == "deployments" || r == "poddisruptionbudgets") {
    return workloadCells(r, obj, name, created);
  }
  if (r == "clusterrolebindings" || r == "rolebindings") {
    std::vector<std::string> users, groups, sas;
    if (const JsonValue* subs = member(obj, "subjects"); subs && subs->IsArray()) {
      for (const auto& s : subs->GetArray()) {
        std::string_view kind = stringMember(s, "kind");
        std::string n(stringMember(s, "name"));
        if (kind == "User") {
          users.push_back(n);
        }
        if (kind == "Group") {
          groups.push_back(n);
        }
        if (kind == "ServiceAccount") {
          sas.push_back(std::string(stringMember(s, "namespace")) + "/" + n);
        }
      }
    }
    return {name,
            str(obj, {"roleRef", "kind"}) + "/" + str(obj, {"roleRef", "name"}),
            created,
            joinOr(users, ""),
            joinOr(groups, ""),
            joinOr(sas, "")};
  }
  return {name, str(obj, {"metadata", "creationTimestamp"})};
}

}  // namespace

TablePrinter::IncludeObject TablePrinter::parseIncludeObject(std::string_view value) {
  if (value == "None") {
    return IncludeObject::None;
  }
  if (value == "Object") {
    return IncludeObject::Object;
  }
  return IncludeObject::Metadata;
}

std::string TablePrinter::humanDuration(std::chrono::seconds d) {
  int64_t s = d.count();
  if (s < -1) {
    return "<invalid>";
  }
  if (s < 0) {
    return "0s";
  }
  if (s < int64_t{60} * 2) {
    return std::to_string(s) + "s";
  }
  int64_t m = s / 60;
  if (m < 10) {
    return s % 60 == 0 ? std::to_string(m) + "m"
                       : std::to_string(m) + "m" + std::to_string(s % 60) + "s";
  }
  if (m < int64_t{60} * 3) {
    return std::to_string(m) + "m";
  }
  int64_t h = m / 60;
  if (h < 8) {
    return m % 60 == 0 ? std::to_string(h) + "h"
                       : std::to_string(h) + "h" + std::to_string(m % 60) + "m";
  }
  if (h < 48) {
    return std::to_string(h) + "h";
  }
  if (h < int64_t{24} * 8) {
    return h % 24 == 0 ? std::to_string(h / 24) + "d"
                       : std::to_string(h / 24) + "d" + std::to_string(h % 24) + "h";
  }
  if (h < int64_t{24} * 365 * 2) {
    return std::to_string(h / 24) + "d";
  }
  int64_t y = h / 24 / 365;
  if (y < 8) {
    int64_t days = (h / 24) % 365;
    return days == 0 ? std::to_string(y) + "y"
                     : std::to_string(y) + "y" + std::to_string(days) + "d";
  }
  return std::to_string(y) + "y";
}

std::string TablePrinter::columns(const ResourceType& type) {
  std::string out = "[";
  bool first = true;
  for (const auto& c : columnsFor(type)) {
    out += first ? "{" : ",{";
    first = false;
    out += R"("name":)" + jsonString(c.name) + R"(,"type":)" + jsonString(c.type) +
           R"(,"format":)" + jsonString(c.format) + R"(,"description":)" +
           jsonString(c.description) + R"(,"priority":)" + std::to_string(c.priority) + "}";
  }
  return out + "]";
}

void TablePrinter::appendRow(std::string& out, const ResourceType& type, const JsonValue& obj,
                             const std::string& raw, IncludeObject include, WallTime now) {
  out += R"({"cells":[)";
  auto cs = cells(type, obj, now);
  for (size_t i = 0; i < cs.size(); ++i) {
    if (i) {
      out += ",";
    }
    appendJsonString(out, cs[i]);
  }
  out += "]";
  if (include == IncludeObject::Object) {
    out += R"(,"object":)" + raw;
  } else if (include == IncludeObject::Metadata) {
    out += R"(,"object":)" + partialObjectMetadata(raw, false);
  }
  out += "}";
}

std::string TablePrinter::table(const ResourceType& type, const std::vector<std::string>& objects,
                                const std::string& rv, const std::string& continue_token,
                                IncludeObject include, bool with_columns) {
  WallTime now = std::chrono::system_clock::now();
  std::string out =
      R"({"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":)";
  appendJsonString(out, rv);
  if (!continue_token.empty()) {
    out += R"(,"continue":)";
    appendJsonString(out, continue_token);
  }
  out += "}";
  if (with_columns) {
    out += R"(,"columnDefinitions":)" + columns(type);
  } else {
    out += R"(,"columnDefinitions":null)";
  }
  out += R"(,"rows":[)";
  for (size_t i = 0; i < objects.size(); ++i) {
    JsonDocument doc;
    doc.Parse(objects[i].data(), objects[i].size());
    if (doc.HasParseError()) {
      continue;
    }
    if (i) {
      out += ",";
    }
    appendRow(out, type, doc, objects[i], include, now);
  }
  out += "]}";
  return out;
}

}  // namespace ccm::kubesim
