// ServiceCache: the service controller's own memory of the Services it manages, keyed
// "namespace/name": the last state it synced (needed to clean up a Service that vanished
// without the finalizer, and to notice a delete-and-recreate under the same name), the host
// set its load balancer was last given, and what it last wrote (so a lagging informer cache
// does not cause the same write twice).
//
// Entries are removed when a Service's load balancer has been cleaned up or the Service is
// gone, so the cache never outgrows the set of load-balanced Services.
//
// THREAD: every method may be called from any thread (one mutex).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "host/controllers/service/node_set.hpp"
#include "host/kube/objects/service.hpp"
#include "host/kube/write/patch_builder.hpp"

namespace ccm::controllers::service {

struct CachedService {
  // The state of the last sync (or the last state seen before a deletion).
  std::shared_ptr<const kube::Service> service;
  // The members of the host set given to the last EnsureLoadBalancer / UpdateLoadBalancer
  // (recorded before the call, like upstream); nullopt before the first.
  std::optional<Membership> synced_members;
  // The last EnsureLoadBalancer of this UID succeeded and nothing failed since.
  bool ensured = false;
  // An EnsureLoadBalancer of this UID was attempted (so a load balancer may exist).
  bool ensure_attempted = false;
  // A version of this UID synced before wanted a load balancer (so one may exist after a
  // type change, whatever status.loadBalancer says: the API server clears it on the change).
  bool wanted_load_balancer = false;
  // The spec.loadBalancerClass of the last such version: the API server clears the class with
  // the type change, and cleanup must reach the provider the class chose.
  std::string wanted_class;
  // We added the finalizer (it may not show in the cache yet), and the resourceVersion of
  // the snapshot that patch was based on.
  bool finalizer_added = false;
  std::string finalizer_added_rv;
  // What our last status patch wrote (nullopt: none yet), and the resourceVersion of the
  // snapshot it was based on.
  std::optional<std::vector<kube::IngressSpec>> status_written;
  std::string status_written_rv;
  // The provider's annotation changes our last annotation patch wrote (value nullopt: removed),
  // and the resourceVersion of the snapshot it was based on.
  std::map<std::string, std::optional<std::string>> annotations_written;
  std::string annotations_written_rv;
};

class ServiceCache {
 public:
  std::optional<CachedService> get(const std::string& key) const;
  void set(const std::string& key, CachedService entry);
  // Applies fn to the entry when it exists; returns whether it did.
  bool update(const std::string& key, const std::function<void(CachedService&)>& fn);
  // Returns whether an entry was removed.
  bool remove(const std::string& key);
  bool contains(const std::string& key) const;
  size_t size() const;
  std::vector<std::string> keys() const;
  std::vector<std::shared_ptr<const kube::Service>> allServices() const;
  // Visits every entry under the cache's lock (fn must not call back into the cache).
  void forEach(const std::function<void(const std::string&, const CachedService&)>& fn) const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, CachedService> entries_;  // guarded by mu_
};

}  // namespace ccm::controllers::service
