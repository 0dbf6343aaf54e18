// Load balancers through the ABI against the simulated Octavia and Neutron: names, listeners,
// pools, members, health monitors, floating IPs (keep/release/adopt), internal load balancers,
// source ranges, annotations, update of hosts, deletion of exactly what was made, adoption by
// ID, busy Octavia (retry-after), ERROR state, serial mode.
#include <doctest/doctest.h>

#include <set>

#include "test/plugins/openstack/test_support.hpp"

using namespace ccm::openstack::testing;

namespace {

struct Fixture : SimFixture {
  Fixture() {
    for (int i = 1; i <= 3; ++i) {
      nodes.push_back(addNode(i));
    }
  }

  Node addNode(int i) {
    std::string name = "node-" + std::to_string(i);
    std::string ip = "10.0.0." + std::to_string(10 + i);
    std::string id = sim.addPrivateServer(name, ip);
    return node(name, "openstack:///" + id, {{"InternalIP", ip}, {"Hostname", name}});
  }

  Provider& p(const std::string& lb_extra = "", const std::string& more = "") {
    return provider(cloudConf(sim, "", std::string(kLbSection) + lb_extra + "\n" + more));
  }

  static Service web() {
    Service s;
    s.name = "web";
    s.ports = {{"http", "TCP", 80, 30080}, {"https", "TCP", 443, 30443}};
    return s;
  }

  rapidjson::Document state() { return sim.state(); }

  // The single load balancer in the simulator (fails the test when there is not exactly one).
  const rapidjson::Value& onlyLb(const rapidjson::Document& st) {
    REQUIRE(st["loadbalancers"].Size() == 1);
    return st["loadbalancers"][0];
  }

  std::set<std::string> memberAddresses(const rapidjson::Document& st, const std::string& pool_id) {
    std::set<std::string> out;
    for (const auto& m : st["members"][pool_id.c_str()].GetArray()) {
      out.insert(std::string(m["address"].GetString()) + ":" +
                 std::to_string(m["protocol_port"].GetInt()));
    }
    return out;
  }

  std::string annotation(const std::string& short_name) {
    return "loadbalancer.openstack.org/" + short_name;
  }
};

const std::string kName = "kube_service_kubernetes_default_web";

// The name the provider gives a listener, pool or monitor ("pool") of port `index` of web().
std::string childName(const char* kind, int index) {
  return std::string(kind) + "_" + std::to_string(index) + "_" + kName;
}

}  // namespace

TEST_CASE_FIXTURE(Fixture, "ensure: listeners, pools and members per port, floating IP") {
  auto r = p().ensureSettled(web(), nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  auto st = state();
  const auto& lb = onlyLb(st);
  CHECK(str(lb, "name") == kName);
  CHECK(str(lb, "description") ==
        "Kubernetes external service default/web from cluster kubernetes");
  CHECK(str(lb, "provider") == "amphora");
  CHECK(str(lb, "vip_subnet_id") == "sub-private");
  CHECK(str(lb, "provisioning_status") == "ACTIVE");
  REQUIRE(lb["tags"].Size() == 1);
  CHECK(std::string(lb["tags"][0].GetString()) == kName);

  REQUIRE(st["listeners"].Size() == 2);
  for (int i = 0; i < 2; ++i) {
    const auto* l = byName(st, "listeners", childName("listener", i));
    REQUIRE(l != nullptr);
    CHECK(str(*l, "protocol") == "TCP");
    CHECK((*l)["protocol_port"].GetInt() == (i == 0 ? 80 : 443));
    CHECK(std::string((*l)["tags"][0].GetString()) == kName);
    const auto* pool = byName(st, "pools", childName("pool", i));
    REQUIRE(pool != nullptr);
    CHECK(str(*pool, "lb_algorithm") == "ROUND_ROBIN");
    CHECK(str(*pool, "protocol") == "TCP");
    CHECK(str(*l, "default_pool_id") == str(*pool, "id"));
    std::string np = i == 0 ? "30080" : "30443";
    CHECK(memberAddresses(st, str(*pool, "id")) ==
          std::set<std::string>{"10.0.0.11:" + np, "10.0.0.12:" + np, "10.0.0.13:" + np});
    for (const auto& m : st["members"][str(*pool, "id").c_str()].GetArray()) {
      CHECK(str(m, "subnet_id") == "sub-private");
      CHECK(str(m, "name").rfind("node-", 0) == 0);
    }
  }
  CHECK(st["healthmonitors"].Size() == 0);

  REQUIRE(st["floatingips"].Size() == 1);
  const auto& fip = st["floatingips"][0];
  CHECK(str(fip, "port_id") == str(lb, "vip_port_id"));
  CHECK(str(fip, "floating_network_id") == "net-public");
  CHECK(str(fip, "description") ==
        "Floating IP for Kubernetes external service default/web from cluster kubernetes");
  REQUIRE(r.lb_status);
  REQUIRE(r.lb_status->size() == 1);
  CHECK((*r.lb_status)[0].ip == str(fip, "floating_ip_address"));
  CHECK((*r.lb_status)[0].ip_mode == "VIP");

  auto g = p().getLoadBalancer(web());
  CHECK(g.ok());
  CHECK(g.exists);
  REQUIRE(g.lb_status);
  CHECK((*g.lb_status)[0].ip == str(fip, "floating_ip_address"));
  auto n = p().loadBalancerName(web());
  CHECK(n.string == kName);
}

TEST_CASE_FIXTURE(Fixture, "ensure: the load balancer is created in one fully populated call") {
  sim.clearRequests();
  REQUIRE(p().ensureSettled(web(), nodes).ok());
  CHECK(countRequests(sim, "POST", "load-balancer", "/lbaas/loadbalancers$") == 1);
  CHECK(countRequests(sim, "POST", "load-balancer", "/lbaas/(listeners|pools|healthmonitors)") ==
        0);
  CHECK(countRequests(sim, "PUT", "load-balancer", "") == 0);
}

TEST_CASE_FIXTURE(Fixture, "ensure is idempotent: a second call changes nothing") {
  auto first = p().ensureSettled(web(), nodes);
  REQUIRE(first.ok());
  sim.clearRequests();
  auto second = p().ensure(web(), nodes);
  REQUIRE(second.ok());
  CHECK(countMutations(sim) == 0);
  CHECK((*second.lb_status)[0].ip == (*first.lb_status)[0].ip);
}

TEST_CASE_FIXTURE(Fixture, "health monitors: created, updated and deleted with the annotations") {
  Service s = web();
  s.annotations = {{annotation("enable-health-monitor"), "true"},
                   {annotation("health-monitor-delay"), "7"},
                   {annotation("health-monitor-timeout"), "4"},
                   {annotation("health-monitor-max-retries"), "2"},
                   {annotation("health-monitor-max-retries-down"), "5"}};
  REQUIRE(p().ensureSettled(s, nodes).ok());
  auto st = state();
  REQUIRE(st["healthmonitors"].Size() == 2);
  const auto* hm = byName(st, "healthmonitors", "monitor_0_" + kName);
  REQUIRE(hm != nullptr);
  CHECK(str(*hm, "type") == "TCP");
  CHECK((*hm)["delay"].GetInt() == 7);
  CHECK((*hm)["timeout"].GetInt() == 4);
  CHECK((*hm)["max_retries"].GetInt() == 2);
  CHECK((*hm)["max_retries_down"].GetInt() == 5);

  s.annotations[1].second = "9";
  sim.clearRequests();
  REQUIRE(p().ensureSettled(s, nodes).ok());
  CHECK(countRequests(sim, "PUT", "load-balancer", "/healthmonitors/") == 2);
  st = state();
  CHECK((*byName(st, "healthmonitors", "monitor_0_" + kName))["delay"].GetInt() == 9);

  s.annotations[0].second = "false";
  REQUIRE(p().ensureSettled(s, nodes).ok());
  st = state();
  CHECK(st["healthmonitors"].Size() == 0);
}

TEST_CASE_FIXTURE(Fixture, "health monitors: create-monitor in the config") {
  REQUIRE(p("create-monitor = true\nmonitor-delay = 10s\nmonitor-timeout = 2s\n")
              .ensureSettled(web(), nodes)
              .ok());
  auto st = state();
  REQUIRE(st["healthmonitors"].Size() == 2);
  CHECK(st["healthmonitors"][0]["delay"].GetInt() == 10);
  CHECK(st["healthmonitors"][0]["timeout"].GetInt() == 2);
}

TEST_CASE_FIXTURE(Fixture, "externalTrafficPolicy Local: HTTP monitor on the health check port") {
  Service s = web();
  s.external_traffic_policy = "Local";
  s.health_check_node_port = 32000;
  s.annotations = {{annotation("enable-health-monitor"), "true"}};
  REQUIRE(p().ensureSettled(s, nodes).ok());
  auto st = state();
  const auto* hm = byName(st, "healthmonitors", "monitor_0_" + kName);
  REQUIRE(hm != nullptr);
  CHECK(str(*hm, "type") == "HTTP");
  CHECK(str(*hm, "url_path") == "/healthz");
  CHECK(str(*hm, "expected_codes") == "200");
  const auto* pool = byName(st, "pools", "pool_0_" + kName);
  for (const auto& m : st["members"][str(*pool, "id").c_str()].GetArray()) {
    CHECK(m["monitor_port"].GetInt() == 32000);
  }
}

TEST_CASE_FIXTURE(Fixture, "update: members follow the node set, nothing else changes") {
  REQUIRE(p().ensureSettled(web(), nodes).ok());
  std::vector<Node> changed = {nodes[0], nodes[1], addNode(4)};
  sim.clearRequests();
  auto r = p().update(web(), changed);
  REQUIRE_MESSAGE(r.ok(), r.error);
  CHECK(countRequests(sim, "PUT", "load-balancer", "/pools/[^/]+/members$") == 2);
  CHECK(countRequests(sim, "", "load-balancer", "/(listeners|healthmonitors)/") == 0);
  CHECK(countRequests(sim, "POST", "", "") == 0);
  auto st = state();
  const auto* pool = byName(st, "pools", "pool_0_" + kName);
  CHECK(memberAddresses(st, str(*pool, "id")) ==
        std::set<std::string>{"10.0.0.11:30080", "10.0.0.12:30080", "10.0.0.14:30080"});
  // Same nodes again: no change.
  sim.clearRequests();
  REQUIRE(p().update(web(), changed).ok());
  CHECK(countMutations(sim) == 0);
}

TEST_CASE_FIXTURE(Fixture, "update: no load balancer yet is NOT_FOUND") {
  auto r = p().update(web(), nodes);
  CHECK(r.status == CCM_STATUS_NOT_FOUND);
}

TEST_CASE_FIXTURE(Fixture, "node-selector: only matching nodes become members") {
  nodes[1].labels = {{"lb", "yes"}};
  nodes[2].labels = {{"lb", "no"}};
  Service s = web();
  s.annotations = {{annotation("node-selector"), "lb=yes"}};
  REQUIRE(p().ensureSettled(s, nodes).ok());
  auto st = state();
  const auto* pool = byName(st, "pools", "pool_0_" + kName);
  CHECK(memberAddresses(st, str(*pool, "id")) == std::set<std::string>{"10.0.0.12:30080"});
}

TEST_CASE_FIXTURE(Fixture, "delete: removes everything it made, and is idempotent") {
  REQUIRE(p("", "").ensureSettled(web(), nodes).ok());
  size_t ports_before = state()["ports"].Size();
  auto r = p().removeSettled(web());
  REQUIRE_MESSAGE(r.ok(), r.error);
  auto st = state();
  CHECK(st["loadbalancers"].Size() == 0);
  CHECK(st["listeners"].Size() == 0);
  CHECK(st["pools"].Size() == 0);
  CHECK(st["healthmonitors"].Size() == 0);
  CHECK(st["floatingips"].Size() == 0);
  CHECK(st["ports"].Size() == ports_before - 1);  // the VIP port, with the load balancer
  CHECK(p().remove(web()).ok());
  auto g = p().getLoadBalancer(web());
  CHECK(g.ok());
  CHECK_FALSE(g.exists);
}

TEST_CASE_FIXTURE(Fixture, "an invalid annotation blocks ensure but neither get nor delete") {
  REQUIRE(p().ensureSettled(web(), nodes).ok());
  Service s = web();
  s.annotations = {{annotation("keep-floatingip"), "yes please"}};
  CHECK(p().ensure(s, nodes).status == CCM_STATUS_INVALID_ARGUMENT);
  auto g = p().getLoadBalancer(s);
  CHECK(g.ok());
  CHECK(g.exists);
  REQUIRE(p().removeSettled(s).ok());
  auto st = state();
  CHECK(st["loadbalancers"].Size() == 0);
  CHECK(st["floatingips"].Size() == 0);
}

TEST_CASE_FIXTURE(Fixture, "delete with cascade-delete = false removes the children one by one") {
  Service s = web();
  s.annotations = {{annotation("enable-health-monitor"), "true"}};
  REQUIRE(p("cascade-delete = false\n").ensureSettled(s, nodes).ok());
  sim.clearRequests();
  REQUIRE(p("cascade-delete = false\n").removeSettled(s).ok());
  CHECK(countRequests(sim, "DELETE", "load-balancer", "/healthmonitors/") == 2);
  CHECK(countRequests(sim, "DELETE", "load-balancer", "/listeners/") == 2);
  auto st = state();
  CHECK(st["loadbalancers"].Size() == 0);
  CHECK(st["floatingips"].Size() == 0);
}

TEST_CASE_FIXTURE(Fixture, "keep-floatingip: the address survives deletion and is reused") {
  Service s = web();
  s.annotations = {{annotation("keep-floatingip"), "true"}};
  auto r = p().ensureSettled(s, nodes);
  REQUIRE(r.ok());
  std::string ip = (*r.lb_status)[0].ip;
  REQUIRE(p().removeSettled(s).ok());
  auto st = state();
  CHECK(st["loadbalancers"].Size() == 0);
  REQUIRE(st["floatingips"].Size() == 1);
  CHECK(st["floatingips"][0]["port_id"].IsNull());
  CHECK(!p().getLoadBalancer(s).exists);

  // The Service comes back: same public address.
  r = p().ensureSettled(s, nodes);
  REQUIRE(r.ok());
  CHECK((*r.lb_status)[0].ip == ip);
  CHECK(state()["floatingips"].Size() == 1);

  // Without keep-floatingip the address goes with the load balancer.
  s.annotations.clear();
  REQUIRE(p().removeSettled(s).ok());
  CHECK(state()["floatingips"].Size() == 0);
}

TEST_CASE_FIXTURE(Fixture, "a floating IP left without a port counts as existing and is cleaned") {
  // Simulate a crash between load balancer deletion and floating IP deletion.
  sim.post("/_sim/add", R"({"kind":"floatingips","object":{"floating_ip_address":"172.24.4.99",
    "description":"Floating IP for Kubernetes external service default/web from cluster kubernetes"}})");
  auto g = p().getLoadBalancer(web());
  CHECK(g.exists);
  REQUIRE(p().removeSettled(web()).ok());
  CHECK(state()["floatingips"].Size() == 0);
}

TEST_CASE_FIXTURE(Fixture,
                  "internal load balancers publish the VIP, and a switch releases the FIP") {
  Service s = web();
  s.annotations = {{"service.beta.kubernetes.io/openstack-internal-load-balancer", "true"}};
  auto r = p().ensureSettled(s, nodes);
  REQUIRE(r.ok());
  auto st = state();
  CHECK(st["floatingips"].Size() == 0);
  CHECK((*r.lb_status)[0].ip == str(onlyLb(st), "vip_address"));

  // External, then internal again: our floating IP is deleted.
  s.annotations[0].second = "false";
  r = p().ensureSettled(s, nodes);
  REQUIRE(r.ok());
  CHECK(state()["floatingips"].Size() == 1);
  s.annotations[0].second = "true";
  r = p().ensureSettled(s, nodes);
  REQUIRE(r.ok());
  CHECK(state()["floatingips"].Size() == 0);

  // With keep-floatingip it is only detached.
  s.annotations[0].second = "false";
  REQUIRE(p().ensureSettled(s, nodes).ok());
  s.annotations = {{"service.beta.kubernetes.io/openstack-internal-load-balancer", "true"},
                   {annotation("keep-floatingip"), "true"}};
  REQUIRE(p().ensureSettled(s, nodes).ok());
  st = state();
  REQUIRE(st["floatingips"].Size() == 1);
  CHECK(st["floatingips"][0]["port_id"].IsNull());
  auto reqs = sim.requests();
  auto puts = matching(reqs, "PUT", "network", "/floatingips/");
  REQUIRE(!puts.empty());
  CHECK((*puts.back())["body"]["floatingip"]["port_id"].IsNull());
}

TEST_CASE_FIXTURE(Fixture, "internal-lb in the config wins over the annotation") {
  Service s = web();
  s.annotations = {{"service.beta.kubernetes.io/openstack-internal-load-balancer", "false"}};
  REQUIRE(p("internal-lb = true\n").ensureSettled(s, nodes).ok());
  CHECK(state()["floatingips"].Size() == 0);
}

TEST_CASE_FIXTURE(Fixture, "loadBalancerIP: an existing free floating IP is attached, not owned") {
  sim.post("/_sim/add",
           R"({"kind":"floatingips","object":{"floating_ip_address":"172.24.4.200"}})");
  Service s = web();
  s.load_balancer_ip = "172.24.4.200";
  auto r = p().ensureSettled(s, nodes);
  REQUIRE(r.ok());
  CHECK((*r.lb_status)[0].ip == "172.24.4.200");
  REQUIRE(p().removeSettled(s).ok());
  auto st = state();
  REQUIRE(st["floatingips"].Size() == 1);  // the user's address stays
  CHECK(str(st["floatingips"][0], "floating_ip_address") == "172.24.4.200");
}

TEST_CASE_FIXTURE(Fixture, "loadBalancerIP: a missing address is created; one in use is refused") {
  Service s = web();
  s.load_balancer_ip = "172.24.4.201";
  auto r = p().ensureSettled(s, nodes);
  REQUIRE(r.ok());
  CHECK((*r.lb_status)[0].ip == "172.24.4.201");

  Service other = web();
  other.name = "other";
  other.load_balancer_ip = "172.24.4.201";
  r = p().ensureSettled(other, nodes);
  CHECK(r.status == CCM_STATUS_FAILED_PRECONDITION);
  CHECK(r.error.find("172.24.4.201") != std::string::npos);
}

TEST_CASE_FIXTURE(Fixture, "floating network and subnet from annotations") {
  sim.post("/_sim/add", R"({"kind":"networks","object":{"id":"net-pub2","name":"public2",
    "router:external":true}})");
  sim.post("/_sim/add", R"({"kind":"subnets","object":{"id":"sub-pub2a","name":"pub2-a",
    "network_id":"net-pub2","cidr":"203.0.113.0/25"}})");
  sim.post("/_sim/add", R"({"kind":"subnets","object":{"id":"sub-pub2b","name":"pub2-b",
    "network_id":"net-pub2","cidr":"203.0.113.128/25"}})");
  Service s = web();
  s.annotations = {{annotation("floating-network-id"), "net-pub2"},
                   {annotation("floating-subnet-id"), "sub-pub2b"}};
  auto r = p().ensureSettled(s, nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  CHECK((*r.lb_status)[0].ip.rfind("203.0.113.1", 0) == 0);  // .128/25

  // By name pattern instead of ID.
  Service t = web();
  t.name = "web2";
  t.annotations = {{annotation("floating-network-id"), "net-pub2"},
                   {annotation("floating-subnet"), "*-a"}};
  r = p().ensureSettled(t, nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  auto st = state();
  bool in_a = false;
  for (const auto& f : st["floatingips"].GetArray()) {
    if (str(f, "floating_ip_address") == (*r.lb_status)[0].ip) {
      in_a = std::string(f["floating_ip_address"].GetString()).rfind("203.0.113.", 0) == 0;
    }
  }
  CHECK(in_a);
}

TEST_CASE_FIXTURE(Fixture, "floating network: auto-detected when unique, refused when ambiguous") {
  std::string no_fip_net = "[LoadBalancer]\nsubnet-id = sub-private\n";
  auto conf = cloudConf(sim, "", no_fip_net);
  auto r = provider(conf).ensureSettled(web(), nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  CHECK(state()["floatingips"].Size() == 1);
  REQUIRE(provider(conf).removeSettled(web()).ok());

  sim.post("/_sim/add", R"({"kind":"networks","object":{"id":"net-pub3","name":"public3",
    "router:external":true}})");
  sim.post("/_sim/add", R"({"kind":"subnets","object":{"id":"sub-pub3","network_id":"net-pub3",
    "cidr":"198.18.0.0/24"}})");
  r = provider(conf).ensureSettled(web(), nodes);
  CHECK(r.status == CCM_STATUS_FAILED_PRECONDITION);
  CHECK(r.error.find("floating-network-id") != std::string::npos);
  CHECK(state()["loadbalancers"].Size() == 0);  // refused before anything was made
}

TEST_CASE_FIXTURE(Fixture, "source ranges become allowed_cidrs and follow changes") {
  Service s = web();
  s.source_ranges = {"192.168.0.0/24", "10.1.2.3/16"};
  REQUIRE(p().ensureSettled(s, nodes).ok());
  auto st = state();
  const auto* l = byName(st, "listeners", "listener_0_" + kName);
  REQUIRE((*l)["allowed_cidrs"].IsArray());
  std::set<std::string> cidrs;
  for (const auto& c : (*l)["allowed_cidrs"].GetArray()) {
    cidrs.insert(c.GetString());
  }
  CHECK(cidrs == std::set<std::string>{"10.1.0.0/16", "192.168.0.0/24"});

  s.source_ranges.clear();
  s.annotations = {{"service.beta.kubernetes.io/load-balancer-source-ranges", "172.16.0.0/12"}};
  sim.clearRequests();
  REQUIRE(p().ensureSettled(s, nodes).ok());
  CHECK(countRequests(sim, "PUT", "load-balancer", "/listeners/") == 2);
  st = state();
  l = byName(st, "listeners", "listener_0_" + kName);
  CHECK(std::string((*l)["allowed_cidrs"][0].GetString()) == "172.16.0.0/12");

  s.annotations = {{"service.beta.kubernetes.io/load-balancer-source-ranges", "not-a-cidr"}};
  auto r = p().ensure(s, nodes);
  CHECK(r.status == CCM_STATUS_INVALID_ARGUMENT);
  CHECK(r.error.find("not-a-cidr") != std::string::npos);
}

TEST_CASE_FIXTURE(Fixture, "old Octavia: no tags, no allowed_cidrs, no timeouts, and a warning") {
  sim.config(R"({"octavia_versions":["v2.0"]})");
  Service s = web();
  s.source_ranges = {"10.0.0.0/8"};
  auto r = p("# old octavia\n").ensureSettled(s, nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  auto st = state();
  CHECK(onlyLb(st)["tags"].Size() == 0);
  const auto* l = byName(st, "listeners", "listener_0_" + kName);
  CHECK((*l)["allowed_cidrs"].IsNull());
  CHECK(host.logged("loadBalancerSourceRanges are ignored"));
  // Untagged listeners on our own load balancer are still ours: deletion cleans up.
  REQUIRE(p("# old octavia\n").removeSettled(s).ok());
  CHECK(state()["loadbalancers"].Size() == 0);
}

TEST_CASE_FIXTURE(Fixture, "proxy protocol: PROXY pools, ipMode Proxy, or the hostname trick") {
  Service s = web();
  s.annotations = {{annotation("proxy-protocol"), "v2"}};
  auto r = p().ensureSettled(s, nodes);
  REQUIRE(r.ok());
  auto st = state();
  CHECK(str(*byName(st, "pools", "pool_0_" + kName), "protocol") == "PROXYV2");
  CHECK((*r.lb_status)[0].ip_mode == "Proxy");

  std::string fip = (*r.lb_status)[0].ip;
  r = p("enable-ingress-hostname = true\n").ensureSettled(s, nodes);
  REQUIRE(r.ok());
  CHECK((*r.lb_status)[0].ip.empty());
  CHECK((*r.lb_status)[0].hostname == fip + ".nip.io");

  s.annotations = {{annotation("proxy-protocol"), "true"}};
  REQUIRE(p().ensureSettled(s, nodes).ok());
  st = state();
  CHECK(str(*byName(st, "pools", "pool_0_" + kName), "protocol") == "PROXY");
}

TEST_CASE_FIXTURE(Fixture, "x-forwarded-for: HTTP listeners that insert the header") {
  Service s = web();
  s.annotations = {{annotation("x-forwarded-for"), "true"}};
  REQUIRE(p().ensureSettled(s, nodes).ok());
  auto st = state();
  const auto* l = byName(st, "listeners", "listener_0_" + kName);
  CHECK(str(*l, "protocol") == "HTTP");
  CHECK(str((*l)["insert_headers"], "X-Forwarded-For") == "true");
  CHECK(str(*byName(st, "pools", "pool_0_" + kName), "protocol") == "HTTP");

  // Turning it off replaces the HTTP listeners by TCP ones on the same ports.
  s.annotations.clear();
  auto r = p().ensureSettled(s, nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  st = state();
  REQUIRE(st["listeners"].Size() == 2);
  for (const auto& x : st["listeners"].GetArray()) {
    CHECK(str(x, "protocol") == "TCP");
  }

  s.annotations = {{annotation("x-forwarded-for"), "true"}, {annotation("proxy-protocol"), "true"}};
  r = p().ensure(s, nodes);
  CHECK(r.status == CCM_STATUS_INVALID_ARGUMENT);
}

TEST_CASE_FIXTURE(Fixture, "listener settings: timeouts and connection limit, updated in place") {
  Service s = web();
  s.annotations = {{annotation("timeout-client-data"), "1000"},
                   {annotation("timeout-member-connect"), "2000"},
                   {annotation("timeout-member-data"), "3000"},
                   {annotation("timeout-tcp-inspect"), "4000"},
                   {annotation("connection-limit"), "100"}};
  REQUIRE(p().ensureSettled(s, nodes).ok());
  auto st = state();
  const auto* l = byName(st, "listeners", "listener_1_" + kName);
  CHECK((*l)["timeout_client_data"].GetInt() == 1000);
  CHECK((*l)["timeout_member_connect"].GetInt() == 2000);
  CHECK((*l)["timeout_member_data"].GetInt() == 3000);
  CHECK((*l)["timeout_tcp_inspect"].GetInt() == 4000);
  CHECK((*l)["connection_limit"].GetInt() == 100);
  s.annotations[4].second = "200";
  sim.clearRequests();
  REQUIRE(p().ensureSettled(s, nodes).ok());
  CHECK(countRequests(sim, "PUT", "load-balancer", "/listeners/") == 2);
  CHECK(countRequests(sim, "POST", "load-balancer", "") == 0);
  s.annotations[4].second = "lots";
  CHECK(p().ensure(s, nodes).status == CCM_STATUS_INVALID_ARGUMENT);
}

TEST_CASE_FIXTURE(Fixture, "lb-method and session affinity change the pools in place") {
  Service s = web();
  s.annotations = {{annotation("lb-method"), "LEAST_CONNECTIONS"}};
  s.session_affinity = "ClientIP";
  REQUIRE(p().ensureSettled(s, nodes).ok());
  auto st = state();
  const auto* pool = byName(st, "pools", "pool_0_" + kName);
  CHECK(str(*pool, "lb_algorithm") == "LEAST_CONNECTIONS");
  CHECK(str((*pool)["session_persistence"], "type") == "SOURCE_IP");
  s.annotations[0].second = "SOURCE_IP";
  s.session_affinity = "None";
  sim.clearRequests();
  REQUIRE(p().ensureSettled(s, nodes).ok());
  CHECK(countRequests(sim, "PUT", "load-balancer", "/pools/[^/]+$") == 2);
  st = state();
  pool = byName(st, "pools", "pool_0_" + kName);
  CHECK(str(*pool, "lb_algorithm") == "SOURCE_IP");
  CHECK((*pool)["session_persistence"].IsNull());
  s.annotations[0].second = "RANDOM";
  CHECK(p().ensure(s, nodes).status == CCM_STATUS_INVALID_ARGUMENT);
}

TEST_CASE_FIXTURE(Fixture, "a removed Service port removes its listener and pool") {
  REQUIRE(p().ensureSettled(web(), nodes).ok());
  Service s = web();
  s.ports.pop_back();
  REQUIRE(p().ensureSettled(s, nodes).ok());
  auto st = state();
  CHECK(st["listeners"].Size() == 1);
  CHECK(st["pools"].Size() == 1);
}

TEST_CASE_FIXTURE(Fixture, "VIP placement: port-id, network-id and subnet-id annotations") {
  sim.post("/_sim/add", R"({"kind":"ports","object":{"id":"vip-port-1","network_id":"net-private",
    "fixed_ips":[{"subnet_id":"sub-private","ip_address":"10.0.0.222"}]}})");
  Service s = web();
  s.annotations = {{"service.beta.kubernetes.io/openstack-internal-load-balancer", "true"},
                   {annotation("port-id"), "vip-port-1"}};
  auto r = p().ensureSettled(s, nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  CHECK((*r.lb_status)[0].ip == "10.0.0.222");
  auto reqs = sim.requests();
  auto posts = matching(reqs, "POST", "load-balancer", "/lbaas/loadbalancers$");
  REQUIRE(posts.size() == 1);
  const auto& body = (*posts[0])["body"]["loadbalancer"];
  CHECK(str(body, "vip_port_id") == "vip-port-1");
  CHECK(!body.HasMember("vip_subnet_id"));

  Service t = web();
  t.name = "by-network";
  t.annotations = {{"service.beta.kubernetes.io/openstack-internal-load-balancer", "true"},
                   {annotation("network-id"), "net-private"},
                   {annotation("subnet-id"), "sub-private"}};
  sim.clearRequests();
  REQUIRE(p().ensureSettled(t, nodes).ok());
  reqs = sim.requests();
  posts = matching(reqs, "POST", "load-balancer", "/lbaas/loadbalancers$");
  REQUIRE(posts.size() == 1);
  CHECK(str((*posts[0])["body"]["loadbalancer"], "vip_network_id") == "net-private");
}

TEST_CASE_FIXTURE(Fixture, "VIP subnet auto-detected from the first node") {
  auto conf = cloudConf(sim, "", "[LoadBalancer]\nfloating-network-id = net-public\n");
  auto r = provider(conf).ensureSettled(web(), nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  CHECK(str(onlyLb(state()), "vip_subnet_id") == "sub-private");
}

TEST_CASE_FIXTURE(Fixture, "IPv6 Services: VIP on the v6 subnet, no floating IP") {
  std::vector<Node> v6;
  for (int i = 1; i <= 2; ++i) {
    std::string name = "v6-" + std::to_string(i);
    std::string ip = "fd00::" + std::to_string(100 + i);
    std::string id = sim.addPrivateServer(name, ip);
    v6.push_back(node(name, "openstack:///" + id, {{"InternalIP", ip}}));
  }
  Service s = web();
  s.ip_families = {"IPv6"};
  s.annotations = {{annotation("subnet-id"), "sub-private6"}};
  auto r = p().ensureSettled(s, v6);
  REQUIRE_MESSAGE(r.ok(), r.error);
  CHECK((*r.lb_status)[0].ip.rfind("fd00::", 0) == 0);
  auto st = state();
  CHECK(st["floatingips"].Size() == 0);
  const auto* pool = byName(st, "pools", "pool_0_" + kName);
  CHECK(memberAddresses(st, str(*pool, "id")) ==
        std::set<std::string>{"fd00::101:30080", "fd00::102:30080"});
}

TEST_CASE_FIXTURE(Fixture, "adoption by load-balancer-id: only our listeners and tag come and go") {
  auto lb = sim.post("/_sim/add", R"({"kind":"loadbalancers","object":{"name":"shared-by-hand",
    "vip_subnet_id":"sub-private","tags":["owner-tag"],
    "listeners":[{"name":"theirs","protocol":"TCP","protocol_port":8080}]}})");
  std::string id = lb["id"].GetString();
  std::string vip_port = lb["vip_port_id"].GetString();
  sim.post("/_sim/add", R"({"kind":"floatingips","object":{"floating_ip_address":"172.24.4.77",
    "port_id":")" + vip_port +
                            R"("}})");
  Service s = web();
  s.annotations = {{annotation("load-balancer-id"), id}};
  auto r = p().ensureSettled(s, nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  CHECK((*r.lb_status)[0].ip == "172.24.4.77");
  auto st = state();
  const auto& got = onlyLb(st);
  CHECK(str(got, "name") == "shared-by-hand");
  std::set<std::string> tags;
  for (const auto& t : got["tags"].GetArray()) {
    tags.insert(t.GetString());
  }
  CHECK(tags == std::set<std::string>{"owner-tag", kName});
  CHECK(st["listeners"].Size() == 3);

  REQUIRE(p().removeSettled(s).ok());
  st = state();
  REQUIRE(st["loadbalancers"].Size() == 1);  // not ours: it stays
  REQUIRE(st["listeners"].Size() == 1);
  CHECK(str(st["listeners"][0], "name") == "theirs");
  CHECK(st["loadbalancers"][0]["tags"].Size() == 1);
  REQUIRE(st["floatingips"].Size() == 1);
  CHECK(str(st["floatingips"][0], "port_id") == vip_port);
}

TEST_CASE_FIXTURE(Fixture, "adoption: a port used by someone else's listener is refused") {
  auto lb = sim.post("/_sim/add", R"({"kind":"loadbalancers","object":{"name":"busy-port",
    "vip_subnet_id":"sub-private","listeners":[{"name":"theirs","protocol":"TCP",
    "protocol_port":80}]}})");
  Service s = web();
  s.annotations = {{annotation("load-balancer-id"), lb["id"].GetString()},
                   {"service.beta.kubernetes.io/openstack-internal-load-balancer", "true"}};
  auto r = p().ensureSettled(s, nodes);
  CHECK(r.status == CCM_STATUS_FAILED_PRECONDITION);
  CHECK(r.error.find("port 80") != std::string::npos);
}

TEST_CASE_FIXTURE(Fixture, "adoption: an external non-owner cannot add a floating IP") {
  auto lb = sim.post("/_sim/add", R"({"kind":"loadbalancers","object":{"name":"no-fip",
    "vip_subnet_id":"sub-private"}})");
  Service s = web();
  s.annotations = {{annotation("load-balancer-id"), lb["id"].GetString()}};
  auto r = p().ensureSettled(s, nodes);
  CHECK(r.status == CCM_STATUS_FAILED_PRECONDITION);
  CHECK(r.error.find("floating IP") != std::string::npos);
  s.annotations.emplace_back("service.beta.kubernetes.io/openstack-internal-load-balancer", "true");
  r = p().ensureSettled(s, nodes);
  CHECK(r.ok());
}

TEST_CASE_FIXTURE(Fixture, "adoption: a missing load balancer ID is refused; delete ignores it") {
  Service s = web();
  s.annotations = {{annotation("load-balancer-id"), "no-such-lb"}};
  auto r = p().ensure(s, nodes);
  CHECK(r.status == CCM_STATUS_FAILED_PRECONDITION);
  CHECK(r.error.find("no-such-lb") != std::string::npos);
  CHECK(p().remove(s).ok());
}

TEST_CASE_FIXTURE(Fixture, "another cluster's ID copied over is refused, not shared or renamed") {
  // A load balancer made by a cluster named "old" for its Service default/web, whose nodes are
  // not this cluster's; its ID copied into this cluster's Service default/web.
  std::string other_id = sim.addPrivateServer("other-1", "10.0.0.99");
  std::vector<Node> other = {
      node("other-1", "openstack:///" + other_id, {{"InternalIP", "10.0.0.99"}})};
  REQUIRE(p().ensureSettled(web(), other, 10, "old").ok());
  auto before = state();
  std::string id = str(onlyLb(before), "id");
  size_t listeners = objects(before, "listeners").size();
  Service s = web();
  s.annotations = {{annotation("load-balancer-id"), id}};
  auto r = p().ensureSettled(s, nodes, 10, "new");
  CHECK(r.status == CCM_STATUS_FAILED_PRECONDITION);
  CHECK(r.error.find("another cluster name") != std::string::npos);
  CHECK(r.error.find("kube_service_old_default_web") != std::string::npos);
  CHECK(r.error.find("none of its members is a node of this cluster") != std::string::npos);
  CHECK(str(onlyLb(state()), "name") == "kube_service_old_default_web");
  auto after = state();
  CHECK(objects(after, "loadbalancers").size() == 1);
  CHECK(objects(after, "listeners").size() == listeners);
  // Deleting the Service is not held up, and removes nothing of the old load balancer.
  CHECK(p().removeSettled(s, 10, "new").ok());
  CHECK(objects(state(), "loadbalancers").size() == 1);
  CHECK(objects(state(), "listeners").size() == listeners);
}

TEST_CASE_FIXTURE(Fixture, "busy Octavia: FAILED_PRECONDITION with a retry-after, then done") {
  sim.config(R"({"hold_pending":true})");
  auto& prov = p("ccm-active-wait-timeout = 0s\n");
  auto r = prov.ensure(web(), nodes);
  CHECK(r.status == CCM_STATUS_FAILED_PRECONDITION);
  CHECK(r.retry_after_ms > 0);
  CHECK(r.error.find("PENDING_CREATE") != std::string::npos);
  CHECK(state()["loadbalancers"].Size() == 1);
  // Asking again while it is still busy does not create a second one.
  r = prov.ensure(web(), nodes);
  CHECK(r.status == CCM_STATUS_FAILED_PRECONDITION);
  CHECK(state()["loadbalancers"].Size() == 1);
  sim.config(R"({"hold_pending":false})");
  r = prov.ensureSettled(web(), nodes);
  CHECK(r.ok());
  CHECK(state()["loadbalancers"].Size() == 1);
}

TEST_CASE_FIXTURE(Fixture, "Octavia 409 (immutable) reads as busy with a retry-after") {
  REQUIRE(p().ensureSettled(web(), nodes).ok());
  sim.fault(R"({"path":"/members$","method":"PUT","status":409,"count":1,
               "body":{"faultstring":"Invalid state PENDING_UPDATE"}})");
  auto r = p().update(web(), {nodes[0]});
  CHECK(r.status == CCM_STATUS_FAILED_PRECONDITION);
  CHECK(r.retry_after_ms > 0);
  CHECK(p().update(web(), {nodes[0]}).ok());
}

TEST_CASE_FIXTURE(Fixture, "throttling (429) is RESOURCE_EXHAUSTED with the cloud's Retry-After") {
  sim.fault(R"({"path":"/lbaas/loadbalancers$","method":"POST","status":429,"count":1,
               "headers":{"Retry-After":"12"}})");
  auto r = p().ensure(web(), nodes);
  CHECK(r.status == CCM_STATUS_RESOURCE_EXHAUSTED);
  CHECK(r.retry_after_ms == 12000);
  CHECK(state()["loadbalancers"].Size() == 0);
  CHECK(p().ensureSettled(web(), nodes).ok());
}

TEST_CASE_FIXTURE(Fixture, "an Octavia outage (503) is UNAVAILABLE") {
  sim.fault(R"({"path":"/load-balancer/","status":503,"count":100})");
  auto r = p("# outage\n").ensure(web(), nodes);
  CHECK(r.status == CCM_STATUS_UNAVAILABLE);
  sim.post("/_sim/faults/clear", "{}");
}

TEST_CASE_FIXTURE(Fixture, "provisioning takes a few polls: waited for within the call") {
  sim.config(R"({"pending_polls":1})");
  auto r = p().ensure(web(), nodes);
  CHECK_MESSAGE(r.ok(), r.error);
}

TEST_CASE_FIXTURE(Fixture, "ERROR: a clear error, then the broken load balancer is replaced") {
  sim.config(R"({"error_next_transition":true})");
  auto r = p().ensure(web(), nodes);
  CHECK(r.status == CCM_STATUS_UNAVAILABLE);
  CHECK(r.error.find("ERROR") != std::string::npos);
  std::string broken = state()["loadbalancers"][0]["id"].GetString();
  r = p().ensure(web(), nodes);  // deletes the broken one
  CHECK(r.status == CCM_STATUS_UNAVAILABLE);
  CHECK(r.error.find("created again") != std::string::npos);
  r = p().ensureSettled(web(), nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  auto st = state();
  CHECK(str(onlyLb(st), "id") != broken);
}

TEST_CASE_FIXTURE(Fixture, "serial API mode: one object per call, same result") {
  sim.clearRequests();
  auto& prov = p("provider-requires-serial-api-calls = true\n");
  REQUIRE(prov.ensureSettled(web(), nodes).ok());
  CHECK(countRequests(sim, "POST", "load-balancer", "/members$") == 6);
  CHECK(countRequests(sim, "PUT", "load-balancer", "/members$") == 0);
  auto st = state();
  CHECK(st["listeners"].Size() == 2);
  const auto* pool = byName(st, "pools", "pool_1_" + kName);
  CHECK(memberAddresses(st, str(*pool, "id")).size() == 3);
  sim.clearRequests();
  REQUIRE(prov.update(web(), {nodes[0]}).ok());
  CHECK(countRequests(sim, "DELETE", "load-balancer", "/members/") == 4);
}

TEST_CASE_FIXTURE(Fixture, "cluster name and loadBalancerClass") {
  auto r = p().ensureSettled(web(), nodes, 10, "prod");
  REQUIRE(r.ok());
  CHECK(str(onlyLb(state()), "name") == "kube_service_prod_default_web");
  // The host hands over only Services of a class it claims (--load-balancer-class): one that
  // arrives with a class is served like any other.
  Service s = web();
  s.name = "classed";
  s.uid = "uid-classed";
  s.load_balancer_class = "example.com/openstack";
  auto classed = p().ensureSettled(s, nodes, 10, "prod");
  REQUIRE_MESSAGE(classed.ok(), classed.error);
  CHECK(objects(state(), "loadbalancers").size() == 2);
}

TEST_CASE_FIXTURE(Fixture, "cancelled calls stop with CANCELLED") {
  auto& prov = p();
  host.setCancelAll(true);
  auto r = prov.ensure(web(), nodes);
  host.setCancelAll(false);
  CHECK(r.status == CCM_STATUS_CANCELLED);
}

TEST_CASE_FIXTURE(Fixture, "a call near its deadline does not wait for Octavia") {
  sim.config(R"({"hold_pending":true})");
  auto r = p().ensure(web(), nodes, "kubernetes", 1500);  // 1.5 s left: no time to poll
  CHECK(r.status == CCM_STATUS_FAILED_PRECONDITION);
  CHECK(r.retry_after_ms > 0);
}

namespace {

// The ID of the simulator's pool (or listener) with this name.
std::string idByName(SimProcess& sim, const char* kind, const std::string& name) {
  auto st = sim.state();
  for (const auto& o : st[kind].GetArray()) {
    if (str(o, "name") == name) {
      return str(o, "id");
    }
  }
  return {};
}

// Requests to Octavia that would change something.
size_t octaviaChanges(SimProcess& sim) {
  size_t n = 0;
  for (const char* m : {"POST", "PUT", "DELETE"}) {
    n += countRequests(sim, m, "load-balancer");
  }
  return n;
}

}  // namespace

TEST_CASE_FIXTURE(
    Fixture, "a pool stuck in PENDING_CREATE: named, no changes sent, growing delays (fault 2)") {
  auto& prov = p();
  REQUIRE(prov.ensureSettled(web(), nodes).ok());
  std::string pool = idByName(sim, "pools", childName("pool", 0));
  REQUIRE_FALSE(pool.empty());
  sim.post("/_sim/child_status",
           R"({"kind":"pools","id":")" + pool + R"(","provisioning_status":"PENDING_CREATE"})");
  sim.clearRequests();
  // A node joins: the stuck pool cannot take it. Each answer is "busy" (no Warning), names
  // the pool, sends Octavia nothing it would refuse, and asks to come back later each time.
  std::vector<int64_t> delays;
  for (int i = 0; i < 5; ++i) {
    auto r = prov.update(web(), {nodes[0]});
    CHECK(r.status == CCM_STATUS_FAILED_PRECONDITION);
    CHECK(r.error.find(pool) != std::string::npos);
    CHECK(r.error.find("PENDING_CREATE") != std::string::npos);
    delays.push_back(r.retry_after_ms);
  }
  CHECK(octaviaChanges(sim) == 0);
  for (size_t i = 1; i < delays.size(); ++i) {
    CHECK(delays[i] >= delays[i - 1]);
  }
  CHECK(delays.front() >= 2500);
  CHECK(delays.back() >= 4 * delays.front());
  // ensure too.
  auto e = prov.ensure(web(), nodes);
  CHECK(e.status == CCM_STATUS_FAILED_PRECONDITION);
  CHECK(e.retry_after_ms >= delays.back());
  // Octavia finishes with the pool: the change goes through and the delays start over.
  sim.post("/_sim/child_status",
           R"({"kind":"pools","id":")" + pool + R"(","provisioning_status":"ACTIVE"})");
  REQUIRE(prov.update(web(), {nodes[0]}).ok());
  sim.post("/_sim/child_status",
           R"({"kind":"pools","id":")" + pool + R"(","provisioning_status":"PENDING_UPDATE"})");
  auto again = prov.update(web(), nodes);
  CHECK(again.status == CCM_STATUS_FAILED_PRECONDITION);
  CHECK(again.retry_after_ms <= 5000);
}

TEST_CASE_FIXTURE(Fixture, "Octavia's 409 immutable on a pool reads as busy and names it") {
  auto& prov = p();
  REQUIRE(prov.ensureSettled(web(), nodes).ok());
  std::string pool = idByName(sim, "pools", childName("pool", 0));
  sim.fault(R"({"path":"/members$","method":"PUT","status":409,"count":1,
    "body":{"faultcode":"Client","faultstring":"Pool )" +
            pool + R"( is immutable and cannot be updated.","debuginfo":null}})");
  auto r = prov.update(web(), {nodes[0]});
  CHECK(r.status == CCM_STATUS_FAILED_PRECONDITION);
  CHECK(r.error.find("Pool " + pool + " is immutable") != std::string::npos);
  CHECK(r.retry_after_ms > 0);
  CHECK(prov.update(web(), {nodes[0]}).ok());
}

TEST_CASE_FIXTURE(Fixture, "409 and 429 with and without Retry-After (fault 4)") {
  auto& prov = p();
  REQUIRE(prov.ensureSettled(web(), nodes).ok());
  // 409 that says when: that delay, not the provider's own.
  sim.fault(R"({"path":"/members$","method":"PUT","status":409,"count":1,"retry_after":7,
    "body":{"faultcode":"Client","faultstring":"Invalid state PENDING_UPDATE of loadbalancer resource x","debuginfo":null}})");
  auto r = prov.update(web(), {nodes[0]});
  CHECK(r.status == CCM_STATUS_FAILED_PRECONDITION);
  CHECK(r.retry_after_ms == 7000);
  // 429 without: RESOURCE_EXHAUSTED and no retry-after, so the host's own back-off applies.
  sim.fault(R"({"path":"/members$","method":"PUT","status":429,"count":1})");
  r = prov.update(web(), {nodes[1]});
  CHECK(r.status == CCM_STATUS_RESOURCE_EXHAUSTED);
  CHECK(r.retry_after_ms == 0);
  // 429 with: that delay.
  sim.fault(R"({"path":"/members$","method":"PUT","status":429,"count":1,"retry_after":20})");
  r = prov.update(web(), {nodes[1]});
  CHECK(r.status == CCM_STATUS_RESOURCE_EXHAUSTED);
  CHECK(r.retry_after_ms == 20000);
  CHECK(prov.update(web(), {nodes[1]}).ok());
}

TEST_CASE_FIXTURE(
    Fixture, "a member change Octavia reverted to ERROR is an error, then repaired (fault 3)") {
  auto& prov = p();
  REQUIRE(prov.ensureSettled(web(), nodes).ok());
  std::string pool = idByName(sim, "pools", childName("pool", 0));
  sim.config(R"({"member_revert":1})");
  // node-3 leaves; Octavia reverts the removal on the first pool and the member stays, in ERROR.
  auto r = prov.update(web(), {nodes[0], nodes[1]});
  CHECK(r.status == CCM_STATUS_UNAVAILABLE);
  CHECK(r.error.find("10.0.0.13:30080") != std::string::npos);
  CHECK(r.error.find("ERROR") != std::string::npos);
  // The next attempt replaces it.
  r = prov.update(web(), {nodes[0], nodes[1]});
  CHECK_MESSAGE(r.ok(), r.error);
  auto st = state();
  CHECK(memberAddresses(st, pool) == std::set<std::string>{"10.0.0.11:30080", "10.0.0.12:30080"});
}

TEST_CASE_FIXTURE(Fixture, "serial mode: a reverted member create is an error, then repaired") {
  auto& prov = p("provider-requires-serial-api-calls = true\n");
  REQUIRE(prov.ensureSettled(web(), {nodes[0]}).ok());
  std::string pool = idByName(sim, "pools", childName("pool", 0));
  sim.config(R"({"member_revert":1})");
  auto r = prov.update(web(), {nodes[0], nodes[1]});
  CHECK(r.status == CCM_STATUS_UNAVAILABLE);
  CHECK(r.error.find("ERROR") != std::string::npos);
  r = prov.update(web(), {nodes[0], nodes[1]});
  CHECK_MESSAGE(r.ok(), r.error);
  auto st = state();
  CHECK(memberAddresses(st, pool) == std::set<std::string>{"10.0.0.11:30080", "10.0.0.12:30080"});
  for (const auto& m : st["members"][pool.c_str()].GetArray()) {
    CHECK(str(m, "provisioning_status") == "ACTIVE");
  }
}
