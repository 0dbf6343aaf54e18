// The node IPAM controller.
#include "host/controllers/ipam/node_ipam_controller.hpp"

#include <fmt/format.h>

#include "host/kube/objects/node.hpp"
#include "host/kube/write/patch_builder.hpp"
#include "host/log/log.hpp"
#include "host/runtime/rate_limiter.hpp"
#include "host/runtime/thread_name.hpp"

namespace ccm::controllers::ipam {
namespace {

// Upstream's range allocator makes this many attempts at the pod-CIDR write before it warns.
constexpr int kPodCidrWriteAttempts = 3;

}  // namespace

NodeIpamController::NodeIpamController(ControllerContext& context, std::vector<CidrSet> sets)
    : ctx_(context),
      recorder_(context.events.recorder("node-ipam-controller")),
      queue_("node_ipam", defaultControllerRateLimiter(), context.clock, &context.metrics),
      sets_(std::move(sets)) {}

NodeIpamController::~NodeIpamController() {
  stop();
}

void NodeIpamController::occupyLocked(const kube::Node& node) {
  std::vector<std::string> owned;
  for (auto text : node.podCidrs()) {
    auto cidr = Cidr::parse(text);
    if (!cidr.ok()) {
      log::warning("Node has an unparsable pod CIDR; ignoring it",
                   {{"node", node.name()}, {"podCIDR", text}});
      continue;
    }
    bool placed = false;
    for (auto& set : sets_) {
      if (set.cluster().v6() == cidr->v6() && set.occupy(*cidr).ok()) {
        placed = true;
        owned.emplace_back(text);
      }
    }
    if (!placed) {
      log::warning("Node's pod CIDR is not a range of --cluster-cidr; leaving it alone",
                   {{"node", node.name()}, {"podCIDR", text}});
    }
  }
  if (!owned.empty()) {
    assigned_[std::string(node.uid())] = std::move(owned);
  }
}

void NodeIpamController::releaseLocked(const std::string& uid, std::vector<std::string> all) {
  if (auto it = assigned_.find(uid); it != assigned_.end()) {
    all.insert(all.end(), it->second.begin(), it->second.end());
    assigned_.erase(it);
  }
  for (const auto& text : all) {
    auto cidr = Cidr::parse(text);
    if (!cidr.ok()) {
      continue;
    }
    for (auto& set : sets_) {
      set.release(*cidr);  // counts only a range that was in use
    }
  }
  publishLocked();
}

void NodeIpamController::publishLocked() {
  // The sets count their own allocations and releases; the counters follow them, so
  // allocations - releases is always the number of ranges in use.
  auto* allocations = ctx_.metrics.counter("node_ipam_controller_cidrset_cidrs_allocations_total",
                                           "Counter measuring total number of CIDR allocations.",
                                           {"clusterCIDR"}, metrics::Stability::Alpha);
  auto* releases = ctx_.metrics.counter("node_ipam_controller_cidrset_cidrs_releases_total",
                                        "Counter measuring total number of CIDR releases.",
                                        {"clusterCIDR"}, metrics::Stability::Alpha);
  auto* usage = ctx_.metrics.gauge("node_ipam_controller_cidrset_usage_cidrs",
                                   "Gauge measuring percentage of allocated CIDRs.",
                                   {"clusterCIDR"}, metrics::Stability::Alpha);
  published_.resize(sets_.size());
  for (size_t i = 0; i < sets_.size(); ++i) {
    const CidrSet& set = sets_[i];
    std::string label = set.cluster().toString();
    auto& [allocated, released] = published_[i];
    if (allocations != nullptr) {
      allocations->labels({label}).inc(static_cast<double>(set.allocations() - allocated));
    }
    if (releases != nullptr) {
      releases->labels({label}).inc(static_cast<double>(set.releases() - released));
    }
    allocated = set.allocations();
    released = set.releases();
    if (usage != nullptr) {
      usage->labels({label}).set(static_cast<double>(set.usedCount()) /
                                 static_cast<double>(set.size()));
    }
  }
}

void NodeIpamController::rebuild() {
  std::lock_guard lock(mu_);
  for (const auto& node : ctx_.nodes.list()) {
    occupyLocked(*node);
  }
  publishLocked();
}

void NodeIpamController::start() {
  if (started_) {
    return;
  }
  started_ = true;
  rebuild();  // the cache is synced before controllers start
  ctx_.nodes.addEventHandler({
      .on_add = [this](const auto& n) { queue_.add(std::string(n->name())); },
      .on_update =
          [this](const auto& old_n, const auto& n) {
            if (n->podCidrs().empty() || old_n->podCidrs().size() != n->podCidrs().size()) {
              queue_.add(std::string(n->name()));
            }
          },
      .on_delete =
          [this](const auto& n, bool) {
            std::lock_guard lock(mu_);
            releaseLocked(std::string(n->uid()), {n->podCidrs().begin(), n->podCidrs().end()});
          },
  });
  int workers = std::max(1, std::min(ctx_.options.concurrent_node_syncs, 4));
  for (int i = 0; i < workers; ++i) {
    workers_.emplace_back([this] {
      runtime::nameThisThread("ipam-sync");
      worker();
    });
  }
  setControllerRunning(ctx_.metrics, "node-ipam", true);
  std::string ranges;
  {
    std::lock_guard lock(mu_);
    for (const auto& s : sets_) {
      ranges += fmt::format("{}{} (/{} per node, {} of {} used)", ranges.empty() ? "" : ", ",
                            s.cluster().toString(), s.nodeMask(), s.usedCount(), s.size());
    }
  }
  log::info("Started node IPAM controller", {{"clusterCIDRs", ranges}});
}

void NodeIpamController::stop() {
  if (!started_ || stopped_) {
    return;
  }
  stopped_ = true;
  queue_.shutDown();
  for (auto& t : workers_) {
    t.join();
  }
  setControllerRunning(ctx_.metrics, "node-ipam", false);
}

void NodeIpamController::worker() {
  while (auto key = queue_.get()) {
    Status s = syncNode(*key);
    if (s.ok()) {
      queue_.forget(*key);
    } else {
      // syncNode has said what failed (a write only after its retries are spent).
      log::infoV(2, "Node IPAM sync failed; will retry", {{"node", *key}, {"err", s.toString()}});
      queue_.addRateLimited(*key);
    }
    queue_.done(*key);
  }
}

Status NodeIpamController::syncNode(const std::string& name) {
  auto node = ctx_.nodes.get(name);
  if (!node) {
    return okStatus();
  }
  std::vector<Cidr> allocated;
  {
    std::unique_lock lock(mu_);
    if (!node->podCidrs().empty()) {
      occupyLocked(*node);
      publishLocked();
      return okStatus();
    }
    if (assigned_.count(std::string(node->uid())) != 0) {
      return okStatus();  // written already; the cache has not caught up
    }
    for (auto& set : sets_) {
      auto cidr = set.allocate();
      if (!cidr) {
        for (size_t i = 0; i < allocated.size(); ++i) {
          sets_[i].release(allocated[i]);
        }
        publishLocked();
        if (auto* f = ctx_.metrics.counter("ccm_node_ipam_exhausted_total",
                                           "Allocations that failed because a cluster CIDR had "
                                           "no free range.",
                                           {"clusterCIDR"})) {
          f->labels({set.cluster().toString()}).inc();
        }
        lock.unlock();  // event() may wait for room in the event queue
        recorder_.eventf(kube::referenceTo(*node), kube::EventType::Normal, "CIDRNotAvailable",
                         "Node {} status is now: CIDRNotAvailable", node->name());
        return Status(Code::ResourceExhausted,
                      fmt::format("no free /{} range left in {} for node {}", set.nodeMask(),
                                  set.cluster().toString(), node->name()));
      }
      allocated.push_back(*cidr);
    }
    std::vector<std::string> texts;
    texts.reserve(allocated.size());
    for (const auto& c : allocated) {
      texts.push_back(c.toString());
    }
    assigned_[std::string(node->uid())] = texts;
    publishLocked();
  }
  std::vector<std::string> cidrs;
  cidrs.reserve(allocated.size());
  for (const auto& c : allocated) {
    cidrs.push_back(c.toString());
  }
  return writePodCidrs(*node, cidrs);
}

Status NodeIpamController::writePodCidrs(const kube::Node& node,
                                         const std::vector<std::string>& cidrs) {
  std::string name(node.name());
  std::string uid(node.uid());
  std::string joined = fmt::format("{}", fmt::join(cidrs, ","));
  auto giveBack = [&] {
    std::lock_guard lock(mu_);
    releaseLocked(uid, {});
  };
  std::string resource_version(node.resourceVersion());
  kube::ApiStatus last;
  for (int attempt = 1; attempt <= kPodCidrWriteAttempts; ++attempt) {
    kube::NodePatch patch;
    patch.resourceVersion(resource_version).podCidrs(cidrs.front(), cidrs);
    auto r = ctx_.api.patch(kube::nodePath(name), kube::PatchType::Strategic, patch.build());
    if (r.ok()) {
      log::info("Allocated pod CIDRs to node", {{"node", name}, {"podCIDRs", joined}});
      return okStatus();
    }
    last = r.status();
    if (last.isNotFound()) {
      giveBack();
      return okStatus();
    }
    log::infoV(2, "Writing the node's pod CIDRs failed; trying again",
               {{"node", name}, {"attempt", attempt}, {"err", last.toString()}});
    if (!last.isConflict()) {
      continue;
    }
    // The node changed since the cached copy (the write is conditional on its
    // resourceVersion): read it again and decide from what it holds now.
    auto fresh = ctx_.api.get(kube::nodePath(name));
    if (!fresh.ok()) {
      if (fresh.status().isNotFound()) {
        giveBack();
        return okStatus();
      }
      last = fresh.status();
      continue;
    }
    auto current = kube::decodeNode(*fresh, kube::NodeParts::kMetadataAndSpec);
    if (!current.ok()) {
      last = current.status();
      continue;
    }
    const kube::Node& now = **current;
    if (now.uid() != node.uid()) {
      giveBack();  // another node of that name: its own add event brings it here
      return okStatus();
    }
    if (!now.podCidrs().empty()) {
      std::vector<std::string> theirs(now.podCidrs().begin(), now.podCidrs().end());
      if (theirs == cidrs) {
        log::info("Allocated pod CIDRs to node", {{"node", name}, {"podCIDRs", joined}});
        return okStatus();  // an earlier attempt went through after all
      }
      log::info("Node got pod CIDRs from elsewhere; giving back the ones reserved for it",
                {{"node", name},
                 {"reserved", joined},
                 {"podCIDRs", fmt::format("{}", fmt::join(theirs, ","))}});
      std::lock_guard lock(mu_);
      releaseLocked(uid, {});
      occupyLocked(now);
      publishLocked();
      return okStatus();
    }
    resource_version = std::string(now.resourceVersion());
  }
  // Retries spent: say so, as upstream does, and give the ranges back unless the write may
  // have gone through (a server timeout); such ranges stay taken until a restart's rebuild.
  log::error("Failed to update the node's pod CIDRs after multiple attempts",
             {{"node", name}, {"podCIDRs", joined}, {"err", last.toString()}});
  recorder_.eventf(kube::referenceTo(node), kube::EventType::Warning, "CIDRAssignmentFailed",
                   "Node {} status is now: CIDRAssignmentFailed", node.name());
  if (last.reason() == kube::Reason::ServerTimeout || last.isTransport()) {
    std::lock_guard lock(mu_);
    assigned_.erase(uid);  // a later sync allocates afresh
  } else {
    giveBack();
  }
  return last.toStatus().withPrefix(fmt::format("failed to set the pod CIDRs of node {}", name));
}

std::vector<std::pair<uint64_t, uint64_t>> NodeIpamController::usage() const {
  std::lock_guard lock(mu_);
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (const auto& s : sets_) {
    out.emplace_back(s.usedCount(), s.size());
  }
  return out;
}

StatusOr<ControllerOrSkip> makeNodeIpamController(ControllerContext& context) {
  const options::Options& o = context.options;
  if (!o.allocate_node_cidrs) {
    return ControllerOrSkip(NotStarted{"--allocate-node-cidrs is false"});
  }
  auto cidrs = parseClusterCidrs(o.cluster_cidr);
  if (!cidrs.ok()) {
    return cidrs.status().withPrefix("--allocate-node-cidrs needs a valid --cluster-cidr");
  }
  bool dual = cidrs->size() == 2;
  if (dual && o.node_cidr_mask_size != 0) {
    return Status(Code::InvalidArgument,
                  "--node-cidr-mask-size is not allowed with a dual-stack --cluster-cidr; use "
                  "--node-cidr-mask-size-ipv4 and --node-cidr-mask-size-ipv6");
  }
  std::vector<CidrSet> sets;
  for (const auto& c : *cidrs) {
    int mask = c.v6() ? (o.node_cidr_mask_size_ipv6 > 0 ? o.node_cidr_mask_size_ipv6 : 64)
                      : (o.node_cidr_mask_size_ipv4 > 0 ? o.node_cidr_mask_size_ipv4 : 24);
    if (!dual && o.node_cidr_mask_size != 0) {
      mask = o.node_cidr_mask_size;
    }
    auto set = CidrSet::create(c, mask);
    if (!set.ok()) {
      return set.status().withPrefix("--node-cidr-mask-size");
    }
    sets.push_back(std::move(set).value());
  }
  return ControllerOrSkip(std::make_unique<NodeIpamController>(context, std::move(sets)));
}

}  // namespace ccm::controllers::ipam
