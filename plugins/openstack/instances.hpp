// Instances: what Nova and Neutron say about the server behind a Node: existence (tri-state),
// shut-down state and metadata (provider ID, flavor, zone, region, addresses), one node at a
// time or for many nodes from one paged server list.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ccm/types.hpp"
#include "plugins/openstack/config.hpp"
#include "plugins/openstack/neutron_client.hpp"
#include "plugins/openstack/nova_client.hpp"

namespace ccm::openstack {

enum class Existence { Unknown, Exists, NotFound };
enum class Power { Unknown, Running, Shutdown };

struct ProviderId {
  std::string region;  // empty in the default form
  std::string server_id;
};

// Accepts "openstack:///ID", "openstack://REGION/ID" and, like OCCM, the same without the
// "openstack://" prefix ("/ID", "REGION/ID"). INVALID_ARGUMENT otherwise.
sdk::Result<ProviderId> parseProviderId(const std::string& provider_id);

// THREAD: any; no state of its own besides the clients' caches.
class Instances {
 public:
  Instances(const Config& config, NovaClient& nova, NeutronClient& neutron)
      : config_(config), nova_(nova), neutron_(neutron) {}

  // EXISTS / NOT_FOUND (only on Nova's 404 for the node's providerID); an error otherwise.
  sdk::Result<Existence> exists(const sdk::Call& call, const sdk::Node& node);
  // SHUTDOWN only for status SHUTOFF.
  sdk::Result<Power> shutdown(const sdk::Call& call, const sdk::Node& node);
  sdk::Result<sdk::InstanceMetadata> metadata(const sdk::Call& call, const sdk::Node& node);
  // One result per node, in order. Small batches are looked up node by node; larger ones
  // from one paged list of the project's servers and one port list per 40 servers.
  std::vector<sdk::Result<sdk::InstanceMetadata>> metadataBatch(
      const sdk::Call& call, const std::vector<sdk::Node>& nodes);

  std::string providerIdFor(const std::string& server_id) const;

 private:
  // By providerID (NOT_FOUND on 404), else by exact name (FAILED_PRECONDITION when no or
  // several servers have that name: a name lookup never proves absence).
  sdk::Result<Server> findServer(const sdk::Call& call, const sdk::Node& node);
  sdk::Result<sdk::InstanceMetadata> build(const sdk::Call& call, const Server& server,
                                   const std::vector<Port>& ports);

  const Config& config_;
  NovaClient& nova_;
  NeutronClient& neutron_;
};

}  // namespace ccm::openstack
