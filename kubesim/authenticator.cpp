// Authenticator: static tokens, service-account JWTs and client certificates.
#include "kubesim/authenticator.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "host/runtime/text.hpp"
#include "kubesim/api_error.hpp"

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

// The members of `have` also in `want`, in `have`'s order (authenticator.Audiences.Intersect).
std::vector<std::string> intersect(const std::vector<std::string>& have,
                                   const std::vector<std::string>& want) {
  std::vector<std::string> out;
  for (const auto& a : have) {
    if (std::find(want.begin(), want.end(), a) != want.end()) {
      out.push_back(a);
    }
  }
  return out;
}

// Go's %q of a []string: ["a" "b"].
std::string goQuoteList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    out += (i ? " " : "") + goQuote(items[i]);
  }
  return out + "]";
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

std::vector<std::string> Authenticator::apiAudiences() {
  return {std::string(ServiceAccountTokens::kIssuer)};
}

std::optional<UserInfo> Authenticator::authenticateToken(std::string_view token,
                                                         std::string* reason,
                                                         const std::vector<std::string>& audiences,
                                                         std::vector<std::string>* granted) const {
  const std::vector<std::string> api = apiAudiences();
  const std::vector<std::string>& requested = audiences.empty() ? api : audiences;
  // The bearer-token authenticator's own error, and the chain's aggregate of two errors.
  constexpr std::string_view kInvalid = "invalid bearer token";
  auto fail = [&](const std::string& why) -> std::optional<UserInfo> {
    *reason = "[" + std::string(kInvalid) + ", " + why + "]";
    return std::nullopt;
  };
  {
    std::lock_guard lock(mu_);
    auto it = static_tokens_.find(std::string(token));
    if (it != static_tokens_.end()) {
      // Static tokens are audience-agnostic: good for the API server's audiences only.
      auto common = intersect(api, requested);
      if (common.empty()) {
        *reason = std::string(kInvalid);
        return std::nullopt;
      }
      if (granted != nullptr) {
        *granted = std::move(common);
      }
      return it->second;
    }
  }
  if (ServiceAccountTokens::looksLikeJwt(token)) {
    std::string error;
    auto claims = tokens_.verify(token, std::chrono::system_clock::now(), &error);
    if (!claims) {
      return fail(error);
    }
    auto common = intersect(claims->audiences, requested);
    if (common.empty()) {
      return fail("token audiences " + goQuoteList(claims->audiences) +
                  " is invalid for the target audiences " + goQuoteList(requested));
    }
    auto uid = lookup_(claims->ns, claims->name);
    if (!uid) {
      return fail("service account " + claims->ns + "/" + claims->name + " has been deleted");
    }
    if (!claims->uid.empty() && *uid != claims->uid) {
      return fail("service account UID (" + claims->uid + ") does not match the current one (" +
                  *uid + ")");
    }
    if (granted != nullptr) {
      *granted = std::move(common);
    }
    return serviceAccountUser(claims->ns, claims->name, *uid);
  }
  *reason = std::string(kInvalid);
  return std::nullopt;
}

UserInfo Authenticator::anonymousUser() {
  UserInfo u;
  u.name = "system:anonymous";
  u.groups = {"system:unauthenticated"};
  return u;
}

Authenticator::Outcome Authenticator::authenticate(const HttpRequest& request, UserInfo* user,
                                                   std::string* reason) const {
  if (request.certificate.present) {
    user->name = request.certificate.user;
    user->groups = request.certificate.groups;
    addAuthenticated(*user);
    return Outcome::Authenticated;
  }
  auto auth = request.message.find(boost::beast::http::field::authorization);
  if (auth == request.message.end()) {
    return Outcome::Anonymous;
  }
  std::string_view value =
      text::trimSpace(std::string_view(auth->value().data(), auth->value().size()));
  constexpr std::string_view kBearer = "bearer";
  size_t space = value.find(' ');
  std::string_view scheme = value.substr(0, space);
  if (space == std::string_view::npos || scheme.size() != kBearer.size() ||
      !std::equal(kBearer.begin(), kBearer.end(), scheme.begin(), [](char a, char b) {
        return a == std::tolower(static_cast<unsigned char>(b));
      })) {
    return Outcome::Anonymous;  // not a bearer token: other authenticators' business
  }
  std::string_view token = value.substr(space + 1);
  token = token.substr(0, token.find(' '));
  if (token.empty()) {
    return Outcome::Anonymous;  // an empty bearer token is no credential
  }
  auto u = authenticateToken(token, reason);
  if (!u) {
    return Outcome::Rejected;
  }
  *user = std::move(*u);
  return Outcome::Authenticated;
}

}  // namespace ccm::kubesim
