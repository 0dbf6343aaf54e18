// Unit tests: bearer token parsing, the TokenReview and SubjectAccessReview clients and their
// caches (on a FakeClock), and the authentication/authorization decisions of AuthFilter.
#include <doctest/doctest.h>
#include <rapidjson/document.h>

#include "test/support/fake_kube_api.hpp"
#include "host/log/log.hpp"
#include "host/server/auth_filter.hpp"
#include "test/host/server/review_api_fake.hpp"
#include "test/support/log_capture.hpp"

namespace ccm::server {
namespace {

using namespace std::chrono_literals;
using ccm::testing::LogCapture;
using testing::accessAnswer;
using testing::kAccessReviewPath;
using testing::kTokenReviewPath;
using testing::ReviewApiFake;
using testing::tokenAccepted;
using testing::tokenRejected;

rapidjson::Document parse(const std::string& s) {
  rapidjson::Document d;
  d.Parse(s.c_str());
  REQUIRE_FALSE(d.HasParseError());
  return d;
}

}  // namespace

TEST_CASE("bearer tokens are read like upstream") {
  CHECK(bearerToken("Bearer abc").value() == "abc");
  CHECK(bearerToken("bearer abc").value() == "abc");
  CHECK(bearerToken("BEARER abc").value() == "abc");
  CHECK(bearerToken("  Bearer abc  ").value() == "abc");
  CHECK(bearerToken("Bearer abc def").value() == "abc");
  CHECK_FALSE(bearerToken("").has_value());
  CHECK_FALSE(bearerToken("Bearer").has_value());
  CHECK_FALSE(bearerToken("Bearer ").has_value());
  CHECK_FALSE(bearerToken("Bearer  abc").has_value());  // empty token before the second space
  CHECK_FALSE(bearerToken("Basic dXNlcjpwYXNz").has_value());
  CHECK_FALSE(bearerToken("Bearerabc").has_value());
}

TEST_CASE("sha256Hex") {
  CHECK(sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("TokenReview requests and answers") {
  auto body = parse(DelegatingAuthenticator::reviewBody("tok\"en"));
  CHECK(std::string(body["apiVersion"].GetString()) == "authentication.k8s.io/v1");
  CHECK(std::string(body["kind"].GetString()) == "TokenReview");
  CHECK(std::string(body["spec"]["token"].GetString()) == "tok\"en");

  auto ok = DelegatingAuthenticator::parseReview(
      R"({"status":{"authenticated":true,"user":{"username":"alice","uid":"u1","groups":["dev"],"extra":{"scopes":["a","b"]}}}})");
  REQUIRE(ok.outcome == AuthenticationResult::Outcome::Authenticated);
  CHECK(ok.user.name == "alice");
  CHECK(ok.user.uid == "u1");
  CHECK(ok.user.groups == std::vector<std::string>{"dev", "system:authenticated"});
  CHECK(ok.user.extra["scopes"] == std::vector<std::string>{"a", "b"});

  auto already = DelegatingAuthenticator::parseReview(
      R"({"status":{"authenticated":true,"user":{"username":"bob","groups":["system:authenticated"]}}})");
  CHECK(already.user.groups == std::vector<std::string>{"system:authenticated"});

  auto rejected =
      DelegatingAuthenticator::parseReview(R"({"status":{"user":{},"error":"token expired"}})");
  CHECK(rejected.outcome == AuthenticationResult::Outcome::Rejected);
  CHECK(rejected.message == "token expired");

  CHECK(DelegatingAuthenticator::parseReview("not json").outcome ==
        AuthenticationResult::Outcome::Error);
  CHECK(DelegatingAuthenticator::parseReview("{}").outcome == AuthenticationResult::Outcome::Error);
  CHECK(DelegatingAuthenticator::parseReview(R"({"status":{"authenticated":true}})").outcome ==
        AuthenticationResult::Outcome::Error);
  CHECK(DelegatingAuthenticator::parseReview(
            R"({"status":{"authenticated":true,"user":{"username":""}}})")
            .outcome == AuthenticationResult::Outcome::Error);
}

TEST_CASE("the authenticator caches answers for the TTL and never caches errors") {
  FakeClock clock;
  metrics::Registry registry;
  int answer = 0;  // 0 accept, 1 reject, 2 fail
  ReviewApiFake api(
      [&](const std::string& path, const std::string& body) -> kube::ApiResult<std::string> {
        CHECK(path == kTokenReviewPath);
        CHECK(body.find("secret-token") != std::string::npos);
        if (answer == 0)
          return tokenAccepted("alice", {"dev"});
        if (answer == 1)
          return tokenRejected();
        return kube::ApiStatus(503, kube::Reason::ServiceUnavailable, "down");
      });
  DelegatingAuthenticator authn(api, 10s, clock, &registry);

  auto r = authn.authenticate("secret-token");
  CHECK(r.outcome == AuthenticationResult::Outcome::Authenticated);
  CHECK(api.calls(kTokenReviewPath) == 1);
  answer = 1;
  clock.advance(9s);
  CHECK(authn.authenticate("secret-token").outcome == AuthenticationResult::Outcome::Authenticated);
  CHECK(api.calls(kTokenReviewPath) == 1);  // cached
  clock.advance(1s);
  CHECK(authn.authenticate("secret-token").outcome == AuthenticationResult::Outcome::Rejected);
  CHECK(api.calls(kTokenReviewPath) == 2);  // expired, asked again; the rejection is cached
  answer = 0;
  CHECK(authn.authenticate("secret-token").outcome == AuthenticationResult::Outcome::Rejected);
  CHECK(api.calls(kTokenReviewPath) == 2);
  clock.advance(10s);
  answer = 2;
  auto failed = authn.authenticate("secret-token");
  CHECK(failed.outcome == AuthenticationResult::Outcome::Error);
  CHECK(failed.message.find("down") != std::string::npos);
  CHECK(failed.message.find("secret-token") == std::string::npos);
  CHECK(authn.authenticate("secret-token").outcome == AuthenticationResult::Outcome::Error);
  CHECK(api.calls(kTokenReviewPath) == 4);  // errors are not cached
  answer = 0;
  CHECK(authn.authenticate("secret-token").outcome == AuthenticationResult::Outcome::Authenticated);
  CHECK(api.calls(kTokenReviewPath) == 5);

  CHECK(registry.valueForTest("apiserver_delegated_authn_request_total", {"201"}) == 3);
  CHECK(registry.valueForTest("apiserver_delegated_authn_request_total", {"503"}) == 2);
  CHECK(registry.valueForTest("apiserver_delegated_authn_request_duration_seconds", {"201"}) == 3);
}

TEST_CASE("different tokens are cached apart; a zero TTL caches nothing") {
  FakeClock clock;
  ReviewApiFake api(
      [&](const std::string&, const std::string& body) -> kube::ApiResult<std::string> {
        auto d = parse(body);
        std::string token = d["spec"]["token"].GetString();
        return tokenAccepted("user-" + token, {});
      });
  DelegatingAuthenticator authn(api, 10s, clock, nullptr);
  CHECK(authn.authenticate("a").user.name == "user-a");
  CHECK(authn.authenticate("b").user.name == "user-b");
  CHECK(authn.authenticate("a").user.name == "user-a");
  CHECK(api.calls(kTokenReviewPath) == 2);

  DelegatingAuthenticator uncached(api, 0s, clock, nullptr);
  CHECK(uncached.authenticate("a").user.name == "user-a");
  CHECK(uncached.authenticate("a").user.name == "user-a");
  CHECK(api.calls(kTokenReviewPath) == 4);
}

TEST_CASE("the authenticator posts through KubeApi and reports its errors (FakeKubeApi)") {
  FakeClock clock;
  kube::FakeKubeApi api;
  api.failNext("POST", kTokenReviewPath,
               kube::ApiStatus(403, kube::Reason::Forbidden, "cannot create tokenreviews"));
  DelegatingAuthenticator authn(api, 10s, clock, nullptr);
  auto r = authn.authenticate("t0ken");
  CHECK(r.outcome == AuthenticationResult::Outcome::Error);
  CHECK(r.message.find("cannot create tokenreviews") != std::string::npos);
  auto calls = api.callsFor("POST", kTokenReviewPath);
  REQUIRE(calls.size() == 1);
  CHECK(parse(calls[0].body)["spec"]["token"].GetString() == std::string("t0ken"));
  // FakeKubeApi echoes the request: a TokenReview without status is not an answer.
  CHECK(authn.authenticate("t0ken").outcome == AuthenticationResult::Outcome::Error);
}

TEST_CASE("SubjectAccessReview requests and answers") {
  UserInfo u;
  u.name = "alice";
  u.uid = "u1";
  u.groups = {"dev", "system:authenticated"};
  u.extra["scopes"] = {"x"};
  auto body = parse(DelegatingAuthorizer::reviewBody(u, "/metrics", "get"));
  CHECK(std::string(body["apiVersion"].GetString()) == "authorization.k8s.io/v1");
  CHECK(std::string(body["kind"].GetString()) == "SubjectAccessReview");
  const auto& spec = body["spec"];
  CHECK(std::string(spec["user"].GetString()) == "alice");
  CHECK(std::string(spec["uid"].GetString()) == "u1");
  CHECK(spec["groups"].Size() == 2);
  CHECK(std::string(spec["extra"]["scopes"][0].GetString()) == "x");
  CHECK(std::string(spec["nonResourceAttributes"]["path"].GetString()) == "/metrics");
  CHECK(std::string(spec["nonResourceAttributes"]["verb"].GetString()) == "get");
  CHECK_FALSE(spec.HasMember("resourceAttributes"));

  using D = AuthorizationResult::Decision;
  CHECK(DelegatingAuthorizer::parseReview(accessAnswer(true)).decision == D::Allowed);
  CHECK(DelegatingAuthorizer::parseReview(accessAnswer(false)).decision == D::Denied);
  CHECK(DelegatingAuthorizer::parseReview(accessAnswer(false, "nope", true)).decision == D::Denied);
  CHECK(DelegatingAuthorizer::parseReview(accessAnswer(true, "", true)).decision == D::Denied);
  CHECK(DelegatingAuthorizer::parseReview(accessAnswer(false, "nope")).reason == "nope");
  CHECK(DelegatingAuthorizer::parseReview(R"({"status":{"evaluationError":"boom"}})").reason ==
        "boom");
  CHECK(DelegatingAuthorizer::parseReview("[]").decision == D::Error);
  CHECK(DelegatingAuthorizer::parseReview(R"({"spec":{}})").decision == D::Error);
}

TEST_CASE("the authorizer caches allowed and denied answers for their own TTLs") {
  using D = AuthorizationResult::Decision;
  FakeClock clock;
  metrics::Registry registry;
  bool allow = true;
  bool fail = false;
  ReviewApiFake api(
      [&](const std::string& path, const std::string&) -> kube::ApiResult<std::string> {
        CHECK(path == kAccessReviewPath);
        if (fail)
          return kube::ApiStatus::transport("connection refused");
        return accessAnswer(allow);
      });
  DelegatingAuthorizer authz(api, 20s, 5s, clock, &registry);
  UserInfo alice;
  alice.name = "alice";

  CHECK(authz.authorize(alice, "/metrics", "get").decision == D::Allowed);
  allow = false;
  clock.advance(19s);
  CHECK(authz.authorize(alice, "/metrics", "get").decision == D::Allowed);  // cached 20 s
  CHECK(api.calls(kAccessReviewPath) == 1);
  // Another path, verb or user is another question.
  CHECK(authz.authorize(alice, "/metrics/x", "get").decision == D::Denied);
  CHECK(authz.authorize(alice, "/metrics", "post").decision == D::Denied);
  UserInfo bob;
  bob.name = "bob";
  CHECK(authz.authorize(bob, "/metrics", "get").decision == D::Denied);
  CHECK(api.calls(kAccessReviewPath) == 4);
  clock.advance(1s);
  CHECK(authz.authorize(alice, "/metrics", "get").decision == D::Denied);  // expired
  CHECK(api.calls(kAccessReviewPath) == 5);
  allow = true;
  clock.advance(4s);
  CHECK(authz.authorize(alice, "/metrics", "get").decision == D::Denied);  // denial cached 5 s
  CHECK(api.calls(kAccessReviewPath) == 5);
  clock.advance(1s);
  fail = true;
  CHECK(authz.authorize(alice, "/metrics", "get").decision == D::Error);
  CHECK(authz.authorize(alice, "/metrics", "get").decision == D::Error);  // not cached
  CHECK(api.calls(kAccessReviewPath) == 7);
  fail = false;
  CHECK(authz.authorize(alice, "/metrics", "get").decision == D::Allowed);
  CHECK(registry.valueForTest("apiserver_delegated_authz_request_total", {"201"}) == 6);
  CHECK(registry.valueForTest("apiserver_delegated_authz_request_total", {"error"}) == 2);
}

TEST_CASE("the caches are bounded") {
  FakeClock clock;
  ReviewApiFake api([&](const std::string&, const std::string&) -> kube::ApiResult<std::string> {
    return tokenAccepted("u", {});
  });
  DelegatingAuthenticator authn(api, 1h, clock, nullptr);
  const int n = static_cast<int>(DelegatingAuthenticator::kCacheCapacity) + 10;
  for (int i = 0; i < n; ++i)
    (void)authn.authenticate("token-" + std::to_string(i));
  CHECK(api.calls(kTokenReviewPath) == n);
  (void)authn.authenticate("token-" + std::to_string(n - 1));  // recent: still cached
  CHECK(api.calls(kTokenReviewPath) == n);
  (void)authn.authenticate("token-0");  // the oldest went
  CHECK(api.calls(kTokenReviewPath) == n + 1);
}

TEST_CASE("TtlCache") {
  FakeClock clock;
  TtlCache<int> cache(2);
  cache.put("a", 1, clock.now(), 10s);
  cache.put("b", 2, clock.now(), 10s);
  CHECK(cache.get("a", clock.now()).value() == 1);  // a is now the most recent
  cache.put("c", 3, clock.now(), 10s);              // evicts b
  CHECK_FALSE(cache.get("b", clock.now()).has_value());
  CHECK(cache.get("c", clock.now()).value() == 3);
  cache.put("c", 4, clock.now(), 1s);
  CHECK(cache.get("c", clock.now()).value() == 4);
  clock.advance(1s);
  CHECK_FALSE(cache.get("c", clock.now()).has_value());
  CHECK(cache.size() == 1);
  cache.put("d", 5, clock.now(), 0s);
  CHECK_FALSE(cache.get("d", clock.now()).has_value());
}

TEST_CASE("AuthFilter: the delegated chain") {
  FakeClock clock;
  testing::Policy policy;
  policy.tokens["good"] = {"alice", {"dev"}};
  policy.tokens["admin"] = {"root", {"system:masters"}};
  policy.tokens["nobody"] = {"mallory", {}};
  policy.allowed_paths["alice"] = {"/metrics"};
  policy.allowed_paths["system:unauthenticated"] = {"/open"};
  ReviewApiFake api(policy.responder());
  DelegatingAuthenticator authn(api, 10s, clock, nullptr);
  DelegatingAuthorizer authz(api, 10s, 10s, clock, nullptr);
  AuthFilter filter({"/healthz", "/readyz", "/livez", ""}, &authn, &authz);

  SUBCASE("always-allowed paths without a token skip both reviews, exact match only") {
    CHECK(filter.check("", "/healthz", "get").allowed());
    CHECK(filter.check("", "/livez", "create").allowed());
    CHECK(filter.check("Basic Zm9vOmJhcg==", "/readyz", "get").allowed());
    CHECK(api.calls(kTokenReviewPath) + api.calls(kAccessReviewPath) == 0);
    CHECK(filter.check("", "/healthz/", "get").http_status == 403);
    CHECK(filter.check("", "/healthz/ping", "get").http_status == 403);
    CHECK(filter.check("", "/readyzz", "get").http_status == 403);
    CHECK_FALSE(filter.alwaysAllowed(""));
  }
  SUBCASE(
      "a bad bearer token on a health path: 401 (upstream authenticates before the "
      "always-allow authorizer)") {
    for (const char* path : {"/healthz", "/livez", "/readyz"}) {
      CAPTURE(path);
      auto d = filter.check("Bearer bad", path, "get");
      CHECK(d.http_status == 401);
    }
    CHECK(api.calls(kAccessReviewPath) == 0);
    // A good token on a health path is allowed without a SubjectAccessReview.
    auto d = filter.check("Bearer nobody", "/healthz", "get");
    CHECK(d.allowed());
    CHECK(d.user == "mallory");
    CHECK(api.calls(kAccessReviewPath) == 0);
  }
  SUBCASE("a token the reviewer allows") {
    auto d = filter.check("Bearer good", "/metrics", "get");
    CHECK(d.allowed());
    CHECK(d.user == "alice");
    auto bodies = api.bodies();
    REQUIRE(bodies.size() == 2);
    auto sar = parse(bodies[1]);
    CHECK(std::string(sar["spec"]["user"].GetString()) == "alice");
    CHECK(sar["spec"]["groups"].Size() == 2);  // dev + system:authenticated
  }
  SUBCASE("a token without permission: 403 naming the user") {
    auto d = filter.check("Bearer nobody", "/metrics", "get");
    CHECK(d.http_status == 403);
    CHECK(d.message == "forbidden: User \"mallory\" cannot get path \"/metrics\"");
  }
  SUBCASE("a bad token: 401, no SubjectAccessReview") {
    auto d = filter.check("Bearer nope", "/metrics", "get");
    CHECK(d.http_status == 401);
    CHECK(api.calls(kAccessReviewPath) == 0);
  }
  SUBCASE("no token: anonymous, reviewed like anyone") {
    auto d = filter.check("", "/metrics", "get");
    CHECK(d.http_status == 403);
    CHECK(d.user == "system:anonymous");
    CHECK(api.calls(kTokenReviewPath) == 0);
    auto sar = parse(api.bodies().at(0));
    CHECK(std::string(sar["spec"]["user"].GetString()) == "system:anonymous");
    CHECK(std::string(sar["spec"]["groups"][0].GetString()) == "system:unauthenticated");
    CHECK(filter.check("", "/open", "get").allowed());
    CHECK(filter.check("Basic Zm9vOmJhcg==", "/open", "get").allowed());
  }
  SUBCASE("system:masters needs no SubjectAccessReview") {
    CHECK(filter.check("Bearer admin", "/anything", "get").allowed());
    CHECK(api.calls(kAccessReviewPath) == 0);
  }
}

TEST_CASE("AuthFilter: API errors answer 500 and never allow") {
  FakeClock clock;
  kube::FakeKubeApi api;  // echoes bodies: neither review can be read
  DelegatingAuthenticator authn(api, 10s, clock, nullptr);
  DelegatingAuthorizer authz(api, 10s, 10s, clock, nullptr);
  AuthFilter filter({"/healthz"}, &authn, &authz);
  CHECK(filter.check("Bearer x", "/metrics", "get").http_status == 500);
  CHECK(filter.check("", "/metrics", "get").http_status == 500);
  api.failNext("POST", kAccessReviewPath,
               kube::ApiStatus(500, kube::Reason::InternalError, "etcd down"));
  CHECK(filter.check("", "/metrics", "get").http_status == 500);
  api.failNext("POST", kTokenReviewPath, kube::ApiStatus::transport("connection reset"));
  CHECK(filter.check("Bearer y", "/metrics", "get").http_status == 500);
  CHECK(filter.check("", "/healthz", "get").allowed());
}

TEST_CASE("AuthFilter: without API clients only always-allowed paths are served") {
  AuthFilter filter({"/healthz", "/readyz", "/livez"}, nullptr, nullptr);
  CHECK(filter.check("", "/healthz", "get").allowed());
  CHECK(filter.check("Bearer anything", "/metrics", "get").http_status == 403);
  CHECK(filter.check("", "/metrics", "get").http_status == 403);

  AuthFilter none({}, nullptr, nullptr);  // an empty list allows nothing
  CHECK(none.check("", "/healthz", "get").http_status == 403);
}

TEST_CASE("bearer tokens never reach the log") {
  LogCapture logs;
  FakeClock clock;
  int mode = 0;
  ReviewApiFake api(
      [&](const std::string& path, const std::string&) -> kube::ApiResult<std::string> {
        if (mode == 0)
          return path == kTokenReviewPath ? tokenRejected() : accessAnswer(false);
        if (mode == 1)
          return kube::ApiStatus(500, kube::Reason::InternalError, "boom");
        return path == kTokenReviewPath ? tokenAccepted("alice", {}) : accessAnswer(false);
      });
  DelegatingAuthenticator authn(api, 0s, clock, nullptr);
  DelegatingAuthorizer authz(api, 0s, 0s, clock, nullptr);
  AuthFilter filter({}, &authn, &authz);
  const std::string token = "eyJhbGciOiJSUzI1NiJ9.very-secret-token-material";
  for (mode = 0; mode < 3; ++mode) {
    CHECK_FALSE(filter.check("Bearer " + token, "/metrics", "get").allowed());
  }
  std::string text = logs.get();
  CHECK(text.find("secure port") != std::string::npos);  // something was logged
  CHECK(text.find("very-secret-token-material") == std::string::npos);
}

}  // namespace ccm::server
