// CloudState: what the fake cloud has created — load balancers and routes — and the counters
// tests read. Plain data: StateStore keeps it, state_json.hpp gives its on-disk form.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ccm::fakecloud {

struct LbPort {
  std::string name;
  std::string protocol;
  int32_t port = 0;
  int32_t node_port = 0;
};

// A load balancer's backend node names. Load balancers given the same hosts share one list
// (LoadBalancers::ensure reuses the last list it made when the hosts are the same), and the
// state file writes each shared list once: with N load balancers on the same M nodes, a save
// writes M names, not N x M.
using NodeNames = std::shared_ptr<const std::vector<std::string>>;

struct LoadBalancerRecord {
  std::string name;  // the cloud name (upstream's default: "a" + UID without dashes)
  std::string cluster;
  std::string namespace_name;
  std::string service;
  std::string uid;
  std::string ip;
  std::string hostname;
  std::vector<LbPort> ports;
  NodeNames nodes;  // backend node names (never null once ensured)
  std::vector<std::string> source_ranges;
  int64_t ensures = 0;
  int64_t host_updates = 0;
};

struct RouteRecord {
  std::string name;
  std::string cluster;
  std::string target_node;
  std::string destination_cidr;
  std::string name_hint;
};

struct CloudState {
  std::map<std::string, LoadBalancerRecord> load_balancers;  // by name
  std::map<std::string, RouteRecord> routes;                 // by destination CIDR
  int64_t lb_creates = 0;
  int64_t lb_deletes = 0;
  int64_t route_creates = 0;
  int64_t route_deletes = 0;
  int64_t duplicate_route_creates = 0;  // creates for a route that already existed as asked
};

}  // namespace ccm::fakecloud
