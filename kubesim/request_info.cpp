// RequestInfo parsing.
#include "kubesim/request_info.hpp"

#include <algorithm>
#include <cctype>

namespace ccm::kubesim {
namespace {

std::vector<std::string> splitPath(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') {
      ++i;
    }
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) {
      j = path.size();
    }
    if (j > i) {
      out.emplace_back(path.substr(i, j - i));
    }
    i = j;
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

RequestInfo RequestInfo::parse(std::string_view method, const UrlQuery& query) {
  RequestInfo info;
  info.path = query.path();
  info.verb = lower(method);
  auto segs = splitPath(query.path());
  if (segs.empty() || (segs[0] != "api" && segs[0] != "apis")) {
    return info;
  }
  info.api_prefix = segs[0];
  size_t i = 1;
  if (info.api_prefix == "apis") {
    if (segs.size() < 3) {
      return info;  // /apis, /apis/<group>: discovery
    }
    info.api_group = segs[1];
    info.api_version = segs[2];
    i = 3;
  } else {
    if (segs.size() < 2) {
      return info;
    }
    info.api_version = segs[1];
    i = 2;
  }
  info.parts.assign(segs.begin() + static_cast<long>(i), segs.end());
  if (info.parts.empty()) {
    return info;  // group/version discovery
  }
  info.resource_request = true;
  std::vector<std::string> p = info.parts;
  if (p[0] == "namespaces" && p.size() > 1) {
    info.ns = p[1];
    // /namespaces/<ns>/<resource>/...: the rest names a namespaced resource, unless it is
    // one of the namespace's own subresources.
    if (p.size() > 2 && p[2] != "status" && p[2] != "finalize") {
      p.erase(p.begin(), p.begin() + 2);
    }
  }
  info.resource = p[0];
  if (p.size() >= 2) {
    info.name = p[1];
  }
  if (p.size() >= 3) {
    info.subresource = p[2];
  }
  std::string m(method);
  if (m == "GET" || m == "HEAD") {
    if (query.getBool("watch")) {
      info.verb = "watch";
    } else {
      info.verb = info.name.empty() ? "list" : "get";
    }
  } else if (m == "POST") {
    info.verb = "create";
  } else if (m == "PUT") {
    info.verb = "update";
  } else if (m == "PATCH") {
    info.verb = "patch";
  } else if (m == "DELETE") {
    info.verb = info.name.empty() ? "deletecollection" : "delete";
  }
  // A list/watch pinned to one name by fieldSelector is authorized as that name.
  if ((info.verb == "list" || info.verb == "watch") && info.name.empty()) {
    std::string fs = query.get("fieldSelector");
    const std::string key = "metadata.name=";
    if (fs.rfind(key, 0) == 0 && fs.find(',') == std::string::npos) {
      info.name = fs.substr(key.size());
    }
  }
  return info;
}

}  // namespace ccm::kubesim
