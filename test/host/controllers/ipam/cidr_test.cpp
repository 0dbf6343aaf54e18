// CIDR parsing and arithmetic, the --cluster-cidr rules, and the node range allocator.
#include <doctest/doctest.h>

#include "host/controllers/common/cidr.hpp"
#include "host/controllers/ipam/cidr_set.hpp"
#include "host/controllers/lifecycle/node_lifecycle_controller.hpp"

using namespace ccm;
using namespace ccm::controllers;

TEST_CASE("CIDR parsing and containment") {
  auto c = Cidr::parse("10.244.0.0/16");
  REQUIRE(c.ok());
  CHECK(c->toString() == "10.244.0.0/16");
  CHECK(c->contains(*IpAddress::parse("10.244.255.255")));
  CHECK_FALSE(c->contains(*IpAddress::parse("10.245.0.0")));
  CHECK_FALSE(c->contains(*IpAddress::parse("fd00::1")));
  CHECK(c->last().toString() == "10.244.255.255");
  CHECK(Cidr::parse("10.244.1.7/16")->toString() == "10.244.0.0/16");  // host bits cleared
  CHECK_FALSE(Cidr::parse("10.244.1.7/16", true).ok());
  auto v6 = Cidr::parse("fd00:10::/48");
  REQUIRE(v6.ok());
  CHECK(v6->contains(*IpAddress::parse("fd00:10:0:ffff::1")));
  CHECK(v6->subnet(64, 3).toString() == "fd00:10:0:3::/64");
  CHECK(v6->subnetIndex(*IpAddress::parse("fd00:10:0:3::9"), 64) == 3);
  for (const char* bad : {"10.0.0.0", "10.0.0.0/33", "nope/8", "10.0.0.0/x", "/24"}) {
    CHECK_FALSE(Cidr::parse(bad).ok());
  }
}

TEST_CASE("--cluster-cidr: one CIDR or a dual-stack pair, clear errors") {
  CHECK(parseClusterCidrs("10.244.0.0/16")->size() == 1);
  CHECK(parseClusterCidrs(" 10.244.0.0/16 , fd00::/48 ")->size() == 2);
  auto empty = parseClusterCidrs("");
  CHECK(empty.status().message().find("invalid --cluster-cidr=\"\": empty value") == 0);
  CHECK(parseClusterCidrs("10.0.0.0/8,10.1.0.0/16").status().message().find(
            "one IPv4, one IPv6") != std::string::npos);
  CHECK(parseClusterCidrs("10.0.0.0/8,fd00::/48,fd01::/48").status().message().find(
            "at most two") != std::string::npos);
  CHECK(parseClusterCidrs("10.0.0.0/33").status().message() ==
        "invalid --cluster-cidr=\"10.0.0.0/33\": \"10.0.0.0/33\" is not a CIDR");
  CHECK(canonicalCidr("fd00:0010:0244:0001::/64") == "fd00:10:244:1::/64");
  CHECK(canonicalCidr("garbage") == "garbage");
}

TEST_CASE("node range allocator: next fit, occupy, release, exhaustion") {
  auto set = ipam::CidrSet::create(*Cidr::parse("10.244.0.0/22"), 24);
  REQUIRE(set.ok());
  CHECK(set->size() == 4);
  CHECK(set->occupy(*Cidr::parse("10.244.1.0/24")).ok());
  CHECK(set->allocate()->toString() == "10.244.0.0/24");
  CHECK(set->allocate()->toString() == "10.244.2.0/24");
  CHECK(set->allocate()->toString() == "10.244.3.0/24");
  CHECK_FALSE(set->allocate().has_value());
  CHECK(set->usedCount() == 4);
  set->release(*Cidr::parse("10.244.2.0/24"));
  CHECK(set->allocate()->toString() == "10.244.2.0/24");
  CHECK_FALSE(set->occupy(*Cidr::parse("10.245.0.0/24")).ok());  // outside
  CHECK_FALSE(set->occupy(*Cidr::parse("10.244.0.0/25")).ok());  // other mask
  CHECK_FALSE(ipam::CidrSet::create(*Cidr::parse("10.0.0.0/8"), 26).ok());  // > 2^16 ranges
  CHECK_FALSE(ipam::CidrSet::create(*Cidr::parse("10.0.0.0/16"), 8).ok());
  auto v6 = ipam::CidrSet::create(*Cidr::parse("fd00::/56"), 64);
  REQUIRE(v6.ok());
  CHECK(v6->size() == 256);
  CHECK(v6->allocate()->toString() == "fd00::/64");
  CHECK(v6->allocate()->toString() == "fd00:0:0:1::/64");
}

TEST_CASE("zone states follow the node lifecycle documentation") {
  using lifecycle::ZoneState;
  CHECK(lifecycle::computeZoneState(10, 0, 0.55) == ZoneState::Normal);
  CHECK(lifecycle::computeZoneState(0, 3, 0.55) == ZoneState::FullDisruption);
  CHECK(lifecycle::computeZoneState(1, 2, 0.55) == ZoneState::Normal);  // at most 2 NotReady
  CHECK(lifecycle::computeZoneState(2, 3, 0.55) == ZoneState::PartialDisruption);
  CHECK(lifecycle::computeZoneState(4, 3, 0.55) == ZoneState::Normal);  // 3/7 < 0.55
  CHECK(lifecycle::computeZoneState(0, 0, 0.55) == ZoneState::Normal);
}
