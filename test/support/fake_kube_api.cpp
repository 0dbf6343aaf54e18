// FakeKubeApi: call recording and scripted failures.
#include "test/support/fake_kube_api.hpp"

namespace ccm::kube {

ApiStatus FakeKubeApi::takeError(const std::string& verb, const std::string& path) {
  auto it = errors_.find(verb + " " + path);
  if (it == errors_.end() || it->second.empty()) {
    return ApiStatus();
  }
  ApiStatus st = std::move(it->second.front());
  it->second.pop_front();
  return st;
}

ApiResult<std::string> FakeKubeApi::record(Call call, std::string response) {
  std::lock_guard lock(mu_);
  ApiStatus err = takeError(call.verb, call.path);
  calls_.push_back(std::move(call));
  if (!err.ok()) {
    return err;
  }
  return response;
}

ApiResult<std::string> FakeKubeApi::get(const ResourcePath& path, std::string_view,
                                        const CallOptions& options) {
  std::string p = path.path();
  std::string body;
  bool found = false;
  {
    std::lock_guard lock(mu_);
    auto it = objects_.find(p);
    if (it != objects_.end()) {
      body = it->second;
      found = true;
    }
  }
  auto r = record(Call{"GET", p, "", PatchType::Strategic, options}, body);
  if (r.ok() && !found) {
    return ApiStatus(404, Reason::NotFound, path.resource + " \"" + path.name + "\" not found");
  }
  return r;
}

ApiResult<std::string> FakeKubeApi::create(const ResourcePath& path, std::string body,
                                           const CallOptions& options) {
  std::string copy = body;
  return record(Call{"POST", path.path(), std::move(body), PatchType::Strategic, options},
                std::move(copy));
}

ApiResult<std::string> FakeKubeApi::update(const ResourcePath& path, std::string body,
                                           const CallOptions& options) {
  std::string copy = body;
  return record(Call{"PUT", path.path(), std::move(body), PatchType::Strategic, options},
                std::move(copy));
}

ApiResult<std::string> FakeKubeApi::patch(const ResourcePath& path, PatchType type,
                                          std::string body, const CallOptions& options) {
  std::string response;
  {
    std::lock_guard lock(mu_);
    auto it = objects_.find(path.path());
    if (it != objects_.end()) {
      response = it->second;
    }
  }
  return record(Call{"PATCH", path.path(), std::move(body), type, options}, std::move(response));
}

ApiStatus FakeKubeApi::remove(const ResourcePath& path, const Preconditions& pre,
                              const CallOptions& options) {
  std::string desc;
  if (!pre.uid.empty()) {
    desc.append("uid=").append(pre.uid);
  }
  if (!pre.resource_version.empty()) {
    desc.append(desc.empty() ? "" : ",").append("rv=").append(pre.resource_version);
  }
  auto r = record(Call{"DELETE", path.path(), desc, PatchType::Strategic, options}, "");
  return r.ok() ? ApiStatus() : r.status();
}

void FakeKubeApi::setObject(const std::string& path, std::string json) {
  std::lock_guard lock(mu_);
  objects_[path] = std::move(json);
}

void FakeKubeApi::failNext(const std::string& verb, const std::string& path, ApiStatus status) {
  std::lock_guard lock(mu_);
  errors_[verb + " " + path].push_back(std::move(status));
}

std::vector<FakeKubeApi::Call> FakeKubeApi::calls() const {
  std::lock_guard lock(mu_);
  return calls_;
}

std::vector<FakeKubeApi::Call> FakeKubeApi::callsFor(const std::string& verb,
                                                     const std::string& path) const {
  std::lock_guard lock(mu_);
  std::vector<Call> out;
  for (const auto& c : calls_) {
    if (c.verb == verb && (path.empty() || c.path == path)) {
      out.push_back(c);
    }
  }
  return out;
}

void FakeKubeApi::clearCalls() {
  std::lock_guard lock(mu_);
  calls_.clear();
}

std::vector<ApiResult<std::string>> FakeKubeApi::writeBatch(std::vector<Write> writes,
                                                            const CallOptions& options,
                                                            std::chrono::microseconds gather) {
  {
    std::lock_guard lock(mu_);
    batch_sizes_.push_back(writes.size());
  }
  return KubeApi::writeBatch(std::move(writes), options, gather);
}

std::vector<size_t> FakeKubeApi::batchSizes() const {
  std::lock_guard lock(mu_);
  return batch_sizes_;
}

}  // namespace ccm::kube
