// ProviderSet: routing of each provider call to the member that owns its object.
#include "host/providers/provider_set.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace ccm::providers {
namespace {

// "provider NAME: <message>", so the controllers' events and logs name the provider.
Status named(const plugin::Provider& p, const Status& s) {
  return s.ok() ? s : s.withPrefix(fmt::format("provider {}", p.info().name));
}

template <typename T>
StatusOr<T> named(const plugin::Provider& p, StatusOr<T> r) {
  if (r.ok()) {
    return r;
  }
  return named(p, r.status());
}

void merge(plugin::CapabilityInfo& into, const plugin::CapabilityInfo& c) {
  into.present = into.present || c.present;
  into.max_concurrency = std::max(into.max_concurrency, c.max_concurrency);
  into.wants_object_json = into.wants_object_json || c.wants_object_json;
}

}  // namespace

StatusOr<std::unique_ptr<ProviderSet>> ProviderSet::create(std::vector<plugin::Provider*> members,
                                                           RoutingRules rules) {
  if (members.size() < 2) {
    return Status(Code::InvalidArgument, "a provider set needs at least two providers");
  }
  std::vector<const plugin::ProviderInfo*> infos;
  infos.reserve(members.size());
  for (const auto* m : members) {
    infos.push_back(&m->info());
  }
  if (Status st = checkPrefixes(infos); !st.ok()) {
    return st;
  }
  auto known = [&](const std::string& name) {
    return std::any_of(infos.begin(), infos.end(),
                       [&](const plugin::ProviderInfo* i) { return i->name == name; });
  };
  for (const auto& r : rules.node_selectors) {
    if (!known(r.provider)) {
      return Status(Code::InvalidArgument,
                    fmt::format("--provider-node-selector: no loaded provider is named {}",
                                r.provider));
    }
  }
  for (const auto& r : rules.classes) {
    if (!known(r.provider)) {
      return Status(Code::InvalidArgument,
                    fmt::format("--load-balancer-class-provider: no loaded provider is named {}",
                                r.provider));
    }
  }
  return std::unique_ptr<ProviderSet>(new ProviderSet(std::move(members), std::move(rules)));
}

ProviderSet::ProviderSet(std::vector<plugin::Provider*> members, RoutingRules rules)
    : members_(std::move(members)), rules_(std::move(rules)) {
  std::vector<std::string> names;
  bool every_instances_has_batch = true;
  for (const auto* m : members_) {
    const plugin::ProviderInfo& i = m->info();
    names.push_back(i.name);
    merge(info_.instances, i.instances);
    merge(info_.load_balancer, i.load_balancer);
    merge(info_.routes, i.routes);
    if (i.instances.present && !i.instances_batch.present) {
      every_instances_has_batch = false;
    }
    merge(info_.instances_batch, i.instances_batch);
  }
  // Batches are split per member, and each member splits its part to its own maximum.
  if (!every_instances_has_batch) {
    info_.instances_batch = {};
  }
  info_.name = fmt::format("{}", fmt::join(names, ","));
  info_.abi_major = members_.front()->info().abi_major;
  info_.abi_minor = members_.front()->info().abi_minor;
  // No set-wide annotation domain: each Service's is its provider's (annotationDomainFor).
}

std::string ProviderSet::loadedList() const {
  std::vector<std::string> parts;
  for (const auto* m : members_) {
    parts.push_back(fmt::format("{} ({})", m->info().name, m->info().provider_id_prefix));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::optional<size_t> ProviderSet::ownerByPrefix(std::string_view provider_id) const {
  if (provider_id.empty()) {
    return std::nullopt;
  }
  for (size_t i = 0; i < members_.size(); ++i) {
    if (provider_id.starts_with(members_[i]->info().provider_id_prefix)) {
      return i;
    }
  }
  return std::nullopt;
}

StatusOr<size_t> ProviderSet::ruledOwner(const plugin::NodeRef& node) const {
  if (!node.provider_id.empty()) {
    if (auto owner = ownerByPrefix(node.provider_id)) {
      return *owner;
    }
    return Status(Code::FailedPrecondition,
                  fmt::format("node {} has providerID {}, which no loaded provider owns "
                              "(loaded: {}); it is left alone",
                              node.name, node.provider_id, loadedList()));
  }
  std::vector<std::string> claims;
  size_t owner = 0;
  for (const auto& r : rules_.node_selectors) {
    if (r.selector.matches(node.labels)) {
      for (size_t i = 0; i < members_.size(); ++i) {
        if (members_[i]->info().name == r.provider &&
            std::find(claims.begin(), claims.end(), r.provider) == claims.end()) {
          claims.push_back(r.provider);
          owner = i;
        }
      }
    }
  }
  if (claims.size() > 1) {
    return Status(Code::FailedPrecondition,
                  fmt::format("node {} is claimed by several providers' node selectors ({}); "
                              "it is left alone until only one matches",
                              node.name, fmt::join(claims, ", ")));
  }
  if (claims.size() == 1) {
    return owner;
  }
  if (!rules_.discover_by_existence) {
    return Status(Code::FailedPrecondition,
                  fmt::format("node {} has no providerID and no provider's node selector "
                              "matches its labels; it is left alone",
                              node.name));
  }
  std::lock_guard lock(mu_);
  if (auto it = discovered_.find(std::string(node.uid)); it != discovered_.end()) {
    return it->second;
  }
  return Status(Code::NotFound, "only discovery can tell");
}

std::string ProviderSet::ownerNameOf(const plugin::NodeRef& node) const {
  auto owner = knownOwner(node);
  return owner ? members_[*owner]->info().name : std::string();
}

std::optional<size_t> ProviderSet::knownOwner(const plugin::NodeRef& node) const {
  auto owner = ruledOwner(node);
  return owner.ok() ? std::optional<size_t>(*owner) : std::nullopt;
}

void ProviderSet::remember(std::string_view node_name, size_t member) {
  std::lock_guard lock(mu_);
  node_owner_[std::string(node_name)] = member;
}

StatusOr<size_t> ProviderSet::ownerOf(const plugin::NodeRef& node) {
  auto owner = resolve(node);
  // Only a verdict about ownership is warned about; a provider's error (discovery) is not.
  bool verdict = owner.ok() || owner.status().code() == Code::FailedPrecondition;
  if (!warn_ || !verdict) {
    return owner;
  }
  std::string uid(node.uid);
  bool tell = false;
  {
    std::lock_guard lock(mu_);
    if (owner.ok()) {
      warned_.erase(uid);
    } else if (auto it = warned_.find(uid); it == warned_.end() || it->second != owner.status().message()) {
      warned_[uid] = owner.status().message();
      tell = true;
    }
  }
  if (tell) {
    warn_(node.name, node.uid, owner.status().message());
  }
  return owner;
}

StatusOr<size_t> ProviderSet::resolve(const plugin::NodeRef& node) {
  auto ruled = ruledOwner(node);
  if (ruled.ok()) {
    remember(node.name, *ruled);
    return ruled;
  }
  if (ruled.status().code() != Code::NotFound) {
    return ruled;
  }
  std::vector<std::string> claims;
  size_t owner = 0;
  for (size_t i = 0; i < members_.size(); ++i) {
    if (!members_[i]->info().instances.present) {
      continue;
    }
    auto exists = members_[i]->instanceExists(
        forMember(node, members_[i]->info().instances.wants_object_json));
    if (!exists.ok()) {
      return named(*members_[i], exists.status())
          .withPrefix(fmt::format("cannot tell which provider owns node {}", node.name));
    }
    if (*exists == plugin::Existence::Unknown) {
      return Status(Code::Unavailable,
                    fmt::format("cannot tell which provider owns node {}: provider {} answered "
                                "UNKNOWN",
                                node.name, members_[i]->info().name));
    }
    if (*exists == plugin::Existence::Exists) {
      claims.push_back(members_[i]->info().name);
      owner = i;
    }
  }
  if (claims.size() != 1) {
    return Status(Code::FailedPrecondition,
                  claims.empty()
                      ? fmt::format("node {} has no providerID, no node selector matches it and "
                                    "no provider has its instance; it is left alone",
                                    node.name)
                      : fmt::format("node {} is claimed by several providers ({}); it is left "
                                    "alone",
                                    node.name, fmt::join(claims, ", ")));
  }
  std::lock_guard lock(mu_);
  discovered_[std::string(node.uid)] = owner;
  node_owner_[std::string(node.name)] = owner;
  return owner;
}

void ProviderSet::forgetNode(std::string_view name, std::string_view uid) {
  std::lock_guard lock(mu_);
  node_owner_.erase(std::string(name));
  discovered_.erase(std::string(uid));
  warned_.erase(std::string(uid));
}

size_t ProviderSet::rememberedNodesForTest() const {
  std::lock_guard lock(mu_);
  return node_owner_.size() + discovered_.size() + warned_.size();
}

size_t ProviderSet::ownerOf(const plugin::ServiceRef& service) const {
  return ownerOfClass(service.load_balancer_class);
}

size_t ProviderSet::ownerOfClass(std::string_view load_balancer_class) const {
  if (!load_balancer_class.empty()) {
    for (const auto& r : rules_.classes) {
      if (r.load_balancer_class == load_balancer_class) {
        for (size_t i = 0; i < members_.size(); ++i) {
          if (members_[i]->info().name == r.provider) {
            return i;
          }
        }
      }
    }
  }
  return 0;
}

std::string_view ProviderSet::annotationDomainFor(std::string_view load_balancer_class) const {
  return members_[ownerOfClass(load_balancer_class)]->info().annotation_domain;
}

plugin::NodeRef ProviderSet::forMember(const plugin::NodeRef& node, bool wants_json) {
  plugin::NodeRef out = node;
  if (!wants_json) {
    out.object_json = {};
  }
  return out;
}

plugin::ServiceRef ProviderSet::serviceFor(const plugin::ServiceRef& service,
                                           size_t member) const {
  plugin::ServiceRef out = service;
  if (!members_[member]->info().load_balancer.wants_object_json) {
    out.object_json = {};
  }
  return out;
}

std::vector<plugin::NodeRef> ProviderSet::nodesFor(size_t member,
                                                   std::span<const plugin::NodeRef> nodes) {
  bool json = members_[member]->info().load_balancer.wants_object_json;
  std::vector<plugin::NodeRef> out;
  for (const auto& n : nodes) {
    std::optional<size_t> owner = knownOwner(n);
    if (owner && !n.provider_id.empty()) {
      remember(n.name, *owner);  // for the routes of nodes no other call has named yet
    }
    if (rules_.load_balancer_all_nodes || owner == member) {
      out.push_back(forMember(n, json));
    }
  }
  return out;
}

// ---- instances ---------------------------------------------------------------------------------

StatusOr<plugin::Existence> ProviderSet::instanceExists(const plugin::NodeRef& node) {
  auto owner = ownerOf(node);
  if (!owner.ok()) {
    return owner.status();
  }
  plugin::Provider& p = *members_[*owner];
  auto exists = named(p, p.instanceExists(forMember(node, p.info().instances.wants_object_json)));
  if (exists.ok() && *exists == plugin::Existence::NotFound && node.provider_id.empty() &&
      !discoveredBy(node.uid, *owner)) {
    // Owned by a label only: a node that lost (or never had) the label of its real cloud
    // would be looked up in the wrong one, so "not found there" is no proof it is gone. Only
    // a providerID prefix or an EXISTS answer (discovery) makes a NOT_FOUND count.
    return plugin::Existence::Unknown;
  }
  return exists;
}

bool ProviderSet::discoveredBy(std::string_view uid, size_t member) const {
  std::lock_guard lock(mu_);
  auto it = discovered_.find(std::string(uid));
  return it != discovered_.end() && it->second == member;
}

StatusOr<plugin::Power> ProviderSet::instanceShutdown(const plugin::NodeRef& node) {
  auto owner = ownerOf(node);
  if (!owner.ok()) {
    return owner.status();
  }
  plugin::Provider& p = *members_[*owner];
  return named(p, p.instanceShutdown(forMember(node, p.info().instances.wants_object_json)));
}

StatusOr<std::optional<plugin::InstanceMetadata>> ProviderSet::instanceMetadata(
    const plugin::NodeRef& node) {
  auto owner = ownerOf(node);
  if (!owner.ok()) {
    return owner.status();
  }
  plugin::Provider& p = *members_[*owner];
  return named(p, p.instanceMetadata(forMember(node, p.info().instances.wants_object_json)));
}

StatusOr<std::vector<plugin::MetadataResult>> ProviderSet::instanceMetadataBatch(
    std::span<const plugin::NodeRef> nodes) {
  if (!info_.instances_batch.present) {
    return Status(Code::Unimplemented, "not every provider has ccm.instances.batch/1");
  }
  std::vector<plugin::MetadataResult> results(
      nodes.size(), plugin::MetadataResult(Status(Code::Internal, "not routed")));
  std::vector<std::vector<plugin::NodeRef>> parts(members_.size());
  std::vector<std::vector<size_t>> positions(members_.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto owner = ownerOf(nodes[i]);
    if (!owner.ok()) {
      results[i] = owner.status();
      continue;
    }
    parts[*owner].push_back(
        forMember(nodes[i], members_[*owner]->info().instances_batch.wants_object_json));
    positions[*owner].push_back(i);
  }
  for (size_t m = 0; m < members_.size(); ++m) {
    if (parts[m].empty()) {
      continue;
    }
    auto answer = members_[m]->instanceMetadataBatch(parts[m]);
    for (size_t k = 0; k < positions[m].size(); ++k) {
      if (!answer.ok()) {
        results[positions[m][k]] = named(*members_[m], answer.status());
      } else if (k < answer->size()) {
        auto& r = (*answer)[k];
        results[positions[m][k]] = r.ok() ? std::move(r) : named(*members_[m], r.status());
      } else {
        results[positions[m][k]] =
            Status(Code::Internal, fmt::format("provider {}: batch answer too short",
                                               members_[m]->info().name));
      }
    }
  }
  return results;
}

// ---- load balancers ----------------------------------------------------------------------------

StatusOr<std::optional<plugin::LoadBalancerStatus>> ProviderSet::getLoadBalancer(
    std::string_view cluster_name, const plugin::ServiceRef& service) {
  size_t m = ownerOf(service);
  return named(*members_[m], members_[m]->getLoadBalancer(cluster_name, serviceFor(service, m)));
}

StatusOr<std::string> ProviderSet::getLoadBalancerName(std::string_view cluster_name,
                                                       const plugin::ServiceRef& service) {
  size_t m = ownerOf(service);
  return named(*members_[m],
               members_[m]->getLoadBalancerName(cluster_name, serviceFor(service, m)));
}

StatusOr<plugin::LoadBalancerStatus> ProviderSet::ensureLoadBalancer(
    std::string_view cluster_name, const plugin::ServiceRef& service,
    std::span<const plugin::NodeRef> nodes) {
  return ensureLoadBalancerShared(cluster_name, service, plugin::SharedHosts{nodes, nullptr});
}

Status ProviderSet::updateLoadBalancer(std::string_view cluster_name,
                                       const plugin::ServiceRef& service,
                                       std::span<const plugin::NodeRef> nodes) {
  return updateLoadBalancerShared(cluster_name, service, plugin::SharedHosts{nodes, nullptr});
}

struct ProviderSet::MemberHosts {
  std::vector<plugin::NodeRef> refs;  // views into the shared set's hosts
  plugin::HostForms forms;            // the member's own forms of them
  plugin::SharedHosts shared() const { return {refs, &forms}; }
};

std::shared_ptr<const ProviderSet::MemberHosts> ProviderSet::hostsFor(
    size_t member, const plugin::SharedHosts& hosts) {
  auto build = [&]() -> std::shared_ptr<const void> {
    auto own = std::make_shared<MemberHosts>();
    own->refs = nodesFor(member, hosts.refs);
    return own;
  };
  if (hosts.forms == nullptr) {
    return std::static_pointer_cast<const MemberHosts>(build());
  }
  // Without forms (a plain call) the member's hosts are picked for this call alone. With them,
  // keyed by the member's slot, an address the set owns for its lifetime.
  return std::static_pointer_cast<const MemberHosts>(hosts.forms->get(&members_[member], build));
}

StatusOr<plugin::LoadBalancerStatus> ProviderSet::ensureLoadBalancerShared(
    std::string_view cluster_name, const plugin::ServiceRef& service,
    const plugin::SharedHosts& hosts) {
  size_t m = ownerOf(service);
  auto own = hostsFor(m, hosts);
  return named(*members_[m], members_[m]->ensureLoadBalancerShared(
                                 cluster_name, serviceFor(service, m), own->shared()));
}

Status ProviderSet::updateLoadBalancerShared(std::string_view cluster_name,
                                             const plugin::ServiceRef& service,
                                             const plugin::SharedHosts& hosts) {
  size_t m = ownerOf(service);
  auto own = hostsFor(m, hosts);
  return named(*members_[m], members_[m]->updateLoadBalancerShared(
                                 cluster_name, serviceFor(service, m), own->shared()));
}

Status ProviderSet::ensureLoadBalancerDeleted(std::string_view cluster_name,
                                              const plugin::ServiceRef& service) {
  size_t m = ownerOf(service);
  return named(*members_[m],
               members_[m]->ensureLoadBalancerDeleted(cluster_name, serviceFor(service, m)));
}

// ---- routes ------------------------------------------------------------------------------------

StatusOr<std::vector<plugin::Route>> ProviderSet::listRoutes(std::string_view cluster_name) {
  std::vector<plugin::Route> all;
  std::unordered_map<std::string, size_t> owners;
  for (size_t m = 0; m < members_.size(); ++m) {
    if (!members_[m]->info().routes.present) {
      continue;
    }
    // One member's failure fails the whole list: a partial list would have the route
    // controller create again routes that exist in the member that did not answer.
    auto routes = members_[m]->listRoutes(cluster_name);
    if (!routes.ok()) {
      return named(*members_[m], routes.status());
    }
    for (auto& r : *routes) {
      owners[r.name] = m;
      all.push_back(std::move(r));
    }
  }
  std::lock_guard lock(mu_);
  route_owner_ = std::move(owners);
  return all;
}

Status ProviderSet::createRoute(std::string_view cluster_name, std::string_view name_hint,
                                const plugin::Route& route) {
  std::optional<size_t> owner;
  {
    std::lock_guard lock(mu_);
    if (auto it = node_owner_.find(route.target_node); it != node_owner_.end()) {
      owner = it->second;
    }
  }
  if (!owner) {
    return Status(Code::Unavailable,
                  fmt::format("the provider of node {} is not known yet (no call for the node "
                              "has been routed); the route is created once it is",
                              route.target_node));
  }
  plugin::Provider& p = *members_[*owner];
  if (!p.info().routes.present) {
    return Status(Code::FailedPrecondition,
                  fmt::format("node {} belongs to provider {}, which has no ccm.routes/1",
                              route.target_node, p.info().name));
  }
  return named(p, p.createRoute(cluster_name, name_hint, route));
}

Status ProviderSet::deleteRoute(std::string_view cluster_name, const plugin::Route& route) {
  std::optional<size_t> owner;
  {
    std::lock_guard lock(mu_);
    if (auto it = route_owner_.find(route.name); it != route_owner_.end()) {
      owner = it->second;
    }
  }
  if (!owner) {
    return Status(Code::FailedPrecondition,
                  fmt::format("route {} was not listed by any provider; it is not deleted",
                              route.name));
  }
  plugin::Provider& p = *members_[*owner];
  return named(p, p.deleteRoute(cluster_name, route));
}

void ProviderSet::cancelAll() {
  for (auto* m : members_) {
    m->cancelAll();
  }
}

}  // namespace ccm::providers
