// DelegatingAuthenticator: TokenReview requests, answers and their cache.
#include "host/server/delegating_authenticator.hpp"

#include <openssl/evp.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdlib>

namespace ccm::server {
namespace {

kube::ResourcePath tokenReviewPath() {
  return kube::ResourcePath{"authentication.k8s.io/v1", "tokenreviews", "", "", ""};
}

std::vector<std::string> stringArray(const rapidjson::Value& parent, const char* name) {
  std::vector<std::string> out;
  auto it = parent.FindMember(name);
  if (it != parent.MemberEnd() && it->value.IsArray()) {
    for (const auto& v : it->value.GetArray()) {
      if (v.IsString()) {
        out.emplace_back(v.GetString(), v.GetStringLength());
      }
    }
  }
  return out;
}

std::string stringMember(const rapidjson::Value& parent, const char* name) {
  auto it = parent.FindMember(name);
  if (it != parent.MemberEnd() && it->value.IsString()) {
    return std::string(it->value.GetString(), it->value.GetStringLength());
  }
  return {};
}

}  // namespace

std::string sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr) != 1) {
    // Cannot happen with a built-in digest; an empty key would make every token collide, so
    // refuse to continue rather than mix users up.
    std::abort();
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(size_t{len} * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0x0f]);
  }
  return out;
}

DelegatingAuthenticator::DelegatingAuthenticator(kube::KubeApi& api,
                                                 std::chrono::milliseconds cache_ttl, Clock& clock,
                                                 metrics::Registry* registry,
                                                 std::chrono::milliseconds timeout)
    : review_(api, clock, timeout, registry, "apiserver_delegated_authn_request_total",
              "apiserver_delegated_authn_request_duration_seconds"),
      ttl_(cache_ttl) {}

std::string DelegatingAuthenticator::reviewBody(std::string_view token) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("apiVersion");
  w.String("authentication.k8s.io/v1");
  w.Key("kind");
  w.String("TokenReview");
  w.Key("spec");
  w.StartObject();
  w.Key("token");
  w.String(token.data(), static_cast<rapidjson::SizeType>(token.size()));
  w.EndObject();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

AuthenticationResult DelegatingAuthenticator::parseReview(std::string_view json) {
  AuthenticationResult r;
  rapidjson::Document doc;
  const rapidjson::Value* status = reviewStatus(doc, json, "TokenReview", &r.message);
  if (status == nullptr) {
    return r;
  }
  const rapidjson::Value& st = *status;
  auto authenticated = st.FindMember("authenticated");
  bool ok = authenticated != st.MemberEnd() && authenticated->value.IsBool() &&
            authenticated->value.GetBool();
  if (!ok) {
    r.outcome = AuthenticationResult::Outcome::Rejected;
    r.message = stringMember(st, "error");
    if (r.message.empty()) {
      r.message = "token not authenticated";
    }
    return r;
  }
  auto user = st.FindMember("user");
  if (user == st.MemberEnd() || !user->value.IsObject()) {
    r.message = "the TokenReview answer is authenticated but has no user";
    return r;
  }
  const rapidjson::Value& u = user->value;
  r.user.name = stringMember(u, "username");
  if (r.user.name.empty()) {
    r.message = "the TokenReview answer is authenticated but has no username";
    return r;
  }
  r.user.uid = stringMember(u, "uid");
  r.user.groups = stringArray(u, "groups");
  auto extra = u.FindMember("extra");
  if (extra != u.MemberEnd() && extra->value.IsObject()) {
    for (const auto& m : extra->value.GetObject()) {
      r.user.extra[std::string(m.name.GetString(), m.name.GetStringLength())] =
          stringArray(extra->value, m.name.GetString());
    }
  }
  if (!r.user.inGroup(kAuthenticatedGroup)) {
    r.user.groups.emplace_back(kAuthenticatedGroup);
  }
  r.outcome = AuthenticationResult::Outcome::Authenticated;
  return r;
}

AuthenticationResult DelegatingAuthenticator::authenticate(std::string_view token,
                                                           std::stop_token stop) {
  const std::string key = sha256Hex(token);
  {
    std::lock_guard lock(mu_);
    if (auto hit = cache_.get(key, review_.clock().now())) {
      return *hit;
    }
  }
  auto answer = review_.post(tokenReviewPath(), reviewBody(token), std::move(stop));
  AuthenticationResult result;
  if (!answer.ok()) {
    result.outcome = AuthenticationResult::Outcome::Error;
    result.message = "TokenReview failed: " + answer.status().toString();
    return result;
  }
  result = parseReview(*answer);
  if (result.outcome == AuthenticationResult::Outcome::Error) {
    return result;
  }
  std::lock_guard lock(mu_);
  cache_.put(key, result, review_.clock().now(), ttl_);
  return result;
}

}  // namespace ccm::server
