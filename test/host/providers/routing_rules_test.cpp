// The hybrid-cluster flags: provider lists, per-provider configs, selectors, class mapping and
// the providerID prefix check.
#include "host/providers/routing_rules.hpp"

#include <array>
#include <doctest/doctest.h>

namespace ccm::providers {
namespace {

TEST_CASE("a provider list is split on commas and refuses empty or repeated names") {
  auto one = parseProviderList("fake-cloud");
  REQUIRE(one.ok());
  CHECK(*one == std::vector<std::string>{"fake-cloud"});
  auto two = parseProviderList("openstack, fake-cloud");
  REQUIRE(two.ok());
  CHECK(*two == std::vector<std::string>{"openstack", "fake-cloud"});
  CHECK_FALSE(parseProviderList("a,,b").ok());
  auto twice = parseProviderList("a,a");
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.status().message().find("twice") != std::string::npos);
}

TEST_CASE("a plain --cloud-config path is the single provider's, named paths go to each") {
  auto plain = parseCloudConfigs("/etc/a=b,c.conf", {"fake-cloud"});
  REQUIRE(plain.ok());
  CHECK(*plain == std::vector<std::string>{"/etc/a=b,c.conf"});
  auto named_one = parseCloudConfigs("fake-cloud=/x", {"fake-cloud"});
  REQUIRE(named_one.ok());
  CHECK(*named_one == std::vector<std::string>{"/x"});
  auto both = parseCloudConfigs("b=/y,a=/x", {"a", "b", "c"});
  REQUIRE(both.ok());
  CHECK(*both == std::vector<std::string>{"/x", "/y", ""});
  auto none = parseCloudConfigs("", {"a", "b"});
  REQUIRE(none.ok());
  CHECK(*none == std::vector<std::string>{"", ""});
  auto plain_many = parseCloudConfigs("/etc/x.conf", {"a", "b"});
  REQUIRE_FALSE(plain_many.ok());
  CHECK(plain_many.status().message().find("NAME=PATH") != std::string::npos);
  auto unknown = parseCloudConfigs("a=/x,z=/y", {"a", "b"});
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().message().find("\"z\"") != std::string::npos);
  CHECK_FALSE(parseCloudConfigs("a=/x,a=/y", {"a", "b"}).ok());
}

TEST_CASE("label selectors match equality, inequality, presence and absence") {
  std::array labels{plugin::KeyValueRef{"cloud", "b"}, plugin::KeyValueRef{"zone", "z1"}};
  auto check = [&](std::string_view text) {
    auto s = LabelSelector::parse(text);
    REQUIRE(s.ok());
    return s->matches(labels);
  };
  CHECK(check("cloud=b"));
  CHECK(check("cloud==b"));
  CHECK_FALSE(check("cloud=a"));
  CHECK(check("cloud!=a"));
  CHECK(check("zone"));
  CHECK_FALSE(check("!zone"));
  CHECK(check("!other"));
  CHECK(check("cloud=b, zone=z1"));
  CHECK_FALSE(check("cloud=b,zone=z2"));
  auto bad = LabelSelector::parse("cloud=b,=x");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("not a valid label key") != std::string::npos);
}

TEST_CASE("routing rules name only listed providers and known modes") {
  std::vector<std::string> providers{"a", "b"};
  auto rules = buildRules(providers, {"b=cloud=b"}, "exists", {"example.com/b=b"}, "all");
  REQUIRE(rules.ok());
  REQUIRE(rules->node_selectors.size() == 1);
  CHECK(rules->node_selectors[0].provider == "b");
  CHECK(rules->node_selectors[0].selector.text() == "cloud=b");
  CHECK(rules->discover_by_existence);
  REQUIRE(rules->classes.size() == 1);
  CHECK(rules->classes[0].load_balancer_class == "example.com/b");
  CHECK(rules->load_balancer_all_nodes);

  // The flag splits values on commas; the parts of one selector are joined again.
  auto split = buildRules(providers, {"a=cloud=a", "zone", "b=cloud=b", "!gpu"}, "", {}, "");
  REQUIRE(split.ok());
  REQUIRE(split->node_selectors.size() == 2);
  CHECK(split->node_selectors[0].selector.text() == "cloud=a,zone");
  CHECK(split->node_selectors[1].selector.text() == "cloud=b,!gpu");

  auto defaults = buildRules(providers, {}, "", {}, "");
  REQUIRE(defaults.ok());
  CHECK_FALSE(defaults->discover_by_existence);
  CHECK_FALSE(defaults->load_balancer_all_nodes);

  auto unknown = buildRules(providers, {"z=x=y"}, "", {}, "");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().message().find("--provider-node-selector") != std::string::npos);
  CHECK_FALSE(buildRules(providers, {}, "guess", {}, "").ok());
  CHECK_FALSE(buildRules(providers, {}, "", {"example.com/b=z"}, "").ok());
  CHECK_FALSE(buildRules(providers, {}, "", {"c=a", "c=b"}, "").ok());
  CHECK_FALSE(buildRules(providers, {}, "", {"not a class=a"}, "").ok());
  CHECK_FALSE(buildRules(providers, {}, "", {}, "some").ok());
  CHECK_FALSE(buildRules(providers, {"novalue"}, "", {}, "").ok());
}

TEST_CASE("providerID prefixes must be declared and must not overlap") {
  plugin::ProviderInfo a;
  a.name = "a";
  a.provider_id_prefix = "fake://";
  plugin::ProviderInfo b;
  b.name = "b";
  b.provider_id_prefix = "other://";
  std::array<const plugin::ProviderInfo*, 2> fine{&a, &b};
  CHECK(checkPrefixes(fine).ok());

  b.provider_id_prefix = "fake://eu/";
  auto overlap = checkPrefixes(fine);
  REQUIRE_FALSE(overlap.ok());
  CHECK(overlap.message().find("overlap") != std::string::npos);

  b.provider_id_prefix.clear();
  auto missing = checkPrefixes(fine);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.message().find("provider b declares no providerID prefix") != std::string::npos);
}

}  // namespace
}  // namespace ccm::providers
