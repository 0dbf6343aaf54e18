// The one list of controllers this host can run: each one's name (as upstream's
// cloud-controller-manager names it), its short alias, whether "*" turns it on, and its
// factory, in start order. The --controllers flag is checked against it and ControllerManager
// starts from it; a new controller is one entry here (docs/architecture.md, "Adding a
// controller").
//
// THREAD: immutable data and pure functions.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "host/controllers/common/controller.hpp"
#include "host/runtime/status.hpp"

namespace ccm::controllers {

using Factory = StatusOr<ControllerOrSkip> (*)(ControllerContext& context);

struct Registration {
  std::string_view name;    // canonical: "cloud-node-controller"
  std::string_view alias;   // accepted by --controllers too: "cloud-node"
  bool enabled_by_default;  // turned on by "*"
  Factory make;
};

// Every controller, in start order: pod CIDRs first (routes need them), then nodes, then the
// rest.
std::span<const Registration> registry();

// The registration with this name or alias; nullptr when there is none.
const Registration* findController(std::string_view name_or_alias);

// Upstream's --controllers semantics: the first entry naming the controller (by name or
// alias) wins, "name" on and "-name" off; otherwise it is on only with "*" and when on by
// default.
bool controllerEnabled(const std::vector<std::string>& flag, std::string_view name_or_alias);

// Every entry of --controllers but "*" names a known controller; the error names the first
// that does not, as the flag parser's errors do.
Status validateControllersFlag(const std::vector<std::string>& flag);

// "cloud-node-controller, ... (aliases cloud-node, ...)", sorted, for --help.
std::string controllersForHelp();

}  // namespace ccm::controllers
