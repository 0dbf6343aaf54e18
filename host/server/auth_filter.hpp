// AuthFilter: who may read what on the secure port, as k8s.io/apiserver's delegating
// authentication and authorization chain decides it:
//
//   0. a client certificate (or a verified front proxy's user headers) authenticates first,
//      without an API call (client_certificates.hpp); one that verified nowhere answers 401
//      unless a bearer token authenticates;
//   1. a bearer token ("Authorization: Bearer <token>") is checked with a TokenReview:
//      rejected -> 401, on every path (authentication comes before authorization); no token
//      at all -> the anonymous user (system:anonymous in group system:unauthenticated);
//   2. paths in --authorization-always-allow-paths (exact match) are then allowed to anyone
//      authenticated or anonymous; a request there without a token needs no review at all;
//   3. members of system:masters are allowed;
//   4. everyone else needs a SubjectAccessReview allowing `verb` on the path: denied or no
//      opinion -> 403.
//
// An error talking to the API server answers 500 and never allows. Without an authenticator
// or authorizer (no API client) everything but the always-allowed paths is forbidden.
//
// THREAD: check() may be called from any thread concurrently; it blocks on review calls.
#pragma once

#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "host/server/client_certificates.hpp"
#include "host/server/delegating_authenticator.hpp"
#include "host/server/delegating_authorizer.hpp"

namespace ccm::server {

struct AccessDecision {
  int http_status = 0;  // 0 = allowed; else 401, 403 or 500
  std::string user;     // the user the decision is about ("" before authentication)
  std::string message;  // for the error answer's body (never contains a token)

  bool allowed() const { return http_status == 0; }
};

class AuthFilter {
 public:
  // authn/authz are borrowed (may be null, see above) and must outlive the filter. Empty
  // strings in always_allow_paths are ignored.
  AuthFilter(std::vector<std::string> always_allow_paths, DelegatingAuthenticator* authn,
             DelegatingAuthorizer* authz);

  bool alwaysAllowed(std::string_view path) const;
  // False when check() would allow without asking the API server (an always-allowed path
  // and no bearer token, or no authenticator to check one with).
  bool needsReview(std::string_view authorization_header, std::string_view path) const;

  // authorization_header: the request's Authorization header ("" when absent); path: the
  // decoded URL path without query; verb: "get" for GET and HEAD; cert: what the client's
  // certificate (and front-proxy headers) authenticated, which comes before the bearer token
  // (client_certificates.hpp); nullptr as NotApplicable.
  AccessDecision check(std::string_view authorization_header, std::string_view path,
                       std::string_view verb, std::stop_token stop = {},
                       const CertificateAuthentication* cert = nullptr) const;

 private:
  std::vector<std::string> always_allow_;
  DelegatingAuthenticator* authn_;
  DelegatingAuthorizer* authz_;
};

// The token of an "Authorization: Bearer <token>" header (scheme case-insensitive), or
// nullopt when the header is absent, has another scheme or an empty token (all of which
// make the request anonymous, as upstream).
std::optional<std::string_view> bearerToken(std::string_view authorization_header);

}  // namespace ccm::server
