// RequestInfo: what an HTTP request addresses, parsed like the API server's RequestInfoFactory:
// resource requests (/api/v1/..., /apis/<group>/<version>/...) with namespace, resource,
// name, subresource and API verb (get, list, watch, create, update, patch, delete,
// deletecollection); everything else is a non-resource request (verb = lower-case method).
//
// THREAD: value type.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kubesim/url_query.hpp"

namespace ccm::kubesim {

struct RequestInfo {
  bool resource_request = false;
  std::string path;
  std::string verb;
  std::string api_prefix;  // "api" or "apis"
  std::string api_group;
  std::string api_version;
  std::string ns;
  std::string resource;
  std::string subresource;
  std::string name;
  std::vector<std::string> parts;  // path segments after the group/version

  static RequestInfo parse(std::string_view method, const UrlQuery& query);
};

}  // namespace ccm::kubesim
