// ClusterBootstrap: what a fresh cluster contains before anyone talks to it — the namespaces
// default, kube-system, kube-public and kube-node-lease; the API server's bootstrap RBAC
// policy (cluster-admin for system:masters, system:discovery, system:basic-user,
// system:public-info-viewer, system:auth-delegator, view/edit/admin, the
// extension-apiserver-authentication reader); the "kubernetes" Service with its Endpoints and
// EndpointSlice pointing at kubesim; and kube-system/extension-apiserver-authentication.
// Also loads RBAC (and ServiceAccount/Namespace) objects from manifest files.
//
// THREAD: call from one thread at start-up / restart.
#pragma once

#include <string>
#include <vector>

#include "host/runtime/status.hpp"
#include "kubesim/object_writer.hpp"

namespace ccm::kubesim {

class ClusterBootstrap {
 public:
  // Creates what is missing (existing objects are left alone, so a kept state survives).
  static Status seed(ObjectWriter& writer, const std::string& ca_pem);
  // Points the kubernetes Service's Endpoints/EndpointSlice at 127.0.0.1:port.
  static Status publishEndpoint(ObjectWriter& writer, uint16_t port);

  struct LoadResult {
    int applied = 0;
    int ignored = 0;  // documents of other kinds
  };
  // Applies every ClusterRole, ClusterRoleBinding, Role, RoleBinding, ServiceAccount and
  // Namespace found in the files (directories are walked recursively, *.yaml/*.yml/*.json in
  // name order; multi-document YAML and kind: List are understood). Existing objects are
  // replaced. Missing namespaces of namespaced objects are created.
  static StatusOr<LoadResult> loadManifests(ObjectWriter& writer,
                                            const std::vector<std::string>& paths);

  // Creates (or replaces) one object given as JSON; the type comes from apiVersion/kind.
  static Status apply(ObjectWriter& writer, const std::string& json);
};

}  // namespace ccm::kubesim
