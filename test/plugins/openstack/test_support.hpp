// Helpers shared by the openstack plugin tests: a cloud.conf for the simulator, and queries
// over the simulator's state and request log.
#pragma once

#include <rapidjson/document.h>

#include <regex>
#include <string>
#include <vector>

#include "test/plugins/openstack/test_host.hpp"
#include "test/plugins/openstack/sim_process.hpp"

namespace ccm::openstack::testing {

// A valid cloud.conf for the simulator (password auth, RegionOne), plus extra text appended
// (more sections, or more [Global] keys when extra starts with a key line).
inline std::string cloudConf(const SimProcess& sim, const std::string& global_extra = "",
                             const std::string& sections = "") {
  return "[Global]\n"
         "auth-url = " +
         sim.url() +
         "/identity/v3\n"
         "username = demo\n"
         "password = demo-password\n"
         "user-domain-name = Default\n"
         "tenant-id = p-demo\n"
         "region = RegionOne\n" +
         global_extra + "\n" + sections;
}

// The requests the simulator served that match method (empty = any), service and a regex
// over the service-relative path. Requests answered 401 are left out: the simulator forgets
// its tokens on reset, so a provider kept across tests re-authenticates once (tested
// separately in test_keystone.cpp).
inline std::vector<const rapidjson::Value*> matching(const rapidjson::Document& reqs,
                                                     const std::string& method,
                                                     const std::string& service,
                                                     const std::string& rel_regex = ".*") {
  std::vector<const rapidjson::Value*> out;
  std::regex re(rel_regex);
  for (const auto& r : reqs["requests"].GetArray()) {
    if (!method.empty() && method != r["method"].GetString()) {
      continue;
    }
    if (!service.empty() && service != r["service"].GetString()) {
      continue;
    }
    if (!std::regex_search(std::string(r["rel"].GetString()), re)) {
      continue;
    }
    if (r.HasMember("status") && r["status"].IsInt() && r["status"].GetInt() == 401) {
      continue;
    }
    out.push_back(&r);
  }
  return out;
}

inline size_t countRequests(SimProcess& sim, const std::string& method, const std::string& service,
                            const std::string& rel_regex = ".*") {
  auto reqs = sim.requests();
  return matching(reqs, method, service, rel_regex).size();
}

// Requests that changed something (POST/PUT/DELETE) to Nova, Neutron or Octavia.
inline size_t countMutations(SimProcess& sim) {
  auto reqs = sim.requests();
  size_t n = 0;
  for (const auto& r : reqs["requests"].GetArray()) {
    std::string m = r["method"].GetString();
    std::string s = r["service"].GetString();
    if (s != "identity" && (m == "POST" || m == "PUT" || m == "DELETE")) {
      ++n;
    }
  }
  return n;
}

inline std::string str(const rapidjson::Value& v, const char* key) {
  auto it = v.FindMember(key);
  if (it == v.MemberEnd() || !it->value.IsString()) {
    return {};
  }
  return it->value.GetString();
}

// Objects of one kind in the simulator state (e.g. "loadbalancers").
inline std::vector<const rapidjson::Value*> objects(const rapidjson::Document& state,
                                                    const char* kind) {
  std::vector<const rapidjson::Value*> out;
  for (const auto& o : state[kind].GetArray()) {
    out.push_back(&o);
  }
  return out;
}

// The value of a log line's structured field (log_fields), empty when it has none.
inline std::string logField(const LogLine& line, const std::string& key) {
  for (const auto& [k, v] : line.fields) {
    if (k == key) {
      return v;
    }
  }
  return {};
}

// The [LoadBalancer] section most load-balancer tests start from: VIPs on the private
// subnet, floating IPs from the public network.
inline constexpr const char* kLbSection =
    "[LoadBalancer]\n"
    "subnet-id = sub-private\n"
    "floating-network-id = net-public\n";

// The object of one kind named `name` in the simulator state, or nullptr.
inline const rapidjson::Value* byName(const rapidjson::Document& state, const char* kind,
                                      const std::string& name) {
  for (const auto& o : state[kind].GetArray()) {
    if (str(o, "name") == name) {
      return &o;
    }
  }
  return nullptr;
}

// A shared provider against the shared simulator, re-created when the config changes (or a
// test created another in between).
inline Provider& provider(const std::string& config) {
  static std::string current;
  static std::unique_ptr<Provider> p;
  if (!p || !p->current() || current != config) {
    p.reset();
    auto [r, created] = TestHost::instance().create(config);
    if (!r.ok()) {
      throw std::runtime_error("create failed: " + r.error);
    }
    p = std::move(created);
    current = config;
  }
  return *p;
}


// The state every test against the simulator starts from: a reset simulator, a host with no
// logs, and the nodes (servers on the private network) added so far.
struct SimFixture {
  SimProcess& sim = SimProcess::shared();
  TestHost& host = TestHost::instance();
  std::vector<Node> nodes;

  SimFixture() {
    sim.reset();
    host.clearLogs();
  }

  // A server on the private network with an IPv4 address and, when ipv6 is set, an IPv6 one,
  // and its node.
  Node& addServerNode(const std::string& name, const std::string& ipv4,
                       const std::string& ipv6 = "") {
    std::string id;
    if (ipv6.empty()) {
      id = sim.addPrivateServer(name, ipv4);
      nodes.push_back(node(name, "openstack:///" + id, {{"InternalIP", ipv4}}));
    } else {
      id = sim.addServer(R"({"name":")" + name + R"(","networks":[{"network":"private","ip":")" +
                         ipv4 + R"("},{"network":"private","ip":")" + ipv6 + R"("}]})");
      nodes.push_back(
          node(name, "openstack:///" + id, {{"InternalIP", ipv4}, {"InternalIP", ipv6}}));
    }
    return nodes.back();
  }
};

}  // namespace ccm::openstack::testing
