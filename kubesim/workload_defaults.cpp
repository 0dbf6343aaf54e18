// Workload defaults: apps/v1 and policy/v1 objects and pod specs.
#include "kubesim/workload_defaults.hpp"

namespace ccm::kubesim {
namespace {

void defaultString(JsonValue& obj, std::string_view name, std::string_view value,
                   JsonAllocator& alloc) {
  if (stringMember(obj, name).empty()) {
    setString(obj, name, value, alloc);
  }
}

void defaultInt(JsonValue& obj, std::string_view name, int64_t value, JsonAllocator& alloc) {
  if (member(obj, name) == nullptr) {
    setInt(obj, name, value, alloc);
  }
}

void defaultProbe(JsonValue* probe, JsonAllocator& alloc) {
  if (probe == nullptr || !probe->IsObject()) {
    return;
  }
  defaultInt(*probe, "timeoutSeconds", 1, alloc);
  defaultInt(*probe, "periodSeconds", 10, alloc);
  defaultInt(*probe, "successThreshold", 1, alloc);
  defaultInt(*probe, "failureThreshold", 3, alloc);
  if (JsonValue* get = member(*probe, "httpGet"); get != nullptr && get->IsObject()) {
    defaultString(*get, "path", "/", alloc);
    defaultString(*get, "scheme", "HTTP", alloc);
  }
}

void defaultContainer(JsonValue& c, JsonAllocator& alloc) {
  defaultString(c, "terminationMessagePath", "/dev/termination-log", alloc);
  defaultString(c, "terminationMessagePolicy", "File", alloc);
  if (stringMember(c, "imagePullPolicy").empty()) {
    std::string_view image = stringMember(c, "image");
    size_t colon = image.rfind(':');
    bool latest = colon == std::string_view::npos ||
                  image.find('/', colon) != std::string_view::npos ||
                  image.substr(colon) == ":latest";
    setString(c, "imagePullPolicy", latest ? "Always" : "IfNotPresent", alloc);
  }
  if (JsonValue* ports = member(c, "ports"); ports != nullptr && ports->IsArray()) {
    for (auto& p : ports->GetArray()) {
      if (p.IsObject()) {
        defaultString(p, "protocol", "TCP", alloc);
      }
    }
  }
  for (auto probe : {"livenessProbe", "readinessProbe", "startupProbe"}) {
    defaultProbe(member(c, probe), alloc);
  }
}

// Secret, ConfigMap, projected and downward API volumes default their file mode to 0644.
void defaultVolume(JsonValue& v, JsonAllocator& alloc) {
  for (auto source : {"secret", "configMap", "projected", "downwardAPI"}) {
    if (JsonValue* s = member(v, source); s != nullptr && s->IsObject()) {
      defaultInt(*s, "defaultMode", 0644, alloc);
    }
  }
}

void defaultRollingUpdate(JsonValue& strategy, bool daemon_set, JsonAllocator& alloc) {
  defaultString(strategy, "type", "RollingUpdate", alloc);
  if (stringMember(strategy, "type") != "RollingUpdate") {
    return;
  }
  JsonValue& ru = ensureObject(strategy, "rollingUpdate", alloc);
  if (member(ru, "maxUnavailable") == nullptr) {
    if (daemon_set) {
      setInt(ru, "maxUnavailable", 1, alloc);
    } else {
      setString(ru, "maxUnavailable", "25%", alloc);
    }
  }
  if (member(ru, "maxSurge") == nullptr) {
    if (daemon_set) {
      setInt(ru, "maxSurge", 0, alloc);
    } else {
      setString(ru, "maxSurge", "25%", alloc);
    }
  }
}

void defaultTemplate(JsonValue& spec, JsonAllocator& alloc) {
  JsonValue& tmpl = ensureObject(spec, "template", alloc);
  JsonValue& meta = ensureObject(tmpl, "metadata", alloc);
  if (member(meta, "creationTimestamp") == nullptr) {
    setMember(meta, "creationTimestamp", JsonValue(rapidjson::kNullType), alloc);
  }
  defaultPodSpec(ensureObject(tmpl, "spec", alloc), alloc);
}

}  // namespace

bool tracksGeneration(const ResourceType& type) {
  return (type.group == "apps" &&
          (type.resource == "daemonsets" || type.resource == "deployments")) ||
         (type.group == "policy" && type.resource == "poddisruptionbudgets");
}

void defaultPodSpec(JsonValue& spec, JsonAllocator& alloc) {
  defaultString(spec, "restartPolicy", "Always", alloc);
  defaultInt(spec, "terminationGracePeriodSeconds", 30, alloc);
  defaultString(spec, "dnsPolicy", "ClusterFirst", alloc);
  defaultString(spec, "schedulerName", "default-scheduler", alloc);
  if (member(spec, "securityContext") == nullptr) {
    setMember(spec, "securityContext", JsonValue(rapidjson::kObjectType), alloc);
  }
  // The deprecated serviceAccount mirrors serviceAccountName.
  if (std::string_view sa = stringMember(spec, "serviceAccountName"); !sa.empty()) {
    defaultString(spec, "serviceAccount", std::string(sa), alloc);
  }
  for (auto list : {"initContainers", "containers"}) {
    if (JsonValue* cs = member(spec, list); cs != nullptr && cs->IsArray()) {
      for (auto& c : cs->GetArray()) {
        if (c.IsObject()) {
          defaultContainer(c, alloc);
        }
      }
    }
  }
  if (JsonValue* vs = member(spec, "volumes"); vs != nullptr && vs->IsArray()) {
    for (auto& v : vs->GetArray()) {
      if (v.IsObject()) {
        defaultVolume(v, alloc);
      }
    }
  }
}

void defaultWorkloadSpec(const ResourceType& type, JsonValue& doc, JsonAllocator& alloc) {
  if (!tracksGeneration(type)) {
    return;
  }
  JsonValue& spec = ensureObject(doc, "spec", alloc);
  if (type.resource == "daemonsets") {
    defaultTemplate(spec, alloc);
    defaultRollingUpdate(ensureObject(spec, "updateStrategy", alloc), true, alloc);
    defaultInt(spec, "revisionHistoryLimit", 10, alloc);
  } else if (type.resource == "deployments") {
    defaultTemplate(spec, alloc);
    defaultInt(spec, "replicas", 1, alloc);
    defaultRollingUpdate(ensureObject(spec, "strategy", alloc), false, alloc);
    defaultInt(spec, "revisionHistoryLimit", 10, alloc);
    defaultInt(spec, "progressDeadlineSeconds", 600, alloc);
  }
}

void defaultWorkloadOnCreate(const ResourceType& type, JsonValue& doc, JsonAllocator& alloc) {
  if (!tracksGeneration(type)) {
    return;
  }
  defaultWorkloadSpec(type, doc, alloc);
  setInt(ensureObject(doc, "metadata", alloc), "generation", 1, alloc);
  JsonValue status(rapidjson::kObjectType);
  if (type.resource == "daemonsets") {
    for (auto counter : {"currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled",
                         "numberReady"}) {
      setInt(status, counter, 0, alloc);
    }
  } else if (type.resource == "poddisruptionbudgets") {
    for (auto counter :
         {"disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"}) {
      setInt(status, counter, 0, alloc);
    }
  }
  setMember(doc, "status", std::move(status), alloc);
}

}  // namespace ccm::kubesim
