// openstack.so through the host's own loader and ABI adapter (host/plugin): the path the
// cloud-controller-manager takes. The other test binaries drive the plugin with a fake host;
// this one checks that the real host accepts what the plugin says (output validation,
// negotiation, capability tables, errors with retry-after, log redaction).
#include <doctest/doctest.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "host/log/log.hpp"
#include "host/plugin/abi_provider.hpp"
#include "host/plugin/plugin_loader.hpp"
#include "test/plugins/openstack/sim_process.hpp"

using namespace ccm;
using namespace ccm::plugin;
using ccm::openstack::testing::SimProcess;

namespace {

std::string pluginDir() {
  const char* dir = std::getenv("CCM_OPENSTACK_PLUGIN_DIR");
  REQUIRE(dir != nullptr);
  return dir;
}

std::string cloudConf(const SimProcess& sim, const std::string& more = "") {
  return "[Global]\nauth-url = " + sim.url() +
         "/identity/v3\nuser-id = u-demo\npassword = demo-password\ntenant-id = p-demo\n"
         "region = RegionOne\n[LoadBalancer]\nsubnet-id = sub-private\n"
         "floating-network-id = net-public\n[Route]\nrouter-id = router-1\n" +
         more;
}

struct Fixture {
  SimProcess& sim = SimProcess::shared();
  metrics::Registry registry;

  Fixture() { sim.reset(); }

  std::unique_ptr<AbiProvider> provider(const std::string& config) {
    LoadOptions lo;
    lo.plugin_dir = pluginDir();
    lo.name = "openstack";
    lo.registry = &registry;
    auto loaded = PluginLoader::load(lo);
    REQUIRE_MESSAGE(loaded.ok(), loaded.status().toString());
    ProviderOptions po;
    po.registry = &registry;
    auto p = AbiProvider::create(*loaded, config, "cloud.conf", po);
    REQUIRE_MESSAGE(p.ok(), p.status().toString());
    return std::move(p).value();
  }
};

// A node with owned strings and the views the adapter wants.
struct Node {
  std::string name;
  std::string provider_id;
  std::vector<std::pair<std::string, std::string>> addresses;
  std::vector<AddressRef> refs;
  std::string uid = {};  // the view in NodeRef must outlive ref()
  NodeRef ref() {
    refs.clear();
    for (auto& [t, a] : addresses) {
      refs.push_back({t, a});
    }
    uid = "uid-" + name;
    NodeRef r;
    r.name = name;
    r.uid = uid;
    r.provider_id = provider_id;
    r.addresses = refs;
    return r;
  }
};

}  // namespace

TEST_CASE_FIXTURE(Fixture, "loaded and negotiated by the host, with its capabilities") {
  auto p = provider(cloudConf(sim));
  const ProviderInfo& info = p->info();
  CHECK(info.name == "openstack");
  CHECK(info.abi_major == 1u);
  CHECK(info.instances.present);
  CHECK(info.instances.max_concurrency == 16u);
  CHECK(info.instances_batch.present);
  CHECK(info.max_batch_size == 500u);
  CHECK(info.load_balancer.present);
  CHECK(info.routes.present);
}

TEST_CASE_FIXTURE(Fixture, "a refused config reaches the host with its message") {
  LoadOptions lo;
  lo.plugin_dir = pluginDir();
  lo.name = "openstack";
  lo.registry = &registry;
  auto loaded = PluginLoader::load(lo);
  REQUIRE(loaded.ok());
  ProviderOptions po;
  po.registry = &registry;
  auto p = AbiProvider::create(*loaded, "[Global]\nregion = x\n", "cloud.conf", po);
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().message().find("[Global] auth-url") != std::string::npos);
}

TEST_CASE_FIXTURE(Fixture, "instances: the host accepts the metadata and the tri-states") {
  auto p = provider(cloudConf(sim));
  std::string id = sim.addServer(R"({"name":"n1","flavor":"flv-large",
    "networks":[{"network":"private","ip":"10.0.0.61","floating":"172.24.4.61"}]})");
  Node n{"n1", "", {}, {}};
  auto md = p->instanceMetadata(n.ref());
  REQUIRE_MESSAGE(md.ok(), md.status().toString());
  REQUIRE(md->has_value());
  CHECK((*md)->provider_id == "openstack:///" + id);
  CHECK((*md)->instance_type == "m1.large");
  CHECK((*md)->zone == "nova");
  CHECK((*md)->region == "RegionOne");
  REQUIRE((*md)->addresses.size() == 2);
  CHECK((*md)->addresses[1].address == "172.24.4.61");

  n.provider_id = "openstack:///" + id;
  CHECK(*p->instanceExists(n.ref()) == Existence::Exists);
  CHECK(*p->instanceShutdown(n.ref()) == Power::Running);
  Node gone{"gone", "openstack:///nope", {}, {}};
  CHECK(*p->instanceExists(gone.ref()) == Existence::NotFound);

  std::vector<Node> many;
  for (int i = 0; i < 5; ++i) {
    std::string name = "b" + std::to_string(i);
    sim.addPrivateServer(name, "10.0.0." + std::to_string(70 + i));
    many.push_back({name, "", {}, {}});
  }
  std::vector<NodeRef> refs;
  refs.reserve(many.size());
  for (auto& m : many) {
    refs.push_back(m.ref());
  }
  auto batch = p->instanceMetadataBatch(refs);
  REQUIRE(batch.ok());
  REQUIRE(batch->size() == 5);
  for (const auto& r : *batch) {
    CHECK(r.ok());
  }
}

TEST_CASE_FIXTURE(Fixture, "load balancers: status accepted, busy Octavia gives a retry-after") {
  auto p = provider(cloudConf(sim, "[LoadBalancer]\nccm-active-wait-timeout = 0s\n"));
  std::string id =
      sim.addServer(R"({"name":"n1","networks":[{"network":"private","ip":"10.0.0.62"}]})");
  Node n{"n1", "openstack:///" + id, {{"InternalIP", "10.0.0.62"}}, {}};
  std::vector<NodeRef> nodes = {n.ref()};
  std::vector<ServicePortRef> ports = {{"http", "TCP", 80, 30080, "8080", ""}};
  ServiceRef svc;
  svc.namespace_name = "default";
  svc.name = "web";
  svc.uid = "11111111-2222-3333-4444-555555555555";
  svc.type = "LoadBalancer";
  svc.ports = ports;
  svc.external_traffic_policy = "Cluster";

  sim.config(R"({"hold_pending":true})");
  auto busy = p->ensureLoadBalancer("kubernetes", svc, nodes);
  REQUIRE_FALSE(busy.ok());
  CHECK(busy.status().code() == Code::FailedPrecondition);
  CHECK(busy.status().retryAfter().count() > 0);
  sim.config(R"({"hold_pending":false})");

  StatusOr<LoadBalancerStatus> st = busy.status();
  for (int i = 0; i < 5; ++i) {
    st = p->ensureLoadBalancer("kubernetes", svc, nodes);
    if (st.ok()) {
      break;
    }
  }
  REQUIRE_MESSAGE(st.ok(), st.status().toString());
  REQUIRE(st->ingress.size() == 1);
  CHECK(st->ingress[0].ip.rfind("172.24.4.", 0) == 0);
  CHECK(st->ingress[0].ip_mode == "VIP");
  auto name = p->getLoadBalancerName("kubernetes", svc);
  CHECK(*name == "kube_service_kubernetes_default_web");
  auto got = p->getLoadBalancer("kubernetes", svc);
  REQUIRE(got.ok());
  CHECK(got->has_value());
  CHECK(p->updateLoadBalancer("kubernetes", svc, nodes).ok());
  CHECK(p->ensureLoadBalancerDeleted("kubernetes", svc).ok());
  got = p->getLoadBalancer("kubernetes", svc);
  REQUIRE(got.ok());
  CHECK_FALSE(got->has_value());
}

TEST_CASE_FIXTURE(Fixture, "routes: create, list and delete through the host") {
  auto p = provider(cloudConf(sim));
  sim.addServer(R"({"name":"n1","networks":[{"network":"private","ip":"10.0.0.63"}]})");
  Route r;
  r.target_node = "n1";
  r.destination_cidr = "10.244.5.0/24";
  r.target_node_addresses = {{"InternalIP", "10.0.0.63"}};
  REQUIRE(p->createRoute("kubernetes", "uid-n1", r).ok());
  auto listed = p->listRoutes("kubernetes");
  REQUIRE(listed.ok());
  REQUIRE(listed->size() == 1);
  CHECK((*listed)[0].target_node == "n1");
  CHECK((*listed)[0].destination_cidr == "10.244.5.0/24");
  CHECK(p->deleteRoute("kubernetes", (*listed)[0]).ok());
  CHECK(p->listRoutes("kubernetes")->empty());
}

TEST_CASE_FIXTURE(Fixture, "the host's log never shows the password") {
  std::mutex mu;
  std::vector<std::string> lines;
  log::setSinkForTest([&](std::string_view line) {
    std::lock_guard<std::mutex> lock(mu);
    lines.emplace_back(line);
  });
  auto p = provider(cloudConf(sim, "[Bogus]\nx = 1\n"));
  sim.fault(R"({"path":"/compute/","status":500,"count":1})");
  Node n{"n1", "openstack:///x", {}, {}};
  (void)p->instanceExists(n.ref());
  log::setSinkForTest(nullptr);
  bool warned = false;
  for (const auto& l : lines) {
    CHECK(l.find("demo-password") == std::string::npos);
    warned = warned || l.find("[bogus]") != std::string::npos;
  }
  CHECK(warned);
}

TEST_CASE_FIXTURE(Fixture, "the provider's details reach the host as structured fields") {
  std::mutex mu;
  std::vector<std::string> lines;
  log::Config saved = log::currentConfig();
  log::Config json = saved;
  json.format = log::Format::Json;
  log::configure(json);
  log::setSinkForTest([&](std::string_view line) {
    std::lock_guard<std::mutex> lock(mu);
    lines.emplace_back(line);
  });
  auto p = provider(cloudConf(sim));
  log::setSinkForTest(nullptr);
  log::configure(saved);
  std::string ready;
  for (const auto& l : lines) {
    if (l.find("OpenStack provider ready") != std::string::npos) {
      ready = l;
    }
  }
  REQUIRE_MESSAGE(!ready.empty(), "no ready line among " << lines.size());
  // Keys of the JSON line, not key="value" text packed into the message.
  CHECK(ready.find(R"(OpenStack provider ready",)") != std::string::npos);  // the whole msg
  CHECK(ready.find(R"("region":"RegionOne")") != std::string::npos);
  CHECK(ready.find(R"("routes":")") != std::string::npos);
  CHECK(ready.find("region=") == std::string::npos);
}
