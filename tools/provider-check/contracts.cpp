#include "tools/provider-check/contracts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "ccm/catalog.hpp"
#include "host/plugin/abi_provider.hpp"
#include "host/plugin/plugin_loader.hpp"
#include "host/runtime/metrics.hpp"
#include "tools/provider-check/inputs.hpp"

namespace ccm::check {
namespace {

using plugin::AbiProvider;
using plugin::NodeRef;

namespace catalog = sdk::catalog;

// The capability IDs and call names are the SDK catalog's (ccm/catalog.hpp).
constexpr std::string_view kInstances = catalog::Capability<ccm_instances_v1>::kId;
constexpr std::string_view kBatch = catalog::Capability<ccm_instances_batch_v1>::kId;
constexpr std::string_view kLoadBalancer = catalog::Capability<ccm_loadbalancer_v1>::kId;
constexpr std::string_view kRoutes = catalog::Capability<ccm_routes_v1>::kId;
// The most calls the concurrency contract makes at once when the plugin declares no limit,
// and at most whatever it declares.
constexpr uint32_t kDefaultConcurrency = 8;
constexpr uint32_t kMostConcurrency = 64;
// How long the late-output contract waits for output a plugin sends after a call returned.
constexpr std::chrono::milliseconds kLateOutputWait{1000};

using Snapshot = std::map<std::string, double>;

// The host's count of contract violations, by kind (the one plugin checked is the only
// provider; the family is the host's, labelled provider and kind).
class Violations {
 public:
  explicit Violations(metrics::Registry& registry)
      : family_(registry.counter("ccm_provider_contract_violations_total",
                                 "Times the provider plugin broke the ABI contract, by provider "
                                 "and kind.",
                                 {"provider", "kind"})) {}

  Snapshot snapshot() const {
    Snapshot s;
    if (family_ != nullptr) {
      family_->forEach([&s](const std::vector<std::string>& values, const metrics::Counter& c) {
        s[values.size() < 2 ? std::string() : values[1]] += c.value();
      });
    }
    return s;
  }

  // The kinds counted since before, "ignored_deadline, invalid_output"; empty when none.
  std::string since(const Snapshot& before) const {
    std::string kinds;
    for (const auto& [kind, value] : snapshot()) {
      auto it = before.find(kind);
      if (value > (it == before.end() ? 0.0 : it->second)) {
        kinds += kinds.empty() ? kind : ", " + kind;
      }
    }
    return kinds;
  }

 private:
  metrics::Family<metrics::Counter>* family_;
};

std::string answer(const Status& s) {
  if (s.ok()) {
    return "OK";
  }
  return fmt::format("{} (a valid answer: {})", codeName(s.code()), s.message());
}

// A plugin, loaded and created for one group.
class Session {
 public:
  Session(const CheckOptions& options, const Channel& channel)
      : options_(options), channel_(channel), violations_(registry_) {}

  // Loads and creates with call deadlines of call_timeout and the given grace; reports
  // load/create contracts only when report is set, otherwise one FAIL naming the group.
  bool open(std::string_view group, bool report, std::chrono::milliseconds call_timeout,
            std::chrono::milliseconds grace) {
    plugin::LoadOptions lo;
    lo.plugin_dir = options_.plugin_dir;
    lo.name = options_.name;
    lo.registry = &registry_;
    lo.start_timeout = options_.timeout;
    channel_.call("lifecycle", "ccm_provider_entry_v1");
    auto loaded = plugin::PluginLoader::load(lo);
    if (!loaded.ok()) {
      channel_.fail(report ? "load" : fmt::format("{} (load)", group), loaded.status().message());
      return false;
    }
    if (report) {
      channel_.pass("load", fmt::format("{} negotiated ABI {}.{}", (*loaded)->path,
                                        (*loaded)->table.abi_major, (*loaded)->table.abi_minor));
    }
    plugin::ProviderOptions po;
    po.instances_timeout = po.batch_timeout = po.load_balancer_timeout = po.routes_timeout =
        po.reconfigure_timeout = call_timeout;
    po.grace = grace;
    po.registry = &registry_;
    po.start_timeout = options_.timeout;
    channel_.call("lifecycle", "create");
    auto created =
        AbiProvider::create(*loaded, options_.config, options_.config_source, std::move(po));
    if (!created.ok()) {
      channel_.fail(report ? "create" : fmt::format("{} (create)", group),
                    created.status().message());
      return false;
    }
    provider_ = std::move(*created);
    if (report) {
      const auto& info = provider_->info();
      channel_.pass("create", fmt::format("provider \"{}\" version \"{}\" with {}", info.name,
                                          info.version, info.capabilityList()));
    }
    return true;
  }

  AbiProvider& provider() { return *provider_; }
  const plugin::ProviderInfo& info() const { return provider_->info(); }
  const Channel& channel() const { return channel_; }
  const CheckOptions& options() const { return options_; }
  Snapshot snapshot() const { return violations_.snapshot(); }
  // True when the host counted no violation since before.
  bool clean(const Snapshot& before) const { return violations_.since(before).empty(); }

  // Reports one call: FAIL when the host counted a violation since before (the status message
  // says why when the call failed for it), else PASS with ok_detail or the status.
  bool judge(const std::string& contract, const Status& s, const Snapshot& before,
             const std::string& ok_detail) const {
    std::string kinds = violations_.since(before);
    if (!kinds.empty()) {
      channel_.fail(contract, s.ok() ? fmt::format("the host counted a contract violation ({})",
                                                   kinds)
                                     : fmt::format("{} [{}]", s.message(), kinds));
      return false;
    }
    channel_.pass(contract, s.ok() ? ok_detail : answer(s));
    return true;
  }

  // Output that arrives after its call returned is refused and counted (stale_call_id); give
  // a plugin's stray threads a moment, then look.
  void lateOutput(std::string_view capability, const Snapshot& before) const {
    std::this_thread::sleep_for(kLateOutputWait);
    std::string kinds = violations_.since(before);
    std::string contract = fmt::format("{} no output after return", capability);
    if (kinds.find("stale_call_id") != std::string::npos) {
      channel_.fail(contract, "the plugin emitted output for a call that had already returned "
                              "(stale_call_id)");
    } else {
      channel_.pass(contract, "nothing late");
    }
  }

 private:
  const CheckOptions& options_;
  const Channel& channel_;
  metrics::Registry registry_;
  Violations violations_;
  std::unique_ptr<AbiProvider> provider_;
};

std::string describe(plugin::Existence e) {
  switch (e) {
    case plugin::Existence::Exists:
      return "EXISTS";
    case plugin::Existence::NotFound:
      return "NOT_FOUND (a valid answer)";
    case plugin::Existence::Unknown:
      break;
  }
  return "UNKNOWN";
}

std::string describe(plugin::Power p) {
  switch (p) {
    case plugin::Power::Running:
      return "RUNNING";
    case plugin::Power::Shutdown:
      return "SHUTDOWN";
    case plugin::Power::Unknown:
      break;
  }
  return "UNKNOWN";
}

std::string describe(const std::optional<plugin::InstanceMetadata>& m) {
  if (!m) {
    return "no metadata yet";
  }
  return fmt::format("providerID \"{}\", {} addresses", m->provider_id, m->addresses.size());
}

void instances(Session& session) {
  if (!session.info().instances.present) {
    return;
  }
  auto& p = session.provider();
  const Channel& ch = session.channel();
  Snapshot start = session.snapshot();
  for (const OwnedNode& node : nodeInputs()) {
    NodeRef ref = node.ref();
    {
      Snapshot before = session.snapshot();
      ch.call(kInstances, catalog::InstanceExists::kName);
      auto r = p.instanceExists(ref);
      session.judge(
          fmt::format("{} {} ({})", kInstances, catalog::InstanceExists::kName, node.kind()),
          r.status(), before, r.ok() ? describe(*r) : "");
    }
    {
      Snapshot before = session.snapshot();
      ch.call(kInstances, catalog::InstanceShutdown::kName);
      auto r = p.instanceShutdown(ref);
      session.judge(
          fmt::format("{} {} ({})", kInstances, catalog::InstanceShutdown::kName, node.kind()),
          r.status(), before, r.ok() ? describe(*r) : "");
    }
    {
      Snapshot before = session.snapshot();
      ch.call(kInstances, catalog::InstanceMetadata::kName);
      auto r = p.instanceMetadata(ref);
      session.judge(
          fmt::format("{} {} ({})", kInstances, catalog::InstanceMetadata::kName, node.kind()),
          r.status(), before, r.ok() ? describe(*r) : "");
    }
  }
  session.lateOutput(kInstances, start);
}

void batchOf(Session& session, const std::string& kind, const std::vector<OwnedNode>& nodes) {
  std::vector<NodeRef> refs;
  refs.reserve(nodes.size());
  for (const auto& n : nodes) {
    refs.push_back(n.ref());
  }
  Snapshot before = session.snapshot();
  session.channel().call(kBatch, catalog::InstanceMetadataBatch::kName);
  auto r = session.provider().instanceMetadataBatch(refs);
  std::string contract =
      fmt::format("{} {} ({})", kBatch, catalog::InstanceMetadataBatch::kName, kind);
  if (r.ok() && r->size() != refs.size()) {
    session.channel().fail(contract, fmt::format("{} results for {} nodes", r->size(),
                                                 refs.size()));
    return;
  }
  size_t answered = 0;
  if (r.ok()) {
    answered = static_cast<size_t>(
        std::count_if(r->begin(), r->end(), [](const auto& m) { return m.ok(); }));
  }
  session.judge(contract, r.status(), before,
                fmt::format("{} results, {} with metadata", refs.size(), answered));
}

void batch(Session& session) {
  if (!session.info().instances_batch.present) {
    return;
  }
  Snapshot start = session.snapshot();
  batchOf(session, "every kind of node", nodeInputs());
  batchOf(session, "empty list", {});
  batchOf(session, "10000 nodes", manyNodes("check-batch", 10000));
  session.lateOutput(kBatch, start);
}

void loadBalancers(Session& session) {
  if (!session.info().load_balancer.present) {
    return;
  }
  auto& p = session.provider();
  const Channel& ch = session.channel();
  const std::string& cluster = session.options().cluster_name;
  Snapshot start = session.snapshot();
  std::vector<OwnedNode> few = manyNodes("check-lb-node", 3);
  std::vector<OwnedNode> many = manyNodes("check-lb-node", 10000);
  for (const OwnedService& svc : serviceInputs()) {
    const std::vector<OwnedNode>& members =
        svc.kind() == "empty lists" ? std::vector<OwnedNode>{}
                                    : (svc.kind() == "10000 source ranges" ? many : few);
    std::vector<NodeRef> refs;
    refs.reserve(members.size());
    for (const auto& n : members) {
      refs.push_back(n.ref());
    }
    std::string kind = svc.kind() == "10000 source ranges" ? "10000 source ranges, 10000 nodes"
                                                           : svc.kind();
    plugin::ServiceRef ref = svc.ref();
    auto name = [&](std::string_view call) {
      return fmt::format("{} {} ({})", kLoadBalancer, call, kind);
    };
    {
      Snapshot before = session.snapshot();
      ch.call(kLoadBalancer, catalog::GetLoadBalancerName::kName);
      auto r = p.getLoadBalancerName(cluster, ref);
      session.judge(name(catalog::GetLoadBalancerName::kName), r.status(), before,
                    r.ok() ? fmt::format("\"{}\"", *r) : "");
    }
    {
      Snapshot before = session.snapshot();
      ch.call(kLoadBalancer, catalog::EnsureLoadBalancer::kName);
      auto r = p.ensureLoadBalancer(cluster, ref, refs);
      session.judge(name(catalog::EnsureLoadBalancer::kName), r.status(), before,
                    r.ok() ? fmt::format("{} ingress", r->ingress.size()) : "");
    }
    {
      Snapshot before = session.snapshot();
      ch.call(kLoadBalancer, catalog::GetLoadBalancer::kName);
      auto r = p.getLoadBalancer(cluster, ref);
      session.judge(name(catalog::GetLoadBalancer::kName), r.status(), before,
                    r.ok() ? (r->has_value() ? "exists" : "does not exist") : "");
    }
    {
      Snapshot before = session.snapshot();
      ch.call(kLoadBalancer, catalog::UpdateLoadBalancer::kName);
      Status s = p.updateLoadBalancer(cluster, ref, refs);
      session.judge(name(catalog::UpdateLoadBalancer::kName), s, before, "OK");
    }
    {
      Snapshot before = session.snapshot();
      ch.call(kLoadBalancer, catalog::EnsureLoadBalancerDeleted::kName);
      Status s = p.ensureLoadBalancerDeleted(cluster, ref);
      session.judge(name(catalog::EnsureLoadBalancerDeleted::kName), s, before, "OK");
    }
  }
  session.lateOutput(kLoadBalancer, start);
}

void routes(Session& session) {
  if (!session.info().routes.present) {
    return;
  }
  auto& p = session.provider();
  const Channel& ch = session.channel();
  const std::string& cluster = session.options().cluster_name;
  Snapshot start = session.snapshot();
  auto list = [&](const std::string& when) {
    Snapshot before = session.snapshot();
    ch.call(kRoutes, catalog::ListRoutes::kName);
    auto r = p.listRoutes(cluster);
    session.judge(fmt::format("{} {} ({})", kRoutes, catalog::ListRoutes::kName, when), r.status(),
                  before, r.ok() ? fmt::format("{} routes", r->size()) : "");
  };
  list("before");
  for (const auto& [kind, route] : routeInputs()) {
    {
      Snapshot before = session.snapshot();
      ch.call(kRoutes, catalog::CreateRoute::kName);
      Status s = p.createRoute(cluster, route.name, route);
      session.judge(fmt::format("{} {} ({})", kRoutes, catalog::CreateRoute::kName, kind), s,
                    before, "OK");
    }
    list("after create_route " + kind);
    {
      Snapshot before = session.snapshot();
      ch.call(kRoutes, catalog::DeleteRoute::kName);
      Status s = p.deleteRoute(cluster, route);
      session.judge(fmt::format("{} {} ({})", kRoutes, catalog::DeleteRoute::kName, kind), s,
                    before, "OK");
    }
  }
  session.lateOutput(kRoutes, start);
}

// Runs count calls of one kind at once (call(i) makes the i-th) and reports them as one
// contract.
template <typename Fn>
void atOnce(Session& session, std::string_view capability, std::string_view call_name,
            uint32_t count, Fn call) {
  Snapshot before = session.snapshot();
  std::vector<Status> results(count);
  session.channel().call(capability, call_name);
  {
    std::vector<std::jthread> threads;
    threads.reserve(count);
    for (uint32_t i = 0; i < count; ++i) {
      threads.emplace_back([&results, &call, i] { results[i] = call(i); });
    }
  }
  std::map<std::string, int> by_code;
  for (const Status& s : results) {
    ++by_code[std::string(codeName(s.code()))];
  }
  std::string summary;
  for (const auto& [code, n] : by_code) {
    summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", n, code);
  }
  std::string contract =
      fmt::format("{} {} concurrent ({} at once)", capability, call_name, count);
  std::string detail = fmt::format("{} answers: {}", count, summary);
  if (session.clean(before)) {
    session.channel().pass(contract, detail);
    return;
  }
  auto first_error = std::find_if(results.begin(), results.end(),
                                  [](const Status& s) { return !s.ok(); });
  session.judge(contract, first_error == results.end() ? Status() : *first_error, before, "");
}

uint32_t concurrencyFor(const plugin::CapabilityInfo& cap) {
  return cap.max_concurrency == 0 ? kDefaultConcurrency
                                  : std::min(cap.max_concurrency, kMostConcurrency);
}

void concurrency(Session& session) {
  auto& p = session.provider();
  const auto& info = session.info();
  const std::string& cluster = session.options().cluster_name;
  if (info.instances.present) {
    uint32_t n = concurrencyFor(info.instances);
    std::vector<OwnedNode> nodes = manyNodes("check-conc", n);
    atOnce(session, kInstances, catalog::InstanceMetadata::kName, n,
           [&](uint32_t i) { return p.instanceMetadata(nodes[i].ref()).status(); });
  }
  if (info.instances_batch.present) {
    uint32_t n = concurrencyFor(info.instances_batch);
    std::vector<OwnedNode> nodes = manyNodes("check-conc", 3);
    std::vector<NodeRef> refs;
    refs.reserve(nodes.size());
    for (const auto& node : nodes) {
      refs.push_back(node.ref());
    }
    atOnce(session, kBatch, catalog::InstanceMetadataBatch::kName, n,
           [&](uint32_t) { return p.instanceMetadataBatch(refs).status(); });
  }
  if (info.load_balancer.present) {
    uint32_t n = concurrencyFor(info.load_balancer);
    std::vector<OwnedService> services;
    services.reserve(n);
    for (uint32_t i = 0; i < n; ++i) {
      services.emplace_back("ordinary", fmt::format("check-conc-{}", i)).seal();
    }
    atOnce(session, kLoadBalancer, catalog::GetLoadBalancer::kName, n,
           [&](uint32_t i) { return p.getLoadBalancer(cluster, services[i].ref()).status(); });
  }
  if (info.routes.present) {
    uint32_t n = concurrencyFor(info.routes);
    atOnce(session, kRoutes, catalog::ListRoutes::kName, n,
           [&](uint32_t) { return p.listRoutes(cluster).status(); });
  }
}

// One call of the first capability the plugin declares, by a function that makes it.
struct AnyCall {
  std::string_view capability;
  std::string_view name;
  std::function<Status()> run;
};

std::optional<AnyCall> anyCall(Session& session, const OwnedNode& node,
                               const OwnedService& service) {
  auto& p = session.provider();
  const auto& info = session.info();
  const std::string& cluster = session.options().cluster_name;
  if (info.instances.present) {
    return AnyCall{kInstances, catalog::InstanceMetadata::kName,
                   [&p, &node] { return p.instanceMetadata(node.ref()).status(); }};
  }
  if (info.instances_batch.present) {
    return AnyCall{kBatch, catalog::InstanceMetadataBatch::kName, [&p, &node] {
                     NodeRef ref = node.ref();
                     return p.instanceMetadataBatch({&ref, 1}).status();
                   }};
  }
  if (info.load_balancer.present) {
    return AnyCall{kLoadBalancer, catalog::GetLoadBalancer::kName, [&p, &service, &cluster] {
                     return p.getLoadBalancer(cluster, service.ref()).status();
                   }};
  }
  if (info.routes.present) {
    return AnyCall{kRoutes, catalog::ListRoutes::kName,
                   [&p, &cluster] { return p.listRoutes(cluster).status(); }};
  }
  return std::nullopt;
}

void cancel(Session& session) {
  OwnedNode node("ordinary", "check-node-cancel");
  node.seal();
  OwnedService service("ordinary", "check-web-cancel");
  service.seal();
  auto call = anyCall(session, node, service);
  if (!call) {
    return;
  }
  Snapshot before = session.snapshot();
  session.channel().call(call->capability, call->name);
  Status result;
  {
    std::jthread caller([&result, &call] { result = call->run(); });
    // The flag turns while the call runs or just before it starts: either way the call must
    // come back, and nothing it sends may break the contract.
    session.provider().cancelAll();
  }
  session.judge(fmt::format("cancel ({} {} while is_cancelled turns true)", call->capability,
                            call->name),
                result, before, "returned OK");
}

void deadline(Session& session) {
  OwnedNode node("ordinary", "check-node-deadline");
  node.seal();
  OwnedService service("ordinary", "check-web-deadline");
  service.seal();
  auto call = anyCall(session, node, service);
  if (!call) {
    return;
  }
  Snapshot before = session.snapshot();
  session.channel().call(call->capability, call->name);
  Status s = call->run();
  session.judge(fmt::format("deadline ({} {} with a deadline of 1ms)", call->capability,
                            call->name),
                s, before, "returned OK");
}

void reconfigure(Session& session) {
  if (session.info().abi_minor < 1) {
    return;
  }
  Snapshot before = session.snapshot();
  session.channel().call("lifecycle", "reconfigure");
  Status s = session.provider().reconfigure(session.options().config);
  std::string contract = "reconfigure (the same configuration)";
  if (s.code() == Code::InvalidArgument || s.code() == Code::FailedPrecondition) {
    // Refusing the configuration create accepted is a failure even when the refusal itself
    // broke no rule of the ABI.
    Status refused(s.code(), fmt::format("refused the configuration create accepted: {}",
                                         s.message()));
    if (session.clean(before)) {
      session.channel().fail(contract, refused.message());
    } else {
      session.judge(contract, refused, before, "");
    }
    return;
  }
  std::string detail = s.ok() ? "applied" : answer(s);
  if (s.code() == Code::Unimplemented) {
    detail = "no reconfigure slot: a new configuration takes effect at the next restart";
  }
  session.judge(contract, s.code() == Code::Unimplemented ? Status() : s, before, detail);
}

}  // namespace

std::vector<Group> allGroups() {
  return {Group::Load,        Group::Instances, Group::Batch,    Group::LoadBalancer,
          Group::Routes,      Group::Concurrency, Group::Cancel, Group::Deadline,
          Group::Reconfigure};
}

std::string_view groupName(Group group) {
  switch (group) {
    case Group::Load:
      return "load";
    case Group::Instances:
      return "instances";
    case Group::Batch:
      return "batch";
    case Group::LoadBalancer:
      return "loadbalancer";
    case Group::Routes:
      return "routes";
    case Group::Concurrency:
      return "concurrency";
    case Group::Cancel:
      return "cancel";
    case Group::Deadline:
      return "deadline";
    case Group::Reconfigure:
      return "reconfigure";
  }
  return "unknown";
}

void runGroup(Group group, const CheckOptions& options, const Channel& channel) {
  Session session(options, channel);
  // The deadline group gives every call 1ms and the usual time to come back after it; the
  // others give calls the whole --timeout.
  bool short_deadline = group == Group::Deadline;
  std::chrono::milliseconds call_timeout =
      short_deadline ? std::chrono::milliseconds(1) : options.timeout;
  std::chrono::milliseconds grace =
      short_deadline ? options.timeout : std::min(options.timeout, std::chrono::milliseconds(2000));
  if (!session.open(groupName(group), group == Group::Load, call_timeout, grace)) {
    return;
  }
  switch (group) {
    case Group::Load:
      break;
    case Group::Instances:
      instances(session);
      break;
    case Group::Batch:
      batch(session);
      break;
    case Group::LoadBalancer:
      loadBalancers(session);
      break;
    case Group::Routes:
      routes(session);
      break;
    case Group::Concurrency:
      concurrency(session);
      break;
    case Group::Cancel:
      cancel(session);
      break;
    case Group::Deadline:
      deadline(session);
      break;
    case Group::Reconfigure:
      reconfigure(session);
      break;
  }
}

}  // namespace ccm::check
