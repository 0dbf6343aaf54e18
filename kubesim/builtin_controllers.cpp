// BuiltinControllers: endpoints, namespaces, node-lease GC and event TTL.
#include "kubesim/builtin_controllers.hpp"

#include <pthread.h>

#include "host/log/log.hpp"

namespace ccm::kubesim {
namespace {

const ResourceRegistry& reg() {
  return ResourceRegistry::builtin();
}
const ResourceType& T(std::string_view group, std::string_view resource) {
  return *reg().find(group, "v1", resource);
}

}  // namespace

BuiltinControllers::BuiltinControllers(ObjectWriter& writer, Options options)
    : writer_(writer), options_(std::move(options)) {}

BuiltinControllers::~BuiltinControllers() {
  stop();
}

void BuiltinControllers::start() {
  std::lock_guard lock(mu_);
  if (!observing_) {
    observing_ = true;
    writer_.store().addObserver([this](const WatchEvent& ev) { observe(ev); });
  }
  if (thread_.joinable()) {
    return;
  }
  stopping_ = false;
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "controllers");
    run();
  });
}

void BuiltinControllers::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void BuiltinControllers::drain() {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, std::chrono::seconds(30),
               [&] { return (queue_.empty() && !busy_) || stopping_; });
}

void BuiltinControllers::enqueue(Item item) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      return;
    }
    queue_.push_back(std::move(item));
  }
  cv_.notify_all();
}

void BuiltinControllers::observe(const WatchEvent& ev) {
  const ResourceType& type = reg().at(ev.type_id);
  const StoredObject& obj = *ev.object;
  if (type.resource == "services" && type.group.empty()) {
    if (ev.type == EventType::Deleted) {
      enqueue({"service-deleted", obj.ns, obj.name});
    } else {
      enqueue({"service", obj.ns, obj.name});
    }
  } else if (type.resource == "namespaces") {
    if (ev.type == EventType::Added) {
      enqueue({"namespace-added", "", obj.name});
    } else if (ev.type == EventType::Modified && obj.deleting) {
      enqueue({"namespace", "", obj.name});
    }
  } else if (type.resource == "nodes" && ev.type == EventType::Deleted) {
    enqueue({"node-deleted", "", obj.name});
  }
  if (ev.type == EventType::Modified && obj.deleting &&
      obj.json.find(kForegroundDeletion) != std::string::npos) {
    enqueue({"foreground", obj.ns, obj.name, ev.type_id});
  } else if (ev.type == EventType::Deleted &&
             obj.json.find("\"ownerReferences\"") != std::string::npos) {
    enqueue({"foreground-all", "", "", -1});  // a dependent went: an owner may be free now
  }
  if (type.resource == "services" || type.resource == "namespaces" ||
      type.resource == "nodes") {
    return;
  }
  if (type.resource == "events") {
    std::lock_guard lock(events_mu_);
    std::string key = obj.key();
    if (ev.type == EventType::Deleted) {
      event_writes_.erase(key);
    } else {
      event_writes_[key] = std::chrono::steady_clock::now();
    }
  } else if (obj.deleting && type.namespaced && ev.type == EventType::Deleted) {
    // A namespaced object went away: a terminating namespace may now be empty.
    ObjectPtr ns = writer_.store().get(T("", "namespaces"), "", obj.ns);
    if (ns && ns->deleting) {
      enqueue({"namespace", "", obj.ns});
    }
  }
}

void BuiltinControllers::run() {
  auto next_sweep = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  auto next_ttl = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::unique_lock lock(mu_);
  while (!stopping_) {
    cv_.wait_until(lock, next_sweep, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) {
      break;
    }
    while (!queue_.empty() && !stopping_) {
      Item item = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      process(item);
      lock.lock();
      busy_ = false;
    }
    cv_.notify_all();
    auto now = std::chrono::steady_clock::now();
    if (now >= next_sweep) {
      next_sweep = now + std::chrono::seconds(1);
      lock.unlock();
      if (!foreground_.empty()) {
        queue_.push_back({"foreground-all", "", "", -1});
      }
      // Terminating namespaces whose last objects had finalizers: try again.
      auto list = writer_.store().list(T("", "namespaces"), {});
      if (list.ok()) {
        for (const auto& ns : list.value().items) {
          if (ns->deleting) {
            finalizeNamespace(ns->name);
          }
        }
      }
      if (now >= next_ttl) {
        next_ttl = now + std::chrono::seconds(30);
        expireEvents();
      }
      lock.lock();
    }
  }
}

void BuiltinControllers::process(const Item& item) {
  if (item.kind == "service") {
    syncService(item.ns, item.name);
  } else if (item.kind == "service-deleted") {
    deleteServiceChildren(item.ns, item.name);
  } else if (item.kind == "namespace-added") {
    initNamespace(item.name);
  } else if (item.kind == "namespace") {
    finalizeNamespace(item.name);
  } else if (item.kind == "node-deleted") {
    writer_.remove(T("coordination.k8s.io", "leases"), "kube-node-lease", item.name, {});
  } else if (item.kind == "foreground") {
    collectForeground({item.type_id, item.ns, item.name});
  } else if (item.kind == "foreground-all") {
    std::set<ObjectRef> pending;
    {
      std::lock_guard lock(mu_);
      pending = foreground_;
    }
    for (const auto& ref : pending) {
      collectForeground(ref);
    }
  }
}

void BuiltinControllers::collectForeground(const ObjectRef& owner_ref) {
  const auto& [type_id, ns, name] = owner_ref;
  const ResourceType& owner_type = reg().at(type_id);
  ObjectPtr owner = writer_.store().get(owner_type, ns, name);
  auto forget = [&] {
    std::lock_guard lock(mu_);
    foreground_.erase(owner_ref);
  };
  if (!owner || !owner->deleting || owner->json.find(kForegroundDeletion) == std::string::npos) {
    forget();
    return;
  }
  size_t blocking = 0;
  for (const auto& type : reg().all()) {
    if (!type.stored || type.group == "events.k8s.io" || (owner_type.namespaced && !type.namespaced)) {
      continue;
    }
    ObjectStore::ListRequest req;
    req.ns = owner_type.namespaced ? ns : std::string();
    auto list = writer_.store().list(type, req);
    if (!list.ok()) {
      continue;
    }
    for (const auto& obj : list.value().items) {
      if (obj->json.find(owner->uid) == std::string::npos) {
        continue;
      }
      JsonDocument doc;
      doc.Parse(obj->json.data(), obj->json.size());
      bool blocks = false;
      if (!ownedBy(doc, owner->uid, &blocks)) {
        continue;
      }
      bool gone = false;
      if (!obj->deleting) {
        auto r = writer_.remove(type, obj->ns, obj->name, {});
        gone = (r.ok() && r.value().deleted) || (!r.ok() && r.error().code() == 404);
      }
      if (blocks && !gone) {
        ++blocking;
      }
    }
  }
  if (blocking > 0) {
    std::lock_guard lock(mu_);
    foreground_.insert(owner_ref);
    return;
  }
  forget();
  writer_.update(
      owner_type, ns, name, "",
      [](JsonDocument& doc, const StoredObject&) -> std::optional<ApiError> {
        removeFinalizer(doc, kForegroundDeletion);
        return std::nullopt;
      },
      false);
  ccm::log::infoV(2, "foreground deletion finished", {{"namespace", ns}, {"name", name}});
}

void BuiltinControllers::syncService(const std::string& ns, const std::string& name) {
  ObjectPtr svc = writer_.store().get(T("", "services"), ns, name);
  if (!svc || svc->deleting) {
    return;
  }
  JsonDocument doc;
  doc.Parse(svc->json.data(), svc->json.size());
  const JsonValue* selector = memberPath(doc, {"spec", "selector"});
  if (selector == nullptr || !selector->IsObject() || selector->ObjectEmpty()) {
    return;  // no selector: endpoints are managed by whoever created the Service
  }
  std::string ts = formatTime(std::chrono::system_clock::now());
  if (!writer_.store().get(T("", "endpoints"), ns, name)) {
    JsonDocument ep;
    std::string body = R"({"kind":"Endpoints","apiVersion":"v1","metadata":{"name":)" +
                       jsonString(name) + R"(,"namespace":)" + jsonString(ns) +
                       R"(,"annotations":{"endpoints.kubernetes.io/last-change-trigger-time":)" +
                       jsonString(ts) + "}}}";
    ep.Parse(body.data(), body.size());
    writer_.create(T("", "endpoints"), ep, ep.GetAllocator(), false);
  }
  ObjectStore::ListRequest req;
  req.ns = ns;
  std::string err;
  req.labels = *LabelSelector::parse("kubernetes.io/service-name=" + name, &err);
  auto slices = writer_.store().list(T("discovery.k8s.io", "endpointslices"), req);
  if (slices.ok() && slices.value().items.empty()) {
    std::string labels =
        R"({"endpointslice.kubernetes.io/managed-by":"endpointslice-controller.k8s.io","kubernetes.io/service-name":)" +
        jsonString(name) + "}";
    std::string body =
        R"({"kind":"EndpointSlice","apiVersion":"discovery.k8s.io/v1","metadata":{"generateName":)" +
        jsonString(name + "-") + R"(,"namespace":)" + jsonString(ns) + R"(,"labels":)" + labels +
        R"(,"annotations":{"endpoints.kubernetes.io/last-change-trigger-time":)" + jsonString(ts) +
        R"(},"ownerReferences":[{"apiVersion":"v1","kind":"Service","name":)" + jsonString(name) +
        R"(,"uid":)" + jsonString(svc->uid) +
        R"(,"controller":true,"blockOwnerDeletion":true}]},"addressType":"IPv4"})";
    JsonDocument es;
    es.Parse(body.data(), body.size());
    writer_.create(T("discovery.k8s.io", "endpointslices"), es, es.GetAllocator(), false);
  }
}

void BuiltinControllers::deleteServiceChildren(const std::string& ns, const std::string& name) {
  writer_.remove(T("", "endpoints"), ns, name, {});
  ObjectStore::ListRequest req;
  req.ns = ns;
  std::string err;
  req.labels = *LabelSelector::parse("kubernetes.io/service-name=" + name, &err);
  auto slices = writer_.store().list(T("discovery.k8s.io", "endpointslices"), req);
  if (slices.ok()) {
    for (const auto& s : slices.value().items) {
      writer_.remove(T("discovery.k8s.io", "endpointslices"), ns, s->name, {});
    }
  }
}

void BuiltinControllers::initNamespace(const std::string& name) {
  ObjectPtr ns = writer_.store().get(T("", "namespaces"), "", name);
  if (!ns || ns->deleting) {
    return;
  }
  if (!writer_.store().get(T("", "serviceaccounts"), name, "default")) {
    JsonDocument sa;
    std::string body = R"({"metadata":{"name":"default","namespace":)" + jsonString(name) + "}}";
    sa.Parse(body.data(), body.size());
    writer_.create(T("", "serviceaccounts"), sa, sa.GetAllocator(), false);
  }
  if (!options_.root_ca_pem.empty() &&
      !writer_.store().get(T("", "configmaps"), name, "kube-root-ca.crt")) {
    JsonDocument cm;
    std::string body =
        R"({"metadata":{"name":"kube-root-ca.crt","namespace":)" + jsonString(name) +
        R"(,"annotations":{"kubernetes.io/description":"Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},"data":{"ca.crt":)" +
        jsonString(options_.root_ca_pem) + "}}";
    cm.Parse(body.data(), body.size());
    writer_.create(T("", "configmaps"), cm, cm.GetAllocator(), false);
  }
}

void BuiltinControllers::finalizeNamespace(const std::string& name) {
  ObjectPtr ns = writer_.store().get(T("", "namespaces"), "", name);
  if (!ns || !ns->deleting) {
    return;
  }
  size_t remaining = 0;
  for (const auto& type : reg().all()) {
    if (!type.namespaced || !type.stored) {
      continue;
    }
    // Types sharing storage (events.k8s.io) are covered by their core type.
    if (type.group == "events.k8s.io") {
      continue;
    }
    ObjectStore::ListRequest req;
    req.ns = name;
    auto list = writer_.store().list(type, req);
    if (!list.ok()) {
      continue;
    }
    for (const auto& obj : list.value().items) {
      auto r = writer_.remove(type, name, obj->name, {});
      if (r.ok() && !r.value().deleted) {
        ++remaining;
      }
    }
  }
  if (remaining == 0) {
    writer_.remove(T("", "namespaces"), "", name, {});
    ccm::log::infoV(2, "namespace finalized", {{"namespace", name}});
  }
}

void BuiltinControllers::expireEvents() {
  auto cutoff = std::chrono::steady_clock::now() - options_.event_ttl;
  std::vector<std::string> expired;
  {
    std::lock_guard lock(events_mu_);
    for (const auto& [key, t] : event_writes_) {
      if (t < cutoff) {
        expired.push_back(key);
      }
    }
  }
  for (const auto& key : expired) {
    size_t slash = key.find('/');
    if (slash == std::string::npos) {
      continue;
    }
    writer_.remove(T("", "events"), key.substr(0, slash), key.substr(slash + 1), {});
  }
}

}  // namespace ccm::kubesim
