// KubeletSimulator: stands in for the kubelets of a cluster. Registers Nodes (and their
// Leases in kube-node-lease) the way kubelets with --cloud-provider=external do, then keeps
// them alive like kubelets: renews each Lease every heartbeat period and posts the node's
// conditions every status period (immediately when a condition changes). Per node, the Ready
// condition can be forced to True/False/Unknown and heartbeats stopped/started; Unknown also
// stops heartbeats, as a dead kubelet would. A Node deleted through the API is forgotten
// (a kubelet does not re-register until it restarts).
//
// Writes go through ObjectWriter, so they produce watch events and obey the same rules as
// API writes. Work is spread over the period so heartbeats do not arrive in bursts. The due
// beats wait in a HeartbeatSchedule (a heap by due time): a round costs only the nodes that
// are due, and the thread sleeps until the next one is (rounds at most every 50 ms).
//
// THREAD: public methods may be called from any thread; mu_ guards the node table. One
// internal thread ("kubelets") does the periodic work.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "host/runtime/status.hpp"
#include "kubesim/heartbeat_schedule.hpp"
#include "kubesim/node_factory.hpp"
#include "kubesim/object_writer.hpp"

namespace ccm::kubesim {

class KubeletSimulator {
 public:
  struct Options {
    std::string node_prefix = "node-";
    std::chrono::milliseconds heartbeat_period{10000};
    std::chrono::milliseconds status_period{60000};
    NodeFactory::Options node;
  };

  // Labels a kubelet registers its Node with (its --node-labels), beside the usual ones.
  using NodeLabels = std::map<std::string, std::string>;
  struct NodeState {
    std::string name;
    int index = 0;
    NodeLabels labels;  // registered with, and again when the Node is re-registered
    std::string ready = "True";  // desired Ready status: True, False, Unknown
    bool heartbeats = true;
    uint64_t lease_renewals = 0;
    uint64_t status_updates = 0;
  };

  KubeletSimulator(ObjectWriter& writer, Options options);
  ~KubeletSimulator();

  void start();
  void stop();

  // Registers `count` new nodes (names continue the numbering). Returns their names.
  StatusOr<std::vector<std::string>> addNodes(int count, const std::string& ready = "True");
  // Registers nodes with the given names (and these extra labels, set at creation).
  Status addNamedNodes(const std::vector<std::string>& names, const std::string& ready = "True",
                       const NodeLabels& labels = {});
  // Deletes the Node and its Lease and forgets the kubelet.
  Status deleteNode(const std::string& name);
  // Ready = True | False | Unknown, written at once.
  Status setReady(const std::string& name, const std::string& ready);
  Status setHeartbeats(const std::string& name, bool enabled);
  void setAllHeartbeats(bool enabled);
  // Forgets every kubelet (restart with lost state re-registers nothing by itself).
  void reset();
  // Re-registers every known kubelet's Node/Lease if missing (after a restart that lost state).
  void reregisterMissing();

  std::vector<NodeState> nodes() const;
  size_t size() const;

 private:
  struct Entry {
    NodeState state;
    // When the next beats are due; placed in schedule_ while heartbeats are on (kept while
    // they are off, so turning them on again beats at once when a beat is overdue).
    std::chrono::steady_clock::time_point next_lease;
    std::chrono::steady_clock::time_point next_status;
  };

  Status registerNode(const std::string& name, int index, const std::string& ready,
                      const NodeLabels& labels);
  void run();
  void tick();
  bool renewLease(const std::string& name);
  bool postStatus(const std::string& name, const std::string& ready);
  // Places (heartbeats on) or drops (off) both beats of `name`. Caller holds mu_.
  void scheduleBeats(const std::string& name, const Entry& e);

  ObjectWriter& writer_;
  const Options options_;
  const NodeFactory factory_;

  // Held for a whole heartbeat round, and by setReady/setHeartbeats: once those return, no
  // heartbeat decided under the old settings is still on its way.
  std::mutex round_mu_;
  mutable std::mutex mu_;
  // By node name, hashed: a heartbeat finds its node in O(1). Where the order shows (the admin
  // listing, re-registration, toggling every node's heartbeats) it is sorted by name first.
  std::unordered_map<std::string, Entry> nodes_;  // guarded by mu_
  HeartbeatSchedule schedule_;          // guarded by mu_
  int next_index_ = 1;                  // guarded by mu_
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace ccm::kubesim
