// ProviderSet: several loaded providers seen by the controllers as one Provider; each call is
// routed to the provider that owns its node, Service or route (hybrid clusters).
//
// Ownership of a node: its providerID's prefix (each provider declares one, ABI 1.1); without
// a providerID, the provider whose --provider-node-selector matches its labels; failing that,
// with --provider-discovery=exists, the one provider that answers EXISTS. A node no provider
// claims, or several claim, gets an error (FAILED_PRECONDITION) naming them: the controllers
// then take no action on it (the lifecycle controller deletes only on a NOT_FOUND from the
// owner, and an error is never read as NOT_FOUND). A Service goes to the provider mapped to
// its loadBalancerClass, else to the first provider. Errors from a member are prefixed with
// its name ("provider NAME: ..."), so events and logs name the provider.
//
// THREAD: every call may be made from any thread (the members are thread-safe; the set's own
// memory of node owners and route owners is guarded by a mutex).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "host/plugin/provider.hpp"
#include "host/providers/routing_rules.hpp"

namespace ccm::providers {

class ProviderSet final : public plugin::Provider {
 public:
  // `members` (not owned) outlive the set; at least two, with non-overlapping prefixes.
  static StatusOr<std::unique_ptr<ProviderSet>> create(std::vector<plugin::Provider*> members,
                                                       RoutingRules rules);

  // Told (once per node and message, until the node routes again) when a node has no single
  // owner: the app turns it into a Warning event on the node. Set before the controllers run.
  using NodeWarning =
      std::function<void(std::string_view node, std::string_view uid, const std::string& why)>;
  void setNodeWarning(NodeWarning warn) { warn_ = std::move(warn); }

  // Forgets what the set remembers about a deleted node (its owner, a discovery, a warning),
  // so that memory follows the cluster's nodes and a new node of the same name or UID is
  // routed afresh. The app calls it from the node informer's deletions.
  void forgetNode(std::string_view name, std::string_view uid);
  // How many nodes the set remembers anything about (tests: memory does not grow forever).
  size_t rememberedNodesForTest() const;

  const plugin::ProviderInfo& info() const override { return info_; }
  std::string_view annotationDomainFor(std::string_view load_balancer_class) const override;
  // The owner by knownOwner ("" when only discovery could tell, or there is no single one).
  std::string ownerNameOf(const plugin::NodeRef& node) const override;

  StatusOr<plugin::Existence> instanceExists(const plugin::NodeRef& node) override;
  StatusOr<plugin::Power> instanceShutdown(const plugin::NodeRef& node) override;
  StatusOr<std::optional<plugin::InstanceMetadata>> instanceMetadata(
      const plugin::NodeRef& node) override;
  StatusOr<std::vector<plugin::MetadataResult>> instanceMetadataBatch(
      std::span<const plugin::NodeRef> nodes) override;

  StatusOr<std::optional<plugin::LoadBalancerStatus>> getLoadBalancer(
      std::string_view cluster_name, const plugin::ServiceRef& service) override;
  StatusOr<std::string> getLoadBalancerName(std::string_view cluster_name,
                                            const plugin::ServiceRef& service) override;
  StatusOr<plugin::LoadBalancerStatus> ensureLoadBalancer(
      std::string_view cluster_name, const plugin::ServiceRef& service,
      std::span<const plugin::NodeRef> nodes) override;
  Status updateLoadBalancer(std::string_view cluster_name, const plugin::ServiceRef& service,
                            std::span<const plugin::NodeRef> nodes) override;
  // With a shared host set: a member's hosts are picked from the set once per set (kept in
  // its forms) and handed on as a shared set of their own, in which the member keeps its
  // converted forms: a wave of calls filters and converts every host once, not per call. The
  // plain calls above are these with a set of their own (no forms): picked per call.
  StatusOr<plugin::LoadBalancerStatus> ensureLoadBalancerShared(
      std::string_view cluster_name, const plugin::ServiceRef& service,
      const plugin::SharedHosts& hosts) override;
  Status updateLoadBalancerShared(std::string_view cluster_name, const plugin::ServiceRef& service,
                                  const plugin::SharedHosts& hosts) override;
  Status ensureLoadBalancerDeleted(std::string_view cluster_name,
                                   const plugin::ServiceRef& service) override;

  StatusOr<std::vector<plugin::Route>> listRoutes(std::string_view cluster_name) override;
  Status createRoute(std::string_view cluster_name, std::string_view name_hint,
                     const plugin::Route& route) override;
  Status deleteRoute(std::string_view cluster_name, const plugin::Route& route) override;

  void cancelAll() override;

  // The member that owns the node (see the file comment), or why there is none. May call
  // instanceExists on every member (--provider-discovery=exists).
  StatusOr<size_t> ownerOf(const plugin::NodeRef& node);
  // The member that serves the Service's load balancer.
  size_t ownerOf(const plugin::ServiceRef& service) const;
  size_t ownerOfClass(std::string_view load_balancer_class) const;
  const plugin::Provider& member(size_t i) const { return *members_[i]; }

 private:
  ProviderSet(std::vector<plugin::Provider*> members, RoutingRules rules);

  // By providerID prefix only; nullopt when the providerID is empty or nobody's.
  std::optional<size_t> ownerByPrefix(std::string_view provider_id) const;
  // The one rule for a node's owner without asking any provider: its providerID's prefix,
  // else the node selectors, else what an earlier discovery found. FAILED_PRECONDITION: no
  // owner or several, and no discovery could change that; NOT_FOUND: only discovery
  // (--provider-discovery=exists) can tell. resolve and knownOwner both read it.
  StatusOr<size_t> ruledOwner(const plugin::NodeRef& node) const;
  // ruledOwner's member, or nullopt.
  std::optional<size_t> knownOwner(const plugin::NodeRef& node) const;
  // True when discovery (an EXISTS answer) made `member` the owner of the node with `uid`.
  bool discoveredBy(std::string_view uid, size_t member) const;
  void remember(std::string_view node_name, size_t member);
  // ownerOf without the warning: ruledOwner, then discovery when it says only that can tell.
  StatusOr<size_t> resolve(const plugin::NodeRef& node);
  // The node as that member may see it (object_json only when the member asked for it).
  static plugin::NodeRef forMember(const plugin::NodeRef& node, bool wants_json);
  plugin::ServiceRef serviceFor(const plugin::ServiceRef& service, size_t member) const;
  // The nodes passed to a member's load balancers: its own (or all, by the rules).
  std::vector<plugin::NodeRef> nodesFor(size_t member, std::span<const plugin::NodeRef> nodes);
  // nodesFor once per shared set and member, kept in the set's forms (null forms: per call).
  struct MemberHosts;
  std::shared_ptr<const MemberHosts> hostsFor(size_t member, const plugin::SharedHosts& hosts);
  std::string loadedList() const;

  std::vector<plugin::Provider*> members_;
  RoutingRules rules_;
  plugin::ProviderInfo info_;

  mutable std::mutex mu_;
  std::unordered_map<std::string, size_t> node_owner_;   // node name -> member (last routed)
  std::unordered_map<std::string, size_t> discovered_;   // node uid -> member (discovery)
  std::unordered_map<std::string, std::string> warned_;  // node uid -> last warning
  NodeWarning warn_;
  std::unordered_map<std::string, size_t> route_owner_;  // route name -> member
};

}  // namespace ccm::providers
