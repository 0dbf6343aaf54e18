// BuiltinControllers: the few kube-controller-manager behaviours a cluster needs to look
// normal to a cloud controller manager and to kubectl:
//  - endpoints / endpointslice: every Service with a selector gets an Endpoints object and an
//    EndpointSlice (labelled kubernetes.io/service-name, owned by the Service); no pods are
//    scheduled, so they list no addresses; they go away with the Service;
//  - namespace: a new Namespace gets the "default" ServiceAccount and the kube-root-ca.crt
//    ConfigMap; a Namespace being deleted is emptied and then removed;
//  - garbage collection of node Leases when their Node is deleted, and foreground deletion:
//    an object deleted with propagationPolicy=Foreground (foregroundDeletion finalizer) has
//    its dependents (ownerReferences to its uid) deleted and goes itself once those with
//    blockOwnerDeletion are gone;
//  - event TTL: Events not written for --event-ttl are deleted.
//
// Work arrives through a store observer and runs on one internal thread ("controllers").
//
// THREAD: public methods may be called from any thread; mu_ guards the queue.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "kubesim/object_writer.hpp"

namespace ccm::kubesim {

class BuiltinControllers {
 public:
  struct Options {
    std::chrono::seconds event_ttl{3600};
    std::string root_ca_pem;  // content of kube-root-ca.crt
  };

  BuiltinControllers(ObjectWriter& writer, Options options);
  ~BuiltinControllers();

  // Registers the store observer and starts the worker thread.
  void start();
  void stop();
  // Blocks until the queue is empty and idle (tests, restarts).
  void drain();

 private:
  struct Item {
    // "service", "service-deleted", "namespace", "namespace-added", "node-deleted",
    // "foreground" (type_id set), "foreground-all"
    std::string kind;
    std::string ns;
    std::string name;
    int type_id = -1;
  };
  using ObjectRef = std::tuple<int, std::string, std::string>;  // type id, namespace, name

  void observe(const WatchEvent& ev);
  void enqueue(Item item);
  void run();
  void process(const Item& item);
  void syncService(const std::string& ns, const std::string& name);
  void deleteServiceChildren(const std::string& ns, const std::string& name);
  void initNamespace(const std::string& name);
  void finalizeNamespace(const std::string& name);
  void expireEvents();
  // Deletes the dependents of a foreground deletion; removes its finalizer once no blocking
  // dependent is left (else it stays pending and is looked at again).
  void collectForeground(const ObjectRef& owner);

  ObjectWriter& writer_;
  const Options options_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;  // guarded by mu_
  bool busy_ = false;       // guarded by mu_
  bool stopping_ = false;   // guarded by mu_
  bool observing_ = false;  // guarded by mu_
  std::set<ObjectRef> foreground_;  // guarded by mu_: foreground deletions not finished
  std::thread thread_;

  std::mutex events_mu_;
  std::unordered_map<std::string, std::chrono::steady_clock::time_point>
      event_writes_;  // events_mu_
};

}  // namespace ccm::kubesim
