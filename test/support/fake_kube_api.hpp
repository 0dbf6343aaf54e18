// FakeKubeApi: an in-memory KubeApi for controller unit tests. It records every call
// (verb, path, patch type, body, options), answers GETs from objects the test stored, and returns
// errors the test queued for a given verb and path. It does not apply patches.
//
// THREAD: every method may be called from any thread.
#pragma once

#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "host/kube/api/kube_api.hpp"

namespace ccm::kube {

class FakeKubeApi final : public KubeApi {
 public:
  struct Call {
    std::string verb;  // GET POST PUT PATCH DELETE
    std::string path;  // ResourcePath::path()
    std::string body;  // request body (DELETE: the preconditions as "uid=..,rv=..")
    PatchType patch_type = PatchType::Strategic;
    CallOptions options;  // as the caller gave them
  };

  ApiResult<std::string> get(const ResourcePath& path, std::string_view resource_version = {},
                             const CallOptions& options = {}) override;
  ApiResult<std::string> create(const ResourcePath& path, std::string body,
                                const CallOptions& options = {}) override;
  ApiResult<std::string> update(const ResourcePath& path, std::string body,
                                const CallOptions& options = {}) override;
  ApiResult<std::string> patch(const ResourcePath& path, PatchType type, std::string body,
                               const CallOptions& options = {}) override;
  ApiStatus remove(const ResourcePath& path, const Preconditions& preconditions = {},
                   const CallOptions& options = {}) override;
  // Records the batch's size, then makes the calls one by one (recorded as such).
  std::vector<ApiResult<std::string>> writeBatch(std::vector<Write> writes,
                                                 const CallOptions& options = {},
                                                 std::chrono::microseconds gather = {}) override;

  // GET answers with this JSON (object path, e.g. nodePath("n1").path()).
  void setObject(const std::string& path, std::string json);
  // The next call with this verb and path fails with `status` (queued; FIFO).
  void failNext(const std::string& verb, const std::string& path, ApiStatus status);

  std::vector<Call> calls() const;
  // Calls with this verb (and path, when non-empty).
  std::vector<Call> callsFor(const std::string& verb, const std::string& path = {}) const;
  void clearCalls();
  // The sizes of the batches given to writeBatch, in order.
  std::vector<size_t> batchSizes() const;

 private:
  ApiStatus takeError(const std::string& verb, const std::string& path);
  ApiResult<std::string> record(Call call, std::string response);

  mutable std::mutex mu_;
  std::vector<Call> calls_;                              // guarded by mu_
  std::vector<size_t> batch_sizes_;                      // guarded by mu_
  std::map<std::string, std::string> objects_;           // guarded by mu_
  std::map<std::string, std::deque<ApiStatus>> errors_;  // guarded by mu_; "VERB path"
};

}  // namespace ccm::kube
