// ReviewHandler: the create-only APIs for delegated authentication and authorization —
// TokenReview, SubjectAccessReview, LocalSubjectAccessReview, SelfSubjectAccessReview,
// SelfSubjectReview (kubectl auth whoami) — and TokenRequest
// (POST .../serviceaccounts/<name>/token), which mints a service-account token.
//
// THREAD: handle() may be called from any thread.
#pragma once

#include <chrono>

#include "kubesim/api_request.hpp"
#include "kubesim/authenticator.hpp"
#include "kubesim/object_store.hpp"
#include "kubesim/rbac_authorizer.hpp"
#include "kubesim/service_account_tokens.hpp"

namespace ccm::kubesim {

class ReviewHandler {
 public:
  ReviewHandler(const ObjectStore& store, const Authenticator& authn, const RbacAuthorizer& authz,
                const ServiceAccountTokens& tokens)
      : store_(store), authn_(authn), authz_(authz), tokens_(tokens) {}

  // Reviews (type->stored == false) and serviceaccounts/token.
  HttpResponse handle(const ApiRequest& request);

  // Mints a token for ns/name (the service account must exist). Used by the admin API too.
  ApiOr<ServiceAccountTokens::Issued> issueToken(
      std::string_view ns, std::string_view name, std::chrono::seconds ttl,
      const std::vector<std::string>& audiences = {}) const;

 private:
  HttpResponse tokenRequest(const ApiRequest& r);
  HttpResponse tokenReview(const ApiRequest& r, const JsonValue& body);
  HttpResponse accessReview(const ApiRequest& r, const JsonValue& body);
  HttpResponse selfSubjectReview(const ApiRequest& r);

  const ObjectStore& store_;
  const Authenticator& authn_;
  const RbacAuthorizer& authz_;
  const ServiceAccountTokens& tokens_;
};

}  // namespace ccm::kubesim
