// The controller registry (host/controllers/registry.hpp): its table, upstream's
// --controllers semantics over names and aliases, and the flag's validation.
#include "host/controllers/registry.hpp"

#include <doctest/doctest.h>

#include <set>
#include <string>

namespace ccm::controllers {
namespace {

TEST_CASE("the registry lists every controller once, in start order, each with a factory") {
  std::vector<std::string> names;
  std::set<std::string_view> seen;
  for (const Registration& r : registry()) {
    names.emplace_back(r.name);
    CHECK(seen.insert(r.name).second);
    CHECK(seen.insert(r.alias).second);
    const bool has_factory = r.make != nullptr;
    CHECK(has_factory);
    CHECK(r.enabled_by_default);
    CHECK(findController(r.alias) == &r);
    CHECK(findController(r.name) == &r);
  }
  // IPAM before the node controller, which routes follow.
  CHECK(names == std::vector<std::string>{"node-ipam-controller", "cloud-node-controller",
                                          "cloud-node-lifecycle-controller",
                                          "service-lb-controller", "node-route-controller"});
  CHECK(findController("nodes") == nullptr);
  CHECK(findController("") == nullptr);
}

TEST_CASE("--controllers follows upstream semantics, aliases included") {
  CHECK(controllerEnabled({"*"}, "cloud-node"));
  CHECK(controllerEnabled({"*"}, "node-route-controller"));
  CHECK_FALSE(controllerEnabled({"*", "-route"}, "node-route-controller"));
  CHECK_FALSE(controllerEnabled({"*", "-node-route-controller"}, "route"));
  CHECK(controllerEnabled({"service"}, "service-lb-controller"));
  CHECK_FALSE(controllerEnabled({"service"}, "cloud-node"));
  CHECK(controllerEnabled({"route", "-route"}, "route"));  // the first match wins
  CHECK_FALSE(controllerEnabled({"-route", "route", "*"}, "route"));
  CHECK_FALSE(controllerEnabled({}, "cloud-node"));
  CHECK_FALSE(controllerEnabled({"*"}, "no-such-controller"));
}

TEST_CASE("--controllers entries must name known controllers") {
  CHECK(validateControllersFlag({"*", "-route", "cloud-node-lifecycle-controller"}).ok());
  CHECK(validateControllersFlag({}).ok());
  Status bad = validateControllersFlag({"*", "-nodes"});
  CHECK(bad.code() == Code::InvalidArgument);
  CHECK(bad.message() == "--controllers: \"nodes\" is not in the list of known controllers");
  CHECK_FALSE(validateControllersFlag({""}).ok());
}

TEST_CASE("--help lists every name and alias, sorted") {
  CHECK(controllersForHelp() ==
        "cloud-node-controller, cloud-node-lifecycle-controller, node-ipam-controller, "
        "node-route-controller, service-lb-controller (aliases cloud-node, cloud-node-lifecycle, "
        "node-ipam, route, service)");
}

}  // namespace
}  // namespace ccm::controllers
