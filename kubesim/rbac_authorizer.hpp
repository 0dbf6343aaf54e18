// RbacAuthorizer: the RBAC authorizer of kubesim. Evaluates a request's attributes (user,
// verb, API group, resource/subresource, namespace, name, or a non-resource path) against the
// ClusterRoles, ClusterRoleBindings, Roles and RoleBindings held in the ObjectStore (loaded
// from manifests and bootstrap policy, or created through the API), including aggregated
// ClusterRoles. Members of system:masters are allowed everything, as on a real server.
//
// The compiled policy is an immutable snapshot rebuilt lazily after any RBAC object changes.
// A Decision names the binding, role and rule that allowed it; with a recorder set
// (setRecorder), every decision is also handed to it (kubesim --record-authz, GET /admin/authz).
//
// THREAD: authorize() may be called from any thread; invalidate() too. setRecorder() before
// serving.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "kubesim/authenticator.hpp"
#include "kubesim/json_util.hpp"
#include "kubesim/object_store.hpp"

namespace ccm::kubesim {

struct AuthorizationAttributes {
  UserInfo user;
  std::string verb;
  bool resource_request = true;
  std::string api_group;
  std::string api_version;
  std::string resource;
  std::string subresource;
  std::string ns;
  std::string name;
  std::string path;  // non-resource requests
};

struct PolicyRule {
  std::vector<std::string> verbs;
  std::vector<std::string> api_groups;
  std::vector<std::string> resources;
  std::vector<std::string> resource_names;
  std::vector<std::string> non_resource_urls;

  bool matches(const AuthorizationAttributes& a) const;
  static PolicyRule fromJson(const JsonValue& rule);
  // {"verbs":[..],"apiGroups":[..],"resources":[..],"resourceNames":[..],"nonResourceURLs":[..]}
  // (empty lists left out).
  std::string toJson() const;
};

class AuthzRecorder;

class RbacAuthorizer {
 public:
  struct Decision {
    bool allowed = false;
    std::string reason;
    // When allowed through RBAC: "ClusterRoleBinding/<name>" or "RoleBinding/<ns>/<name>",
    // "ClusterRole/<name>" or "Role/<ns>/<name>", and the index of the matching rule in that
    // role's (effective, for aggregated ClusterRoles) rules. Empty/-1 otherwise.
    std::string binding;
    std::string role;
    int rule_index = -1;
    std::shared_ptr<const std::vector<PolicyRule>> rules;  // the role's rules (rule_index's)
    // What a SubjectAccessReview reports as status.reason: the RBAC authorizer's
    // `RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "r" to Group "g"`; empty when
    // denied or allowed as system:masters (whose authorizer gives no reason).
    std::string review_reason;
  };

  explicit RbacAuthorizer(const ObjectStore& store);

  // `source` tells the recorder why the decision was made: "request" (an API request),
  // "impersonation" (an Impersonate-* check) or "review" (a SubjectAccessReview).
  Decision authorize(const AuthorizationAttributes& attributes,
                     std::string_view source = "request") const;
  // Every later decision is passed to `recorder` (nullptr: none). Not owned.
  void setRecorder(AuthzRecorder* recorder) { recorder_ = recorder; }
  // Marks the compiled policy stale (called when an RBAC object changes).
  void invalidate() { dirty_ = true; }

  // "User \"x\" cannot list resource \"nodes\" in API group \"\" at the cluster scope"
  static std::string forbiddenMessage(const AuthorizationAttributes& a);

 private:
  struct Grant {
    std::string ns;  // empty: cluster-wide (ClusterRoleBinding)
    std::shared_ptr<const std::vector<PolicyRule>> rules;
    std::string binding;  // "ClusterRoleBinding/<name>" / "RoleBinding/<ns>/<name>"
    std::string role;     // "ClusterRole/<name>" / "Role/<ns>/<name>"
    std::string reason;   // Decision::review_reason
  };
  Decision evaluate(const AuthorizationAttributes& attributes) const;
  struct Snapshot;
  std::shared_ptr<const Snapshot> current() const;
  std::shared_ptr<const Snapshot> build() const;

  const ObjectStore& store_;
  AuthzRecorder* recorder_ = nullptr;
  mutable std::atomic<bool> dirty_{true};
  mutable std::mutex mu_;
  mutable std::shared_ptr<const Snapshot> snapshot_;  // guarded by mu_
};

}  // namespace ccm::kubesim
