// DelegatingAuthorizer: SubjectAccessReview requests, answers and their cache.
#include "host/server/delegating_authorizer.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>


namespace ccm::server {
namespace {

kube::ResourcePath accessReviewPath() {
  return kube::ResourcePath{"authorization.k8s.io/v1", "subjectaccessreviews", "", "", ""};
}

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

void writeString(JsonWriter& w, std::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

}  // namespace

DelegatingAuthorizer::DelegatingAuthorizer(kube::KubeApi& api,
                                           std::chrono::milliseconds allowed_ttl,
                                           std::chrono::milliseconds denied_ttl, Clock& clock,
                                           metrics::Registry* registry,
                                           std::chrono::milliseconds timeout)
    : review_(api, clock, timeout, registry, "apiserver_delegated_authz_request_total",
              "apiserver_delegated_authz_request_duration_seconds"),
      allowed_ttl_(allowed_ttl),
      denied_ttl_(denied_ttl) {}

std::string DelegatingAuthorizer::reviewBody(const UserInfo& user, std::string_view path,
                                             std::string_view verb) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  w.Key("apiVersion");
  w.String("authorization.k8s.io/v1");
  w.Key("kind");
  w.String("SubjectAccessReview");
  w.Key("spec");
  w.StartObject();
  w.Key("user");
  writeString(w, user.name);
  if (!user.uid.empty()) {
    w.Key("uid");
    writeString(w, user.uid);
  }
  w.Key("groups");
  w.StartArray();
  for (const auto& g : user.groups) {
    writeString(w, g);
  }
  w.EndArray();
  if (!user.extra.empty()) {
    w.Key("extra");
    w.StartObject();
    for (const auto& [k, values] : user.extra) {  // std::map: a stable order for the cache key
      writeString(w, k);
      w.StartArray();
      for (const auto& v : values) {
        writeString(w, v);
      }
      w.EndArray();
    }
    w.EndObject();
  }
  w.Key("nonResourceAttributes");
  w.StartObject();
  w.Key("path");
  writeString(w, path);
  w.Key("verb");
  writeString(w, verb);
  w.EndObject();
  w.EndObject();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

AuthorizationResult DelegatingAuthorizer::parseReview(std::string_view json) {
  AuthorizationResult r;
  rapidjson::Document doc;
  const rapidjson::Value* status = reviewStatus(doc, json, "SubjectAccessReview", &r.reason);
  if (status == nullptr) {
    return r;
  }
  const rapidjson::Value& st = *status;
  auto flag = [&](const char* name) {
    auto it = st.FindMember(name);
    return it != st.MemberEnd() && it->value.IsBool() && it->value.GetBool();
  };
  auto text = [&](const char* name) {
    auto it = st.FindMember(name);
    return it != st.MemberEnd() && it->value.IsString()
               ? std::string(it->value.GetString(), it->value.GetStringLength())
               : std::string();
  };
  r.reason = text("reason");
  if (r.reason.empty()) {
    r.reason = text("evaluationError");
  }
  // "denied" wins over a (contradictory) "allowed"; neither is no opinion, which denies.
  r.decision = flag("allowed") && !flag("denied") ? AuthorizationResult::Decision::Allowed
                                                  : AuthorizationResult::Decision::Denied;
  return r;
}

AuthorizationResult DelegatingAuthorizer::authorize(const UserInfo& user, std::string_view path,
                                                    std::string_view verb, std::stop_token stop) {
  std::string body = reviewBody(user, path, verb);
  {
    std::lock_guard lock(mu_);
    if (auto hit = cache_.get(body, review_.clock().now())) {
      return *hit;
    }
  }
  auto answer = review_.post(accessReviewPath(), body, std::move(stop));
  if (!answer.ok()) {
    AuthorizationResult r;
    r.reason = "SubjectAccessReview failed: " + answer.status().toString();
    return r;
  }
  AuthorizationResult r = parseReview(*answer);
  if (r.decision == AuthorizationResult::Decision::Error) {
    return r;
  }
  std::lock_guard lock(mu_);
  cache_.put(body, r, review_.clock().now(),
             r.decision == AuthorizationResult::Decision::Allowed ? allowed_ttl_ : denied_ttl_);
  return r;
}

}  // namespace ccm::server
