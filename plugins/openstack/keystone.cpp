// Keystone v3 authentication, catalog and token lifetime.
#include "plugins/openstack/request_timeout.hpp"
#include "plugins/openstack/keystone.hpp"

#include <ctime>
#include <regex>

#include "plugins/openstack/backoff.hpp"
#include "plugins/openstack/http_error.hpp"
#include "plugins/openstack/text.hpp"

namespace ccm::openstack {
namespace {

constexpr int64_t kNsPerSec = 1000000000;
// After Keystone refused the credentials, no new login before this (doubling with each
// refusal in a row, jittered, up to the cap): an account-lockout policy counts every failed
// login, and a rotated-away password must not lock the account.
constexpr std::chrono::milliseconds kLoginRetryBase{30000};
constexpr std::chrono::milliseconds kLoginRetryCap{600000};

// What the scope names, for messages: project "demo" (tenant-name) in domain "Default".
std::string scopeDescription(const GlobalConfig& g) {
  if (!g.tenant_id.empty()) {
    return "project ID \"" + g.tenant_id + "\" (tenant-id)";
  }
  std::string domain = !g.tenant_domain_id.empty()
                           ? "domain ID \"" + g.tenant_domain_id + "\" (tenant-domain-id)"
                           : "domain \"" + g.tenant_domain_name + "\" (tenant-domain-name)";
  return "project \"" + g.tenant_name + "\" (tenant-name) in " + domain;
}

// The same credentials without a project scope (to tell a wrong project from a wrong password).
GlobalConfig unscoped(const GlobalConfig& g) {
  GlobalConfig out = g;
  out.tenant_id.clear();
  out.tenant_name.clear();
  out.domain_id.clear();
  out.domain_name.clear();
  return out;
}

Json domainRef(const std::string& id, const std::string& name) {
  Json d = Json::object();
  if (!id.empty()) {
    d.set("id", id);
  } else {
    d.set("name", name);
  }
  return d;
}

// {"id": X} or {"name": X, "domain": {...}} for the user.
Json userRef(const std::string& id, const std::string& name, const GlobalConfig& g) {
  Json u = Json::object();
  if (!id.empty()) {
    u.set("id", id);
  } else {
    u.set("name", name);
    u.set("domain", domainRef(g.user_domain_id, g.user_domain_name));
  }
  return u;
}

std::optional<Json> scopeOf(const GlobalConfig& g) {
  Json scope = Json::object();
  if (!g.trust_id.empty()) {
    scope.set("OS-TRUST:trust", Json::object().set("id", g.trust_id));
  } else if (!g.tenant_id.empty()) {
    scope.set("project", Json::object().set("id", g.tenant_id));
  } else if (!g.tenant_name.empty()) {
    scope.set("project", Json::object()
                             .set("name", g.tenant_name)
                             .set("domain", domainRef(g.tenant_domain_id, g.tenant_domain_name)));
  } else if (!g.domain_id.empty()) {
    scope.set("domain", Json::object().set("id", g.domain_id));
  } else if (!g.domain_name.empty()) {
    scope.set("domain", Json::object().set("name", g.domain_name));
  } else {
    return std::nullopt;
  }
  return scope;
}

// auth-url cut before its first "/v<digits>" path segment, with a trailing '/'.
std::string identityBase(const std::string& auth_url) {
  static const std::regex kVersion(R"(/v[0-9][0-9.]*(/|$))");
  std::smatch m;
  auto scheme = auth_url.find("://");
  size_t path_start = auth_url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  std::string base = auth_url;
  if (path_start != std::string::npos) {
    std::string path = auth_url.substr(path_start);
    if (std::regex_search(path, m, kVersion)) {
      base = auth_url.substr(0, path_start + static_cast<size_t>(m.position(0)));
    }
  }
  if (!endsWith(base, "/")) {
    base += "/";
  }
  return base;
}

}  // namespace

sdk::Result<std::string> Catalog::endpointFor(const std::string& type, const std::string& interface,
                                           const std::string& region) const {
  for (const CatalogService& svc : services) {
    if (svc.type != type) {
      continue;
    }
    for (const CatalogEndpoint& ep : svc.endpoints) {
      if (ep.interface != interface) {
        continue;
      }
      if (!region.empty() && ep.region != region && ep.region_id != region) {
        continue;
      }
      if (ep.url.empty()) {
        continue;
      }
      return ep.url;
    }
  }
  return sdk::Status(CCM_STATUS_NOT_FOUND, "the Keystone catalog has no " + interface + " endpoint of type " +
                                    type + (region.empty() ? "" : " in region " + region));
}

Json buildAuthBody(const GlobalConfig& g) {
  Json identity = Json::object();
  bool password_auth = !g.password.empty() || !g.trustee_password.empty();
  bool scoped = true;
  if (!g.token.empty()) {
    identity.set("methods", Json::stringArray({"token"}));
    identity.set("token", Json::object().set("id", g.token));
  } else if (!g.trust_id.empty()) {
    std::string user_id = !g.trustee_id.empty() ? g.trustee_id : g.user_id;
    std::string password = !g.trustee_password.empty() ? g.trustee_password : g.password;
    identity.set("methods", Json::stringArray({"password"}));
    Json user = userRef(user_id, g.username, g);
    user.set("password", password);
    identity.set("password", Json::object().set("user", std::move(user)));
  } else if (password_auth) {
    identity.set("methods", Json::stringArray({"password"}));
    Json user = userRef(g.user_id, g.username, g);
    user.set("password", g.password);
    identity.set("password", Json::object().set("user", std::move(user)));
  } else {
    // Application credential: never scoped (the credential carries its project).
    scoped = false;
    identity.set("methods", Json::stringArray({"application_credential"}));
    Json cred = Json::object();
    if (!g.application_credential_id.empty()) {
      cred.set("id", g.application_credential_id);
    } else {
      cred.set("name", g.application_credential_name);
      cred.set("user", userRef(g.user_id, g.username, g));
    }
    cred.set("secret", g.application_credential_secret);
    identity.set("application_credential", std::move(cred));
  }
  Json auth = Json::object();
  auth.set("identity", std::move(identity));
  if (scoped) {
    if (auto scope = scopeOf(g)) {
      auth.set("scope", std::move(*scope));
    }
  }
  return Json::object().set("auth", std::move(auth));
}

std::optional<int64_t> parseRfc3339(const std::string& text) {
  static const std::regex kRe(
      R"((\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})?)");
  std::smatch m;
  if (!std::regex_match(text, m, kRe)) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = std::stoi(m[1]) - 1900;
  tm.tm_mon = std::stoi(m[2]) - 1;
  tm.tm_mday = std::stoi(m[3]);
  tm.tm_hour = std::stoi(m[4]);
  tm.tm_min = std::stoi(m[5]);
  tm.tm_sec = std::stoi(m[6]);
  int64_t secs = static_cast<int64_t>(timegm(&tm));
  int64_t frac_ns = 0;
  if (m[7].matched) {
    std::string frac = m[7].str().substr(1);
    frac.resize(9, '0');
    frac_ns = std::stoll(frac);
  }
  if (m[8].matched && m[8].str() != "Z" && m[8].str() != "z") {
    std::string off = m[8].str();
    int sign = off[0] == '-' ? -1 : 1;
    std::string digits;
    for (char c : off.substr(1)) {
      if (c != ':') {
        digits.push_back(c);
      }
    }
    int64_t offset = std::stoi(digits.substr(0, 2)) * 3600 + std::stoi(digits.substr(2, 2)) * 60;
    secs -= sign * offset;
  }
  return secs * kNsPerSec + frac_ns;
}

KeystoneAuth::KeystoneAuth(const GlobalConfig& global, HttpClient& http, const sdk::Host& env,
                           std::chrono::nanoseconds request_timeout)
    : global_(global), http_(http), env_(env), request_timeout_(request_timeout) {}

uint64_t KeystoneAuth::authCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return auth_count_;
}

sdk::Result<std::string> KeystoneAuth::discoverIdentityEndpoint(const sdk::Call& call) {
  std::string url = global_.auth_url;
  if (!endsWith(url, "/")) {
    url += "/";
  }
  if (endsWith(url, "/v3/")) {
    return url;
  }
  std::string base = identityBase(global_.auth_url);
  CCM_SDK_ASSIGN_OR_RETURN(auto timeout, requestTimeout(call, request_timeout_));
  HttpRequest req;
  req.url = base;
  req.timeout = timeout;
  req.headers = {{"Accept", "application/json"}};
  CCM_SDK_ASSIGN_OR_RETURN(HttpResponse resp, http_.send(req));
  if (resp.status != 200 && resp.status != 300) {
    return httpError("Keystone version discovery GET " + base, resp);
  }
  auto doc = parseJson(resp.body);
  if (!doc.ok()) {
    return doc.status().withPrefix("Keystone version discovery");
  }
  const JsonValue* versions = jsonObject(*doc, "versions");
  const JsonValue* values = versions != nullptr ? jsonArray(*versions, "values") : nullptr;
  if (values == nullptr) {
    values = jsonArray(*doc, "versions");
  }
  if (values == nullptr) {
    return sdk::Status(CCM_STATUS_UNAVAILABLE,
                  "Keystone version discovery at " + base + " listed no versions");
  }
  std::string chosen;
  for (const auto& v : values->GetArray()) {
    std::string id = jsonString(v, "id");
    std::string status = toLower(jsonString(v, "status"));
    if (!startsWith(id, "v3")) {
      continue;
    }
    if (status != "stable" && status != "current" && status != "supported") {
      continue;
    }
    std::string self;
    if (const JsonValue* links = jsonArray(v, "links")) {
      for (const auto& l : links->GetArray()) {
        if (jsonString(l, "rel") == "self") {
          self = jsonString(l, "href");
        }
      }
    }
    if (self.empty()) {
      continue;
    }
    if (!endsWith(self, "/")) {
      self += "/";
    }
    if (self == url) {
      return self;
    }
    if (chosen.empty()) {
      chosen = self;
    }
  }
  if (chosen.empty()) {
    return sdk::Status(CCM_STATUS_UNAVAILABLE, "Keystone at " + base + " offers no v3 API");
  }
  return chosen;
}

sdk::Status KeystoneAuth::start(const sdk::Call& call) {
  auto endpoint = discoverIdentityEndpoint(call);
  if (!endpoint.ok()) {
    return endpoint.status();
  }
  identity_url_ = *endpoint;
  Catalog catalog;
  auto token = authenticate(call, &catalog);
  if (!token.ok()) {
    return token.status();
  }
  catalog_ = std::move(catalog);
  std::lock_guard<std::mutex> lock(mu_);
  current_ = std::move(token).value();
  return {};
}

sdk::Status KeystoneAuth::loginBackedOff() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (login_failures_ == 0) {
    return {};
  }
  int64_t now = env_.nowUnixNs();
  // A clock that went back by more than the delay does not stretch it.
  if (now >= retry_login_at_ns_ || now < last_login_failure_ns_) {
    return {};
  }
  auto wait = std::chrono::milliseconds((retry_login_at_ns_ - now) / 1000000 + 1);
  return sdk::Status(CCM_STATUS_UNAUTHENTICATED,
                "not logging in to Keystone again for " + std::to_string(wait.count() / 1000) +
                    " s after " + std::to_string(login_failures_) +
                    " refused login(s) in a row, so that an account-lockout policy is not "
                    "tripped; last answer: " +
                    last_login_error_,
                wait);
}

sdk::Status KeystoneAuth::loginRefused(const sdk::Call& call, const sdk::Status& st) {
  std::chrono::milliseconds delay{0};
  int refusals = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    delay = backoffDelay(kLoginRetryBase, login_failures_, kLoginRetryCap);
    refusals = ++login_failures_;
    last_login_failure_ns_ = env_.nowUnixNs();
    retry_login_at_ns_ = last_login_failure_ns_ + std::chrono::nanoseconds(delay).count();
    last_login_error_ = st.message();
  }
  call.error("Keystone refused the credentials; backing off before the next login",
             {{"refusals_in_a_row", std::to_string(refusals)},
              {"next_login_in_s", std::to_string(delay.count() / 1000)},
              {"error", st.message()}});
  return sdk::Status(st.code(), st.message(), delay);
}

sdk::Result<HttpResponse> KeystoneAuth::postAuth(const sdk::Call& call, const GlobalConfig& g) {
  CCM_SDK_ASSIGN_OR_RETURN(auto timeout, requestTimeout(call, request_timeout_));
  HttpRequest req;
  req.method = "POST";
  req.url = identity_url_ + "auth/tokens";
  req.timeout = timeout;
  req.headers = {{"Content-Type", "application/json"}, {"Accept", "application/json"}};
  req.body = buildAuthBody(g).dump();
  req.cancelled = [&call] { return !call.checkAlive().ok(); };
  return http_.send(req);
}

sdk::Result<Token> KeystoneAuth::authenticate(const sdk::Call& call, Catalog* catalog_out) {
  CCM_SDK_RETURN_IF_ERROR(loginBackedOff());
  const std::string url = identity_url_ + "auth/tokens";
  CCM_SDK_ASSIGN_OR_RETURN(HttpResponse resp, postAuth(call, global_));
  if (resp.status == 401) {
    sdk::Status st = httpError("Keystone refused the credentials (POST " + url + ")", resp);
    bool never_logged_in = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      never_logged_in = login_failures_ == 0 && auth_count_ == 0;
    }
    bool project_scope = global_.trust_id.empty() && global_.token.empty() &&
                         (!global_.tenant_id.empty() || !global_.tenant_name.empty()) &&
                         (!global_.password.empty() || !global_.trustee_password.empty());
    if (never_logged_in && project_scope) {
      // Keystone answers the same 401 to a wrong password and to a project the user cannot
      // use. One unscoped login tells them apart, only before the first login ever worked:
      // later the scope is known good and a probe would cost a wrong password a second
      // failed login towards a lockout.
      auto probe = postAuth(call, unscoped(global_));
      if (probe.ok() && probe->status >= 200 && probe->status <= 299) {
        env_.registerSecret(probe->header("x-subject-token"));
        st = sdk::Status(
            CCM_STATUS_PERMISSION_DENIED,
            "Keystone accepted the credentials but not the scope: " + scopeDescription(global_) +
                " does not exist or the user has no role on it (POST " + url + ", request " +
                requestIdOf(resp) + ")");
      }
    }
    call.error("Keystone authentication failed",
               {{"url", url}, {"status", "401"}, {"request_id", requestIdOf(resp)}});
    return loginRefused(call, st);
  }
  if (resp.status != 201 && resp.status != 202 && resp.status != 200) {
    call.error(
        "Keystone authentication failed",
        {{"url", url}, {"status", std::to_string(resp.status)}, {"request_id", requestIdOf(resp)}});
    return httpError("Keystone authentication (POST " + url + ")", resp);
  }
  Token token;
  token.value = resp.header("x-subject-token");
  if (token.value.empty()) {
    return sdk::Status(CCM_STATUS_UNAVAILABLE, "Keystone answered without an X-Subject-Token header");
  }
  env_.registerSecret(token.value);
  auto doc = parseJson(resp.body);
  if (!doc.ok()) {
    return doc.status().withPrefix("Keystone token response");
  }
  const JsonValue* tok = jsonObject(*doc, "token");
  if (tok == nullptr) {
    return sdk::Status(CCM_STATUS_UNAVAILABLE, "Keystone token response has no token");
  }
  if (auto exp = parseRfc3339(jsonString(*tok, "expires_at"))) {
    token.expires_unix_ns = *exp;
  }
  token.issued_unix_ns = env_.nowUnixNs();
  if (auto issued = parseRfc3339(jsonString(*tok, "issued_at"))) {
    // Keystone's clock may differ from ours: keep the lifetime, anchored on our clock.
    if (token.expires_unix_ns != 0) {
      token.expires_unix_ns = token.issued_unix_ns + (token.expires_unix_ns - *issued);
    }
  }
  if (catalog_out != nullptr) {
    const JsonValue* cat = jsonArray(*tok, "catalog");
    if (cat == nullptr) {
      return sdk::Status(CCM_STATUS_PERMISSION_DENIED,
                    "Keystone returned a token without a service catalog (is it scoped?)");
    }
    for (const auto& s : cat->GetArray()) {
      CatalogService svc;
      svc.type = jsonString(s, "type");
      svc.name = jsonString(s, "name");
      if (const JsonValue* eps = jsonArray(s, "endpoints")) {
        for (const auto& e : eps->GetArray()) {
          svc.endpoints.push_back({jsonString(e, "interface"), jsonString(e, "region"),
                                   jsonString(e, "region_id"), jsonString(e, "url")});
        }
      }
      catalog_out->services.push_back(std::move(svc));
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++auth_count_;
    login_failures_ = 0;
  }
  call.debug("Authenticated with Keystone", {{"url", url}});
  return token;
}

bool KeystoneAuth::expiresSoon(const Token& token) const {
  if (token.value.empty()) {
    return true;
  }
  if (token.expires_unix_ns == 0) {
    return false;
  }
  int64_t lifetime = token.expires_unix_ns - token.issued_unix_ns;
  int64_t margin = std::min<int64_t>(600 * kNsPerSec, lifetime / 2);
  return env_.nowUnixNs() >= token.expires_unix_ns - margin;
}

sdk::Result<std::string> KeystoneAuth::token(const sdk::Call& call) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!expiresSoon(current_)) {
      return current_.value;
    }
  }
  std::lock_guard<std::mutex> renew(renew_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!expiresSoon(current_)) {
      return current_.value;  // another thread renewed it
    }
  }
  call.info("Renewing the Keystone token before it expires");
  CCM_SDK_ASSIGN_OR_RETURN(Token fresh, authenticate(call, nullptr));
  std::lock_guard<std::mutex> lock(mu_);
  current_ = std::move(fresh);
  return current_.value;
}

sdk::Result<std::string> KeystoneAuth::renewAfterRejection(const sdk::Call& call,
                                                        const std::string& rejected) {
  std::lock_guard<std::mutex> renew(renew_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (current_.value != rejected && !current_.value.empty()) {
      return current_.value;
    }
  }
  call.info("The cloud rejected the token (401); authenticating again");
  CCM_SDK_ASSIGN_OR_RETURN(Token fresh, authenticate(call, nullptr));
  std::lock_guard<std::mutex> lock(mu_);
  current_ = std::move(fresh);
  return current_.value;
}

}  // namespace ccm::openstack
