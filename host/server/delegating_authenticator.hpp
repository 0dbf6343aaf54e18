// DelegatingAuthenticator: checks a bearer token by asking the API server (a TokenReview,
// POST /apis/authentication.k8s.io/v1/tokenreviews), like k8s.io/apiserver's delegating
// authentication. Answers, positive and negative, are cached for the TTL
// (--authentication-token-webhook-cache-ttl); failures to get an answer are not cached.
// The cache is keyed by a SHA-256 digest of the token, so no token is kept in memory after
// the call, and no token is ever logged.
//
// Metrics: apiserver_delegated_authn_request_total{code} and
// apiserver_delegated_authn_request_duration_seconds{code} (code = the HTTP status of the
// review call, "error" when there was no answer).
//
// THREAD: authenticate() may be called from any thread; it blocks on the API call when the
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

struct AuthenticationResult {
  enum class Outcome {
    Authenticated,  // user is set
    Rejected,       // the API server said the token is not valid (HTTP 401)
    Error,          // no usable answer (never treated as authenticated; HTTP 5xx)
  };
  Outcome outcome = Outcome::Error;
  UserInfo user;
  std::string message;  // why it was rejected, or the error (no token in it)
};

class DelegatingAuthenticator {
 public:
  static constexpr size_t kCacheCapacity = 4096;

  // api: the client that posts TokenReviews; borrowed, must outlive this object. registry may
  // be null. timeout bounds each review call.
  DelegatingAuthenticator(kube::KubeApi& api, std::chrono::milliseconds cache_ttl, Clock& clock,
                          metrics::Registry* registry,
                          std::chrono::milliseconds timeout = std::chrono::seconds(10));

  // Authenticates a non-empty bearer token. The user gets system:authenticated added when the
  // answer lacks it (as upstream's authenticated-group adder does).
  AuthenticationResult authenticate(std::string_view token, std::stop_token stop = {});

  // The JSON body of a TokenReview for token (exposed for tests).
  static std::string reviewBody(std::string_view token);
  // Reads a TokenReview answer: authenticated with a user, rejected, or an error.
  static AuthenticationResult parseReview(std::string_view json);

 private:
  ReviewCall review_;
  const std::chrono::milliseconds ttl_;

  std::mutex mu_;
  TtlCache<AuthenticationResult> cache_{kCacheCapacity};  // guarded by mu_
};

// Lower-case hex SHA-256 of data (cache keys for tokens).
std::string sha256Hex(std::string_view data);

}  // namespace ccm::server
