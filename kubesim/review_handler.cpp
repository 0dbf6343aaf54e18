// ReviewHandler: TokenReview, access reviews, SelfSubjectReview and TokenRequest.
#include "kubesim/review_handler.hpp"

#include "kubesim/media_type.hpp"
#include "kubesim/protobuf_decoder.hpp"

namespace ccm::kubesim {
namespace {

std::string userJson(const UserInfo& u) {
  std::string out = R"({"username":)" + jsonString(u.name);
  if (!u.uid.empty()) {
    out += R"(,"uid":)" + jsonString(u.uid);
  }
  out += R"(,"groups":[)";
  for (size_t i = 0; i < u.groups.size(); ++i) {
    out += (i ? "," : "") + jsonString(u.groups[i]);
  }
  out += "]";
  if (!u.extra.empty()) {
    out += R"(,"extra":{)";
    bool first = true;
    for (const auto& [k, vs] : u.extra) {
      out += (first ? "" : ",") + jsonString(k) + ":[";
      first = false;
      for (size_t i = 0; i < vs.size(); ++i) {
        out += (i ? "," : "") + jsonString(vs[i]);
      }
      out += "]";
    }
    out += "}";
  }
  return out + "}";
}

std::vector<std::string> strings(const JsonValue* v) {
  std::vector<std::string> out;
  if (v != nullptr && v->IsArray()) {
    for (const auto& e : v->GetArray()) {
      if (e.IsString()) {
        out.emplace_back(e.GetString(), e.GetStringLength());
      }
    }
  }
  return out;
}

std::optional<ApiError> parseBody(const ApiRequest& r, JsonDocument& doc, bool required) {
  std::string_view body = r.body();
  if (body.empty() && !required) {
    doc.SetObject();
    return std::nullopt;
  }
  std::string ct = r.header(boost::beast::http::field::content_type);
  if (parseMediaType(ct).essence() == "application/vnd.kubernetes.protobuf") {
    std::string root = r.type->resource == "serviceaccounts" ? "TokenRequest" : r.type->kind;
    std::string err;
    if (!ProtobufDecoder::builtin().decode(body, root, doc, &err)) {
      return ApiError::badRequest("the object provided is unrecognized (must be of type " + root +
                                  "): " + err);
    }
    return std::nullopt;
  }
  doc.Parse(body.data(), body.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return ApiError::badRequest(
        "the object provided is unrecognized (must be of type " +
        (r.type ? r.type->kind : std::string("TokenRequest")) +
        "): couldn't get version/kind; json parse error: " +
        (doc.HasParseError() ? describeParseError(doc, body) : std::string("not an object")));
  }
  return std::nullopt;
}

}  // namespace

ApiOr<ServiceAccountTokens::Issued> ReviewHandler::issueToken(
    std::string_view ns, std::string_view name, std::chrono::seconds ttl,
    const std::vector<std::string>& audiences) const {
  const ResourceType& sa = *ResourceRegistry::builtin().find("", "v1", "serviceaccounts");
  ObjectPtr obj = store_.get(sa, ns, name);
  if (!obj) {
    return ApiError::notFound("", "serviceaccounts", name);
  }
  return tokens_.issue(ns, name, obj->uid, ttl, std::chrono::system_clock::now(), audiences);
}

HttpResponse ReviewHandler::handle(const ApiRequest& r) {
  if (r.info.verb != "create") {
    return errorResponse(ApiError::methodNotAllowed());
  }
  if (r.type->resource == "serviceaccounts") {
    return tokenRequest(r);
  }
  if (r.type->resource == "selfsubjectreviews") {
    return selfSubjectReview(r);
  }
  JsonDocument body;
  if (auto e = parseBody(r, body, true)) {
    return errorResponse(*e);
  }
  if (r.type->resource == "tokenreviews") {
    return tokenReview(r, body);
  }
  return accessReview(r, body);
}

HttpResponse ReviewHandler::tokenRequest(const ApiRequest& r) {
  JsonDocument body;
  if (auto e = parseBody(r, body, false)) {
    return errorResponse(*e);
  }
  int64_t seconds = 3600;
  std::vector<std::string> audiences;
  if (const JsonValue* spec = member(body, "spec")) {
    if (const JsonValue* es = member(*spec, "expirationSeconds"); es && es->IsInt64()) {
      seconds = es->GetInt64();
    }
    audiences = strings(member(*spec, "audiences"));
  }
  if (seconds < 600) {
    return errorResponse(ApiError::invalid(
        "authentication.k8s.io", "TokenRequest", "",
        {FieldError::invalid("spec.expirationSeconds", std::to_string(seconds),
                             "may not specify a duration less than 10 minutes")}));
  }
  if (seconds > (int64_t{1} << 32)) {
    return errorResponse(ApiError::invalid(
        "authentication.k8s.io", "TokenRequest", "",
        {FieldError::invalid("spec.expirationSeconds", std::to_string(seconds),
                             "may not specify a duration larger than 2^32 seconds")}));
  }
  auto issued = issueToken(r.info.ns, r.info.name, std::chrono::seconds(seconds), audiences);
  if (!issued.ok()) {
    return errorResponse(issued.error());
  }
  if (audiences.empty()) {
    audiences.emplace_back(ServiceAccountTokens::kIssuer);
  }
  std::string aud;
  for (size_t i = 0; i < audiences.size(); ++i) {
    aud += (i ? "," : "") + jsonString(audiences[i]);
  }
  return jsonResponse(
      201, R"({"kind":"TokenRequest","apiVersion":"authentication.k8s.io/v1","metadata":{"name":)" +
               jsonString(r.info.name) + R"(,"namespace":)" + jsonString(r.info.ns) +
               R"(,"creationTimestamp":null},"spec":{"audiences":[)" + aud +
               R"(],"expirationSeconds":)" + std::to_string(seconds) +
               R"(,"boundObjectRef":null},"status":{"token":)" + jsonString(issued.value().token) +
               R"(,"expirationTimestamp":)" + jsonString(formatTime(issued.value().expires)) +
               "}}");
}

HttpResponse ReviewHandler::tokenReview(const ApiRequest& r, const JsonValue& body) {
  const JsonValue* spec = member(body, "spec");
  std::string token = spec ? std::string(stringMember(*spec, "token")) : std::string();
  std::vector<std::string> audiences =
      spec ? strings(member(*spec, "audiences")) : std::vector<std::string>();
  std::string reason;
  std::optional<UserInfo> user;
  std::vector<std::string> granted;
  if (!token.empty()) {
    user = authn_.authenticateToken(token, &reason, audiences, &granted);
  } else {
    reason = "token is empty";
  }
  std::string out =
      R"({"kind":"TokenReview","apiVersion":"authentication.k8s.io/v1","metadata":{"creationTimestamp":null},"spec":)";
  out += spec ? toJson(*spec) : std::string("{}");
  if (user) {
    // status.audiences: the asked audiences (the API server's when none) the token is good for.
    std::string aud;
    for (const auto& a : granted) {
      aud += (aud.empty() ? "" : ",") + jsonString(a);
    }
    out += R"(,"status":{"authenticated":true,"user":)" + userJson(*user) + R"(,"audiences":[)" +
           aud + "]}}";
  } else {
    out += R"(,"status":{"user":{},"error":)" + jsonString(reason) + "}}";
  }
  (void)r;
  return jsonResponse(201, out);
}

HttpResponse ReviewHandler::accessReview(const ApiRequest& r, const JsonValue& body) {
  const std::string& res = r.type->resource;
  const JsonValue* spec = member(body, "spec");
  if (spec == nullptr) {
    return errorResponse(
        ApiError::invalid(r.type->group, r.type->kind, "", {FieldError::required("spec")}));
  }
  AuthorizationAttributes a;
  if (res == "selfsubjectaccessreviews") {
    a.user = r.user;
  } else {
    a.user.name = std::string(stringMember(*spec, "user"));
    a.user.uid = std::string(stringMember(*spec, "uid"));
    a.user.groups = strings(member(*spec, "groups"));
    if (a.user.name.empty() && a.user.groups.empty()) {
      return errorResponse(ApiError::invalid(
          r.type->group, r.type->kind, "",
          {FieldError::invalidString("spec.user", "",
                                     "at least one of user or group must be specified")}));
    }
  }
  const JsonValue* ra = member(*spec, "resourceAttributes");
  const JsonValue* nra = member(*spec, "nonResourceAttributes");
  if ((ra == nullptr) == (nra == nullptr)) {
    return errorResponse(ApiError::invalid(
        r.type->group, r.type->kind, "",
        {FieldError::invalid("spec.resourceAttributes", "null",
                             "exactly one of nonResourceAttributes or resourceAttributes must be "
                             "specified")}));
  }
  if (ra != nullptr) {
    a.resource_request = true;
    a.verb = std::string(stringMember(*ra, "verb"));
    a.api_group = std::string(stringMember(*ra, "group"));
    a.api_version = std::string(stringMember(*ra, "version"));
    a.resource = std::string(stringMember(*ra, "resource"));
    a.subresource = std::string(stringMember(*ra, "subresource"));
    a.name = std::string(stringMember(*ra, "name"));
    a.ns = std::string(stringMember(*ra, "namespace"));
    if (res == "localsubjectaccessreviews") {
      if (!a.ns.empty() && a.ns != r.info.ns) {
        return errorResponse(
            ApiError::invalid(r.type->group, r.type->kind, "",
                              {FieldError::invalidString("spec.resourceAttributes.namespace", a.ns,
                                                         "must match metadata.namespace")}));
      }
      a.ns = r.info.ns;
    }
  } else {
    a.resource_request = false;
    a.verb = std::string(stringMember(*nra, "verb"));
    a.path = std::string(stringMember(*nra, "path"));
  }
  auto decision = authz_.authorize(a, "review");
  std::string out =
      R"({"kind":)" + jsonString(r.type->kind) +
      R"(,"apiVersion":"authorization.k8s.io/v1","metadata":{"creationTimestamp":null)";
  if (res == "localsubjectaccessreviews") {
    out += R"(,"namespace":)" + jsonString(r.info.ns);
  }
  out += R"(},"spec":)" + toJson(*spec) + R"(,"status":{"allowed":)" +
         (decision.allowed ? "true" : "false");
  if (!decision.review_reason.empty()) {
    out += R"(,"reason":)" + jsonString(decision.review_reason);
  }
  out += "}}";
  return jsonResponse(201, out);
}

HttpResponse ReviewHandler::selfSubjectReview(const ApiRequest& r) {
  return jsonResponse(
      201,
      R"({"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","metadata":{"creationTimestamp":null},"status":{"userInfo":)" +
          userJson(r.user) + "}}");
}

}  // namespace ccm::kubesim
