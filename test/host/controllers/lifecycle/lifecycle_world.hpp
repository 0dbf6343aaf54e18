// What the lifecycle controller's unit tests share: an instances provider that answers from
// a set of absent names and counts what it was asked, and a world (FakeClock, fake API,
// informers) with helpers to add zones of Ready nodes and flip readiness.
#pragma once

#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "host/controllers/lifecycle/node_lifecycle_controller.hpp"
#include "test/support/controller_harness.hpp"

namespace ccm::testing {

inline constexpr const char* kZoneLabel = "topology.kubernetes.io/zone";

// Instances: every node exists and runs unless named in `absent`; remembers the nodes asked.
class CountingInstances final : public UnimplementedProvider {
 public:
  CountingInstances() : UnimplementedProvider("instances") {}
  void setAbsent(std::set<std::string> names) {
    std::lock_guard lock(mu_);
    absent_ = std::move(names);
  }
  StatusOr<plugin::Existence> instanceExists(const plugin::NodeRef& node) override {
    std::lock_guard lock(mu_);
    asked_.insert(std::string(node.name));
    return absent_.count(std::string(node.name)) ? plugin::Existence::NotFound
                                                 : plugin::Existence::Exists;
  }
  // The nodes asked about since the last call.
  std::set<std::string> takeAsked() {
    std::lock_guard lock(mu_);
    return std::exchange(asked_, {});
  }

 private:
  std::mutex mu_;
  std::set<std::string> absent_;  // guarded by mu_
  std::set<std::string> asked_;   // guarded by mu_
};

struct LifecycleWorld {
  FakeClock clock;
  options::Options options;
  kube::FakeKubeApi api;
  kube::Informer<kube::Node> nodes{nullptr};
  kube::Informer<kube::Service> services{nullptr};
  CountingInstances provider;
  kube::EventBroadcaster events{api};
  metrics::Registry registry;
  controllers::ControllerContext ctx{options,  api,    nodes,    services,
                                     provider, events, registry, clock};
  int rv = 100;

  LifecycleWorld() {
    options.node_monitor_period = std::chrono::seconds(5);
    options.node_eviction_rate = 1.0;
    nodes.start();
    services.start();
  }
  void put(const std::string& type, NodeSpec n) {
    n.rv = std::to_string(++rv);
    nodes.injectForTest(type, makeNode(n));
  }
  // Nodes <zone>-<i>, Ready.
  void addZone(const std::string& zone, int count) {
    for (int i = 0; i < count; ++i) {
      NodeSpec n;
      n.name = zone + "-" + std::to_string(i);
      n.labels = {{kZoneLabel, zone}};
      put("ADDED", n);
    }
  }
  // The node <zone>-<i> again, Ready or not (with another UID when given).
  void setReady(const std::string& name, bool ready, const std::string& uid = "") {
    NodeSpec n;
    n.name = name;
    n.uid = uid;
    n.ready = ready;
    n.labels = {{kZoneLabel, name.substr(0, name.rfind('-'))}};
    put("MODIFIED", n);
  }
  // The names of the nodes deleted so far, in order.
  std::vector<std::string> deleted() const {
    std::vector<std::string> out;
    for (const auto& c : api.callsFor("DELETE")) {
      out.push_back(c.path.substr(c.path.rfind('/') + 1));
    }
    return out;
  }
};

}  // namespace ccm::testing
