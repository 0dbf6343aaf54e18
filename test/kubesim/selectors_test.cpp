// Unit tests: label and field selector parsing/matching, name and label syntax checks.
#include <doctest/doctest.h>

#include <algorithm>

#include "kubesim/field_selector.hpp"
#include "kubesim/label_selector.hpp"
#include "kubesim/resource_registry.hpp"

namespace ccm::kubesim {
namespace {

LabelSelector mustParse(std::string_view text) {
  std::string err;
  auto sel = LabelSelector::parse(text, &err);
  INFO("selector: " << text << " error: " << err);
  REQUIRE(sel.has_value());
  return *sel;
}

Labels labels(std::initializer_list<std::pair<std::string, std::string>> l) {
  Labels out(l);
  std::sort(out.begin(), out.end());
  return out;
}

TEST_CASE("label selector operators") {
  Labels l = labels({{"app", "web"}, {"tier", "front"}, {"gen", "5"}});
  CHECK(mustParse("").matches(l));
  CHECK(mustParse("app=web").matches(l));
  CHECK(mustParse("app==web").matches(l));
  CHECK_FALSE(mustParse("app=db").matches(l));
  CHECK(mustParse("app!=db").matches(l));
  CHECK(mustParse("missing!=x").matches(l));
  CHECK(mustParse("app in (web, db)").matches(l));
  CHECK_FALSE(mustParse("app notin (web,db)").matches(l));
  CHECK(mustParse("app").matches(l));
  CHECK_FALSE(mustParse("!app").matches(l));
  CHECK(mustParse("!missing").matches(l));
  CHECK(mustParse("app=web,tier=front").matches(l));
  CHECK_FALSE(mustParse("app=web,tier=back").matches(l));
  CHECK(mustParse("gen>4").matches(l));
  CHECK_FALSE(mustParse("gen<4").matches(l));
  CHECK(mustParse("example.com/key").matches(labels({{"example.com/key", ""}})));
  CHECK(mustParse("k=").matches(labels({{"k", ""}})));
}

TEST_CASE("label selector rejects bad syntax with the server's prefix") {
  for (std::string_view bad : {"app in web", "=x", "app=(", "Bad Key=x", "a=b c", "app in (a",
                               "a/b/c=x", "k=no spaces allowed!", "gen>abc"}) {
    std::string err;
    auto sel = LabelSelector::parse(bad, &err);
    INFO("selector: " << bad);
    CHECK_FALSE(sel.has_value());
    CHECK(err.rfind("unable to parse requirement: ", 0) == 0);
  }
}

TEST_CASE("name and label syntax") {
  CHECK(validateDns1123Subdomain("node-1.example.com").empty());
  CHECK_FALSE(validateDns1123Subdomain("Node_1").empty());
  CHECK_FALSE(validateDns1123Subdomain(std::string(254, 'a')).empty());
  CHECK(validateDns1035Label("svc-1").empty());
  CHECK_FALSE(validateDns1035Label("1svc").empty());
  CHECK(validateDns1123Label("kube-system").empty());
  CHECK(validateQualifiedName("node.kubernetes.io/instance-type").empty());
  CHECK_FALSE(validateQualifiedName("-bad").empty());
  CHECK(validateLabelValue("").empty());
  CHECK(validateLabelValue("My_Value.1").empty());
  CHECK_FALSE(validateLabelValue("bad value").empty());
  auto msg = validateDns1123Subdomain("Foo_bar");
  REQUIRE(msg.size() == 1);
  CHECK(msg[0] ==
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
        "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
        "regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
}

TEST_CASE("field selectors per type") {
  const auto& reg = ResourceRegistry::builtin();
  const ResourceType& nodes = *reg.find("", "v1", "nodes");
  const ResourceType& pods = *reg.find("", "v1", "pods");
  std::string err;

  auto sel = FieldSelector::parse("metadata.name=n1,spec.unschedulable!=true", nodes, &err);
  REQUIRE(sel.has_value());
  CHECK(sel->matches({"n1", "false"}));
  CHECK_FALSE(sel->matches({"n1", "true"}));
  CHECK_FALSE(sel->matches({"n2", "false"}));
  CHECK(sel->exactName() == std::optional<std::string>("n1"));

  CHECK_FALSE(FieldSelector::parse("metadata.namespace=x", nodes, &err).has_value());
  CHECK(err == "field label not supported: metadata.namespace");
  CHECK_FALSE(FieldSelector::parse("spec.bogus=x", pods, &err).has_value());
  CHECK(err == "field label not supported: spec.bogus");
  CHECK_FALSE(FieldSelector::parse("justakey", pods, &err).has_value());

  // kubectl describe node's pod query.
  auto podsel = FieldSelector::parse(
      "spec.nodeName=n1,status.phase!=Failed,status.phase!=Succeeded", pods, &err);
  REQUIRE(podsel.has_value());
  auto labels = pods.allFieldLabels();
  std::vector<std::string> values(labels.size());
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] == "spec.nodeName") values[i] = "n1";
    if (labels[i] == "status.phase") values[i] = "Running";
  }
  CHECK(podsel->matches(values));

  // Escapes.
  auto esc = FieldSelector::parse("metadata.name=a\\,b", nodes, &err);
  REQUIRE(esc.has_value());
  CHECK(esc->matches({"a,b", "false"}));
}

}  // namespace
}  // namespace ccm::kubesim
