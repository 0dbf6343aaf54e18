// ServiceAccountTokens: issues and verifies service-account tokens shaped like the API
// server's bound tokens: a JWT (HS256 with a server secret) whose subject is
// system:serviceaccount:<ns>:<name>, whose audiences are the requested ones (default: the
// issuer, the API server's own audience) and whose "kubernetes.io" claim names the namespace
// and the service account (name, uid). Verification decodes the segments strictly (unpadded
// base64url), checks signature and expiry (with the API server's 60 s leeway for clock skew)
// and — through the caller — audiences and that the service account still exists with that uid.
//
// THREAD: immutable after construction; safe from any thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kubesim/json_util.hpp"

namespace ccm::kubesim {

class ServiceAccountTokens {
 public:
  static constexpr std::string_view kIssuer = "https://kubernetes.default.svc.cluster.local";
  // Clock-skew leeway on exp (and nbf), as go-jose's jwt.DefaultLeeway the API server uses.
  static constexpr std::chrono::seconds kLeeway{60};

  // secret: the HMAC key (persisted with the certificates so tokens survive restarts).
  // leeway: kLeeway as the API server; shorter only for tests (--token-expiry-leeway).
  explicit ServiceAccountTokens(std::string secret, std::chrono::seconds leeway = kLeeway)
      : secret_(std::move(secret)), leeway_(leeway) {}

  struct Issued {
    std::string token;
    WallTime expires;
  };
  // audiences empty: {kIssuer}.
  Issued issue(std::string_view ns, std::string_view name, std::string_view uid,
               std::chrono::seconds ttl, WallTime now,
               const std::vector<std::string>& audiences = {}) const;

  struct Claims {
    std::string ns;
    std::string name;
    std::string uid;
    std::vector<std::string> audiences;  // the "aud" claim
    WallTime expires;
  };
  // nullopt (with *error set, worded as the API server's service-account authenticator) when
  // the token is not one of ours or has expired (more than the leeway ago).
  std::optional<Claims> verify(std::string_view token, WallTime now, std::string* error) const;

  // True when text looks like a JWT (three base64url parts).
  static bool looksLikeJwt(std::string_view text);

 private:
  std::string sign(std::string_view signing_input) const;
  std::string secret_;
  std::chrono::seconds leeway_;
};

}  // namespace ccm::kubesim
