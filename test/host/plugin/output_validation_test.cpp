// Plugin output validation: what a real API server would refuse never reaches it.
#include "ccm/output_checks.hpp"

#include <doctest/doctest.h>

#include <string>

#include "host/runtime/text.hpp"

namespace ccm::plugin {
namespace {

sdk::LoadBalancerStatus withHostname(std::string hostname) {
  sdk::LoadBalancerStatus s;
  sdk::Ingress in;
  in.hostname = std::move(hostname);
  s.ingress.push_back(in);
  return s;
}

TEST_CASE("LB ingress hostnames the API server refuses are malformed output") {
  // status.loadBalancer.ingress[].hostname: 422 for an IP and for a non-DNS-1123 name.
  CHECK(validateLbStatus(withHostname("lb-1.example.com")).empty());
  CHECK(validateLbStatus(withHostname("203.0.113.9")).find("is an IP address") !=
        std::string::npos);
  CHECK(validateLbStatus(withHostname("Bad_Host")).find("RFC 1123") != std::string::npos);
  CHECK(validateLbStatus(withHostname("-lead.example.com")).find("RFC 1123") !=
        std::string::npos);
  CHECK(validateLbStatus(withHostname("a..b")).find("RFC 1123") != std::string::npos);
}

TEST_CASE("DNS-1123 subdomains") {
  CHECK(text::isDns1123Subdomain("a"));
  CHECK(text::isDns1123Subdomain("a-b.c0"));
  CHECK_FALSE(text::isDns1123Subdomain(""));
  CHECK_FALSE(text::isDns1123Subdomain("A.example"));
  CHECK_FALSE(text::isDns1123Subdomain("trailing."));
  CHECK_FALSE(text::isDns1123Subdomain(std::string(254, 'a')));
}

}  // namespace
}  // namespace ccm::plugin
