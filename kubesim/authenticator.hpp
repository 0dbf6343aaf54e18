// Authenticator: who is calling. Bearer tokens are looked up in the static token table
// (--token-auth-file, admin-added tokens) or verified as service-account JWTs; otherwise a
// verified client certificate names the user (CN) and groups (O); a certificate is looked at
// first, as the API server's authenticator chain does. Requests with neither (no
// Authorization header, another scheme than Bearer, an empty bearer token) are anonymous:
// system:anonymous in system:unauthenticated, left to RBAC (--anonymous-auth=true, the
// default). A bearer token that does not verify is rejected (401). Every authenticated user
// also gets the group system:authenticated.
//
// THREAD: all methods may be called from any thread; mu_ guards the token table.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "host/runtime/status.hpp"
#include "kubesim/http_types.hpp"
#include "kubesim/service_account_tokens.hpp"

namespace ccm::kubesim {

struct UserInfo {
  std::string name;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;

  bool inGroup(std::string_view group) const;
};

class Authenticator {
 public:
  // Returns the uid of service account ns/name, or nullopt when it does not exist.
  using ServiceAccountLookup =
      std::function<std::optional<std::string>(std::string_view ns, std::string_view name)>;

  Authenticator(const ServiceAccountTokens& tokens, ServiceAccountLookup lookup)
      : tokens_(tokens), lookup_(std::move(lookup)) {}

  // Adds (or replaces) a static bearer token.
  void addToken(std::string token, UserInfo user);
  // Loads a token file in the API server's CSV format: token,user,uid,"group1,group2".
  Status loadTokenFile(const std::string& path);

  enum class Outcome { Authenticated, Anonymous, Rejected };
  // Authenticates a request; *user is set on success, *reason on rejection.
  Outcome authenticate(const HttpRequest& request, UserInfo* user, std::string* reason) const;
  // The audiences the API server itself accepts tokens for (--api-audiences: the issuer).
  static std::vector<std::string> apiAudiences();
  // Authenticates a bare bearer token for `audiences` (TokenReview's spec.audiences; empty:
  // apiAudiences()). On success *granted (when given) holds the audiences the token is good
  // for among those asked; on failure *reason is the API server's error text.
  std::optional<UserInfo> authenticateToken(std::string_view token, std::string* reason,
                                            const std::vector<std::string>& audiences = {},
                                            std::vector<std::string>* granted = nullptr) const;

  // system:anonymous, group system:unauthenticated.
  static UserInfo anonymousUser();
  static UserInfo serviceAccountUser(std::string_view ns, std::string_view name,
                                     std::string_view uid);

 private:
  const ServiceAccountTokens& tokens_;
  ServiceAccountLookup lookup_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, UserInfo> static_tokens_;  // guarded by mu_
};

}  // namespace ccm::kubesim
