// ProviderSet: each call reaches the provider that owns its node, Service or route, and a node
// nobody (or several) claims gets an error, never a NOT_FOUND.
#include "host/providers/provider_set.hpp"

#include <array>
#include <map>
#include <set>
#include <doctest/doctest.h>
#include <fmt/format.h>

namespace ccm::providers {
namespace {

// A cloud in memory: instances by providerID, and a record of the calls it got.
class Cloud final : public plugin::Provider {
 public:
  Cloud(std::string name, std::string prefix) {
    info_.name = std::move(name);
    info_.provider_id_prefix = std::move(prefix);
    info_.instances.present = true;
    info_.instances_batch.present = true;
    info_.load_balancer.present = true;
    info_.routes.present = true;
  }
  const plugin::ProviderInfo& info() const override { return info_; }
  plugin::ProviderInfo& mutableInfo() { return info_; }

  // Instances this cloud has, by node name (discovery) and by providerID.
  std::set<std::string> instances;
  std::optional<Status> exists_error;
  std::vector<std::string> calls;  // "op:object"
  std::vector<std::string> lb_nodes;
  std::vector<plugin::Route> routes;

  StatusOr<plugin::Existence> instanceExists(const plugin::NodeRef& node) override {
    calls.push_back(fmt::format("exists:{}", node.name));
    if (exists_error) {
      return *exists_error;
    }
    bool has = instances.contains(std::string(node.provider_id)) ||
               instances.contains(std::string(node.name));
    return has ? plugin::Existence::Exists : plugin::Existence::NotFound;
  }
  StatusOr<plugin::Power> instanceShutdown(const plugin::NodeRef& node) override {
    calls.push_back(fmt::format("shutdown:{}", node.name));
    return plugin::Power::Running;
  }
  StatusOr<std::optional<plugin::InstanceMetadata>> instanceMetadata(
      const plugin::NodeRef& node) override {
    calls.push_back(fmt::format("metadata:{}", node.name));
    plugin::InstanceMetadata md;
    md.provider_id = info_.provider_id_prefix + std::string(node.name);
    return std::optional(md);
  }
  StatusOr<std::vector<plugin::MetadataResult>> instanceMetadataBatch(
      std::span<const plugin::NodeRef> nodes) override {
    std::vector<plugin::MetadataResult> out;
    for (const auto& n : nodes) {
      calls.push_back(fmt::format("batch:{}", n.name));
      if (n.name == "broken") {
        out.emplace_back(Status(Code::Unavailable, "cloud hiccup"));
        continue;
      }
      plugin::InstanceMetadata md;
      md.provider_id = info_.provider_id_prefix + std::string(n.name);
      out.emplace_back(md);
    }
    return out;
  }
  StatusOr<std::optional<plugin::LoadBalancerStatus>> getLoadBalancer(
      std::string_view, const plugin::ServiceRef& s) override {
    calls.push_back(fmt::format("get:{}", s.name));
    return std::optional<plugin::LoadBalancerStatus>();
  }
  StatusOr<std::string> getLoadBalancerName(std::string_view, const plugin::ServiceRef& s) override {
    calls.push_back(fmt::format("name:{}", s.name));
    return info_.name + "-" + std::string(s.name);
  }
  StatusOr<plugin::LoadBalancerStatus> ensureLoadBalancer(
      std::string_view, const plugin::ServiceRef& s,
      std::span<const plugin::NodeRef> nodes) override {
    calls.push_back(fmt::format("ensure:{}", s.name));
    lb_nodes.clear();
    for (const auto& n : nodes) {
      lb_nodes.emplace_back(n.name);
    }
    return plugin::LoadBalancerStatus{};
  }
  Status updateLoadBalancer(std::string_view, const plugin::ServiceRef& s,
                            std::span<const plugin::NodeRef> nodes) override {
    calls.push_back(fmt::format("update:{}", s.name));
    lb_nodes.clear();
    for (const auto& n : nodes) {
      lb_nodes.emplace_back(n.name);
    }
    return okStatus();
  }
  // Shared host sets: the forms each call was handed, and how often this cloud built its
  // own form of the hosts in them (once per set, as a real provider does).
  std::vector<const plugin::HostForms*> shared_forms;
  std::vector<const plugin::NodeRef*> shared_refs;
  int form_builds = 0;
  StatusOr<plugin::LoadBalancerStatus> ensureLoadBalancerShared(
      std::string_view cluster, const plugin::ServiceRef& s,
      const plugin::SharedHosts& hosts) override {
    noteShared(hosts);
    return ensureLoadBalancer(cluster, s, hosts.refs);
  }
  Status updateLoadBalancerShared(std::string_view cluster, const plugin::ServiceRef& s,
                                  const plugin::SharedHosts& hosts) override {
    noteShared(hosts);
    return updateLoadBalancer(cluster, s, hosts.refs);
  }
  Status ensureLoadBalancerDeleted(std::string_view, const plugin::ServiceRef& s) override {
    calls.push_back(fmt::format("delete:{}", s.name));
    return Status(Code::Unavailable, "try later");
  }
  StatusOr<std::vector<plugin::Route>> listRoutes(std::string_view) override {
    calls.push_back("list:");
    return routes;
  }
  Status createRoute(std::string_view, std::string_view, const plugin::Route& r) override {
    calls.push_back(fmt::format("createRoute:{}", r.target_node));
    return okStatus();
  }
  Status deleteRoute(std::string_view, const plugin::Route& r) override {
    calls.push_back(fmt::format("deleteRoute:{}", r.name));
    return okStatus();
  }
  void cancelAll() override { calls.push_back("cancel:"); }

 private:
  void noteShared(const plugin::SharedHosts& hosts) {
    shared_forms.push_back(hosts.forms);
    shared_refs.push_back(hosts.refs.data());
    if (hosts.forms != nullptr) {
      hosts.forms->get(this, [this]() -> std::shared_ptr<const void> {
        ++form_builds;
        return std::make_shared<const int>(form_builds);
      });
    }
  }

  plugin::ProviderInfo info_;
};

// A node as the controllers pass it; owns the strings its NodeRef points to.
struct Node {
  std::string name;
  std::string provider_id;
  std::vector<std::pair<std::string, std::string>> label_values;
  std::vector<plugin::KeyValueRef> labels;
  std::string uid;
  plugin::NodeRef ref() {
    uid = "uid-" + name;
    labels.clear();
    for (const auto& [k, v] : label_values) {
      labels.push_back({k, v});
    }
    plugin::NodeRef r;
    r.name = name;
    r.uid = uid;
    r.provider_id = provider_id;
    r.labels = labels;
    return r;
  }
};

struct Fixture {
  Cloud a{"cloud-a", "a://"};
  Cloud b{"cloud-b", "b://"};
  std::unique_ptr<ProviderSet> set;

  explicit Fixture(RoutingRules rules = {}) {
    auto created = ProviderSet::create({&a, &b}, std::move(rules));
    REQUIRE(created.ok());
    set = std::move(created).value();
  }
};

RoutingRules rulesFor(std::vector<std::string> selectors, std::string_view discovery,
                      std::vector<std::string> classes, std::string_view lb_nodes = "") {
  auto rules = buildRules({"cloud-a", "cloud-b"}, selectors, discovery, classes, lb_nodes);
  REQUIRE(rules.ok());
  return std::move(rules).value();
}

TEST_CASE("a node with a providerID goes to the provider owning its prefix") {
  Fixture f;
  f.b.instances = {"b://vm-1"};
  Node n{"node-b", "b://vm-1", {}, {}, {}};
  auto exists = f.set->instanceExists(n.ref());
  REQUIRE(exists.ok());
  CHECK(*exists == plugin::Existence::Exists);
  CHECK(f.a.calls.empty());
  CHECK(f.b.calls == std::vector<std::string>{"exists:node-b"});

  Node gone{"node-a", "a://vm-9", {}, {}, {}};
  auto missing = f.set->instanceExists(gone.ref());
  REQUIRE(missing.ok());
  CHECK(*missing == plugin::Existence::NotFound);
  CHECK(f.a.calls == std::vector<std::string>{"exists:node-a"});
}

TEST_CASE("a node whose providerID no loaded provider owns gets an error, never NOT_FOUND") {
  Fixture f;
  Node n{"node-c", "c://vm-1", {}, {}, {}};
  auto exists = f.set->instanceExists(n.ref());
  REQUIRE_FALSE(exists.ok());
  CHECK(exists.status().code() == Code::FailedPrecondition);
  CHECK(exists.status().message().find("c://vm-1") != std::string::npos);
  CHECK(exists.status().message().find("cloud-a (a://)") != std::string::npos);
  CHECK(f.a.calls.empty());
  CHECK(f.b.calls.empty());
  CHECK_FALSE(f.set->instanceShutdown(n.ref()).ok());
  CHECK_FALSE(f.set->instanceMetadata(n.ref()).ok());
}

TEST_CASE("a node without providerID is routed by node selector; none or two is an error") {
  Fixture f(rulesFor({"cloud-b=cloud=b", "cloud-a=cloud=a"}, "", {}));
  Node nb{"node-b", "", {{"cloud", "b"}}, {}, {}};
  auto md = f.set->instanceMetadata(nb.ref());
  REQUIRE(md.ok());
  REQUIRE(md->has_value());
  CHECK((*md)->provider_id == "b://node-b");
  CHECK(f.a.calls.empty());

  Node none{"node-x", "", {{"cloud", "x"}}, {}, {}};
  auto unclaimed = f.set->instanceMetadata(none.ref());
  REQUIRE_FALSE(unclaimed.ok());
  CHECK(unclaimed.status().code() == Code::FailedPrecondition);
  CHECK(unclaimed.status().message().find("no provider's node selector") != std::string::npos);

  Fixture g(rulesFor({"cloud-a=role", "cloud-b=cloud=b"}, "", {}));
  Node both{"node-y", "", {{"cloud", "b"}, {"role", "x"}}, {}, {}};
  auto twice = g.set->instanceMetadata(both.ref());
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.status().message().find("cloud-a, cloud-b") != std::string::npos);
  CHECK(g.a.calls.empty());
  CHECK(g.b.calls.empty());
}

TEST_CASE("NOT_FOUND for a node owned by a label only is no proof; by prefix or discovery it is") {
  Fixture f(rulesFor({"cloud-b=cloud=b"}, "exists", {}));
  // A label-routed node that the labelled cloud does not know: maybe its label is wrong.
  Node labelled{"node-l", "", {{"cloud", "b"}}, {}, {}};
  auto e = f.set->instanceExists(labelled.ref());
  REQUIRE(e.ok());
  CHECK(*e == plugin::Existence::Unknown);
  // With its providerID, the owner's NOT_FOUND stands.
  Node by_prefix{"node-p", "b://node-p", {}, {}, {}};
  e = f.set->instanceExists(by_prefix.ref());
  REQUIRE(e.ok());
  CHECK(*e == plugin::Existence::NotFound);
  // Found by discovery (its cloud said EXISTS), then gone: NOT_FOUND stands too.
  f.b.instances = {"node-d"};
  Node discovered{"node-d", "", {}, {}, {}};
  REQUIRE(f.set->instanceMetadata(discovered.ref()).ok());
  f.b.instances = {};
  e = f.set->instanceExists(discovered.ref());
  REQUIRE(e.ok());
  CHECK(*e == plugin::Existence::NotFound);
}

TEST_CASE("a node without a single owner is warned about once per change") {
  Fixture f(rulesFor({"cloud-b=cloud=b"}, "", {}));
  std::vector<std::string> warnings;
  f.set->setNodeWarning([&](std::string_view node, std::string_view uid, const std::string& why) {
    warnings.push_back(fmt::format("{}/{}: {}", node, uid, why));
  });
  Node n{"node-x", "", {{"cloud", "x"}}, {}, {}};
  CHECK_FALSE(f.set->instanceMetadata(n.ref()).ok());
  CHECK_FALSE(f.set->instanceExists(n.ref()).ok());
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].starts_with("node-x/uid-node-x: node node-x has no providerID"));
  n.label_values = {{"cloud", "b"}};
  CHECK(f.set->instanceMetadata(n.ref()).ok());
  n.label_values = {};
  CHECK_FALSE(f.set->instanceMetadata(n.ref()).ok());
  CHECK(warnings.size() == 2);
  n.provider_id = "c://1";
  CHECK_FALSE(f.set->instanceExists(n.ref()).ok());
  REQUIRE(warnings.size() == 3);
  CHECK(warnings[2].find("which no loaded provider owns") != std::string::npos);
}

TEST_CASE("discovery asks every provider and needs exactly one EXISTS") {
  Fixture f(rulesFor({}, "exists", {}));
  f.b.instances = {"node-b"};
  Node nb{"node-b", "", {}, {}, {}};
  auto md = f.set->instanceMetadata(nb.ref());
  REQUIRE(md.ok());
  CHECK((*md)->provider_id == "b://node-b");
  CHECK(f.a.calls == std::vector<std::string>{"exists:node-b"});
  // Remembered: the second call asks nobody else.
  f.a.calls.clear();
  REQUIRE(f.set->instanceMetadata(nb.ref()).ok());
  CHECK(f.a.calls.empty());

  f.a.instances = {"node-2"};
  f.b.instances = {"node-2"};
  Node two{"node-2", "", {}, {}, {}};
  auto claimed_twice = f.set->instanceMetadata(two.ref());
  REQUIRE_FALSE(claimed_twice.ok());
  CHECK(claimed_twice.status().message().find("several providers (cloud-a, cloud-b)") !=
        std::string::npos);

  Node nobody{"node-0", "", {}, {}, {}};
  auto unclaimed = f.set->instanceExists(nobody.ref());
  REQUIRE_FALSE(unclaimed.ok());
  CHECK(unclaimed.status().code() == Code::FailedPrecondition);

  f.b.exists_error = Status(Code::Unavailable, "api down");
  Node unsure{"node-u", "", {}, {}, {}};
  auto err = f.set->instanceExists(unsure.ref());
  REQUIRE_FALSE(err.ok());
  CHECK(err.status().message().find("provider cloud-b: api down") != std::string::npos);
}

TEST_CASE("a batch is split per provider and answered in the caller's order") {
  Fixture f;
  std::array<Node, 4> nodes{Node{"n1", "b://n1", {}, {}, {}}, Node{"n2", "a://n2", {}, {}, {}},
                            Node{"n3", "z://n3", {}, {}, {}}, Node{"broken", "a://broken", {}, {}, {}}};
  std::vector<plugin::NodeRef> refs;
  for (auto& n : nodes) {
    refs.push_back(n.ref());
  }
  auto results = f.set->instanceMetadataBatch(refs);
  REQUIRE(results.ok());
  REQUIRE(results->size() == 4);
  REQUIRE((*results)[0].ok());
  CHECK((*results)[0]->provider_id == "b://n1");
  REQUIRE((*results)[1].ok());
  CHECK((*results)[1]->provider_id == "a://n2");
  CHECK((*results)[2].status().code() == Code::FailedPrecondition);
  CHECK((*results)[3].status().message() == "provider cloud-a: cloud hiccup");
  CHECK(f.a.calls == std::vector<std::string>{"batch:n2", "batch:broken"});
  CHECK(f.b.calls == std::vector<std::string>{"batch:n1"});

  f.b.mutableInfo().instances_batch.present = false;
  Fixture g;
  g.b.mutableInfo().instances_batch.present = false;
  auto rebuilt = ProviderSet::create({&g.a, &g.b}, {});
  REQUIRE(rebuilt.ok());
  CHECK_FALSE((*rebuilt)->info().instances_batch.present);
  CHECK((*rebuilt)->instanceMetadataBatch(refs).status().code() == Code::Unimplemented);
}

TEST_CASE("a Service goes to its class's provider and gets that provider's nodes") {
  Fixture f(rulesFor({}, "", {"example.com/b=cloud-b"}));
  std::array<Node, 3> nodes{Node{"a1", "a://a1", {}, {}, {}}, Node{"b1", "b://b1", {}, {}, {}},
                            Node{"x1", "", {}, {}, {}}};
  std::vector<plugin::NodeRef> refs;
  for (auto& n : nodes) {
    refs.push_back(n.ref());
  }
  plugin::ServiceRef classed;
  classed.name = "web-b";
  classed.load_balancer_class = "example.com/b";
  REQUIRE(f.set->ensureLoadBalancer("k", classed, refs).ok());
  CHECK(f.b.lb_nodes == std::vector<std::string>{"b1"});
  CHECK(f.a.calls.empty());

  plugin::ServiceRef plain;
  plain.name = "web-a";
  REQUIRE(f.set->updateLoadBalancer("k", plain, refs).ok());
  CHECK(f.a.lb_nodes == std::vector<std::string>{"a1"});
  auto name = f.set->getLoadBalancerName("k", plain);
  REQUIRE(name.ok());
  CHECK(*name == "cloud-a-web-a");

  plugin::ServiceRef other;
  other.name = "web-o";
  other.load_balancer_class = "example.com/other";
  REQUIRE(f.set->getLoadBalancer("k", other).ok());
  CHECK(f.a.calls.back() == "get:web-o");

  auto deleted = f.set->ensureLoadBalancerDeleted("k", classed);
  CHECK(deleted.code() == Code::Unavailable);
  CHECK(deleted.message() == "provider cloud-b: try later");

  f.a.mutableInfo().annotation_domain = "a.example.com";
  f.b.mutableInfo().annotation_domain = "b.example.com";
  CHECK(f.set->annotationDomainFor("") == "a.example.com");
  CHECK(f.set->annotationDomainFor("example.com/b") == "b.example.com");
  CHECK(f.set->annotationDomainFor("example.com/other") == "a.example.com");

  Fixture all(rulesFor({}, "", {}, "all"));
  REQUIRE(all.set->ensureLoadBalancer("k", plain, refs).ok());
  CHECK(all.a.lb_nodes == std::vector<std::string>{"a1", "b1", "x1"});
}

TEST_CASE("a shared host set is split among the members once per set, not per call") {
  Fixture f(rulesFor({}, "", {"example.com/b=cloud-b"}));
  std::array<Node, 4> nodes{Node{"a1", "a://a1", {}, {}, {}}, Node{"b1", "b://b1", {}, {}, {}},
                            Node{"b2", "b://b2", {}, {}, {}}, Node{"x1", "", {}, {}, {}}};
  std::vector<plugin::NodeRef> refs;
  for (auto& n : nodes) {
    refs.push_back(n.ref());
  }
  plugin::HostForms forms;
  plugin::SharedHosts hosts{refs, &forms};
  plugin::ServiceRef on_b;
  on_b.name = "web-b";
  on_b.load_balancer_class = "example.com/b";
  plugin::ServiceRef on_a;
  on_a.name = "web-a";

  REQUIRE(f.set->ensureLoadBalancerShared("k", on_b, hosts).ok());
  CHECK(f.b.lb_nodes == std::vector<std::string>{"b1", "b2"});
  REQUIRE(f.set->updateLoadBalancerShared("k", on_b, hosts).ok());
  REQUIRE(f.set->ensureLoadBalancerShared("k", on_b, hosts).ok());
  CHECK(f.b.lb_nodes == std::vector<std::string>{"b1", "b2"});
  REQUIRE(f.set->ensureLoadBalancerShared("k", on_a, hosts).ok());
  CHECK(f.a.lb_nodes == std::vector<std::string>{"a1"});

  // cloud-b was handed one set of its own three times: the same hosts, the same forms, in
  // which it built its form once; cloud-a got a set of its own, not cloud-b's.
  REQUIRE(f.b.shared_forms.size() == 3);
  CHECK(f.b.shared_forms[0] != nullptr);
  CHECK(f.b.shared_forms[0] != &forms);
  CHECK(f.b.shared_forms[1] == f.b.shared_forms[0]);
  CHECK(f.b.shared_forms[2] == f.b.shared_forms[0]);
  CHECK(f.b.shared_refs[2] == f.b.shared_refs[0]);
  CHECK(f.b.form_builds == 1);
  REQUIRE(f.a.shared_forms.size() == 1);
  CHECK(f.a.shared_forms[0] != f.b.shared_forms[0]);
  CHECK(f.a.form_builds == 1);

  // Once the set's forms are dropped (the wave is over), the next call picks again.
  forms.clear();
  REQUIRE(f.set->updateLoadBalancerShared("k", on_b, hosts).ok());
  CHECK(f.b.lb_nodes == std::vector<std::string>{"b1", "b2"});
  CHECK(f.b.form_builds == 2);

  // Without forms every call picks the hosts on its own, and still gets only its own.
  REQUIRE(f.set->ensureLoadBalancerShared("k", on_b, plugin::SharedHosts{refs, nullptr}).ok());
  CHECK(f.b.lb_nodes == std::vector<std::string>{"b1", "b2"});
  CHECK(f.b.shared_forms.back() != nullptr);
  CHECK(f.b.form_builds == 3);
}

plugin::Route route(std::string name, std::string node) {
  plugin::Route r;
  r.name = std::move(name);
  r.target_node = std::move(node);
  return r;
}

TEST_CASE("routes: listed from every provider, created and deleted by their owner only") {
  Fixture f;
  f.a.routes = {route("ra", "a1")};
  f.b.routes = {route("rb", "b1")};
  auto listed = f.set->listRoutes("k");
  REQUIRE(listed.ok());
  REQUIRE(listed->size() == 2);
  REQUIRE(f.set->deleteRoute("k", (*listed)[1]).ok());
  CHECK(f.b.calls.back() == "deleteRoute:rb");
  CHECK(f.a.calls == std::vector<std::string>{"list:"});
  auto unlisted = f.set->deleteRoute("k", route("rz", "a1"));
  CHECK(unlisted.code() == Code::FailedPrecondition);

  plugin::Route wanted = route("", "b2");
  wanted.destination_cidr = "10.0.2.0/24";
  auto unknown = f.set->createRoute("k", "hint", wanted);
  CHECK(unknown.code() == Code::Unavailable);
  // A load-balancer update naming a node tells its owner too.
  Node a3{"a3", "a://a3", {}, {}, {}};
  std::array<plugin::NodeRef, 1> lb_nodes{a3.ref()};
  plugin::ServiceRef svc;
  svc.name = "s";
  REQUIRE(f.set->updateLoadBalancer("k", svc, lb_nodes).ok());
  REQUIRE(f.set->createRoute("k", "hint", route("", "a3")).ok());
  CHECK(f.a.calls.back() == "createRoute:a3");
  Node b2{"b2", "b://b2", {}, {}, {}};
  REQUIRE(f.set->instanceExists(b2.ref()).ok());
  REQUIRE(f.set->createRoute("k", "hint", wanted).ok());
  CHECK(f.b.calls.back() == "createRoute:b2");
  CHECK(f.a.calls == std::vector<std::string>{"list:", "update:s", "createRoute:a3"});
}

TEST_CASE("a set refuses overlapping prefixes and rules naming unloaded providers") {
  Cloud a{"cloud-a", "x://"};
  Cloud b{"cloud-b", "x://b/"};
  auto overlap = ProviderSet::create({&a, &b}, {});
  REQUIRE_FALSE(overlap.ok());
  CHECK(overlap.status().message().find("overlap") != std::string::npos);

  Cloud c{"cloud-c", "c://"};
  RoutingRules rules;
  rules.classes.push_back({"example.com/z", "cloud-z"});
  CHECK_FALSE(ProviderSet::create({&a, &c}, rules).ok());
  CHECK_FALSE(ProviderSet::create({&a}, {}).ok());

  auto fine = ProviderSet::create({&a, &c}, {});
  REQUIRE(fine.ok());
  CHECK((*fine)->info().name == "cloud-a,cloud-c");
  (*fine)->cancelAll();
  CHECK(a.calls.back() == "cancel:");
  CHECK(c.calls.back() == "cancel:");
}

Node makeNode(std::string name, std::string provider_id = "",
              std::vector<std::pair<std::string, std::string>> label_values = {}) {
  return Node{std::move(name), std::move(provider_id), std::move(label_values), {}, {}};
}

TEST_CASE("what the set remembers about a node goes with the node") {
  Fixture f(rulesFor({"cloud-b=cloud=b"}, "exists", {}));
  std::vector<std::string> warnings;
  f.set->setNodeWarning([&](std::string_view node, std::string_view, const std::string&) {
    warnings.emplace_back(node);
  });
  f.a.instances = {"found"};
  // Churn: nodes owned by prefix, by label, by discovery, and one nobody claims (warned).
  for (int round = 0; round < 50; ++round) {
    std::array<Node, 4> nodes{makeNode(fmt::format("p{}", round), fmt::format("a://p{}", round)),
                              makeNode(fmt::format("l{}", round), "", {{"cloud", "b"}}),
                              makeNode(fmt::format("found-{}", round)),
                              makeNode(fmt::format("x{}", round))};
    f.a.instances.insert(nodes[2].name);
    for (auto& n : nodes) {
      (void)f.set->instanceMetadata(n.ref());
    }
    CHECK(f.set->rememberedNodesForTest() > 0);
    for (auto& n : nodes) {
      plugin::NodeRef r = n.ref();
      f.set->forgetNode(r.name, r.uid);
    }
    CHECK(f.set->rememberedNodesForTest() == 0);
  }
  CHECK(warnings.size() == 50);
  // A node deleted and made again under its name is routed afresh: its old discovery is gone.
  Node again = makeNode("found-0");
  f.a.instances.erase("found-0");
  f.b.instances = {"found-0"};
  auto md = f.set->instanceMetadata(again.ref());
  REQUIRE(md.ok());
  CHECK((*md)->provider_id == "b://found-0");
}

TEST_CASE("the owner a load balancer's nodes are sorted by is the owner calls are routed to") {
  Fixture f(rulesFor({"cloud-a=role=edge", "cloud-b=zone=b"}, "", {}));
  // Claimed by both selectors: no owner for calls, so no backend of either cloud either.
  std::array<Node, 2> nodes{makeNode("both", "", {{"role", "edge"}, {"zone", "b"}}),
                            makeNode("b-only", "", {{"zone", "b"}})};
  std::vector<plugin::NodeRef> refs;
  for (auto& n : nodes) {
    refs.push_back(n.ref());
  }
  CHECK(f.set->instanceMetadata(refs[0]).status().code() == Code::FailedPrecondition);
  plugin::ServiceRef svc;
  svc.name = "web";
  REQUIRE(f.set->ensureLoadBalancer("k", svc, refs).ok());
  CHECK(f.a.lb_nodes.empty());
  plugin::ServiceRef svc_b;
  svc_b.name = "web-b";
  Fixture g(rulesFor({"cloud-a=role=edge", "cloud-b=zone=b"}, "", {"example.com/b=cloud-b"}));
  svc_b.load_balancer_class = "example.com/b";
  REQUIRE(g.set->ensureLoadBalancer("k", svc_b, refs).ok());
  CHECK(g.b.lb_nodes == std::vector<std::string>{"b-only"});
}

TEST_CASE("the owner's name (lifecycle zones) follows the routing rules, without a call") {
  Fixture f(rulesFor({"cloud-b=cloud=b"}, "exists", {}));
  Node by_prefix = makeNode("p", "a://p");
  Node by_label = makeNode("l", "", {{"cloud", "b"}});
  Node unknown = makeNode("u");
  Node nobodys = makeNode("g", "gone://g");
  CHECK(f.set->ownerNameOf(by_prefix.ref()) == "cloud-a");
  CHECK(f.set->ownerNameOf(by_label.ref()) == "cloud-b");
  CHECK(f.set->ownerNameOf(unknown.ref()).empty());
  CHECK(f.set->ownerNameOf(nobodys.ref()).empty());
  CHECK(f.a.calls.empty());
  CHECK(f.b.calls.empty());
  // Once discovery found it, the node is in its provider's zones.
  f.a.instances = {"u"};
  REQUIRE(f.set->instanceMetadata(unknown.ref()).ok());
  CHECK(f.set->ownerNameOf(unknown.ref()) == "cloud-a");
}

}  // namespace
}  // namespace ccm::providers
