// Unit tests: service-account JWTs, static tokens and the authenticator's request handling
// (host/tls's own tests are in test/host/tls).
#include <doctest/doctest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstdio>
#include <fstream>

#include "host/runtime/base64.hpp"
#include "host/tls/self_signed.hpp"
#include "kubesim/authenticator.hpp"
#include "kubesim/service_account_tokens.hpp"

namespace ccm::kubesim {
namespace {

TEST_CASE("service-account tokens verify, expire and resist tampering") {
  ServiceAccountTokens tokens("0123456789abcdef0123456789abcdef");
  auto now = std::chrono::system_clock::now();
  auto issued = tokens.issue("kube-system", "ccm", "uid-1", std::chrono::hours(1), now);
  CHECK(ServiceAccountTokens::looksLikeJwt(issued.token));
  std::string err;
  auto claims = tokens.verify(issued.token, now, &err);
  REQUIRE(claims.has_value());
  CHECK(claims->ns == "kube-system");
  CHECK(claims->name == "ccm");
  CHECK(claims->uid == "uid-1");
  CHECK_FALSE(tokens.verify(issued.token, now + std::chrono::hours(2), &err).has_value());
  CHECK(err == "service account token has expired");
  // The API server's leeway: accepted up to 60 s past exp, refused after.
  CHECK(tokens.verify(issued.token, now + std::chrono::hours(1) + std::chrono::seconds(59), &err)
            .has_value());
  CHECK_FALSE(
      tokens.verify(issued.token, now + std::chrono::hours(1) + std::chrono::seconds(61), &err)
          .has_value());
  std::string tampered = issued.token;
  tampered[tampered.size() / 2] = tampered[tampered.size() / 2] == 'A' ? 'B' : 'A';
  CHECK_FALSE(tokens.verify(tampered, now, &err).has_value());
  ServiceAccountTokens other("another secret, another cluster!!");
  CHECK_FALSE(other.verify(issued.token, now, &err).has_value());
}

TEST_CASE("authenticator: static tokens, token file, SA tokens, certificates, anonymous") {
  ServiceAccountTokens tokens("0123456789abcdef0123456789abcdef");
  bool sa_exists = true;
  Authenticator authn(
      tokens, [&](std::string_view ns, std::string_view name) -> std::optional<std::string> {
        if (sa_exists && ns == "kube-system" && name == "ccm")
          return std::string("uid-1");
        return std::nullopt;
      });
  std::string path = "/tmp/kubesim-authn-test-" + std::to_string(::getpid()) + ".csv";
  {
    std::ofstream f(path);
    f << "# comment\n";
    f << "tok1,bob,42,\"g1,g2\"\n";
    f << "tok2,carol,43\n";
  }
  REQUIRE(authn.loadTokenFile(path).ok());
  std::remove(path.c_str());
  CHECK_FALSE(authn.loadTokenFile("/nonexistent/file").ok());

  auto request = [](std::string auth) {
    HttpRequest r;
    if (!auth.empty())
      r.message.set(boost::beast::http::field::authorization, auth);
    return r;
  };
  UserInfo u;
  std::string reason;
  CHECK(authn.authenticate(request("Bearer tok1"), &u, &reason) ==
        Authenticator::Outcome::Authenticated);
  CHECK(u.name == "bob");
  CHECK(u.uid == "42");
  CHECK(u.groups == std::vector<std::string>{"g1", "g2", "system:authenticated"});
  CHECK(authn.authenticate(request("bearer tok2"), &u, &reason) ==
        Authenticator::Outcome::Authenticated);
  CHECK(authn.authenticate(request("Bearer nope"), &u, &reason) ==
        Authenticator::Outcome::Rejected);
  // Another scheme or an empty bearer token is no credential: anonymous, as the API server.
  CHECK(authn.authenticate(request("Basic dXNlcjpwYXNz"), &u, &reason) ==
        Authenticator::Outcome::Anonymous);
  CHECK(authn.authenticate(request("Bearer "), &u, &reason) == Authenticator::Outcome::Anonymous);
  CHECK(authn.authenticate(request(""), &u, &reason) == Authenticator::Outcome::Anonymous);

  auto sa = tokens.issue("kube-system", "ccm", "uid-1", std::chrono::hours(1),
                         std::chrono::system_clock::now());
  UserInfo sau;
  REQUIRE(authn.authenticate(request("Bearer " + sa.token), &sau, &reason) ==
          Authenticator::Outcome::Authenticated);
  CHECK(sau.name == "system:serviceaccount:kube-system:ccm");
  CHECK(sau.groups == std::vector<std::string>{"system:serviceaccounts",
                                               "system:serviceaccounts:kube-system",
                                               "system:authenticated"});
  sa_exists = false;
  CHECK(authn.authenticate(request("Bearer " + sa.token), &sau, &reason) ==
        Authenticator::Outcome::Rejected);

  HttpRequest cert = request("");
  cert.certificate.present = true;
  cert.certificate.user = "alice";
  cert.certificate.groups = {"dev"};
  CHECK(authn.authenticate(cert, &u, &reason) == Authenticator::Outcome::Authenticated);
  CHECK(u.name == "alice");
  CHECK(u.groups == std::vector<std::string>{"dev", "system:authenticated"});
}

TEST_CASE("service-account tokens: audiences and strictly decoded segments") {
  const std::string secret = "0123456789abcdef0123456789abcdef";
  ServiceAccountTokens tokens(secret);
  Authenticator authn(tokens, [](std::string_view, std::string_view) {
    return std::optional<std::string>("uid-1");
  });
  auto now = std::chrono::system_clock::now();
  auto api = tokens.issue("kube-system", "ccm", "uid-1", std::chrono::hours(1), now);
  auto vault = tokens.issue("kube-system", "ccm", "uid-1", std::chrono::hours(1), now, {"vault"});
  std::string reason;
  std::vector<std::string> granted;
  REQUIRE(authn.authenticateToken(api.token, &reason, {}, &granted).has_value());
  CHECK(granted == Authenticator::apiAudiences());
  CHECK_FALSE(authn.authenticateToken(vault.token, &reason).has_value());
  CHECK(reason ==
        "[invalid bearer token, token audiences [\"vault\"] is invalid for the target audiences "
        "[\"https://kubernetes.default.svc.cluster.local\"]]");
  REQUIRE(authn.authenticateToken(vault.token, &reason, {"other", "vault"}, &granted).has_value());
  CHECK(granted == std::vector<std::string>{"vault"});

  // A segment re-encoded with padding or the standard alphabet, then signed properly, is still
  // refused: JWT segments are unpadded base64url.
  auto resign = [&](const std::string& header, const std::string& payload) {
    std::string input = header + "." + payload;
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
         reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac, &len);
    return input + "." + base64UrlEncode(std::string_view(reinterpret_cast<char*>(mac), len));
  };
  size_t a = api.token.find('.');
  size_t b = api.token.rfind('.');
  std::string header = api.token.substr(0, a);
  std::string payload_text = *base64Decode(api.token.substr(a + 1, b - a - 1));
  if (payload_text.size() % 3 == 0) {
    payload_text.insert(1, " ");  // still the same JSON, now encoded with padding
  }
  std::string err;
  CHECK(tokens.verify(resign(header, base64UrlEncode(payload_text)), now, &err).has_value());
  CHECK_FALSE(tokens.verify(resign(header, base64Encode(payload_text)), now, &err).has_value());
  CHECK(err == "illegal base64 data in the token");
  CHECK_FALSE(base64UrlDecodeStrict("ab+/").has_value());
  CHECK_FALSE(base64UrlDecodeStrict("YQ==").has_value());
  CHECK(base64UrlDecodeStrict("YQ").value() == "a");
  CHECK(base64UrlDecodeStrict("-_8").value() == "\xfb\xff");
}

}  // namespace
}  // namespace ccm::kubesim
