// ApiRequest: one authenticated, authorized API request as the resource handlers see it, and
// the small helpers that turn results into HTTP responses (objects, Status errors, warnings).
//
// THREAD: value types / pure functions.
#pragma once

#include <string>
#include <vector>

#include "kubesim/api_error.hpp"
#include "kubesim/authenticator.hpp"
#include "kubesim/http_types.hpp"
#include "kubesim/media_type.hpp"
#include "kubesim/request_info.hpp"
#include "kubesim/resource_registry.hpp"
#include "kubesim/url_query.hpp"

namespace ccm::kubesim {

struct ApiRequest {
  const HttpRequest& http;
  const UrlQuery& query;
  const RequestInfo& info;
  const UserInfo& user;
  const ResourceType* type = nullptr;  // resource requests
  OutputFormat format = OutputFormat::Json;
  std::string method;
  std::string_view body() const { return http.message.body(); }
  std::string header(boost::beast::http::field f) const {
    auto it = http.message.find(f);
    return it == http.message.end() ? std::string()
                                    : std::string(it->value().data(), it->value().size());
  }
};

HttpResponse jsonResponse(unsigned status, std::string body);
HttpResponse errorResponse(const ApiError& error);
// The watch cache's answer to a read at a resourceVersion it has not seen yet: ApiServer
// serves the request again once the store reaches rv, or answers too_large (504) after 3 s.
HttpResponse waitForRv(uint64_t rv, const ApiError& too_large);
// Adds `Warning: 299 - "<text>"` headers.
void addWarnings(HttpResponse& response, const std::vector<std::string>& warnings);

}  // namespace ccm::kubesim
