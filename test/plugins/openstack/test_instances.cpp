// Instances through the ABI: existence (tri-state), shutdown, metadata (provider ID, flavor,
// zone, region), the address rules, and batch metadata from one server list.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "test/plugins/openstack/test_support.hpp"

using namespace ccm::openstack::testing;

namespace {

struct Fixture : SimFixture {
  Provider& p(const std::string& global_extra = "", const std::string& sections = "") {
    return provider(cloudConf(sim, global_extra, sections));
  }
  std::string server(const std::string& name, const std::string& ip,
                     const std::string& extra = "") {
    return sim.addPrivateServer(name, ip, extra);
  }
};

bool hasAddress(const InstanceMetadata& md, const std::string& type, const std::string& addr) {
  for (const auto& [t, a] : md.addresses) {
    if (t == type && a == addr) {
      return true;
    }
  }
  return false;
}

}  // namespace

TEST_CASE_FIXTURE(Fixture, "exists: EXISTS by providerID, NOT_FOUND only on Nova's 404") {
  std::string id = server("node-a", "10.0.0.20");
  auto r = p().exists(node("node-a", "openstack:///" + id));
  CHECK(r.ok());
  CHECK(r.existence == CCM_EXISTENCE_EXISTS);

  r = p().exists(node("node-a", "openstack:///does-not-exist"));
  CHECK(r.ok());
  CHECK(r.existence == CCM_EXISTENCE_NOT_FOUND);

  // A 500 is not an answer.
  sim.fault(R"({"path":"/compute/v2.1/servers/)" + id + R"(","status":500,"count":1})");
  r = p().exists(node("node-a", "openstack:///" + id));
  CHECK(r.status == CCM_STATUS_UNAVAILABLE);
  CHECK(r.existence == CCM_EXISTENCE_UNKNOWN);
  CHECK(r.error.find("HTTP 500") != std::string::npos);
  CHECK(r.error.find("request req-") != std::string::npos);
}

TEST_CASE_FIXTURE(Fixture, "exists: by node name without providerID, never NOT_FOUND") {
  server("node-b", "10.0.0.21");
  auto r = p().exists(node("node-b"));
  CHECK(r.ok());
  CHECK(r.existence == CCM_EXISTENCE_EXISTS);
  // A regex metacharacter in the name must not match other servers.
  server("node-bx", "10.0.0.22");
  r = p().exists(node("node-b"));
  CHECK(r.existence == CCM_EXISTENCE_EXISTS);
  r = p().exists(node("no-such-node"));
  CHECK(r.status != CCM_STATUS_OK);
  CHECK(r.existence == CCM_EXISTENCE_UNKNOWN);
}

TEST_CASE_FIXTURE(Fixture, "exists: a foreign region or malformed providerID is an error") {
  auto r = p().exists(node("n", "openstack://RegionTwo/abc"));
  CHECK(r.status == CCM_STATUS_INVALID_ARGUMENT);
  CHECK(r.existence == CCM_EXISTENCE_UNKNOWN);
  r = p().exists(node("n", "aws:///i-123"));
  CHECK(r.status == CCM_STATUS_INVALID_ARGUMENT);
  std::string id = server("node-r", "10.0.0.23");
  r = p().exists(node("n", "openstack://RegionOne/" + id));
  CHECK(r.existence == CCM_EXISTENCE_EXISTS);
  r = p().exists(node("n", "/" + id));  // the short form OCCM accepts
  CHECK(r.existence == CCM_EXISTENCE_EXISTS);
}

TEST_CASE_FIXTURE(Fixture, "shutdown: SHUTOFF only") {
  std::string id = server("node-s", "10.0.0.24", R"(,"status":"SHUTOFF")");
  auto r = p().shutdown(node("node-s", "openstack:///" + id));
  CHECK(r.ok());
  CHECK(r.power == CCM_POWER_SHUTDOWN);
  for (const char* st : {"ACTIVE", "PAUSED", "SHELVED_OFFLOADED", "ERROR"}) {
    sim.post("/_sim/set_server", R"({"id":")" + id + R"(","status":")" + st + R"("})");
    r = p().shutdown(node("node-s", "openstack:///" + id));
    CHECK(r.ok());
    CHECK(r.power == CCM_POWER_RUNNING);
  }
  r = p().shutdown(node("node-s", "openstack:///gone"));
  CHECK(r.status == CCM_STATUS_NOT_FOUND);
  CHECK(r.power == CCM_POWER_UNKNOWN);
}

TEST_CASE_FIXTURE(Fixture, "metadata: provider ID, flavor from microversion 2.47, zone, region") {
  std::string id = server("node-m", "10.0.0.25", R"j(,"flavor":"flv-large","az":"zone 1 (east)")j");
  sim.clearRequests();
  auto r = p().metadata(node("node-m"));
  REQUIRE(r.ok());
  REQUIRE(r.metadata.count(0) == 1);
  const InstanceMetadata& md = r.metadata[0];
  CHECK(md.provider_id == "openstack:///" + id);
  CHECK(md.instance_type == "m1.large");
  CHECK(md.zone == "zone-1-east");
  CHECK(md.region == "RegionOne");
  CHECK(hasAddress(md, "InternalIP", "10.0.0.25"));
  // The flavor came embedded: no flavor GET, and the microversion header was sent.
  CHECK(countRequests(sim, "GET", "compute", "^/flavors/") == 0);
  auto reqs = sim.requests();
  auto servers = matching(reqs, "GET", "compute", "^/servers");
  REQUIRE(!servers.empty());
  CHECK(str((*servers[0])["headers"], "x-openstack-nova-api-version") == "2.47");
}

TEST_CASE_FIXTURE(Fixture, "metadata: an old Nova (no 2.47) falls back to a cached flavor GET") {
  sim.config(R"({"nova_max_microversion":"2.40"})");
  std::string a = server("node-o1", "10.0.0.26");
  std::string b = server("node-o2", "10.0.0.27");
  auto& prov = p("os-endpoint-type = public");  // a fresh provider: microversion not yet known
  sim.clearRequests();
  auto r = prov.metadata(node("node-o1", "openstack:///" + a));
  REQUIRE(r.ok());
  CHECK(r.metadata[0].instance_type == "m1.small");
  r = prov.metadata(node("node-o2", "openstack:///" + b));
  REQUIRE(r.ok());
  CHECK(r.metadata[0].instance_type == "m1.small");
  CHECK(countRequests(sim, "GET", "compute", "^/flavors/flv-small$") == 1);
}

TEST_CASE_FIXTURE(Fixture, "metadata: NOT_FOUND for a deleted server") {
  auto r = p().metadata(node("node-x", "openstack:///deleted-id"));
  CHECK(r.status == CCM_STATUS_NOT_FOUND);
  CHECK(r.metadata.empty());
}

TEST_CASE_FIXTURE(Fixture, "addresses: Neutron ports first, access IPs, hostname, floating") {
  std::string id = sim.addServer(R"({"name":"node-addr","access_ipv4":"198.51.100.9",
    "metadata":{"hostname":"node-addr.example"},
    "networks":[{"network":"private","ip":"10.0.0.30","floating":"172.24.4.50"},
                {"network":"private","ip":"fd00::30"}]})");
  auto r = p().metadata(node("node-addr", "openstack:///" + id));
  REQUIRE(r.ok());
  std::vector<NodeAddress> want = {{"InternalIP", "10.0.0.30"},
                {"InternalIP", "fd00::30"},
                {"ExternalIP", "198.51.100.9"},
                {"Hostname", "node-addr.example"},
                {"ExternalIP", "172.24.4.50"}};
  CHECK(r.metadata[0].addresses == want);
}

TEST_CASE_FIXTURE(Fixture, "addresses: ports that are not ACTIVE are skipped") {
  std::string id = sim.addServer(R"({"name":"node-down",
    "networks":[{"network":"private","ip":"10.0.0.31","port_status":"DOWN"}],
    "nova_only":{}})");
  auto r = p().metadata(node("node-down", "openstack:///" + id));
  REQUIRE(r.ok());
  // The address still comes from Nova's list, after the (empty) Neutron part.
  std::vector<NodeAddress> want = {{"InternalIP", "10.0.0.31"}};
  CHECK(r.metadata[0].addresses == want);
}

TEST_CASE_FIXTURE(Fixture, "addresses: public and internal network names, IPv6 switch") {
  sim.post("/_sim/add", R"({"kind":"networks","object":{"id":"net-ext","name":"provider-ext"}})");
  sim.post("/_sim/add", R"({"kind":"subnets","object":{"id":"sub-ext","network_id":"net-ext",
           "cidr":"192.0.2.0/24"}})");
  sim.post("/_sim/add", R"({"kind":"networks","object":{"id":"net-stor","name":"storage"}})");
  sim.post("/_sim/add", R"({"kind":"subnets","object":{"id":"sub-stor","network_id":"net-stor",
           "cidr":"10.9.0.0/24"}})");
  std::string id = sim.addServer(R"({"name":"node-nets","networks":[
    {"network":"private","ip":"10.0.0.40"},{"network":"private","ip":"fd00::40"},
    {"network":"provider-ext","ip":"192.0.2.40"},{"network":"storage","ip":"10.9.0.40"}]})");
  std::string sections =
      "[Networking]\n"
      "public-network-name = provider-ext\n"
      "internal-network-name = private\n"
      "ipv6-support-disabled = true\n";
  auto r = p("", sections).metadata(node("node-nets", "openstack:///" + id));
  REQUIRE(r.ok());
  // provider-ext: ExternalIP (its Neutron InternalIP is removed); storage: not listed as
  // internal, so its address is dropped entirely; IPv6 dropped.
  std::vector<NodeAddress> want = {{"InternalIP", "10.0.0.40"}, {"ExternalIP", "192.0.2.40"}};
  CHECK(r.metadata[0].addresses == want);
}

TEST_CASE_FIXTURE(Fixture, "addresses: address-sort-order") {
  std::string id = sim.addServer(R"({"name":"node-sort","access_ipv4":"198.51.100.7",
    "networks":[{"network":"private","ip":"10.0.0.52"},{"network":"private","ip":"10.0.0.51"}]})");
  std::string sections = "[Networking]\naddress-sort-order = 198.51.100.0/24, 10.0.0.0/24\n";
  auto r = p("", sections).metadata(node("node-sort", "openstack:///" + id));
  REQUIRE(r.ok());
  std::vector<NodeAddress> want = {
      {"ExternalIP", "198.51.100.7"}, {"InternalIP", "10.0.0.51"}, {"InternalIP", "10.0.0.52"}};
  CHECK(r.metadata[0].addresses == want);
}

TEST_CASE_FIXTURE(Fixture, "addresses: trunk sub-ports add their network's addresses") {
  sim.post("/_sim/add", R"({"kind":"networks","object":{"id":"net-vlan","name":"vlan100"}})");
  sim.post("/_sim/add", R"({"kind":"subnets","object":{"id":"sub-vlan","network_id":"net-vlan",
           "cidr":"10.100.0.0/24"}})");
  std::string id = sim.addServer(R"({"name":"node-trunk",
    "networks":[{"network":"private","ip":"10.0.0.60"}],
    "trunk_subports":[{"network":"vlan100","ip":"10.100.0.60"}]})");
  auto r = p().metadata(node("node-trunk", "openstack:///" + id));
  REQUIRE(r.ok());
  CHECK(hasAddress(r.metadata[0], "InternalIP", "10.100.0.60"));
}

TEST_CASE_FIXTURE(Fixture, "regional provider IDs with OS_CCM_REGIONAL=true") {
  setenv("OS_CCM_REGIONAL", "true", 1);
  std::string id = server("node-reg", "10.0.0.70");
  auto& prov = p("os-endpoint-type = public\n#regional");
  unsetenv("OS_CCM_REGIONAL");
  auto r = prov.metadata(node("node-reg"));
  REQUIRE(r.ok());
  CHECK(r.metadata[0].provider_id == "openstack://RegionOne/" + id);
}

TEST_CASE_FIXTURE(Fixture, "batch: one server list and one port list answer many nodes") {
  std::vector<Node> nodes;
  for (int i = 0; i < 6; ++i) {
    std::string name = "batch-" + std::to_string(i);
    std::string id = server(name, "10.0.0." + std::to_string(100 + i));
    // Half the nodes have a providerID, half are found by name.
    nodes.push_back(node(name, i % 2 == 0 ? "openstack:///" + id : ""));
  }
  nodes.push_back(node("ghost", "openstack:///no-such-server"));
  nodes.push_back(node("ghost-by-name", ""));
  sim.clearRequests();
  auto r = p().metadataBatch(nodes);
  REQUIRE(r.ok());
  CHECK(countRequests(sim, "GET", "compute", "^/servers/detail") == 1);
  CHECK(countRequests(sim, "GET", "compute", "^/servers/[^d]") == 0);
  CHECK(countRequests(sim, "GET", "network", "^/v2.0/ports$") == 1);
  for (int i = 0; i < 6; ++i) {
    REQUIRE(r.metadata.count(static_cast<size_t>(i)) == 1);
    CHECK(r.metadata[static_cast<size_t>(i)].addresses ==
          std::vector<NodeAddress>{{"InternalIP", "10.0.0." + std::to_string(100 + i)}});
  }
  REQUIRE(r.item_errors.count(6) == 1);
  CHECK(r.item_errors[6].first == CCM_STATUS_NOT_FOUND);
  REQUIRE(r.item_errors.count(7) == 1);
}

TEST_CASE_FIXTURE(Fixture, "batch: server list pages are followed") {
  sim.config(R"({"nova_max_limit":2})");
  std::vector<Node> nodes;
  for (int i = 0; i < 5; ++i) {
    std::string name = "paged-" + std::to_string(i);
    server(name, "10.0.0." + std::to_string(150 + i));
    nodes.push_back(node(name, ""));
  }
  sim.clearRequests();
  auto r = p().metadataBatch(nodes);
  REQUIRE(r.ok());
  CHECK(r.metadata.size() == 5);
  CHECK(countRequests(sim, "GET", "compute", "^/servers/detail") == 3);
}

TEST_CASE_FIXTURE(Fixture, "a request that outlives the call's deadline is cut off") {
  std::string id = server("node-slow", "10.0.0.81");
  auto& prov = p();
  REQUIRE(prov.exists(node("node-slow", "openstack:///" + id)).ok());  // warm: token in hand
  sim.fault(R"({"path":"/compute/","status":200,"count":1,"delay_s":20,"body":{}})");
  auto r = prov.exists(node("node-slow", "openstack:///" + id), 1000);
  CHECK(r.status == CCM_STATUS_DEADLINE_EXCEEDED);
}

TEST_CASE_FIXTURE(Fixture, "a request in flight is aborted when the host cancels the call") {
  std::string id = server("node-hang", "10.0.0.82");
  auto& prov = p();
  REQUIRE(prov.exists(node("node-hang", "openstack:///" + id)).ok());
  sim.fault(R"({"path":"/compute/","status":200,"count":1,"delay_s":20,"body":{}})");
  sim.clearRequests();
  std::thread canceller([&] {
    // Cancel once the request is in the simulator's hands (its log shows it).
    for (int i = 0; i < 2000; ++i) {
      auto reqs = sim.requests();
      if (!matching(reqs, "GET", "compute").empty()) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    TestHost::instance().setCancelAll(true);
  });
  auto r = prov.exists(node("node-hang", "openstack:///" + id));
  canceller.join();
  TestHost::instance().setCancelAll(false);
  CHECK(r.status == CCM_STATUS_CANCELLED);
  CHECK(r.existence == CCM_EXISTENCE_UNKNOWN);
}

TEST_CASE_FIXTURE(Fixture, "instances: cancelled calls stop with CANCELLED") {
  std::string id = server("node-c", "10.0.0.80");
  auto& prov = p();
  TestHost::instance().setCancelAll(true);
  auto r = prov.exists(node("node-c", "openstack:///" + id));
  TestHost::instance().setCancelAll(false);
  CHECK(r.status == CCM_STATUS_CANCELLED);
  CHECK(r.existence == CCM_EXISTENCE_UNKNOWN);
}

namespace {

// Open sockets of this process.
int openSockets() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    auto target = std::filesystem::read_symlink(e.path(), ec);
    if (!ec && target.string().rfind("socket:", 0) == 0) {
      ++n;
    }
  }
  return n;
}

}  // namespace

TEST_CASE_FIXTURE(Fixture,
                  "Connection: close after every answer: no errors, no leaked sockets (fault 6)") {
  std::string id = server("node-cc", "10.0.0.66");
  auto& prov = p();
  REQUIRE(prov.exists(node("node-cc", "openstack:///" + id)).ok());
  sim.config(R"({"connection_close":true})");
  REQUIRE(prov.exists(node("node-cc", "openstack:///" + id)).ok());
  int before = openSockets();
  for (int i = 0; i < 40; ++i) {
    auto r = prov.metadata(node("node-cc", "openstack:///" + id));
    REQUIRE_MESSAGE(r.ok(), r.error);
    auto e = prov.exists(node("node-cc", "openstack:///gone-" + std::to_string(i)));
    REQUIRE_MESSAGE(e.ok(), e.error);
    CHECK(e.existence == CCM_EXISTENCE_NOT_FOUND);
  }
  CHECK(openSockets() <= before + 1);
  sim.config(R"({"connection_close":false})");
}
