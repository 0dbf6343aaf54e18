// KubeletSimulator: node registration and kubelet-like heartbeats.
#include "kubesim/kubelet_simulator.hpp"

#include <pthread.h>

#include <algorithm>

#include "host/log/log.hpp"

namespace ccm::kubesim {
namespace {

// The field manager of the simulated kubelets' writes (a kubelet's User-Agent product name).
constexpr std::string_view kKubelet = "kubelet";

// Due beats are gathered into rounds at most this often (a wake-up per beat would cost more
// than the beat at 100,000 nodes).
constexpr std::chrono::milliseconds kRound{50};
// With nothing placed, the thread still wakes this often (changes also wake it).
constexpr std::chrono::seconds kIdleWake{1};

using Beat = HeartbeatSchedule::Beat;

const ResourceType& nodesType() {
  return *ResourceRegistry::builtin().find("", "v1", "nodes");
}
const ResourceType& leasesType() {
  return *ResourceRegistry::builtin().find("coordination.k8s.io", "v1", "leases");
}

// The entries of a (hashed) node table, sorted by name: where the order shows.
template <class Table>
auto byName(Table& nodes) {
  std::vector<decltype(&*nodes.begin())> out;
  out.reserve(nodes.size());
  for (auto& entry : nodes) {
    out.push_back(&entry);
  }
  std::sort(out.begin(), out.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  return out;
}

Status toStatus(const ApiError& e) {
  Code code = e.code() == 404   ? Code::NotFound
              : e.code() == 409 ? Code::AlreadyExists
              : e.code() == 422 ? Code::InvalidArgument
                                : Code::Internal;
  return Status(code, e.message());
}

}  // namespace

KubeletSimulator::KubeletSimulator(ObjectWriter& writer, Options options)
    : writer_(writer), options_(std::move(options)), factory_(options_.node) {}

KubeletSimulator::~KubeletSimulator() {
  stop();
}

void KubeletSimulator::start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) {
    return;
  }
  stopping_ = false;
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "kubelets");
    run();
  });
}

void KubeletSimulator::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

Status KubeletSimulator::registerNode(const std::string& name, int index,
                                      const std::string& ready, const NodeLabels& labels) {
  auto now = std::chrono::system_clock::now();
  JsonDocument doc;
  std::string json = factory_.node(name, index, now);
  doc.Parse(json.data(), json.size());
  if (!labels.empty()) {
    JsonValue& out = ensureObject(doc["metadata"], "labels", doc.GetAllocator());
    for (const auto& [key, value] : labels) {
      setString(out, key, value, doc.GetAllocator());
    }
  }
  if (ready != "True") {
    NodeFactory::setConditions(doc, doc.GetAllocator(), ready, now);
  }
  auto created = writer_.create(nodesType(), doc, doc.GetAllocator(), false, nullptr, kKubelet);
  std::string uid;
  if (created.ok()) {
    uid = created.value().object->uid;
  } else if (created.error().code() == 409) {
    ObjectPtr existing = writer_.store().get(nodesType(), "", name);
    uid = existing ? existing->uid : std::string();
  } else {
    return toStatus(created.error());
  }
  JsonDocument lease;
  std::string ljson = factory_.lease(name, uid, now);
  lease.Parse(ljson.data(), ljson.size());
  auto l = writer_.create(leasesType(), lease, lease.GetAllocator(), false, nullptr, kKubelet);
  if (!l.ok() && l.error().code() != 409) {
    return toStatus(l.error());
  }
  return okStatus();
}

StatusOr<std::vector<std::string>> KubeletSimulator::addNodes(int count, const std::string& ready) {
  std::vector<std::string> names;
  {
    std::lock_guard lock(mu_);
    for (int i = 0; i < count; ++i) {
      std::string name;
      do {
        name = NodeFactory::nodeName(options_.node_prefix, next_index_++);
      } while (nodes_.count(name));
      names.push_back(name);
    }
  }
  CCM_RETURN_IF_ERROR(addNamedNodes(names, ready));
  return names;
}

Status KubeletSimulator::addNamedNodes(const std::vector<std::string>& names,
                                       const std::string& ready, const NodeLabels& labels) {
  if (ready != "True" && ready != "False" && ready != "Unknown") {
    return Status(Code::InvalidArgument, "ready must be True, False or Unknown");
  }
  auto period_lease = options_.heartbeat_period;
  auto period_status = options_.status_period;
  for (const auto& name : names) {
    int index;
    {
      std::lock_guard lock(mu_);
      index = next_index_++;
      // Keep the numbering-derived index when the name follows the prefix scheme.
      if (name.rfind(options_.node_prefix, 0) == 0) {
        try {
          index = std::stoi(name.substr(options_.node_prefix.size()));
        } catch (const std::exception&) {
        }
      }
    }
    CCM_RETURN_IF_ERROR(registerNode(name, index, ready, labels));
    auto now = std::chrono::steady_clock::now();
    Entry e;
    e.state.name = name;
    e.state.index = index;
    e.state.labels = labels;
    e.state.ready = ready;
    e.state.heartbeats = ready != "Unknown";
    // Spread the work over the period.
    e.next_lease = now + std::chrono::milliseconds(randomInt(0, period_lease.count()));
    e.next_status = now + std::chrono::milliseconds(randomInt(0, period_status.count()));
    std::lock_guard lock(mu_);
    nodes_[name] = e;
    scheduleBeats(name, e);
  }
  cv_.notify_all();
  return okStatus();
}

Status KubeletSimulator::deleteNode(const std::string& name) {
  {
    std::lock_guard lock(mu_);
    nodes_.erase(name);
    schedule_.remove(name);
  }
  auto r = writer_.remove(nodesType(), "", name, {});
  writer_.remove(leasesType(), "kube-node-lease", name, {});
  if (!r.ok()) {
    return toStatus(r.error());
  }
  return okStatus();
}

Status KubeletSimulator::setReady(const std::string& name, const std::string& ready) {
  if (ready != "True" && ready != "False" && ready != "Unknown") {
    return Status(Code::InvalidArgument, "ready must be True, False or Unknown");
  }
  std::lock_guard round(round_mu_);
  {
    std::lock_guard lock(mu_);
    auto it = nodes_.find(name);
    if (it == nodes_.end()) {
      return Status(Code::NotFound, "no simulated kubelet for node " + name);
    }
    it->second.state.ready = ready;
    it->second.state.heartbeats = ready != "Unknown";
    scheduleBeats(name, it->second);
  }
  if (!postStatus(name, ready)) {
    return Status(Code::NotFound, "node " + name + " not found");
  }
  return okStatus();
}

Status KubeletSimulator::setHeartbeats(const std::string& name, bool enabled) {
  std::lock_guard round(round_mu_);
  std::lock_guard lock(mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) {
    return Status(Code::NotFound, "no simulated kubelet for node " + name);
  }
  it->second.state.heartbeats = enabled;
  if (enabled && it->second.state.ready == "Unknown") {
    it->second.state.ready = "True";
    it->second.next_status = std::chrono::steady_clock::now();
  }
  scheduleBeats(name, it->second);
  cv_.notify_all();
  return okStatus();
}

void KubeletSimulator::setAllHeartbeats(bool enabled) {
  std::lock_guard round(round_mu_);
  std::lock_guard lock(mu_);
  // In name order: beats due at the same time are taken in the order they were placed.
  for (auto* entry : byName(nodes_)) {
    const std::string& name = entry->first;
    Entry& e = entry->second;
    e.state.heartbeats = enabled;
    if (enabled && e.state.ready == "Unknown") {
      e.state.ready = "True";
      e.next_status = std::chrono::steady_clock::now();
    }
    scheduleBeats(name, e);
  }
  cv_.notify_all();
}

void KubeletSimulator::reset() {
  std::lock_guard lock(mu_);
  nodes_.clear();
  schedule_.clear();
}

void KubeletSimulator::reregisterMissing() {
  std::vector<std::pair<std::string, NodeState>> todo;
  {
    std::lock_guard lock(mu_);
    todo.reserve(nodes_.size());
    for (const auto* entry : byName(nodes_)) {
      todo.emplace_back(entry->first, entry->second.state);
    }
  }
  for (const auto& [name, st] : todo) {
    if (!writer_.store().get(nodesType(), "", name)) {
      auto s = registerNode(name, st.index, st.ready, st.labels);
      if (!s.ok()) {
        ccm::log::warning("re-registering node failed", {{"node", name}, {"error", s.toString()}});
      }
    }
  }
}

std::vector<KubeletSimulator::NodeState> KubeletSimulator::nodes() const {
  std::lock_guard lock(mu_);
  std::vector<NodeState> out;
  out.reserve(nodes_.size());
  for (const auto* entry : byName(nodes_)) {
    out.push_back(entry->second.state);
  }
  return out;
}

size_t KubeletSimulator::size() const {
  std::lock_guard lock(mu_);
  return nodes_.size();
}

void KubeletSimulator::scheduleBeats(const std::string& name, const Entry& e) {
  if (e.state.heartbeats) {
    schedule_.place(name, Beat::Lease, e.next_lease);
    schedule_.place(name, Beat::Status, e.next_status);
  } else {
    schedule_.remove(name);
  }
}

bool KubeletSimulator::renewLease(const std::string& name) {
  auto r = writer_.update(
      leasesType(), "kube-node-lease", name, "",
      [](JsonDocument& doc, const StoredObject&) -> std::optional<ApiError> {
        JsonValue& spec = ensureObject(doc, "spec", doc.GetAllocator());
        setString(spec, "renewTime", formatMicroTime(std::chrono::system_clock::now()),
                  doc.GetAllocator());
        return std::nullopt;
      },
      false, kKubelet);
  return r.ok() || r.error().code() != 404;
}

bool KubeletSimulator::postStatus(const std::string& name, const std::string& ready) {
  auto r = writer_.update(
      nodesType(), "", name, "status",
      [&](JsonDocument& doc, const StoredObject&) -> std::optional<ApiError> {
        NodeFactory::setConditions(doc, doc.GetAllocator(), ready,
                                   std::chrono::system_clock::now());
        return std::nullopt;
      },
      false, kKubelet);
  return r.ok() || r.error().code() != 404;
}

void KubeletSimulator::tick() {
  std::lock_guard round(round_mu_);
  auto now = std::chrono::steady_clock::now();
  std::vector<std::string> leases;
  std::vector<std::pair<std::string, std::string>> statuses;
  {
    std::lock_guard lock(mu_);
    for (auto& due : schedule_.takeDue(now)) {
      auto it = nodes_.find(due.node);
      if (it == nodes_.end() || !it->second.state.heartbeats) {
        continue;  // not placed for such nodes; nothing to beat
      }
      Entry& e = it->second;
      if (due.beat == Beat::Lease) {
        e.next_lease = now + options_.heartbeat_period;
        ++e.state.lease_renewals;
        schedule_.place(due.node, Beat::Lease, e.next_lease);
        leases.push_back(std::move(due.node));
      } else {
        e.next_status = now + options_.status_period;
        ++e.state.status_updates;
        schedule_.place(due.node, Beat::Status, e.next_status);
        statuses.emplace_back(std::move(due.node), e.state.ready);
      }
    }
  }
  std::vector<std::string> gone;
  for (const auto& name : leases) {
    if (!renewLease(name)) {
      gone.push_back(name);
    }
  }
  for (const auto& [name, ready] : statuses) {
    if (!postStatus(name, ready)) {
      gone.push_back(name);
    }
  }
  for (const auto& name : gone) {
    if (!writer_.store().get(nodesType(), "", name)) {
      // The Node was deleted through the API: this kubelet is gone.
      std::lock_guard lock(mu_);
      nodes_.erase(name);
      schedule_.remove(name);
      continue;
    }
    // Only the Lease is missing: a kubelet recreates it.
    int index = 0;
    std::string ready = "True";
    NodeLabels labels;
    {
      std::lock_guard lock(mu_);
      auto it = nodes_.find(name);
      if (it == nodes_.end()) {
        continue;
      }
      index = it->second.state.index;
      ready = it->second.state.ready;
      labels = it->second.state.labels;
    }
    (void)registerNode(name, index, ready, labels);
  }
}

void KubeletSimulator::run() {
  std::unique_lock lock(mu_);
  auto last_round = std::chrono::steady_clock::now();
  while (!stopping_) {
    auto next = schedule_.nextDue();
    auto wake = next ? std::max(*next, last_round + kRound) : last_round + kIdleWake;
    cv_.wait_until(lock, wake);
    if (stopping_) {
      break;
    }
    auto now = std::chrono::steady_clock::now();
    if (now < wake) {
      continue;  // woken by a change (new nodes, heartbeats on): look again
    }
    last_round = now;
    lock.unlock();
    tick();
    lock.lock();
  }
}

}  // namespace ccm::kubesim
