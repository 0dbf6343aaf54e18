// UrlQuery: target parsing and percent-decoding.
#include "kubesim/url_query.hpp"

#include "host/runtime/text.hpp"

namespace ccm::kubesim {
std::optional<std::string> UrlQuery::percentDecode(std::string_view s, bool plus_is_space) {
  return text::percentDecode(s, plus_is_space);
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
