// Discovery: the documents clients read before talking to resources — /version, the legacy
// discovery tree (/api, /api/v1, /apis, /apis/<group>, /apis/<group>/<version>) and the
// OpenAPI v3 index and per-group-version documents (generated from Schema) that kubectl uses
// to decide on server-side field validation and for `kubectl explain`.
//
// Documents are rendered once at construction.
//
// THREAD: immutable after construction; safe from any thread.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "kubesim/resource_registry.hpp"
#include "kubesim/served_surface.hpp"

namespace ccm::kubesim {

class Discovery {
 public:
  struct VersionInfo {
    std::string major = "1";
    std::string minor = "32";
    std::string git_version = "v1.32.0";
  };

  // Only what `surface` serves is listed.
  Discovery(const ResourceRegistry& registry, VersionInfo version, ServedSurface surface);

  const std::string& version() const { return version_; }
  // /api (server_address: "127.0.0.1:port" for serverAddressByClientCIDRs)
  std::string apiVersions(const std::string& server_address) const;
  const std::string& apiGroupList() const { return group_list_; }
  // /apis/<group>; nullopt when unknown.
  std::optional<std::string> apiGroup(std::string_view group) const;
  // /api/v1 or /apis/<group>/<version>; nullopt when unknown.
  std::optional<std::string> resourceList(std::string_view group, std::string_view version) const;
  // /openapi/v3
  const std::string& openApiIndex() const { return openapi_index_; }
  // /openapi/v3/<path> ("api/v1", "apis/coordination.k8s.io/v1"); nullopt when unknown.
  std::optional<std::string> openApiDocument(std::string_view path) const;

 private:
  std::string renderResourceList(const std::string& group, const std::string& version) const;
  std::string renderOpenApi(const std::string& group, const std::string& version) const;

  const ResourceRegistry& registry_;
  VersionInfo version_info_;
  ServedSurface surface_;
  std::string version_;
  std::string group_list_;
  std::map<std::string, std::string> groups_;          // group -> APIGroup
  std::map<std::string, std::string> resource_lists_;  // "group/version" -> list
  std::map<std::string, std::string> openapi_docs_;    // "api/v1" -> document
  std::string openapi_index_;
};

}  // namespace ccm::kubesim
