// NovaClient: the compute calls the provider makes (server by ID, by exact name, all servers
// paged, flavor names) and the Server model it reads them into.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "plugins/openstack/openstack_client.hpp"

namespace ccm::openstack {

struct NovaAddress {
  std::string network;
  std::string addr;
  int version = 4;
  std::string type;  // "fixed" or "floating"
};

struct Server {
  std::string id;
  std::string name;
  std::string status;
  std::string availability_zone;
  std::string access_ipv4;
  std::string access_ipv6;
  std::string flavor_id;             // 2.1 shape
  std::string flavor_original_name;  // 2.47 shape
  std::map<std::string, std::string> metadata;
  std::vector<NovaAddress> addresses;  // in the order Nova listed them
};

Server parseServer(const JsonValue& obj);

// THREAD: any.
class NovaClient {
 public:
  explicit NovaClient(OpenStackClient& os) : os_(os) {}

  // NOT_FOUND when Nova answers 404.
  sdk::Result<Server> getServer(const sdk::Call& call, const std::string& id);

  // Servers whose name is exactly `name` (Nova matches names as regexes: anchored and quoted
  // here). Stops reading pages once more than one is seen.
  sdk::Result<std::vector<Server>> findByName(const sdk::Call& call, const std::string& name);

  // Every server of the project, page by page.
  sdk::Status listServers(const sdk::Call& call, const std::function<void(Server)>& on_server);

  // A flavor's name (cached; flavors are immutable).
  sdk::Result<std::string> flavorName(const sdk::Call& call, const std::string& flavor_id);

 private:
  OpenStackClient& os_;
  std::mutex mu_;
  std::map<std::string, std::string> flavor_names_;  // guarded by mu_
};

}  // namespace ccm::openstack
