// DelegatingAuthorizer: asks the API server whether a user may use a non-resource path (a
// SubjectAccessReview, POST /apis/authorization.k8s.io/v1/subjectaccessreviews, with
// nonResourceAttributes {path, verb}), like k8s.io/apiserver's delegating authorization.
// "Allowed" answers are cached for --authorization-webhook-cache-authorized-ttl, denials for
// --authorization-webhook-cache-unauthorized-ttl; failures to get an answer are never cached
// and never allow.
//
// Metrics: apiserver_delegated_authz_request_total{code} and
// apiserver_delegated_authz_request_duration_seconds{code}.
//
// THREAD: authorize() may be called from any thread; it blocks on the API call when the
// answer is not cached.
#pragma once

#include <chrono>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>

#include "host/kube/api/kube_api.hpp"
#include "host/runtime/clock.hpp"
#include "host/runtime/metrics.hpp"
#include "host/server/review_call.hpp"
#include "host/server/ttl_cache.hpp"
#include "host/server/user_info.hpp"

namespace ccm::server {

struct AuthorizationResult {
  enum class Decision {
    Allowed,
    Denied,  // denied or no opinion (HTTP 403)
    Error,   // no usable answer (HTTP 5xx; never an allow)
  };
  Decision decision = Decision::Error;
  std::string reason;  // the reviewer's reason or the error
};

class DelegatingAuthorizer {
 public:
  static constexpr size_t kCacheCapacity = 4096;

  // api: the client that posts SubjectAccessReviews; borrowed, must outlive this object.
  // registry may be null. timeout bounds each review call.
  DelegatingAuthorizer(kube::KubeApi& api, std::chrono::milliseconds allowed_ttl,
                       std::chrono::milliseconds denied_ttl, Clock& clock,
                       metrics::Registry* registry,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10));

  // May `user` do `verb` ("get") on the non-resource `path` ("/metrics")?
  AuthorizationResult authorize(const UserInfo& user, std::string_view path, std::string_view verb,
                                std::stop_token stop = {});

  // The JSON body of the SubjectAccessReview (also the cache key; exposed for tests).
  static std::string reviewBody(const UserInfo& user, std::string_view path, std::string_view verb);
  // Reads a SubjectAccessReview answer.
  static AuthorizationResult parseReview(std::string_view json);

 private:
  ReviewCall review_;
  const std::chrono::milliseconds allowed_ttl_;
  const std::chrono::milliseconds denied_ttl_;

  std::mutex mu_;
  TtlCache<AuthorizationResult> cache_{kCacheCapacity};  // guarded by mu_
};

}  // namespace ccm::server
