// UserInfo: who made a request to the secure port, as the API server's TokenReview answered
// (or the anonymous user), and the well-known user and group names of Kubernetes.
//
// THREAD: a plain value.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ccm::server {

inline constexpr std::string_view kAnonymousUser = "system:anonymous";
inline constexpr std::string_view kUnauthenticatedGroup = "system:unauthenticated";
inline constexpr std::string_view kAuthenticatedGroup = "system:authenticated";
inline constexpr std::string_view kMastersGroup = "system:masters";

struct UserInfo {
  std::string name;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;

  bool inGroup(std::string_view group) const {
    return std::find(groups.begin(), groups.end(), group) != groups.end();
  }

  // system:anonymous in system:unauthenticated: a request without a bearer token.
  static UserInfo anonymous() {
    UserInfo u;
    u.name = std::string(kAnonymousUser);
    u.groups.emplace_back(kUnauthenticatedGroup);
    return u;
  }
};

}  // namespace ccm::server
