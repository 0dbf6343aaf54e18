// Pure rules of the cloud node controller: addresses (upstream's TestGetNodeAddressesFromNodeIP,
// TestNodeAddressesChangeDetected, hostname preservation) and labels (reserved domains,
// no-overwrite of additional labels, beta -> stable reconciliation).
#include <doctest/doctest.h>

#include <algorithm>

#include "host/controllers/node/node_addresses.hpp"
#include "host/controllers/node/node_labels.hpp"
#include "host/kube/objects/node.hpp"

using namespace ccm;
using namespace ccm::controllers::node;

namespace {

std::shared_ptr<const kube::Node> node(const std::string& json) {
  auto n = kube::decodeNode(json);
  REQUIRE_MESSAGE(n.ok(), n.status().message());
  return *n;
}

std::shared_ptr<const kube::Node> nodeWith(const std::string& addresses,
                                           const std::string& annotations = "{}",
                                           const std::string& labels = "{}") {
  return node(R"({"metadata":{"name":"n1","uid":"u1","resourceVersion":"1","labels":)" + labels +
              R"(,"annotations":)" + annotations + R"(},"status":{"addresses":)" + addresses +
              "}}");
}

Addresses cloud(std::initializer_list<std::pair<const char*, const char*>> list) {
  Addresses out;
  for (auto [t, a] : list) {
    out.push_back({t, a});
  }
  return out;
}

}  // namespace

TEST_CASE("the kubelet's hostname survives when the cloud reports none") {
  auto n = nodeWith(R"([{"type":"Hostname","address":"n1.local"}])");
  auto out = withKubeletHostname(cloud({{"InternalIP", "10.0.0.1"}}), n->addresses());
  REQUIRE(out.size() == 2);
  CHECK(out[1].type == "Hostname");
  CHECK(out[1].address == "n1.local");
  // The cloud's own hostname wins.
  out = withKubeletHostname(cloud({{"InternalIP", "10.0.0.1"}, {"Hostname", "vm-1"}}),
                            n->addresses());
  REQUIRE(out.size() == 2);
  CHECK(out[1].address == "vm-1");
}

TEST_CASE("provided node IP: matched address first, same type dropped, others kept") {
  auto c = cloud({{"InternalIP", "10.0.0.1"},
                  {"InternalIP", "10.0.0.2"},
                  {"ExternalIP", "203.0.113.1"},
                  {"Hostname", "vm-1"},
                  {"InternalDNS", "vm-1.internal"}});
  auto out = filterByProvidedNodeIp("10.0.0.2", c);
  REQUIRE(out.ok());
  REQUIRE(out->size() == 4);
  CHECK((*out)[0].address == "10.0.0.2");
  CHECK((*out)[1].type == "ExternalIP");
  CHECK((*out)[2].type == "Hostname");
  CHECK((*out)[3].type == "InternalDNS");

  // The same IP as Internal and External: both come first and both types are claimed.
  out = filterByProvidedNodeIp("10.0.0.1", cloud({{"ExternalIP", "1.2.3.4"},
                                                   {"InternalIP", "10.0.0.1"},
                                                   {"ExternalIP", "10.0.0.1"}}));
  REQUIRE(out.ok());
  REQUIRE(out->size() == 2);
  CHECK((*out)[0].type == "InternalIP");
  CHECK((*out)[1].type == "ExternalIP");
  CHECK((*out)[1].address == "10.0.0.1");

  // IPv6 compared as values, not text.
  out = filterByProvidedNodeIp("2600:1f14:1d4:d101::ba3d",
                               cloud({{"InternalIP", "2600:1f14:1d4:d101:0:0:0:ba3d"}}));
  REQUIRE(out.ok());
  CHECK(out->size() == 1);

  // Dual stack: order follows the annotation.
  out = filterByProvidedNodeIp("fd00::5,10.0.0.5", cloud({{"InternalIP", "10.0.0.5"},
                                                          {"InternalIP", "fd00::5"},
                                                          {"Hostname", "h"}}));
  REQUIRE(out.ok());
  REQUIRE(out->size() == 3);
  CHECK((*out)[0].address == "fd00::5");
  CHECK((*out)[1].address == "10.0.0.5");
}

TEST_CASE("provided node IP errors") {
  auto c = cloud({{"InternalIP", "10.0.0.1"}});
  CHECK(filterByProvidedNodeIp("10.0.0.9", c).status().message() ==
        "failed to get node address from cloud provider that matches ip: 10.0.0.9");
  CHECK_FALSE(filterByProvidedNodeIp("not-an-ip", c).ok());
  CHECK_FALSE(filterByProvidedNodeIp("10.0.0.1,10.0.0.2", c).ok());  // same family
  CHECK_FALSE(filterByProvidedNodeIp("0.0.0.0,fd00::1", c).ok());    // unspecified in a pair
  CHECK_FALSE(filterByProvidedNodeIp("10.0.0.1,fd00::1", c).ok());   // single-stack cloud
  CHECK_FALSE(filterByProvidedNodeIp("10.0.0.1,fd00::1,10.0.0.2", c).ok());
  // A single unspecified address is "no preference".
  auto any = filterByProvidedNodeIp("0.0.0.0", c);
  REQUIRE(any.ok());
  CHECK(any->size() == 1);
}

TEST_CASE("desired addresses: empty cloud keeps the node's, annotation applied") {
  auto n = nodeWith(R"([{"type":"Hostname","address":"n1"}])",
                    R"({"alpha.kubernetes.io/provided-node-ip":"10.0.0.2"})");
  auto none = desiredAddresses(*n, {});
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  auto d = desiredAddresses(*n, cloud({{"InternalIP", "10.0.0.1"}, {"InternalIP", "10.0.0.2"}}));
  REQUIRE(d.ok());
  REQUIRE(d->has_value());
  REQUIRE((*d)->size() == 2);
  CHECK((**d)[0].address == "10.0.0.2");
  CHECK((**d)[1].address == "n1");  // the kubelet hostname survived the filter
  CHECK_FALSE(desiredAddresses(*n, cloud({{"InternalIP", "10.0.0.7"}})).ok());
}

TEST_CASE("desired addresses: a (type, address) the cloud reports twice is published once") {
  // A real API server answers 422 "Duplicate value" on status.addresses[i] otherwise.
  auto n = nodeWith(R"([])");
  auto d = desiredAddresses(*n, cloud({{"InternalIP", "10.0.0.1"},
                                       {"Hostname", "n1"},
                                       {"InternalIP", "10.0.0.1"},
                                       {"ExternalIP", "10.0.0.1"}}));
  REQUIRE(d.ok());
  REQUIRE(d->has_value());
  REQUIRE((*d)->size() == 3);
  CHECK((**d)[0].type == "InternalIP");
  CHECK((**d)[1].type == "Hostname");
  CHECK((**d)[2].type == "ExternalIP");
}

TEST_CASE("address change detection") {
  auto n = nodeWith(R"([{"type":"InternalIP","address":"10.0.0.1"},
                        {"type":"InternalIP","address":"10.0.0.2"},
                        {"type":"Hostname","address":"n1"}])");
  auto same = cloud({{"InternalIP", "10.0.0.1"}, {"InternalIP", "10.0.0.2"}, {"Hostname", "n1"}});
  // Upstream reports two InternalIPs as a change on every run; we do not.
  CHECK_FALSE(addressesChanged(n->addresses(), same));
  CHECK(addressesChanged(n->addresses(), cloud({{"InternalIP", "10.0.0.1"}, {"Hostname", "n1"}})));
  CHECK(addressesChanged(
      n->addresses(),
      cloud({{"InternalIP", "10.0.0.1"}, {"InternalIP", "10.0.0.3"}, {"Hostname", "n1"}})));
  CHECK(addressesChanged(n->addresses(), cloud({{"ExternalIP", "10.0.0.1"},
                                                {"InternalIP", "10.0.0.2"},
                                                {"Hostname", "n1"}})));  // type swap
  CHECK(addressesChanged(n->addresses(), cloud({{"InternalIP", "10.0.0.2"},
                                                {"InternalIP", "10.0.0.1"},
                                                {"Hostname", "n1"}})));  // order matters
}

TEST_CASE("labels from metadata") {
  auto n = nodeWith("[]", "{}", R"({"existing.example.com/x":"old"})");
  plugin::InstanceMetadata md;
  md.instance_type = "m5.large";
  md.zone = "us-east-1a";
  md.region = "us-east-1";
  md.additional_labels = {{"kubernetes.io/hostname", "evil"},
                          {"node.kubernetes.io/foo", "x"},
                          {"k8s.io/bar", "x"},
                          {"sub.k8s.io/bar", "x"},
                          {"app.k8snio/bar", "ok1"},
                          {"k8snio/bar", "ok2"},
                          {"existing.example.com/x", "new"},
                          {"bad key!", "v"},
                          {"example.com/ok", "yes"}};
  std::vector<std::string> warnings;
  auto labels = labelsFromMetadata(*n, md, &warnings);
  auto has = [&](const std::string& k, const std::string& v) {
    return std::find(labels.begin(), labels.end(), std::pair(k, v)) != labels.end();
  };
  CHECK(has("node.kubernetes.io/instance-type", "m5.large"));
  CHECK(has("beta.kubernetes.io/instance-type", "m5.large"));
  CHECK(has("topology.kubernetes.io/zone", "us-east-1a"));
  CHECK(has("failure-domain.beta.kubernetes.io/zone", "us-east-1a"));
  CHECK(has("topology.kubernetes.io/region", "us-east-1"));
  CHECK(has("failure-domain.beta.kubernetes.io/region", "us-east-1"));
  CHECK(has("app.k8snio/bar", "ok1"));  // dots are literal: not a reserved domain
  CHECK(has("k8snio/bar", "ok2"));
  CHECK(has("example.com/ok", "yes"));
  CHECK(labels.size() == 9);
  CHECK(warnings.size() == 6);  // 4 reserved, 1 kept existing, 1 invalid
  CHECK(isReservedLabelKey("kubernetes.io/hostname"));
  CHECK(isReservedLabelKey("a.b.k8s.io/x"));
  CHECK_FALSE(isReservedLabelKey("notkubernetes.io/x"));
  CHECK_FALSE(isReservedLabelKey("plain"));
}

TEST_CASE("stable labels follow the beta ones") {
  auto consistent = nodeWith("[]", "{}",
                             R"({"failure-domain.beta.kubernetes.io/zone":"a",
                                 "topology.kubernetes.io/zone":"a"})");
  CHECK(stableLabelFixes(*consistent).empty());
  auto missing = nodeWith("[]", "{}", R"({"failure-domain.beta.kubernetes.io/region":"r",
                                          "beta.kubernetes.io/instance-type":"t"})");
  auto fixes = stableLabelFixes(*missing);
  REQUIRE(fixes.size() == 2);
  CHECK(fixes[0] == std::pair<std::string, std::string>("topology.kubernetes.io/region", "r"));
  CHECK(fixes[1] == std::pair<std::string, std::string>("node.kubernetes.io/instance-type", "t"));
  auto differs = nodeWith("[]", "{}", R"({"failure-domain.beta.kubernetes.io/zone":"a",
                                          "topology.kubernetes.io/zone":"b"})");
  fixes = stableLabelFixes(*differs);
  REQUIRE(fixes.size() == 1);
  CHECK(fixes[0].second == "a");  // the beta label is the source of truth
  CHECK(stableLabelFixes(*nodeWith("[]")).empty());
}
