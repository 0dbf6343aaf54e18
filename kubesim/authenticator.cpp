// Authenticator: static tokens, service-account JWTs and client certificates.
#include "kubesim/authenticator.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "host/runtime/text.hpp"

namespace ccm::kubesim {
namespace {

constexpr std::string_view kAuthenticated = "system:authenticated";

void addAuthenticated(UserInfo& u) {
  if (!u.inGroup(kAuthenticated)) {
    u.groups.emplace_back(kAuthenticated);
  }
}

// Splits one CSV line (double quotes group commas; "" is a literal quote).
std::vector<std::string> splitCsv(std::string_view line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur.push_back('"');
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur.push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  out.push_back(cur);
  return out;
}

}  // namespace

bool UserInfo::inGroup(std::string_view group) const {
  return std::find(groups.begin(), groups.end(), group) != groups.end();
}

void Authenticator::addToken(std::string token, UserInfo user) {
  addAuthenticated(user);
  std::lock_guard lock(mu_);
  static_tokens_[std::move(token)] = std::move(user);
}

Status Authenticator::loadTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return Status(Code::NotFound, "cannot read token file " + path);
  }
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    std::string_view t = text::trimSpace(line);
    if (t.empty() || t.front() == '#') {
      continue;
    }
    auto fields = splitCsv(t);
    if (fields.size() < 3) {
      return Status(Code::InvalidArgument,
                    path + ":" + std::to_string(n) + ": need at least token,user,uid");
    }
    UserInfo u;
    u.name = std::string(text::trimSpace(fields[1]));
    u.uid = std::string(text::trimSpace(fields[2]));
    if (fields.size() >= 4) {
      std::stringstream groups(fields[3]);
      std::string g;
      while (std::getline(groups, g, ',')) {
        if (!text::trimSpace(g).empty()) {
          u.groups.emplace_back(text::trimSpace(g));
        }
      }
    }
    addToken(std::string(text::trimSpace(fields[0])), std::move(u));
  }
  return okStatus();
}

UserInfo Authenticator::serviceAccountUser(std::string_view ns, std::string_view name,
                                           std::string_view uid) {
  UserInfo u;
  u.name = "system:serviceaccount:" + std::string(ns) + ":" + std::string(name);
  u.uid = std::string(uid);
  u.groups = {"system:serviceaccounts", "system:serviceaccounts:" + std::string(ns),
              std::string(kAuthenticated)};
  return u;
}

std::optional<UserInfo> Authenticator::authenticateToken(std::string_view token,
                                                         std::string* reason) const {
  {
    std::lock_guard lock(mu_);
    auto it = static_tokens_.find(std::string(token));
    if (it != static_tokens_.end()) {
      return it->second;
    }
  }
  if (ServiceAccountTokens::looksLikeJwt(token)) {
    auto claims = tokens_.verify(token, std::chrono::system_clock::now(), reason);
    if (!claims) {
      return std::nullopt;
    }
    auto uid = lookup_(claims->ns, claims->name);
    if (!uid) {
      *reason = "service account " + claims->ns + "/" + claims->name + " has been deleted";
      return std::nullopt;
    }
    if (!claims->uid.empty() && *uid != claims->uid) {
      *reason =
          "service account UID (" + claims->uid + ") does not match the current one (" + *uid + ")";
      return std::nullopt;
    }
    return serviceAccountUser(claims->ns, claims->name, *uid);
  }
  *reason = "invalid bearer token";
  return std::nullopt;
}

Authenticator::Outcome Authenticator::authenticate(const HttpRequest& request, UserInfo* user,
                                                   std::string* reason) const {
  auto auth = request.message.find(boost::beast::http::field::authorization);
  if (auth != request.message.end()) {
    std::string_view value(auth->value().data(), auth->value().size());
    constexpr std::string_view kBearer = "Bearer ";
    if (value.size() > kBearer.size() &&
        std::equal(kBearer.begin(), kBearer.end(), value.begin(),
                   [](char a, char b) { return std::tolower(a) == std::tolower(b); })) {
      std::string_view token = text::trimSpace(value.substr(kBearer.size()));
      auto u = authenticateToken(token, reason);
      if (!u) {
        return Outcome::Rejected;
      }
      *user = std::move(*u);
      return Outcome::Authenticated;
    }
    *reason = "unsupported authorization scheme";
    return Outcome::Rejected;
  }
  if (request.certificate.present) {
    user->name = request.certificate.user;
    user->groups = request.certificate.groups;
    addAuthenticated(*user);
    return Outcome::Authenticated;
  }
  return Outcome::Anonymous;
}

}  // namespace ccm::kubesim
