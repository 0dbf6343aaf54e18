// HTTP error responses to sdk::Status.
#include "plugins/openstack/http_error.hpp"

#include <cstdlib>

#include "plugins/openstack/json.hpp"
#include "plugins/openstack/text.hpp"

namespace ccm::openstack {

std::string requestIdOf(const HttpResponse& response) {
  std::string id = response.header("x-openstack-request-id");
  if (id.empty()) {
    id = response.header("x-compute-request-id");
  }
  return id;
}

std::string errorMessageOf(const std::string& body) {
  constexpr size_t kMax = 300;
  auto doc = parseJson(body);
  std::string msg;
  if (doc.ok() && doc->IsObject()) {
    const JsonValue& root = *doc;
    for (const char* key : {"faultstring", "message", "description", "detail"}) {
      msg = jsonString(root, key);
      if (!msg.empty()) {
        break;
      }
    }
    if (msg.empty()) {
      for (const auto& m : root.GetObject()) {
        if (m.value.IsObject()) {
          msg = jsonString(m.value, "message");
          if (!msg.empty()) {
            break;
          }
        }
      }
    }
  }
  if (msg.empty()) {
    msg = std::string(trim(body));
  }
  return truncateUtf8(msg, kMax);
}

sdk::Status httpError(const std::string& what, const HttpResponse& response) {
  ccm_status code;
  switch (response.status) {
    case 400:
      code = CCM_STATUS_INVALID_ARGUMENT;
      break;
    case 401:
      code = CCM_STATUS_UNAUTHENTICATED;
      break;
    case 403:
      code = CCM_STATUS_PERMISSION_DENIED;
      break;
    case 404:
      code = CCM_STATUS_NOT_FOUND;
      break;
    case 409:
      code = CCM_STATUS_ABORTED;
      break;
    case 413:
    case 429:
      code = CCM_STATUS_RESOURCE_EXHAUSTED;
      break;
    case 500:
    case 502:
    case 503:
    case 504:
      code = CCM_STATUS_UNAVAILABLE;
      break;
    default:
      code = CCM_STATUS_INTERNAL;
      break;
  }
  std::chrono::milliseconds retry_after{0};
  std::string ra = response.header("retry-after");
  if (!ra.empty() && ra.find_first_not_of("0123456789") == std::string::npos && ra.size() < 7) {
    retry_after = std::chrono::seconds(std::atol(ra.c_str()));
  }
  std::string msg = what + ": HTTP " + std::to_string(response.status);
  std::string detail = errorMessageOf(response.body);
  if (!detail.empty()) {
    msg += ": " + detail;
  }
  std::string id = requestIdOf(response);
  if (!id.empty()) {
    msg += " (request " + id + ")";
  }
  return sdk::Status(code, msg, retry_after);
}

}  // namespace ccm::openstack
