// Unit tests: ServiceAllocator's service ranges and IP families, single-stack and dual-stack.
#include <doctest/doctest.h>

#include "kubesim/object_store.hpp"
#include "kubesim/service_allocator.hpp"

namespace ccm::kubesim {
namespace {

std::vector<std::string> stringsOf(const JsonValue& spec, const char* key) {
  std::vector<std::string> out;
  for (const auto& v : spec[key].GetArray()) {
    out.emplace_back(v.GetString());
  }
  return out;
}

// Prepares a new LoadBalancer Service with these extra spec fields; the error's message, or
// "" and the prepared spec in doc.
std::string prepare(ServiceAllocator& a, JsonDocument& doc, const std::string& spec_extra) {
  std::string json = R"({"kind":"Service","apiVersion":"v1","metadata":{"name":"web",)"
                     R"("namespace":"default"},"spec":{"type":"LoadBalancer",)"
                     R"("selector":{"app":"web"},"ports":[{"port":80}])" +
                     spec_extra + "}}";
  doc.Parse(json.c_str());
  REQUIRE_FALSE(doc.HasParseError());
  auto err = a.prepare(doc, doc.GetAllocator(), nullptr);
  return err ? err->message() : std::string();
}

}  // namespace

TEST_CASE("service ranges: one CIDR, or one of each family") {
  auto one = ServiceAllocator::parseServiceRanges("10.96.0.0/12");
  REQUIRE(one.ok());
  CHECK(one.value().size() == 1);
  auto two = ServiceAllocator::parseServiceRanges("10.96.0.0/12,fd00:96::/108");
  REQUIRE(two.ok());
  CHECK(two.value().size() == 2);
  CHECK_FALSE(ServiceAllocator::parseServiceRanges("10.96.0.0/12,10.128.0.0/12").ok());
  CHECK_FALSE(ServiceAllocator::parseServiceRanges("10.96.0.0/12,nope").ok());
  CHECK_FALSE(ServiceAllocator::parseServiceRanges("").ok());
}

TEST_CASE("single-stack cluster: RequireDualStack refused, one cluster IP") {
  ObjectStore store(ResourceRegistry::builtin(), {});
  auto ranges = ServiceAllocator::parseServiceRanges("10.96.0.0/12");
  REQUIRE(ranges.ok());
  ServiceAllocator a(store, ranges.value()[0]);
  JsonDocument doc;
  CHECK(prepare(a, doc, R"(,"ipFamilyPolicy":"RequireDualStack")").find(
            "not configured for dual-stack") != std::string::npos);
  CHECK(prepare(a, doc, R"(,"ipFamilyPolicy":"PreferDualStack")").empty());
  CHECK(stringsOf(doc["spec"], "ipFamilies") == std::vector<std::string>{"IPv4"});
  CHECK(stringsOf(doc["spec"], "clusterIPs").size() == 1);
}

TEST_CASE("dual-stack cluster: a cluster IP per family, in the Service's order") {
  ObjectStore store(ResourceRegistry::builtin(), {});
  auto ranges = ServiceAllocator::parseServiceRanges("10.96.0.0/12,fd00:96::/108");
  REQUIRE(ranges.ok());
  ServiceAllocator a(store, ranges.value()[0], ranges.value()[1]);
  JsonDocument doc;
  REQUIRE(prepare(a, doc, R"(,"ipFamilyPolicy":"RequireDualStack")").empty());
  CHECK(stringsOf(doc["spec"], "ipFamilies") == std::vector<std::string>{"IPv4", "IPv6"});
  auto ips = stringsOf(doc["spec"], "clusterIPs");
  REQUIRE(ips.size() == 2);
  CHECK(ips[0].rfind("10.", 0) == 0);
  CHECK(ips[1].rfind("fd00:96::", 0) == 0);
  CHECK(std::string(doc["spec"]["clusterIP"].GetString()) == ips[0]);

  REQUIRE(prepare(a, doc, R"(,"ipFamilyPolicy":"PreferDualStack","ipFamilies":["IPv6"])")
              .empty());
  CHECK(stringsOf(doc["spec"], "ipFamilies") == std::vector<std::string>{"IPv6", "IPv4"});
  ips = stringsOf(doc["spec"], "clusterIPs");
  REQUIRE(ips.size() == 2);
  CHECK(ips[0].rfind("fd00:96::", 0) == 0);

  REQUIRE(prepare(a, doc, "").empty());  // SingleStack by default: the primary family only
  CHECK(stringsOf(doc["spec"], "ipFamilies") == std::vector<std::string>{"IPv4"});
  CHECK(stringsOf(doc["spec"], "clusterIPs").size() == 1);
}

}  // namespace ccm::kubesim
