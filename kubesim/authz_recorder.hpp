// AuthzRecorder: remembers the authorization decisions kubesim made (kubesim --record-authz),
// so a test can ask which permissions a component used and which it was refused:
// GET /admin/authz. Identical decisions (same user and groups, source, verb, API group,
// resource, subresource, namespace, name or path, outcome and matching rule) are kept once,
// with a count, in first-seen order. At most `max_entries` distinct decisions are kept; the
// rest are counted as dropped.
//
// THREAD: record(), toJson() and clear() from any thread (one mutex).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kubesim/rbac_authorizer.hpp"

namespace ccm::kubesim {

class AuthzRecorder {
 public:
  explicit AuthzRecorder(size_t max_entries = 100000) : max_entries_(max_entries) {}

  void record(const AuthorizationAttributes& attributes, std::string_view source,
              const RbacAuthorizer::Decision& decision);

  // {"decisions":[{"user","groups","source","verb","apiGroup","resource","subresource",
  //   "namespace","name"|"nonResourceURL","allowed","binding","role","ruleIndex","rule",
  //   "count"}...],"dropped":N}. A non-empty `user` keeps only that user's decisions.
  std::string toJson(std::string_view user = {}) const;
  // Forgets everything; returns how many distinct decisions were forgotten.
  size_t clear();

 private:
  struct Entry {
    std::string user;
    std::string json_prefix;  // every field but "count", rendered once
    uint64_t count = 0;
  };

  const size_t max_entries_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, size_t> index_;  // guarded by mu_; key -> entries_ index
  std::vector<Entry> entries_;                     // guarded by mu_
  uint64_t dropped_ = 0;                           // guarded by mu_
};

}  // namespace ccm::kubesim
