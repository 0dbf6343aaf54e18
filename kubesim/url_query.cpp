// UrlQuery: target parsing and percent-decoding.
#include "kubesim/url_query.hpp"

namespace ccm::kubesim {
namespace {

int hexValue(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

}  // namespace

std::optional<std::string> UrlQuery::percentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%') {
      if (i + 2 >= s.size()) {
        return std::nullopt;
      }
      int hi = hexValue(s[i + 1]);
      int lo = hexValue(s[i + 2]);
      if (hi < 0 || lo < 0) {
        return std::nullopt;
      }
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::optional<UrlQuery> UrlQuery::parse(std::string_view target) {
  UrlQuery q;
  size_t qpos = target.find('?');
  auto path = percentDecode(target.substr(0, qpos), false);
  if (!path) {
    return std::nullopt;
  }
  q.path_ = std::move(*path);
  if (qpos == std::string_view::npos) {
    return q;
  }
  std::string_view rest = target.substr(qpos + 1);
  size_t hash = rest.find('#');
  if (hash != std::string_view::npos) {
    rest = rest.substr(0, hash);
  }
  while (!rest.empty()) {
    size_t amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (pair.empty()) {
      continue;
    }
    size_t eq = pair.find('=');
    auto key = percentDecode(pair.substr(0, eq), true);
    auto value = eq == std::string_view::npos ? std::optional<std::string>("")
                                              : percentDecode(pair.substr(eq + 1), true);
    if (!key || !value) {
      return std::nullopt;
    }
    q.params_.emplace_back(std::move(*key), std::move(*value));
  }
  return q;
}

bool UrlQuery::has(std::string_view key) const {
  for (const auto& [k, v] : params_) {
    if (k == key) {
      return true;
    }
  }
  return false;
}

std::string UrlQuery::get(std::string_view key) const {
  for (const auto& [k, v] : params_) {
    if (k == key) {
      return v;
    }
  }
  return {};
}

bool UrlQuery::getBool(std::string_view key) const {
  std::string v = get(key);
  return v == "1" || v == "t" || v == "T" || v == "true" || v == "TRUE" || v == "True";
}

std::vector<std::string> UrlQuery::getAll(std::string_view key) const {
  std::vector<std::string> out;
  for (const auto& [k, v] : params_) {
    if (k == key) {
      out.push_back(v);
    }
  }
  return out;
}

}  // namespace ccm::kubesim
