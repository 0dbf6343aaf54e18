// ResourcePath, patch content types and query escaping.
#include "host/kube/api/kube_api.hpp"

namespace ccm::kube {

std::string ResourcePath::path() const {
  std::string p = group_version == "v1" ? "/api/v1" : "/apis/" + group_version;
  if (!namespace_.empty()) {
    p += "/namespaces/";
    p += namespace_;
  }
  p += '/';
  p += resource;
  if (!name.empty()) {
    p += '/';
    p += name;
    if (!subresource.empty()) {
      p += '/';
      p += subresource;
    }
  }
  return p;
}

ResourcePath nodePath(std::string_view name) {
  return ResourcePath{"v1", "nodes", "", std::string(name), ""};
}
ResourcePath nodeStatusPath(std::string_view name) {
  return ResourcePath{"v1", "nodes", "", std::string(name), "status"};
}
ResourcePath servicePath(std::string_view ns, std::string_view name) {
  return ResourcePath{"v1", "services", std::string(ns), std::string(name), ""};
}
ResourcePath serviceStatusPath(std::string_view ns, std::string_view name) {
  return ResourcePath{"v1", "services", std::string(ns), std::string(name), "status"};
}
ResourcePath leasePath(std::string_view ns, std::string_view name) {
  return ResourcePath{"coordination.k8s.io/v1", "leases", std::string(ns), std::string(name), ""};
}
ResourcePath eventPath(std::string_view ns, std::string_view name) {
  return ResourcePath{"v1", "events", std::string(ns), std::string(name), ""};
}

std::vector<ApiResult<std::string>> KubeApi::writeBatch(std::vector<Write> writes,
                                                        const CallOptions& options,
                                                        std::chrono::microseconds) {
  std::vector<ApiResult<std::string>> results;
  results.reserve(writes.size());
  for (auto& w : writes) {
    switch (w.verb) {
      case Write::Verb::Create:
        results.push_back(create(w.path, std::move(w.body), options));
        break;
      case Write::Verb::Update:
        results.push_back(update(w.path, std::move(w.body), options));
        break;
      case Write::Verb::Patch:
        results.push_back(patch(w.path, w.patch_type, std::move(w.body), options));
        break;
    }
  }
  return results;
}

std::string_view patchContentType(PatchType type) {
  switch (type) {
    case PatchType::Strategic:
      return kStrategicMergePatch;
    case PatchType::Merge:
      return kMergePatch;
    case PatchType::Json:
      return kJsonPatch;
  }
  return kStrategicMergePatch;
}

std::string urlEscape(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (unsigned char c : value) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace ccm::kube
