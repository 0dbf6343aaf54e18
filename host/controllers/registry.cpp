// The controller registry: the table and the --controllers rules over it.
#include "host/controllers/registry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "host/controllers/ipam/node_ipam_controller.hpp"
#include "host/controllers/lifecycle/node_lifecycle_controller.hpp"
#include "host/controllers/node/cloud_node_controller.hpp"
#include "host/controllers/route/route_controller.hpp"
#include "host/controllers/service/service_controller.hpp"

namespace ccm::controllers {
namespace {

constexpr std::array kRegistry = {
    Registration{"node-ipam-controller", "node-ipam", true, ipam::makeNodeIpamController},
    Registration{"cloud-node-controller", "cloud-node", true, node::makeCloudNodeController},
    Registration{"cloud-node-lifecycle-controller", "cloud-node-lifecycle", true,
                 lifecycle::makeNodeLifecycleController},
    Registration{"service-lb-controller", "service", true, service::makeServiceController},
    Registration{"node-route-controller", "route", true, route::makeRouteController},
};

std::string_view withoutMinus(std::string_view entry) {
  return !entry.empty() && entry[0] == '-' ? entry.substr(1) : entry;
}

}  // namespace

std::span<const Registration> registry() {
  return kRegistry;
}

const Registration* findController(std::string_view name_or_alias) {
  for (const Registration& r : kRegistry) {
    if (name_or_alias == r.name || name_or_alias == r.alias) {
      return &r;
    }
  }
  return nullptr;
}

bool controllerEnabled(const std::vector<std::string>& flag, std::string_view name_or_alias) {
  const Registration* wanted = findController(name_or_alias);
  bool star = false;
  for (const std::string& entry : flag) {
    if (entry == "*") {
      star = true;
      continue;
    }
    if (wanted != nullptr && findController(withoutMinus(entry)) == wanted) {
      return entry[0] != '-';
    }
  }
  return star && wanted != nullptr && wanted->enabled_by_default;
}

Status validateControllersFlag(const std::vector<std::string>& flag) {
  for (const std::string& entry : flag) {
    if (entry != "*" && findController(withoutMinus(entry)) == nullptr) {
      return Status(Code::InvalidArgument,
                    fmt::format("--controllers: \"{}\" is not in the list of known controllers",
                                withoutMinus(entry)));
    }
  }
  return Status();
}

std::string controllersForHelp() {
  std::vector<std::string_view> names;
  std::vector<std::string_view> aliases;
  for (const Registration& r : kRegistry) {
    names.push_back(r.name);
    aliases.push_back(r.alias);
  }
  std::sort(names.begin(), names.end());
  std::sort(aliases.begin(), aliases.end());
  return fmt::format("{} (aliases {})", fmt::join(names, ", "), fmt::join(aliases, ", "));
}

}  // namespace ccm::controllers
