// AbiProvider and the generic call path (AbiCaller) through real plugins: every ABI function's
// inputs, outputs and status mapping with echo.so, deadlines and abandonment, cancellation,
// absent capabilities, metrics.
#include "host/plugin/abi_provider.hpp"

#include "host/plugin/abi_input.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "test/host/plugin/test_plugins.hpp"
#include "test/support/provider_inputs.hpp"

using namespace ccm;
using namespace ccm::plugin;
using namespace ccm::testing;
using std::chrono::milliseconds;

namespace {

double calls(const metrics::Registry& reg, const std::string& provider, const std::string& cap,
             const std::string& call, const std::string& code) {
  return reg.valueForTest("ccm_provider_calls_total", {provider, cap, call, code});
}

// echo.so, created with 5 s deadlines.
struct Echo {
  metrics::Registry reg;
  std::unique_ptr<AbiProvider> p = makeProvider(echoDir(), "echo", reg);
};

// The conformance kit's correct plugin, which has no routes and no batch capability.
struct Baseline {
  metrics::Registry reg;
  std::unique_ptr<AbiProvider> p = makeProvider(kitDir(), "baseline", reg);
};

// Nodes by name and the refs to them.
struct Nodes {
  std::vector<TestNode> nodes;
  std::vector<NodeRef> refs;

  Nodes(std::initializer_list<const char*> names) {
    nodes.reserve(names.size());
    for (const char* name : names) {
      refs.push_back(nodes.emplace_back(name).ref());
    }
  }
};

// A service with annotations and a current status, owning what its ref() points to.
struct RichService {
  TestService base;
  std::vector<KeyValueRef> annotations;
  LoadBalancerStatus current;
  bool with_current = false;

  ServiceRef ref() const {
    ServiceRef r = base.ref();
    r.annotations = annotations;
    r.current_status = with_current ? &current : nullptr;
    return r;
  }
};

}  // namespace

TEST_CASE_FIXTURE(Echo, "echo declares every capability and its limits") {
  const ProviderInfo& info = p->info();
  CHECK(info.version == "1.2.3");
  CHECK(info.capabilityList() ==
        "ccm.instances/1, ccm.instances.batch/1 (max batch 2), ccm.loadbalancer/1, "
        "ccm.routes/1");
  CHECK(info.instances.wants_object_json);
  CHECK_FALSE(info.instances_batch.wants_object_json);
  CHECK(info.max_batch_size == 2);
}

TEST_CASE_FIXTURE(Echo, "instances: every answer and status takes its documented path") {
  TestNode a{"node-a"};
  TestNode gone{"gone"};
  TestNode odd{"odd"};
  TestNode flaky{"flaky"};
  TestNode stopped{"stopped"};
  TestNode unimpl{"unimpl"};
  TestNode pending{"pending"};

  CHECK(p->instanceExists(a.ref()).value() == Existence::Exists);
  CHECK(p->instanceExists(gone.ref()).value() == Existence::NotFound);
  // 42 is none of the ABI's values: refused, never read as a state.
  auto odd_answer = p->instanceExists(odd.ref());
  CHECK(odd_answer.status().code() == Code::Internal);
  CHECK(odd_answer.status().message().find("instance_exists wrote existence 42") !=
        std::string::npos);
  auto failed = p->instanceExists(flaky.ref());
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == Code::Unavailable);
  CHECK(failed.status().message() == "cloud unreachable");
  CHECK(failed.status().retryAfter() == milliseconds(1500));

  CHECK(p->instanceShutdown(a.ref()).value() == Power::Running);
  CHECK(p->instanceShutdown(stopped.ref()).value() == Power::Shutdown);
  auto none = p->instanceShutdown(unimpl.ref());
  CHECK(none.status().code() == Code::Unimplemented);
  // No message from the plugin: the host names the call.
  CHECK(none.status().message() == "ccm.instances/1.instance_shutdown failed");

  auto md = p->instanceMetadata(pending.ref());
  REQUIRE(md.ok());
  CHECK_FALSE(md->has_value());

  CHECK(calls(reg, "echo", "ccm.instances/1", "instance_exists", "OK") == 3);
  CHECK(calls(reg, "echo", "ccm.instances/1", "instance_exists", "UNAVAILABLE") == 1);
  CHECK(calls(reg, "echo", "ccm.instances/1", "instance_shutdown", "UNIMPLEMENTED") == 1);
  CHECK(calls(reg, "echo", "ccm.instances/1", "instance_metadata", "OK") == 1);
}

TEST_CASE_FIXTURE(
    Echo, "node inputs reach the plugin whole; their JSON only where the capability asked") {
  TestNode n{"node-a"};
  n.labels = {{"kubernetes.io/os", "linux"}, {"topology.kubernetes.io/zone", "zone-b"}};
  n.addresses = {{"InternalIP", "10.1.2.3"}, {"ExternalIP", "198.51.100.9"}};
  NodeRef ref = n.ref();
  ref.node_info.kernel_version = "6.1.0-echo";
  ref.object_json = R"({"kind":"Node"})";

  auto md = p->instanceMetadata(ref);
  REQUIRE(md.ok());
  REQUIRE(md->has_value());
  const InstanceMetadata& m = **md;
  CHECK(m.provider_id == "echo://node-a");
  CHECK(m.instance_type == "6.1.0-echo");
  CHECK(m.zone == "zone-b");
  CHECK(m.region == "with-json");
  REQUIRE(m.addresses.size() == 3);
  CHECK(m.addresses[0].type == "InternalIP");
  CHECK(m.addresses[0].address == "10.1.2.3");
  CHECK(m.addresses[1].address == "198.51.100.9");
  CHECK(m.addresses[2].type == "Hostname");
  CHECK(m.addresses[2].address == "node-a");

  // The batch capability did not ask for JSON.
  auto batch = p->instanceMetadataBatch(std::span<const NodeRef>(&ref, 1));
  REQUIRE(batch.ok());
  REQUIRE(batch->size() == 1);
  REQUIRE((*batch)[0].ok());
  CHECK((*batch)[0]->region == "without-json");
  CHECK((*batch)[0]->zone == "zone-b");
}

TEST_CASE_FIXTURE(Echo, "batch: chunks of max_batch_size, one result per node in order") {
  Nodes five{"a", "err-b", "silent", "d", "e"};
  auto results = p->instanceMetadataBatch(five.refs);
  REQUIRE(results.ok());
  REQUIRE(results->size() == 5);
  REQUIRE((*results)[0].ok());
  CHECK((*results)[0]->provider_id == "echo://a");
  CHECK((*results)[0]->instance_type == "chunk-of-2");
  CHECK((*results)[1].status().code() == Code::NotFound);
  CHECK((*results)[1].status().message() == "no machine for err-b");
  CHECK((*results)[2].status().code() == Code::Unavailable);
  CHECK((*results)[2].status().message() == "provider echo returned no result for node silent");
  REQUIRE((*results)[3].ok());
  CHECK((*results)[3]->provider_id == "echo://d");
  CHECK((*results)[3]->instance_type == "chunk-of-2");
  REQUIRE((*results)[4].ok());
  CHECK((*results)[4]->instance_type == "chunk-of-1");
  CHECK(calls(reg, "echo", "ccm.instances.batch/1", "instance_metadata_batch", "OK") == 3);

  // A failed chunk keeps what was emitted before it failed; the rest get its status.
  Nodes failing{"x", "fail-chunk"};
  results = p->instanceMetadataBatch(failing.refs);
  REQUIRE(results.ok());
  REQUIRE(results->size() == 2);
  REQUIRE((*results)[0].ok());
  CHECK((*results)[0]->provider_id == "echo://x");
  CHECK((*results)[1].status().code() == Code::Unavailable);
  CHECK((*results)[1].status().message() == "batch backend down");

  results = p->instanceMetadataBatch({});
  REQUIRE(results.ok());
  CHECK(results->empty());
  CHECK(calls(reg, "echo", "ccm.instances.batch/1", "instance_metadata_batch", "OK") == 3);
  CHECK(calls(reg, "echo", "ccm.instances.batch/1", "instance_metadata_batch", "UNAVAILABLE") == 1);
}

TEST_CASE_FIXTURE(Echo, "load balancers: inputs echoed, outputs collected, statuses mapped") {
  RichService svc;
  svc.base.load_balancer_ip = "192.0.2.44";
  svc.base.ports = {{"http", "TCP", 80, 30080, "8080", ""}, {"dns", "UDP", 53, 30053, "53", ""}};
  Nodes three{"n1", "n2", "n3"};
  const auto& refs = three.refs;

  auto name = p->getLoadBalancerName("kubernetes", svc.ref());
  REQUIRE(name.ok());
  CHECK(*name == "kubernetes/default/web");

  auto got = p->getLoadBalancer("kubernetes", svc.ref());
  REQUIRE(got.ok());
  CHECK_FALSE(got->has_value());
  // It exists: the plugin answers with the current status it was given.
  svc.annotations = {{"echo/exists", "true"}};
  svc.with_current = true;
  svc.current.ingress.push_back({"192.0.2.7", "", "VIP", {{443, "TCP", ""}}});
  got = p->getLoadBalancer("kubernetes", svc.ref());
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK(**got == svc.current);

  auto ensured = p->ensureLoadBalancer("kubernetes", svc.ref(), refs);
  REQUIRE(ensured.ok());
  REQUIRE(ensured->ingress.size() == 1);
  const auto& ingress = ensured->ingress[0];
  CHECK(ingress.ip == "192.0.2.44");
  CHECK(ingress.hostname == "nodes-3.lb.example.com");
  REQUIRE(ingress.ports.size() == 2);
  CHECK(ingress.ports[0].port == 80);
  CHECK(ingress.ports[0].protocol == "TCP");
  CHECK(ingress.ports[1].port == 53);
  CHECK(ingress.ports[1].protocol == "UDP");

  svc.annotations = {{"echo/elsewhere", "true"}};
  CHECK(p->ensureLoadBalancer("kubernetes", svc.ref(), refs).status().code() ==
        Code::ImplementedElsewhere);

  Status updated = p->updateLoadBalancer("kubernetes", svc.ref(), {});
  CHECK(updated.code() == Code::InvalidArgument);
  CHECK(updated.message() == "a load balancer needs nodes");
  CHECK(p->updateLoadBalancer("kubernetes", svc.ref(), refs).ok());
  CHECK(p->ensureLoadBalancerDeleted("kubernetes", svc.ref()).ok());

  CHECK(calls(reg, "echo", "ccm.loadbalancer/1", "ensure_load_balancer", "OK") == 1);
  CHECK(calls(reg, "echo", "ccm.loadbalancer/1", "ensure_load_balancer", "IMPLEMENTED_ELSEWHERE") == 1);
  CHECK(calls(reg, "echo", "ccm.loadbalancer/1", "update_load_balancer", "INVALID_ARGUMENT") == 1);
}

TEST_CASE_FIXTURE(Echo,
                  "routes: ALREADY_EXISTS from create and NOT_FOUND from delete read as success") {
  const std::string cluster = "routes-round-trip";
  Route r;
  r.target_node = "node-a";
  r.destination_cidr = "10.244.1.0/24";
  r.enable_node_addresses = true;
  r.target_node_addresses = {{"InternalIP", "10.0.0.5"}};

  CHECK(p->createRoute(cluster, "uid-a", r).ok());
  CHECK(p->createRoute(cluster, "uid-a", r).ok());
  auto listed = p->listRoutes(cluster);
  REQUIRE(listed.ok());
  REQUIRE(listed->size() == 1);
  const Route& got = (*listed)[0];
  CHECK(got.name == "uid-a");
  CHECK(got.target_node == "node-a");
  CHECK(got.destination_cidr == "10.244.1.0/24");
  CHECK(got.enable_node_addresses);
  REQUIRE(got.target_node_addresses.size() == 1);
  CHECK(got.target_node_addresses[0].address == "10.0.0.5");

  CHECK(p->deleteRoute(cluster, got).ok());
  CHECK(p->deleteRoute(cluster, got).ok());
  listed = p->listRoutes(cluster);
  REQUIRE(listed.ok());
  CHECK(listed->empty());
  // The metrics keep what the plugin answered.
  CHECK(calls(reg, "echo", "ccm.routes/1", "create_route", "OK") == 1);
  CHECK(calls(reg, "echo", "ccm.routes/1", "create_route", "ALREADY_EXISTS") == 1);
  CHECK(calls(reg, "echo", "ccm.routes/1", "delete_route", "NOT_FOUND") == 1);

  auto broken = p->listRoutes("broken");
  CHECK(broken.status().code() == Code::Internal);
  CHECK(broken.status().message().find("provider call ccm.routes/1.list_routes returned invalid "
                                       "output: invalid route:") == 0);
  CHECK(reg.valueForTest("ccm_provider_contract_violations_total", {"echo", "invalid_output"}) == 1);
}

TEST_CASE("a shared host set is converted once per set and outlives its refs and the set") {
  auto three = std::make_unique<Nodes>(std::initializer_list<const char*>{"n1", "n2", "n3"});
  three->nodes[1].labels = {{"topology.kubernetes.io/zone", "zone-b"}};
  three->refs[1] = three->nodes[1].ref();
  auto forms = std::make_unique<HostForms>();
  SharedHosts hosts{three->refs, forms.get()};
  AbiInput first;
  AbiInput second;
  auto [a, a_count] = first.args(hosts);
  auto [b, b_count] = second.args(hosts);
  REQUIRE(a_count == 3);
  REQUIRE(b_count == 3);
  CHECK(a == b);  // one form for both calls
  AbiInput with_json(true);
  CHECK(std::get<0>(with_json.args(hosts)) != a);  // another form: it carries the JSON
  AbiInput unshared;
  CHECK(std::get<0>(unshared.args(SharedHosts{three->refs, nullptr})) != a);
  // The set, its forms and the caller's nodes go (scribbled over first); the calls that took
  // the form still read every host as it was.
  for (auto& n : three->nodes) {
    std::fill(n.name.begin(), n.name.end(), 'X');
  }
  forms->clear();
  forms.reset();
  three.reset();
  auto name = [](const ccm_node* n) { return std::string(n->name.data, n->name.size); };
  CHECK(name(a[0]) == "n1");
  CHECK(name(a[2]) == "n3");
  REQUIRE(a[1]->label_count == 1);
  CHECK(std::string(a[1]->labels[0].value.data, a[1]->labels[0].value.size) == "zone-b");
}

TEST_CASE_FIXTURE(Echo, "ensure and update with a shared host set reach the plugin") {
  RichService svc;
  Nodes three{"n1", "n2", "n3"};
  HostForms forms;
  SharedHosts hosts{three.refs, &forms};
  auto ensured = p->ensureLoadBalancerShared("kubernetes", svc.ref(), hosts);
  REQUIRE(ensured.ok());
  REQUIRE(ensured->ingress.size() == 1);
  CHECK(ensured->ingress[0].hostname == "nodes-3.lb.example.com");
  CHECK(p->updateLoadBalancerShared("kubernetes", svc.ref(), hosts).ok());
  Status empty = p->updateLoadBalancerShared("kubernetes", svc.ref(), SharedHosts{{}, &forms});
  CHECK(empty.code() == Code::InvalidArgument);
  CHECK(calls(reg, "echo", "ccm.loadbalancer/1", "update_load_balancer", "OK") == 1);
}

TEST_CASE("an abandoned call reads inputs the call owns, not the caller's") {
  metrics::Registry reg;
  auto p = makeProvider(echoDir(), "echo", reg, milliseconds(200), milliseconds(100));
  auto node = std::make_unique<TestNode>("late-reader");
  node->labels = {{"topology.kubernetes.io/zone", "zone-late"}};
  auto started = std::chrono::steady_clock::now();
  auto md = p->instanceMetadata(node->ref());
  auto took = std::chrono::steady_clock::now() - started;
  CHECK(md.status().code() == Code::DeadlineExceeded);
  CHECK(md.status().message() ==
        "provider call ccm.instances/1.instance_metadata did not return within its 0.2s "
        "deadline; abandoned");
  CHECK(took >= milliseconds(300));  // the caller waited out deadline + grace, no longer
  CHECK(reg.valueForTest("ccm_provider_contract_violations_total", {"echo", "ignored_deadline"}) == 1);
  // The caller's node goes away (scribbled over first) while the plugin still reads it.
  std::fill(node->name.begin(), node->name.end(), 'X');
  std::fill(node->labels[0].second.begin(), node->labels[0].second.end(), 'X');
  node.reset();
  CHECK(waitUntil([&] {
    return reg.valueForTest("ccm_provider_echo_late_reads_total", {"echo", "late-reader/zone-late"}) == 1;
  }));
  CHECK(waitUntil(
      [&] { return reg.valueForTest("ccm_provider_abandoned_calls", {"echo", "instances"}) == 0; }));
}

TEST_CASE_FIXTURE(Echo,
                  "cancelAll: the call in flight sees is_cancelled and new calls are refused") {
  TestNode waiting{"wait-cancel"};
  auto in_flight =
      std::async(std::launch::async, [&] { return p->instanceMetadata(waiting.ref()); });
  REQUIRE(waitUntil(
      [&] { return reg.valueForTest("ccm_provider_calls_in_flight", {"echo", "instances"}) == 1; }));
  p->cancelAll();
  REQUIRE(in_flight.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  auto md = in_flight.get();
  CHECK(md.status().code() == Code::Cancelled);
  CHECK(md.status().message() == "noticed the cancellation");

  TestNode a{"node-a"};
  auto refused = p->instanceExists(a.ref());
  CHECK(refused.status().code() == Code::Cancelled);
  CHECK(refused.status().message() == "the host is shutting down or lost leadership");
  std::vector<NodeRef> refs = {a.ref(), a.ref(), a.ref()};
  auto batch = p->instanceMetadataBatch(refs);
  REQUIRE(batch.ok());
  REQUIRE(batch->size() == 3);
  for (const auto& r : *batch) {
    CHECK(r.status().code() == Code::Cancelled);
  }
  CHECK(p->createRoute("c", "h", Route{}).code() == Code::Cancelled);
  // The plugin's own CANCELLED is counted; calls refused before they started are not.
  CHECK(calls(reg, "echo", "ccm.instances/1", "instance_metadata", "CANCELLED") == 1);
  CHECK(calls(reg, "echo", "ccm.instances/1", "instance_exists", "CANCELLED") == -1);
}

TEST_CASE_FIXTURE(Baseline, "a correct plugin works through the adapter") {
  CHECK(p->info().name == "baseline");
  CHECK(p->info().version == "9.9.9");
  CHECK(p->info().instances.present);
  CHECK(p->info().load_balancer.present);
  CHECK_FALSE(p->info().routes.present);
  TestNode n{"node-a"};
  auto md = p->instanceMetadata(n.ref());
  REQUIRE(md.ok());
  REQUIRE(md->has_value());
  CHECK((*md)->provider_id == "broken://vm-1");
  CHECK((*md)->addresses.size() == 2);
  CHECK((*md)->addresses[1].address == "node-a");
  auto ex = p->instanceExists(n.ref());
  REQUIRE(ex.ok());
  CHECK(*ex == Existence::Exists);
  TestService svc;
  auto st = p->ensureLoadBalancer("kubernetes", svc.ref(), {});
  REQUIRE(st.ok());
  CHECK(st->ingress.at(0).ip == "192.0.2.10");
  CHECK(calls(reg, "baseline", "ccm.instances/1", "instance_metadata", "OK") == 1);
}

TEST_CASE_FIXTURE(Baseline, "absent capabilities answer UNIMPLEMENTED without a call") {
  auto routes = p->listRoutes("kubernetes");
  CHECK(routes.status().code() == Code::Unimplemented);
  CHECK(routes.status().message() == "provider baseline does not implement ccm.routes/1");
  CHECK(p->createRoute("kubernetes", "uid", Route{}).code() == Code::Unimplemented);
  CHECK(p->deleteRoute("kubernetes", Route{}).code() == Code::Unimplemented);
  auto batch = p->instanceMetadataBatch({});
  CHECK(batch.status().code() == Code::Unimplemented);
  CHECK(batch.status().message() == "provider baseline does not implement ccm.instances.batch/1");
  CHECK(calls(reg, "baseline", "ccm.routes/1", "list_routes", "UNIMPLEMENTED") <= 0);
}

TEST_CASE_FIXTURE(Baseline, "cancelAll refuses new calls and fails the health check") {
  CHECK(p->health().ok());
  p->cancelAll();
  TestNode n{"node-a"};
  CHECK(p->instanceExists(n.ref()).status().code() == Code::Cancelled);
  Status health = p->health();
  CHECK(health.code() == Code::Unavailable);
  CHECK(health.message() ==
        "provider baseline takes no more calls: the host is shutting down or lost leadership");
}
