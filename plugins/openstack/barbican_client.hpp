// BarbicanClient: the key-manager (Barbican v1) reads the TLS checks need: whether a
// certificate container or secret exists and the project may read it. References are URLs
// ending in /containers/<id> or /secrets/<id>; like OCCM, only the last two parts count and
// the object is read from the catalog's key-manager endpoint.
#pragma once

#include <string>

#include "plugins/openstack/openstack_client.hpp"

namespace ccm::openstack {

struct BarbicanRef {
  std::string kind;  // "containers" or "secrets"
  std::string id;
};

// The kind and ID of a reference; INVALID_ARGUMENT (without naming where the reference came
// from) when it ends in anything else.
sdk::Result<BarbicanRef> parseBarbicanRef(const std::string& ref);

// THREAD: any.
class BarbicanClient {
 public:
  explicit BarbicanClient(OpenStackClient& os) : os_(os) {}

  // Whether the catalog lists a key-manager endpoint.
  bool available() const { return !os_.baseUrl(Service::KeyManager).empty(); }

  // GET containers/<id> or secrets/<id>: OK when it exists and is readable; the API's answer
  // otherwise (NOT_FOUND, PERMISSION_DENIED, ...).
  sdk::Status read(const sdk::Call& call, const BarbicanRef& ref);

 private:
  OpenStackClient& os_;
};

}  // namespace ccm::openstack
