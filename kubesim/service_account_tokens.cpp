// Service-account JWTs: HS256 signing and verification.
#include "kubesim/service_account_tokens.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "host/runtime/base64.hpp"

namespace ccm::kubesim {

std::string ServiceAccountTokens::sign(std::string_view signing_input) const {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret_.data(), static_cast<int>(secret_.size()),
       reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size(), mac,
       &len);
  return base64UrlEncode(std::string_view(reinterpret_cast<char*>(mac), len));
}

ServiceAccountTokens::Issued ServiceAccountTokens::issue(
    std::string_view ns, std::string_view name, std::string_view uid, std::chrono::seconds ttl,
    WallTime now, const std::vector<std::string>& audiences) const {
  auto secs = [](WallTime t) {
    return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
  };
  WallTime exp = now + ttl;
  std::string header = R"({"alg":"HS256","kid":"kubesim","typ":"JWT"})";
  std::string aud;
  for (const auto& a : audiences) {
    aud += (aud.empty() ? "" : ",") + jsonString(a);
  }
  if (aud.empty()) {
    aud = jsonString(kIssuer);
  }
  std::string payload =
      R"({"aud":[)" + aud + R"(],"exp":)" + std::to_string(secs(exp)) + R"(,"iat":)" +
      std::to_string(secs(now)) + R"(,"iss":)" + jsonString(kIssuer) + R"(,"jti":)" +
      jsonString(newUid()) + R"(,"kubernetes.io":{"namespace":)" + jsonString(ns) +
      R"(,"serviceaccount":{"name":)" + jsonString(name) + R"(,"uid":)" + jsonString(uid) +
      R"(}},"nbf":)" + std::to_string(secs(now)) + R"(,"sub":)" +
      jsonString("system:serviceaccount:" + std::string(ns) + ":" + std::string(name)) + "}";
  std::string input = base64UrlEncode(header) + "." + base64UrlEncode(payload);
  std::string token = input + "." + sign(input);
  return {token, exp};
}

bool ServiceAccountTokens::looksLikeJwt(std::string_view text) {
  size_t a = text.find('.');
  if (a == std::string_view::npos) {
    return false;
  }
  size_t b = text.find('.', a + 1);
  return b != std::string_view::npos && text.find('.', b + 1) == std::string_view::npos;
}

std::optional<ServiceAccountTokens::Claims> ServiceAccountTokens::verify(std::string_view token,
                                                                         WallTime now,
                                                                         std::string* error) const {
  if (!looksLikeJwt(token)) {
    *error = "not a JWT";
    return std::nullopt;
  }
  size_t b = token.rfind('.');
  std::string_view input = token.substr(0, b);
  std::string_view sig = token.substr(b + 1);
  std::string expected = sign(input);
  if (expected.size() != sig.size() ||
      CRYPTO_memcmp(expected.data(), sig.data(), sig.size()) != 0) {
    *error = "invalid signature";
    return std::nullopt;
  }
  size_t a = input.find('.');
  auto header = base64UrlDecodeStrict(input.substr(0, a));
  auto payload = base64UrlDecodeStrict(input.substr(a + 1));
  if (!header || !payload) {
    *error = "illegal base64 data in the token";
    return std::nullopt;
  }
  JsonDocument doc;
  doc.Parse(payload->data(), payload->size());
  if (doc.HasParseError() || !doc.IsObject()) {
    *error = "malformed payload";
    return std::nullopt;
  }
  const JsonValue* exp = member(doc, "exp");
  if (exp == nullptr || !exp->IsInt64()) {
    *error = "missing exp";
    return std::nullopt;
  }
  Claims c;
  c.expires = WallTime(std::chrono::seconds(exp->GetInt64()));
  if (now > c.expires + leeway_) {
    *error = "service account token has expired";
    return std::nullopt;
  }
  if (const JsonValue* nbf = member(doc, "nbf");
      nbf != nullptr && nbf->IsInt64() &&
      now + leeway_ < WallTime(std::chrono::seconds(nbf->GetInt64()))) {
    *error = "service account token is not valid yet";
    return std::nullopt;
  }
  if (const JsonValue* aud = member(doc, "aud"); aud != nullptr && aud->IsArray()) {
    for (const auto& e : aud->GetArray()) {
      if (e.IsString()) {
        c.audiences.emplace_back(e.GetString(), e.GetStringLength());
      }
    }
  } else if (aud != nullptr && aud->IsString()) {
    c.audiences.emplace_back(aud->GetString(), aud->GetStringLength());
  }
  const JsonValue* k8s = member(doc, "kubernetes.io");
  const JsonValue* sa = k8s ? member(*k8s, "serviceaccount") : nullptr;
  if (k8s == nullptr || sa == nullptr) {
    *error = "missing kubernetes.io claims";
    return std::nullopt;
  }
  c.ns = std::string(stringMember(*k8s, "namespace"));
  c.name = std::string(stringMember(*sa, "name"));
  c.uid = std::string(stringMember(*sa, "uid"));
  if (c.ns.empty() || c.name.empty()) {
    *error = "missing kubernetes.io claims";
    return std::nullopt;
  }
  return c;
}

}  // namespace ccm::kubesim
