// AuthFilter: the authentication and authorization steps for one request.
#include "host/server/auth_filter.hpp"

#include <algorithm>

#include "host/log/log.hpp"
#include "host/runtime/text.hpp"

namespace ccm::server {
namespace {

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
           return lower(x) == lower(y);
         });
}

// Go's %q for the plain strings we print (user names, paths).
std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
    }
    out.push_back(c);
  }
  return out + "\"";
}

}  // namespace

std::optional<std::string_view> bearerToken(std::string_view header) {
  header = text::trimBlanks(header);
  size_t space = header.find(' ');
  if (space == std::string_view::npos || !equalsIgnoreCase(header.substr(0, space), "bearer")) {
    return std::nullopt;
  }
  std::string_view rest = header.substr(space + 1);
  std::string_view token = rest.substr(0, rest.find(' '));
  if (token.empty()) {
    return std::nullopt;
  }
  return token;
}

AuthFilter::AuthFilter(std::vector<std::string> always_allow_paths, DelegatingAuthenticator* authn,
                       DelegatingAuthorizer* authz)
    : authn_(authn), authz_(authz) {
  for (auto& p : always_allow_paths) {
    if (!p.empty()) {
      always_allow_.push_back(std::move(p));
    }
  }
}

bool AuthFilter::alwaysAllowed(std::string_view path) const {
  return std::find(always_allow_.begin(), always_allow_.end(), path) != always_allow_.end();
}

bool AuthFilter::needsReview(std::string_view authorization_header, std::string_view path) const {
  return !alwaysAllowed(path) ||
         (authn_ != nullptr && bearerToken(authorization_header).has_value());
}

AccessDecision AuthFilter::check(std::string_view authorization_header, std::string_view path,
                                 std::string_view verb, std::stop_token stop,
                                 const CertificateAuthentication* cert) const {
  using CertOutcome = CertificateAuthentication::Outcome;
  AccessDecision d;
  const bool always = alwaysAllowed(path);
  const bool cert_user = cert != nullptr && cert->outcome == CertOutcome::Authenticated;
  if (cert != nullptr && cert->outcome == CertOutcome::Failed &&
      !(authn_ != nullptr && bearerToken(authorization_header))) {
    // Authentication failed and nothing else can succeed: 401, also on always-allowed paths.
    log::infoV(2, "Rejected a client certificate on the secure port",
               {{"path", path}, {"reason", cert->message}});
    d.http_status = 401;
    d.message = "Unauthorized";
    return d;
  }
  if (!cert_user && !needsReview(authorization_header, path)) {
    return d;  // an always-allowed path without a token to check
  }
  if (!always && (authz_ == nullptr || (!cert_user && authn_ == nullptr))) {
    d.http_status = 403;
    d.message =
        "forbidden: " + quoted(path) + " needs delegated authorization, which is not configured";
    return d;
  }

  UserInfo user;
  if (cert_user) {
    user = cert->user;  // authenticators before the token's won
  } else if (auto token = bearerToken(authorization_header)) {
    AuthenticationResult authn = authn_->authenticate(*token, stop);
    switch (authn.outcome) {
      case AuthenticationResult::Outcome::Authenticated:
        user = std::move(authn.user);
        break;
      case AuthenticationResult::Outcome::Rejected:
        log::infoV(2, "Rejected a bearer token on the secure port",
                   {{"path", path}, {"reason", authn.message}});
        if (cert != nullptr && cert->outcome == CertOutcome::Failed) {
          log::infoV(2, "Rejected a client certificate on the secure port",
                     {{"path", path}, {"reason", cert->message}});
        }
        d.http_status = 401;
        d.message = "Unauthorized";
        return d;
      case AuthenticationResult::Outcome::Error:
        if (!stop.stop_requested()) {  // shutting down: the call was cancelled on purpose
          log::warning("Could not authenticate a request on the secure port",
                       {{"path", path}, {"err", authn.message}});
        }
        d.http_status = 500;
        d.message = "Internal Server Error: authentication is unavailable";
        return d;
    }
  } else {
    user = UserInfo::anonymous();
  }
  d.user = user.name;

  // Authentication runs before the always-allow authorizer, as in the API server's chain: a
  // token it rejects was answered 401 above even on an always-allowed path.
  if (always || user.inGroup(kMastersGroup)) {
    return d;
  }
  AuthorizationResult authz = authz_->authorize(user, path, verb, stop);
  switch (authz.decision) {
    case AuthorizationResult::Decision::Allowed:
      return d;
    case AuthorizationResult::Decision::Denied:
      log::infoV(2, "Forbidden request on the secure port",
                 {{"user", user.name}, {"verb", verb}, {"path", path}, {"reason", authz.reason}});
      d.http_status = 403;
      d.message = "forbidden: User " + quoted(user.name) + " cannot " + std::string(verb) +
                  " path " + quoted(path);
      if (!authz.reason.empty()) {
        d.message += ": " + authz.reason;
      }
      return d;
    case AuthorizationResult::Decision::Error:
      break;
  }
  if (!stop.stop_requested()) {
    log::warning("Could not authorize a request on the secure port",
                 {{"user", user.name}, {"path", path}, {"err", authz.reason}});
  }
  d.http_status = 500;
  d.message = "Internal Server Error: authorization is unavailable";
  return d;
}

}  // namespace ccm::server
