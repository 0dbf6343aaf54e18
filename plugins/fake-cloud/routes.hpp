// Routes: the fake cloud's route table — one route per destination CIDR, to a node, per
// cluster — kept in the StateStore.
#pragma once

#include <string_view>
#include <vector>

#include "ccm/provider.hpp"
#include "plugins/fake-cloud/state_store.hpp"

namespace ccm::fakecloud {

class Routes {
 public:
  explicit Routes(StateStore& store) : store_(store) {}

  // THREAD (every method): any.
  std::vector<sdk::Route> list(std::string_view cluster);
  // ALREADY_EXISTS (and counted as a duplicate create) when the same route exists;
  // FAILED_PRECONDITION when the destination is routed elsewhere.
  sdk::Status create(std::string_view cluster, std::string_view name_hint, const sdk::Route& route);
  // Deletes the cluster's route to route.destination_cidr if there is one; true when it did.
  bool remove(std::string_view cluster, const sdk::Route& route);

 private:
  StateStore& store_;
};

}  // namespace ccm::fakecloud
