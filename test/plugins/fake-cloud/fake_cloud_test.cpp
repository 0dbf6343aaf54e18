// fake-cloud through the ABI: the real fake-cloud.so, loaded and called like the host does.
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <thread>

#include "host/plugin/abi_provider.hpp"
#include "host/plugin/plugin_loader.hpp"
#include "test/support/log_capture.hpp"
#include "test/support/provider_inputs.hpp"
#include "test/support/wait.hpp"

namespace fs = std::filesystem;
using namespace ccm;
using namespace ccm::plugin;
using ccm::testing::TestNode;
using ccm::testing::TestService;
using ccm::testing::waitUntil;
using std::chrono::milliseconds;

namespace {

struct TempDir {
  fs::path path;
  std::optional<fs::file_time_type> last_write;  // of the latest write()
  TempDir() {
    char tmpl[] = "/tmp/ccm-fake-cloud-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() { fs::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // Writes the file atomically, as an editor saving does. Every write gets a later modification
  // time than the one before, as edits made seconds apart would, even where the file system's
  // clock is too coarse to tell quick writes apart.
  std::string write(const std::string& name, const std::string& text) {
    fs::path p = path / name;
    fs::path tmp = path / (name + ".tmp");
    std::ofstream(tmp) << text;
    fs::file_time_type stamp = fs::last_write_time(tmp);
    if (last_write && stamp <= *last_write) {
      stamp = *last_write + milliseconds(1);
      fs::last_write_time(tmp, stamp);
    }
    last_write = stamp;
    fs::rename(tmp, p);
    return p.string();
  }
  std::string read(const std::string& name) const {
    std::ifstream in(path / name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
};

StatusOr<std::unique_ptr<AbiProvider>> fakeCloud(const std::string& config, metrics::Registry& reg,
                                                 milliseconds timeout = milliseconds(5000)) {
  LoadOptions lo;
  const char* dir = std::getenv("CCM_PLUGIN_DIR");
  REQUIRE(dir != nullptr);
  lo.plugin_dir = dir;
  lo.name = "fake-cloud";
  lo.registry = &reg;
  auto loaded = PluginLoader::load(lo);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().toString());
  ProviderOptions po;
  po.registry = &reg;
  po.instances_timeout = po.batch_timeout = po.load_balancer_timeout = po.routes_timeout = timeout;
  po.grace = milliseconds(200);
  return AbiProvider::create(*loaded, config, "test.yaml", po);
}

std::unique_ptr<AbiProvider> mustFakeCloud(const std::string& config, metrics::Registry& reg,
                                           milliseconds timeout = milliseconds(5000)) {
  auto p = fakeCloud(config, reg, timeout);
  REQUIRE_MESSAGE(p.ok(), p.status().toString());
  return std::move(p).value();
}

}  // namespace

TEST_CASE("listed instances: metadata, existence, shutdown") {
  metrics::Registry reg;
  auto p = mustFakeCloud(R"(
region: eu-1
instances:
  - name: vm-a
    type: m1.large
    zone: eu-1a
    addresses: [{type: InternalIP, address: 10.1.0.5}, {type: ExternalIP, address: 198.51.100.5}]
    labels: {example.com/rack: r12}
  - name: vm-off
    state: shutdown
  - name: vm-gone
    state: absent
  - name: vm-odd
    state: unknown
)",
                         reg);
  TestNode a("vm-a");
  auto md = p->instanceMetadata(a.ref());
  REQUIRE(md.ok());
  REQUIRE(md->has_value());
  CHECK((*md)->provider_id == "fake://vm-a");
  CHECK((*md)->instance_type == "m1.large");
  CHECK((*md)->zone == "eu-1a");
  CHECK((*md)->region == "eu-1");
  REQUIRE((*md)->addresses.size() == 2);
  CHECK((*md)->addresses[1].address == "198.51.100.5");
  REQUIRE((*md)->additional_labels.size() == 1);
  CHECK((*md)->additional_labels[0].first == "example.com/rack");

  CHECK(*p->instanceExists(a.ref()) == Existence::Exists);
  CHECK(*p->instanceShutdown(a.ref()) == Power::Running);
  TestNode off("vm-off");
  CHECK(*p->instanceExists(off.ref()) == Existence::Exists);
  CHECK(*p->instanceShutdown(off.ref()) == Power::Shutdown);
  TestNode gone("vm-gone");
  CHECK(*p->instanceExists(gone.ref()) == Existence::NotFound);
  CHECK(p->instanceMetadata(gone.ref()).status().code() == Code::NotFound);
  TestNode odd("vm-odd");
  auto e = p->instanceExists(odd.ref());
  CHECK_FALSE(e.ok());  // UNKNOWN answers are errors, never "not found"
  CHECK(e.status().code() == Code::Unavailable);
  TestNode stranger("nobody");
  CHECK(*p->instanceExists(stranger.ref()) == Existence::NotFound);

  // Lookup by providerID wins over the name.
  TestNode by_id("renamed-node");
  by_id.provider_id = "fake://vm-a";
  auto md2 = p->instanceMetadata(by_id.ref());
  REQUIRE(md2.ok());
  CHECK((*md2)->instance_type == "m1.large");
}

TEST_CASE("automatic instances follow the node and spread across zones") {
  metrics::Registry reg;
  auto p = mustFakeCloud(R"(
autoInstances: {zones: [z0, z1, z2], type: t.small, externalCidr: 198.51.100.0/24}
unlistedInstances: notFound
instances: [{name: node-7, state: absent}]
)",
                         reg);
  TestNode n4("node-4");
  n4.annotations = {{"alpha.kubernetes.io/provided-node-ip", "10.9.8.7"}};
  auto md = p->instanceMetadata(n4.ref());
  REQUIRE(md.ok());
  CHECK((*md)->zone == "z1");  // 4 % 3
  CHECK((*md)->instance_type == "t.small");
  REQUIRE((*md)->addresses.size() == 3);
  CHECK((*md)->addresses[0].type == "InternalIP");
  CHECK((*md)->addresses[0].address == "10.9.8.7");
  CHECK((*md)->addresses[1].type == "ExternalIP");
  CHECK((*md)->addresses[2].type == "Hostname");
  TestNode n7("node-7");
  CHECK(*p->instanceExists(n7.ref()) == Existence::NotFound);
}

TEST_CASE("batch metadata answers many nodes in one call, with per-node failures") {
  metrics::Registry reg;
  auto p = mustFakeCloud(R"(
autoInstances: {zones: [a]}
instances: [{name: n-2, state: absent}]
faults: [{op: metadata, nodes: [n-3], code: UNAVAILABLE, message: "n-3 is being migrated"}]
)",
                         reg);
  CHECK(p->info().instances_batch.present);
  CHECK(p->info().max_batch_size == 500);
  std::vector<TestNode> nodes;
  nodes.reserve(1200);
  for (int i = 0; i < 1200; ++i) {
    nodes.emplace_back("n-" + std::to_string(i));
  }
  std::vector<NodeRef> refs;
  refs.reserve(nodes.size());
  for (auto& n : nodes) {
    refs.push_back(n.ref());
  }
  auto results = p->instanceMetadataBatch(refs);
  REQUIRE(results.ok());
  REQUIRE(results->size() == 1200);
  CHECK((*results)[0].ok());
  CHECK((*results)[2].status().code() == Code::NotFound);
  CHECK((*results)[3].status().code() == Code::Unavailable);
  CHECK((*results)[3].status().message() == "n-3 is being migrated");
  CHECK((*results)[1199].ok());
  CHECK((*results)[1199]->provider_id == "fake://n-1199");
  // 1200 nodes in batches of at most 500: three calls.
  CHECK(reg.valueForTest("ccm_provider_calls_total", {"fake-cloud", "ccm.instances.batch/1",
                                                      "instance_metadata_batch", "OK"}) == 3);
}

TEST_CASE("injected faults carry their code and retry-after; counted faults expire") {
  metrics::Registry reg;
  auto p = mustFakeCloud(R"(
instances: [{name: vm}]
faults:
  - {op: exists, code: RESOURCE_EXHAUSTED, message: slow down, retryAfter: 2s, count: 2}
)",
                         reg);
  TestNode n("vm");
  auto e = p->instanceExists(n.ref());
  CHECK(e.status().code() == Code::ResourceExhausted);
  CHECK(e.status().retryAfter() == milliseconds(2000));
  CHECK(e.status().message() == "slow down");
  CHECK(p->instanceExists(n.ref()).status().code() == Code::ResourceExhausted);
  auto third = p->instanceExists(n.ref());
  REQUIRE(third.ok());
  CHECK(*third == Existence::Exists);
}

TEST_CASE("throttling answers RESOURCE_EXHAUSTED with a retry-after") {
  metrics::Registry reg;
  auto p = mustFakeCloud(
      "instances: [{name: vm}]\nthrottle: {qps: 0.01, burst: 2, retryAfter: 3s}\n", reg);
  TestNode n("vm");
  CHECK(p->instanceExists(n.ref()).ok());
  CHECK(p->instanceExists(n.ref()).ok());
  auto third = p->instanceExists(n.ref());
  CHECK(third.status().code() == Code::ResourceExhausted);
  CHECK(third.status().retryAfter() == milliseconds(3000));
}

TEST_CASE("latency respects the deadline unless told to hang") {
  metrics::Registry reg;
  auto p =
      mustFakeCloud("instances: [{name: vm}]\nlatency: {exists: 3s}\n", reg, milliseconds(200));
  TestNode n("vm");
  auto started = std::chrono::steady_clock::now();
  auto e = p->instanceExists(n.ref());
  CHECK(e.status().code() == Code::DeadlineExceeded);
  CHECK(e.status().message().find("abandoned") == std::string::npos);  // it stopped in time
  CHECK(std::chrono::steady_clock::now() - started < milliseconds(2000));

  auto hang = mustFakeCloud(
      "instances: [{name: vm}]\nlatency: {shutdown: 1500ms}\n"
      "latencyIgnoresDeadline: true\n",
      reg, milliseconds(200));
  auto s = hang->instanceShutdown(n.ref());
  CHECK(s.status().code() == Code::DeadlineExceeded);
  CHECK(s.status().message().find("abandoned") != std::string::npos);
  // The host left the call running in the plugin; it returns once its 1.5 s are over, and only
  // then may the provider be destroyed (with a call still in it, the host would leak it).
  CHECK(reg.valueForTest("ccm_provider_abandoned_calls", {"fake-cloud"}) == 1);
  CHECK(waitUntil(
      [&] { return reg.valueForTest("ccm_provider_abandoned_calls", {"fake-cloud"}) == 0; }));
}

TEST_CASE("the cloud file is re-read when it changes; a broken edit is ignored") {
  testing::LogCapture logs;
  TempDir dir;
  std::string path = (dir.path / "cloud.yaml").string();
  auto cloud = [&](const std::string& vm_state) {
    return "cloudFile: " + path + "\ninstances: [{name: vm, state: " + vm_state + "}]\n";
  };
  metrics::Registry reg;
  dir.write("cloud.yaml", cloud("running"));
  auto p = mustFakeCloud(cloud("running"), reg);
  TestNode n("vm");
  auto existence = [&]() -> std::optional<Existence> {
    auto e = p->instanceExists(n.ref());
    return e.ok() ? std::optional(*e) : std::nullopt;
  };
  REQUIRE(existence() == Existence::Exists);

  // A valid edit is picked up.
  dir.write("cloud.yaml", cloud("absent"));
  REQUIRE(waitUntil([&] { return existence() == Existence::NotFound; }));

  // A broken edit is read (the plugin says so) and refused: the last good cloud stays.
  dir.write("cloud.yaml", cloud("nonsense"));
  bool refused = waitUntil([&] {
    existence();  // the plugin looks at the file when it is called
    return logs.count("ignoring invalid cloud file") > 0;
  });
  REQUIRE_MESSAGE(refused, logs.get());
  CHECK_MESSAGE(logs.get().find("is not one of running, shutdown") != std::string::npos,
                logs.get());
  CHECK(existence() == Existence::NotFound);

  // It is read again at the next edit: a valid one is picked up.
  dir.write("cloud.yaml", cloud("running"));
  CHECK(waitUntil([&] { return existence() == Existence::Exists; }));
}

// A fake-cloud config keeping its state in `file`, with load balancer addresses from `pool`.
std::string stateConfig(const std::filesystem::path& file, const std::string& pool) {
  return "stateFile: " + file.string() + "\nloadBalancer: {ipPool: " + pool + "}\n";
}

TEST_CASE("load balancers: allocate, keep, update, delete, persist") {
  TempDir dir;
  std::string config = stateConfig(dir.path / "state.json", "203.0.113.0/29");
  metrics::Registry reg;
  auto p = mustFakeCloud(config, reg);
  TestService svc;
  TestNode n1("n1");
  TestNode n2("n2");
  std::vector<NodeRef> nodes = {n1.ref(), n2.ref()};
  auto none = p->getLoadBalancer("kubernetes", svc.ref());
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  auto st = p->ensureLoadBalancer("kubernetes", svc.ref(), nodes);
  REQUIRE(st.ok());
  CHECK(st->ingress.at(0).ip == "203.0.113.1");
  auto again = p->ensureLoadBalancer("kubernetes", svc.ref(), nodes);
  REQUIRE(again.ok());
  CHECK(again->ingress.at(0).ip == "203.0.113.1");  // idempotent
  auto name = p->getLoadBalancerName("kubernetes", svc.ref());
  REQUIRE(name.ok());
  CHECK(*name == "a1111111122223333444455555555555");  // "a" + the first 31 hex digits
  CHECK(name->size() == 32);

  std::vector<NodeRef> one = {n1.ref()};
  CHECK(p->updateLoadBalancer("kubernetes", svc.ref(), one).ok());
  std::string saved = dir.read("state.json");
  CHECK(saved.find("\"nodeSets\":[[\"n1\"]]") != std::string::npos);
  CHECK(saved.find("\"nodeSet\":0") != std::string::npos);
  CHECK(saved.find("\"hostUpdates\":1") != std::string::npos);

  // A second provider (another host process, or a restart) sees the same cloud.
  auto p2 = mustFakeCloud(config, reg);
  auto seen = p2->getLoadBalancer("kubernetes", svc.ref());
  REQUIRE(seen.ok());
  REQUIRE(seen->has_value());
  CHECK((*seen)->ingress.at(0).ip == "203.0.113.1");

  TestService fixed;
  fixed.uid = "99999999-2222-3333-4444-555555555555";
  fixed.name = "fixed";
  fixed.load_balancer_ip = "203.0.113.6";
  auto f = p2->ensureLoadBalancer("kubernetes", fixed.ref(), nodes);
  REQUIRE(f.ok());
  CHECK(f->ingress.at(0).ip == "203.0.113.6");
  TestService taken = fixed;
  taken.uid = "88888888-2222-3333-4444-555555555555";
  auto t = p2->ensureLoadBalancer("kubernetes", taken.ref(), nodes);
  CHECK(t.status().code() == Code::InvalidArgument);

  CHECK(p->ensureLoadBalancerDeleted("kubernetes", svc.ref()).ok());
  CHECK(p->ensureLoadBalancerDeleted("kubernetes", svc.ref()).ok());  // idempotent
  auto after = p2->getLoadBalancer("kubernetes", svc.ref());
  REQUIRE(after.ok());
  CHECK_FALSE(after->has_value());
}

TEST_CASE("the state file writes the backends shared by load balancers once") {
  TempDir dir;
  metrics::Registry reg;
  auto p = mustFakeCloud(stateConfig(dir.path / "state.json", "203.0.113.0/24"), reg);
  std::vector<TestNode> hosts;
  for (int i = 0; i < 50; ++i) {
    hosts.emplace_back("node-" + std::to_string(i));
  }
  std::vector<NodeRef> nodes;
  for (auto& h : hosts) {
    nodes.push_back(h.ref());
  }
  std::vector<TestService> services(20);
  for (size_t i = 0; i < services.size(); ++i) {
    services[i].uid = std::to_string(10000000 + i) + "-2222-3333-4444-555555555555";
    services[i].name = "svc-" + std::to_string(i);
    REQUIRE(p->ensureLoadBalancer("kubernetes", services[i].ref(), nodes).ok());
  }
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
      ++n;
    }
    return n;
  };
  // 20 balancers on the same 50 nodes: each name written once, not 20 times.
  std::string saved = dir.read("state.json");
  CHECK(count(saved, "\"node-7\"") == 1);
  CHECK(count(saved, "\"nodeSet\":0") == 20);
  // One node leaves: the new list is made once and shared again.
  nodes.pop_back();
  for (auto& s : services) {
    REQUIRE(p->updateLoadBalancer("kubernetes", s.ref(), nodes).ok());
  }
  saved = dir.read("state.json");
  CHECK(count(saved, "\"node-7\"") == 1);
  CHECK(count(saved, "\"node-49\"") == 0);

  // A file written before the shared lists ("nodes" on each balancer) is read: its lists are
  // kept and written the new way at the next change.
  {
    std::ofstream out(dir.path / "old.json");
    out << R"({"loadBalancers":[{"name":"aold","uid":"u","ip":"203.0.113.9","nodes":["x","y"],)"
        << R"("ports":[],"sourceRanges":[]}],"routes":[],"stats":{}})";
  }
  auto old = mustFakeCloud(stateConfig(dir.path / "old.json", "203.0.113.0/24"), reg);
  REQUIRE(old->ensureLoadBalancer("kubernetes", services[0].ref(), nodes).ok());
  std::string rewritten = dir.read("old.json");
  CHECK(rewritten.find(R"(["x","y"])") != std::string::npos);
  CHECK(rewritten.find(R"("name":"aold")") != std::string::npos);
  CHECK(rewritten.find(R"("ip":"203.0.113.9")") != std::string::npos);
  CHECK(rewritten.find(R"("ip":"203.0.113.1")") != std::string::npos);  // the lowest free
}

TEST_CASE("an exhausted address pool asks to retry later") {
  metrics::Registry reg;
  auto p = mustFakeCloud("loadBalancer: {ipPool: 203.0.113.0/30}\n", reg);
  TestService a;
  TestService b;
  b.uid = "22222222-2222-3333-4444-555555555555";
  TestService c;
  c.uid = "33333333-2222-3333-4444-555555555555";
  CHECK(p->ensureLoadBalancer("k", a.ref(), {}).ok());
  CHECK(p->ensureLoadBalancer("k", b.ref(), {}).ok());
  auto full = p->ensureLoadBalancer("k", c.ref(), {});
  CHECK(full.status().code() == Code::ResourceExhausted);
  CHECK(full.status().retryAfter() == milliseconds(30000));
}

TEST_CASE("routes: create, list, duplicates, conflicts, delete") {
  TempDir dir;
  std::string state = (dir.path / "state.json").string();
  metrics::Registry reg;
  auto p = mustFakeCloud("stateFile: " + state + "\n", reg);
  Route r;
  r.target_node = "n1";
  r.destination_cidr = "10.244.1.0/24";
  CHECK(p->createRoute("kubernetes", "uid-1", r).ok());
  // The adapter reads ALREADY_EXISTS on create as success; the cloud counts the duplicate.
  CHECK(p->createRoute("kubernetes", "uid-1", r).ok());
  CHECK(dir.read("state.json").find("\"duplicateRouteCreates\":1") != std::string::npos);
  Route other = r;
  other.target_node = "n2";
  CHECK(p->createRoute("kubernetes", "uid-2", other).code() == Code::FailedPrecondition);
  auto list = p->listRoutes("kubernetes");
  REQUIRE(list.ok());
  REQUIRE(list->size() == 1);
  CHECK((*list)[0].target_node == "n1");
  CHECK((*list)[0].name == "route-uid-1-10-244-1-0-24");
  CHECK(p->listRoutes("other-cluster")->empty());
  CHECK(p->deleteRoute("kubernetes", (*list)[0]).ok());
  CHECK(p->listRoutes("kubernetes")->empty());
}

TEST_CASE("capabilities can be switched off") {
  metrics::Registry reg;
  auto p = mustFakeCloud(
      "capabilities: {loadBalancer: false, routes: false, instancesBatch: false}\n", reg);
  CHECK(p->info().instances.present);
  CHECK_FALSE(p->info().instances_batch.present);
  CHECK_FALSE(p->info().load_balancer.present);
  CHECK_FALSE(p->info().routes.present);
  CHECK(p->info().capabilityList() == "ccm.instances/1");
}

TEST_CASE("bad configuration is refused with the key and line") {
  metrics::Registry reg;
  auto check = [&](const std::string& config, const std::string& fragment) {
    auto p = fakeCloud(config, reg);
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().code() == Code::InvalidArgument);
    CHECK_MESSAGE(p.status().message().find(fragment) != std::string::npos, p.status().message());
  };
  check("regoin: x\n", "regoin: unknown key");
  check("instances:\n  - name: a\n    state: sleeping\n",
        "instances[0].state: \"sleeping\" is not one of running, shutdown, absent, unknown "
        "(line 3)");
  check("latency: {exists: fast}\n", "latency.exists: must be a duration");
  check("instances:\n  - name: a\n    addresses: [{type: InternalIP}]\n",
        "instances[0].addresses[0].address: is required");
  check("latency: {exists: 1441m}\n", "latency.exists: must be a duration of at most 1440m");
  check(
      "latency: 20444444444444444444444444444444444444444444444444444444444444444444444444444"
      "4444444444444444444444s\n",
      "latency: must be a duration of at most 1440m");
  check("latency: {teleport: 1s}\n", "unknown operation \"teleport\"");
  check("faults: [{op: exists, code: OOPS}]\n", "unknown status code \"OOPS\"");
  check("loadBalancer: {ipPool: 203.0.113.0}\n", "loadBalancer.ipPool");
  check("instances: [{name: a}, {name: a}]\n", "duplicate instance \"a\"");
  check("instances: [ {name: a\n", "not valid YAML or JSON");
  check("cloudFile: /nonexistent/cloud.yaml\n", "cloudFile: cannot read");
  check("instances:\n  - name: a\n    addresses: [{type: Public, address: 1.2.3.4}]\n",
        "addresses[0].type: \"Public\" is not one of");
}

TEST_CASE(
    "after cancelAll every call, batch included, answers CANCELLED without touching the plugin") {
  metrics::Registry reg;
  auto p = mustFakeCloud("autoInstances: {zones: [a]}\n", reg);
  p->cancelAll();
  TestNode a("n-1");
  TestNode b("n-2");
  std::vector<NodeRef> refs = {a.ref(), b.ref()};
  auto results = p->instanceMetadataBatch(refs);
  REQUIRE(results.ok());
  REQUIRE(results->size() == 2);
  CHECK((*results)[0].status().code() == Code::Cancelled);
  CHECK((*results)[1].status().code() == Code::Cancelled);
  CHECK(p->instanceMetadata(a.ref()).status().code() == Code::Cancelled);
  CHECK(reg.valueForTest("ccm_provider_fake_cloud_calls_total") == -1);  // never called

  // The metric the check above reads is the one the plugin counts its calls in.
  metrics::Registry live_reg;
  auto live = mustFakeCloud("autoInstances: {zones: [a]}\n", live_reg);
  REQUIRE(live->instanceMetadata(a.ref()).ok());
  CHECK(live_reg.valueForTest("ccm_provider_fake_cloud_calls_total", {"fake-cloud", "metadata"}) ==
        1);
}
