// Keystone v3: the auth request body for each credential kind (password, application
// credential, trust, token), identity endpoint discovery, the service catalog and endpoint
// selection, and KeystoneAuth, which holds the current token, renews it before it expires and
// after a 401, and merges concurrent renewals into one.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "plugins/openstack/config.hpp"
#include "ccm/provider.hpp"
#include "plugins/openstack/http_client.hpp"
#include "plugins/openstack/json.hpp"
#include "ccm/types.hpp"

namespace ccm::openstack {

struct CatalogEndpoint {
  std::string interface;
  std::string region;
  std::string region_id;
  std::string url;
};

struct CatalogService {
  std::string type;
  std::string name;
  std::vector<CatalogEndpoint> endpoints;
};

struct Catalog {
  std::vector<CatalogService> services;

  // The first endpoint, in catalog order, of a service of this type with this interface in
  // this region (matching region or region_id; an empty region matches any). NOT_FOUND names
  // what was looked for.
  sdk::Result<std::string> endpointFor(const std::string& type, const std::string& interface,
                                    const std::string& region) const;
};

struct Token {
  std::string value;
  int64_t expires_unix_ns = 0;  // 0 when Keystone gave no expiry
  int64_t issued_unix_ns = 0;
};

// The JSON body of POST /v3/auth/tokens for these credentials (see docs/providers/openstack.md).
Json buildAuthBody(const GlobalConfig& global);

// "2026-07-23T10:00:00.000000Z" or "...+02:00" to Unix nanoseconds.
std::optional<int64_t> parseRfc3339(const std::string& text);

// THREAD: every method may be called from any thread.
class KeystoneAuth {
 public:
  KeystoneAuth(const GlobalConfig& global, HttpClient& http, const sdk::Host& env,
               std::chrono::nanoseconds request_timeout);

  // The first authentication: finds the v3 endpoint, gets a token and the catalog.
  sdk::Status start(const sdk::Call& call);

  // A token valid for a while longer, renewing it first when it is about to expire.
  sdk::Result<std::string> token(const sdk::Call& call);

  // After a request with `rejected` got 401: a fresh token (one re-authentication however
  // many threads ask at once).
  sdk::Result<std::string> renewAfterRejection(const sdk::Call& call, const std::string& rejected);

  // Switches to new credentials (a reconfigure; keystone_rotation.cpp): logs in with them
  // first. When Keystone refuses them the old ones stay and the refusal is returned; when it
  // cannot be asked, the new ones are kept and the next request logs in with them. Requests
  // already holding a token finish with it.
  sdk::Status rotateCredentials(const sdk::Call& call, const GlobalConfig& global);
  // The credentials in use (those of the last accepted rotation).
  GlobalConfig credentials();

  const Catalog& catalog() const { return catalog_; }
  const std::string& identityEndpoint() const { return identity_url_; }
  // How many times a token was obtained (for metrics and tests' sake).
  uint64_t authCount() const;

 private:
  sdk::Result<std::string> discoverIdentityEndpoint(const sdk::Call& call);
  sdk::Result<Token> authenticate(const sdk::Call& call, Catalog* catalog_out);
  sdk::Result<HttpResponse> postAuth(const sdk::Call& call, const GlobalConfig& g);
  // UNAUTHENTICATED with the time left while failed logins are being backed off.
  sdk::Status loginBackedOff() const;
  // Records a refused login and returns st with the delay before the next one.
  sdk::Status loginRefused(const sdk::Call& call, const sdk::Status& st);
  bool expiresSoon(const Token& token) const;

  GlobalConfig global_;  // changed only under renew_mu_ (rotateCredentials) once started
  HttpClient& http_;
  const sdk::Host& env_;
  std::chrono::nanoseconds request_timeout_;
  std::string identity_url_;  // ends with "/", set by start()
  Catalog catalog_;           // written by start() only, read-only afterwards

  mutable std::mutex mu_;
  Token current_;            // guarded by mu_
  uint64_t auth_count_ = 0;  // guarded by mu_
  // Logins Keystone refused in a row, when the last one was and when the next may be (on the
  // host's Unix clock, as token expiry is); all guarded by mu_.
  int login_failures_ = 0;
  int64_t last_login_failure_ns_ = 0;
  int64_t retry_login_at_ns_ = 0;
  std::string last_login_error_;
  std::mutex renew_mu_;      // serialises renewals so concurrent ones merge
};

}  // namespace ccm::openstack
