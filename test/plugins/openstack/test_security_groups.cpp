// manage-security-groups through the ABI against the simulated Neutron: the Service's group,
// its rules (node ports, health-check node port, source ranges with ovn), its attachment to
// the member ports as nodes join and leave, its deletion, groups and rules this cluster did
// not make, ports with port security off, and recovery from a half-done attempt.
#include <doctest/doctest.h>

#include <set>

#include "test/plugins/openstack/test_support.hpp"

using namespace ccm::openstack::testing;

namespace {

// The group of the Service web() (in namespace default, with the fake host's default UID).
const std::string kGroupName = "lb-sg-" + Service{}.uid + "-default-web";
const std::string kGroupDescription =
    "Security Group for default/web Service LoadBalancer in cluster kubernetes";

struct Fixture : SimFixture {
  Fixture() {
    for (int i = 1; i <= 3; ++i) {
      nodes.push_back(addNode(i));
    }
  }

  Node addNode(int i, const std::string& extra_network = "") {
    std::string name = "node-" + std::to_string(i);
    std::string ip = "10.0.0." + std::to_string(10 + i);
    std::string id =
        sim.addServer(R"({"name":")" + name + R"(","networks":[{"network":"private","ip":")" + ip +
                      "\"" + extra_network + "}]}");
    return node(name, "openstack:///" + id, {{"InternalIP", ip}, {"Hostname", name}});
  }

  Provider& p(const std::string& lb_extra = "") {
    return provider(cloudConf(sim, "",
                              "[LoadBalancer]\nsubnet-id = sub-private\n"
                              "floating-network-id = net-public\n"
                              "manage-security-groups = true\n" +
                                  lb_extra));
  }

  static Service web() {
    Service s;
    s.name = "web";
    s.ports = {{"http", "TCP", 80, 30080}, {"dns", "UDP", 53, 30053}};
    return s;
  }

  // The groups named kGroupName.
  std::vector<std::string> groupIds(const rapidjson::Document& st) {
    std::vector<std::string> out;
    for (const auto& g : st["security_groups"].GetArray()) {
      if (str(g, "name") == kGroupName) {
        out.push_back(str(g, "id"));
      }
    }
    return out;
  }

  std::string groupId(const rapidjson::Document& st) {
    auto ids = groupIds(st);
    REQUIRE(ids.size() == 1);
    return ids.front();
  }

  // The group's ingress rules as "protocol/port from prefix".
  std::set<std::string> ingress(const rapidjson::Document& st, const std::string& gid) {
    std::set<std::string> out;
    for (const auto& r : st["security_group_rules"].GetArray()) {
      if (str(r, "security_group_id") != gid || str(r, "direction") != "ingress") {
        continue;
      }
      out.insert(str(r, "protocol") + "/" + std::to_string(r["port_range_min"].GetInt()) +
                 " from " + str(r, "remote_ip_prefix"));
    }
    return out;
  }

  // The first fixed IPs of the ports that carry the group.
  std::set<std::string> attached(const rapidjson::Document& st, const std::string& gid) {
    std::set<std::string> out;
    for (const auto& port : st["ports"].GetArray()) {
      for (const auto& g : port["security_groups"].GetArray()) {
        if (g.GetString() == gid) {
          out.insert(str(port["fixed_ips"][0], "ip_address"));
        }
      }
    }
    return out;
  }
};

const std::set<std::string> kAllNodes{"10.0.0.11", "10.0.0.12", "10.0.0.13"};

}  // namespace

TEST_CASE_FIXTURE(Fixture, "create: one group, a rule per node port, on every member port") {
  Service s = web();
  s.external_traffic_policy = "Local";
  s.health_check_node_port = 32100;
  auto r = p().ensureSettled(s, nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  auto st = sim.state();
  std::string gid = groupId(st);
  for (const auto& g : st["security_groups"].GetArray()) {
    if (str(g, "id") == gid) {
      CHECK(str(g, "description") == kGroupDescription);
    }
  }
  CHECK(ingress(st, gid) == std::set<std::string>{"tcp/30080 from 10.0.0.0/24",
                                                  "udp/30053 from 10.0.0.0/24",
                                                  "tcp/32100 from 10.0.0.0/24"});
  CHECK(attached(st, gid) == kAllNodes);

  // Again: nothing changes, no Neutron write.
  sim.clearRequests();
  REQUIRE(p().ensureSettled(s, nodes).ok());
  CHECK(countMutations(sim) == 0);
}

TEST_CASE_FIXTURE(Fixture, "nodes join and leave: only the changed ports are looked up") {
  REQUIRE(p().ensureSettled(web(), nodes).ok());
  std::string gid = groupId(sim.state());

  std::vector<Node> more = nodes;
  more.push_back(addNode(4));
  sim.clearRequests();
  auto r = p().update(web(), more);
  REQUIRE_MESSAGE(r.ok(), r.error);
  CHECK(attached(sim.state(), gid) ==
        std::set<std::string>{"10.0.0.11", "10.0.0.12", "10.0.0.13", "10.0.0.14"});
  // One lookup for the ports that have the group, one for the new node's port.
  CHECK(countRequests(sim, "GET", "network", "/ports") == 2);
  CHECK(countRequests(sim, "PUT", "network", "/ports/") == 1);

  std::vector<Node> fewer = {more[1], more[2], more[3]};
  sim.clearRequests();
  REQUIRE(p().update(web(), fewer).ok());
  CHECK(attached(sim.state(), gid) == std::set<std::string>{"10.0.0.12", "10.0.0.13", "10.0.0.14"});
  CHECK(countRequests(sim, "GET", "network", "/ports") == 1);
  CHECK(countRequests(sim, "PUT", "network", "/ports/") == 1);
}

TEST_CASE_FIXTURE(Fixture, "a changed node port replaces its rule (OCCM #2003 left it open)") {
  REQUIRE(p().ensureSettled(web(), nodes).ok());
  Service s = web();
  s.ports[0].node_port = 31080;
  REQUIRE(p().ensureSettled(s, nodes).ok());
  auto st = sim.state();
  CHECK(ingress(st, groupId(st)) ==
        std::set<std::string>{"tcp/31080 from 10.0.0.0/24", "udp/30053 from 10.0.0.0/24"});
}

TEST_CASE_FIXTURE(Fixture, "ovn: the rules follow loadBalancerSourceRanges") {
  Service s = web();
  s.ports = {{"http", "TCP", 80, 30080}};
  s.source_ranges = {"192.0.2.0/24", "198.51.100.7/32"};
  auto r = p("lb-provider = ovn\n").ensureSettled(s, nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  auto st = sim.state();
  std::string gid = groupId(st);
  CHECK(ingress(st, gid) ==
        std::set<std::string>{"tcp/30080 from 192.0.2.0/24", "tcp/30080 from 198.51.100.7/32"});
  s.source_ranges = {"203.0.113.0/24"};
  REQUIRE(p("lb-provider = ovn\n").ensureSettled(s, nodes).ok());
  st = sim.state();
  CHECK(ingress(st, gid) == std::set<std::string>{"tcp/30080 from 203.0.113.0/24"});
  s.source_ranges.clear();
  REQUIRE(p("lb-provider = ovn\n").ensureSettled(s, nodes).ok());
  st = sim.state();
  CHECK(ingress(st, gid) == std::set<std::string>{"tcp/30080 from 0.0.0.0/0"});
}

TEST_CASE_FIXTURE(Fixture, "delete: detached from every port, then deleted; nothing left") {
  REQUIRE(p().ensureSettled(web(), nodes).ok());
  std::string gid = groupId(sim.state());
  auto r = p().removeSettled(web());
  REQUIRE_MESSAGE(r.ok(), r.error);
  auto st = sim.state();
  CHECK(groupIds(st).empty());
  CHECK(attached(st, gid).empty());
  for (const auto& rule : st["security_group_rules"].GetArray()) {
    CHECK(str(rule, "security_group_id") != gid);
  }
  CHECK(st["loadbalancers"].Size() == 0);
  // Deleting again finds nothing to do.
  REQUIRE(p().removeSettled(web()).ok());
}

TEST_CASE_FIXTURE(Fixture, "groups and rules this cluster did not make are left alone") {
  // Another group on node-1's port, and a rule someone added to the Service's group.
  auto other = sim.post("/_sim/add", R"({"kind":"security_groups","object":{"name":"ops"}})");
  std::string other_id = str(other, "id");
  REQUIRE(p().ensureSettled(web(), nodes).ok());
  auto st = sim.state();
  std::string gid = groupId(st);
  std::string port1;
  for (const auto& port : st["ports"].GetArray()) {
    if (str(port["fixed_ips"][0], "ip_address") == "10.0.0.11") {
      port1 = str(port, "id");
    }
  }
  REQUIRE(!port1.empty());
  sim.post("/_sim/add", R"({"kind":"security_group_rules","object":{"security_group_id":")" + gid +
                            R"(","direction":"ingress","protocol":"tcp","port_range_min":22,
      "port_range_max":22,"remote_ip_prefix":"10.9.0.0/16","description":"ops: ssh"}})");
  // The provider keeps the other group on the port when it attaches its own.
  Service s = web();
  s.ports[0].node_port = 31080;
  REQUIRE(p().ensureSettled(s, nodes).ok());
  st = sim.state();
  CHECK(ingress(st, gid).count("tcp/22 from 10.9.0.0/16") == 1);

  // A group with the Service's group name but another cluster's description.
  Service t = web();
  t.name = "api";
  std::string foreign_name = "lb-sg-" + t.uid + "-default-api";
  auto foreign = sim.post("/_sim/add", R"({"kind":"security_groups","object":{"name":")" +
                                           foreign_name + R"(","description":"someone else's"}})");
  auto r = p().ensureSettled(t, nodes);
  CHECK(r.status == CCM_STATUS_FAILED_PRECONDITION);
  CHECK(r.error.find("was not made by this cluster") != std::string::npos);
  REQUIRE(p().removeSettled(t).ok());
  REQUIRE(p().removeSettled(s).ok());
  st = sim.state();
  std::set<std::string> left;
  for (const auto& g : st["security_groups"].GetArray()) {
    left.insert(str(g, "id"));
  }
  CHECK(left == std::set<std::string>{other_id, str(foreign, "id")});
}

TEST_CASE_FIXTURE(Fixture, "ports with port security off are left alone, with a log line") {
  nodes.push_back(addNode(4, R"(,"port_security":false)"));
  auto r = p().ensureSettled(web(), nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  auto st = sim.state();
  CHECK(attached(st, groupId(st)) == std::set<std::string>{"10.0.0.11", "10.0.0.12", "10.0.0.13"});
  CHECK(host.logged("port security off"));
  // The skipped port is remembered: the next reconcile does not look it up again.
  sim.clearRequests();
  REQUIRE(p().update(web(), nodes).ok());
  CHECK(countRequests(sim, "GET", "network", "/ports") == 1);
  REQUIRE(p().removeSettled(web()).ok());
  CHECK(groupIds(sim.state()).empty());
}

TEST_CASE_FIXTURE(Fixture, "a half-done attempt is finished by the next one") {
  // The rule create fails once after the group was made; then a port update fails once.
  sim.fault(R"({"path":"/security-group-rules$","method":"POST","status":500,"count":1})");
  auto r = p().ensure(web(), nodes);
  CHECK_FALSE(r.ok());
  sim.fault(R"({"path":"/ports/","method":"PUT","status":500,"count":1})");
  r = p().ensure(web(), nodes);
  CHECK_FALSE(r.ok());
  r = p().ensureSettled(web(), nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  auto st = sim.state();
  std::string gid = groupId(st);  // exactly one group
  CHECK(ingress(st, gid) ==
        std::set<std::string>{"tcp/30080 from 10.0.0.0/24", "udp/30053 from 10.0.0.0/24"});
  CHECK(attached(st, gid) == kAllNodes);

  // A deletion stopped half-way (the group still in use: Neutron's 409) is finished too.
  sim.fault(R"({"path":"/security-groups/","method":"DELETE","status":409,"count":1})");
  r = p().remove(web());
  CHECK_FALSE(r.ok());
  REQUIRE(p().removeSettled(web()).ok());
  CHECK(groupIds(sim.state()).empty());
}

TEST_CASE_FIXTURE(Fixture, "nothing to open empties nothing (OCCM #2699 emptied every group)") {
  REQUIRE(p().ensureSettled(web(), nodes).ok());
  auto st = sim.state();
  std::string gid = groupId(st);
  auto rules = ingress(st, gid);
  REQUIRE(rules.size() == 2);
  // The same Service seen without node ports and with no node: rules and attachments stay.
  Service s = web();
  for (auto& port : s.ports) {
    port.node_port = 0;
  }
  auto r = p().update(s, {});
  REQUIRE_MESSAGE(r.ok(), r.error);
  st = sim.state();
  CHECK(ingress(st, gid) == rules);
  CHECK(attached(st, gid) == kAllNodes);
  CHECK(host.logged("rules are kept"));
}

TEST_CASE_FIXTURE(Fixture, "a rule Neutron already has (409) counts as made") {
  REQUIRE(p().ensureSettled(web(), nodes).ok());
  auto st = sim.state();
  std::string gid = groupId(st);
  // The rule list comes back empty once: the provider creates rules that exist, and
  // Neutron's 409 for each is taken as done; nothing is duplicated or removed.
  sim.fault(R"({"path":"/security-group-rules$","method":"GET","status":200,"count":1,
    "body":{"security_group_rules":[]}})");
  sim.clearRequests();
  auto r = p().update(web(), nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  CHECK(countRequests(sim, "POST", "network", "/security-group-rules$") == 2);
  auto after = sim.state();
  CHECK(ingress(after, gid) == ingress(st, gid));
  CHECK(after["security_group_rules"].Size() == st["security_group_rules"].Size());
}

TEST_CASE_FIXTURE(Fixture, "IPv6: rules from the IPv6 member subnet, on the IPv6 ports") {
  std::vector<Node> v6_nodes;
  for (int i = 5; i <= 6; ++i) {
    std::string name = "node-" + std::to_string(i);
    std::string ip4 = "10.0.0." + std::to_string(10 + i);
    std::string ip6 = "fd00::" + std::to_string(10 + i);
    std::string id = sim.addServer(R"({"name":")" + name +
                                   R"(","networks":[{"network":"private","ip":")" + ip4 +
                                   R"("},{"network":"private","ip":")" + ip6 + R"("}]})");
    v6_nodes.push_back(node(name, "openstack:///" + id,
                            {{"InternalIP", ip4}, {"InternalIP", ip6}, {"Hostname", name}}));
  }
  Service s = web();
  s.ports = {{"http", "TCP", 80, 30080}};
  s.ip_families = {"IPv6"};
  s.annotations = {{"loadbalancer.openstack.org/subnet-id", "sub-private6"}};
  auto r = p().ensureSettled(s, v6_nodes);
  REQUIRE_MESSAGE(r.ok(), r.error);
  auto st = sim.state();
  std::string gid = groupId(st);
  CHECK(ingress(st, gid) == std::set<std::string>{"tcp/30080 from fd00::/64"});
  for (const auto& rule : st["security_group_rules"].GetArray()) {
    if (str(rule, "security_group_id") == gid && str(rule, "direction") == "ingress") {
      CHECK(str(rule, "ethertype") == "IPv6");
    }
  }
  CHECK(attached(st, gid) == std::set<std::string>{"fd00::15", "fd00::16"});
}

namespace {

// A node with an IPv4 and an IPv6 address on the private network (a port each).
Node dualStackNode(SimProcess& sim, int i) {
  std::string name = "node6-" + std::to_string(i);
  std::string ip4 = "10.0.0." + std::to_string(20 + i);
  std::string ip6 = "fd00::" + std::to_string(20 + i);
  std::string id =
      sim.addServer(R"({"name":")" + name + R"(","networks":[{"network":"private","ip":")" + ip4 +
                    R"("},{"network":"private","ip":")" + ip6 + R"("}]})");
  return node(name, "openstack:///" + id, {{"InternalIP", ip4}, {"InternalIP", ip6}});
}

Service dualStackWeb(const std::string& policy = "RequireDualStack") {
  Service s;
  s.name = "web";
  s.ports = {{"http", "TCP", 80, 30080}};
  s.ip_families = {"IPv4", "IPv6"};
  s.object_json = ipFamilyPolicyJson(policy);
  return s;
}

// The group's ingress rules as "ethertype protocol/port from prefix".
std::set<std::string> ingressWithEthertype(const rapidjson::Document& st, const std::string& gid) {
  std::set<std::string> out;
  for (const auto& r : st["security_group_rules"].GetArray()) {
    if (str(r, "security_group_id") == gid && str(r, "direction") == "ingress") {
      out.insert(str(r, "ethertype") + " " + str(r, "protocol") + "/" +
                 std::to_string(r["port_range_min"].GetInt()) + " from " +
                 str(r, "remote_ip_prefix"));
    }
  }
  return out;
}

}  // namespace

TEST_CASE_FIXTURE(Fixture, "dual-stack with a second _ipv6 load balancer: IPv6 rules and ports") {
  sim.config(R"({"octavia_versions":["v2.0","v2.5","v2.16"]})");  // no additional VIPs
  std::vector<Node> both = {dualStackNode(sim, 1), dualStackNode(sim, 2)};
  Provider& prov = p("# old octavia\n");
  auto r = prov.ensureSettled(dualStackWeb(), both);
  REQUIRE_MESSAGE(r.ok(), r.error);
  REQUIRE(r.lb_status->size() == 2);
  auto st = sim.state();
  std::string gid = groupId(st);
  CHECK(ingressWithEthertype(st, gid) ==
        std::set<std::string>{"IPv4 tcp/30080 from 10.0.0.0/24", "IPv6 tcp/30080 from fd00::/64"});
  CHECK(attached(st, gid) ==
        std::set<std::string>{"10.0.0.21", "10.0.0.22", "fd00::21", "fd00::22"});

  // Update follows the nodes on both sides, and keeps the IPv6 rules.
  both.push_back(dualStackNode(sim, 3));
  auto u = prov.update(dualStackWeb(), both);
  REQUIRE_MESSAGE(u.ok(), u.error);
  st = sim.state();
  CHECK(attached(st, gid).count("fd00::23") == 1);
  CHECK(attached(st, gid).count("10.0.0.23") == 1);
  CHECK(ingressWithEthertype(st, gid).count("IPv6 tcp/30080 from fd00::/64") == 1);

  // Back to IPv4 alone: the IPv6 load balancer goes, and so do its rules.
  Service v4 = dualStackWeb();
  v4.ip_families = {"IPv4"};
  v4.object_json = ipFamilyPolicyJson("SingleStack");
  REQUIRE(prov.ensureSettled(v4, both).ok());
  st = sim.state();
  CHECK(ingressWithEthertype(st, gid) == std::set<std::string>{"IPv4 tcp/30080 from 10.0.0.0/24"});
}

TEST_CASE_FIXTURE(Fixture,
                  "ovn dual-stack: each family's source ranges as rules of its ethertype") {
  std::vector<Node> both = {dualStackNode(sim, 1)};
  Service s = dualStackWeb();
  s.source_ranges = {"192.0.2.0/24", "2001:db8::/32"};
  auto r = p("lb-provider = ovn\n").ensureSettled(s, both);
  REQUIRE_MESSAGE(r.ok(), r.error);
  auto st = sim.state();
  std::string gid = groupId(st);
  CHECK(ingressWithEthertype(st, gid) ==
        std::set<std::string>{"IPv4 tcp/30080 from 192.0.2.0/24",
                              "IPv6 tcp/30080 from 2001:db8::/32"});
  CHECK(attached(st, gid) == std::set<std::string>{"10.0.0.21", "fd00::21"});

  // No source ranges: open to each family's whole address space.
  s.source_ranges.clear();
  REQUIRE(p("lb-provider = ovn\n").ensureSettled(s, both).ok());
  st = sim.state();
  CHECK(ingressWithEthertype(st, gid) ==
        std::set<std::string>{"IPv4 tcp/30080 from 0.0.0.0/0", "IPv6 tcp/30080 from ::/0"});
}
