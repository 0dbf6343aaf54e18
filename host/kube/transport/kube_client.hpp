// KubeClient: KubeApi over a RestClient (JSON requests, typed errors). Also where informers
// get their list and watch streams from. One KubeClient (and so one rate limiter) is shared
// by every controller of the process.
//
// THREAD: every method may be called from any thread.
#pragma once

#include <memory>
#include <stop_token>

#include "host/kube/api/kube_api.hpp"
#include "host/kube/transport/rest_client.hpp"

namespace ccm::kube {

class KubeClient final : public KubeApi {
 public:
  // Loads the configuration (kubeconfig / master / in-cluster) and builds the transport.
  // Errors are start-up errors (print and exit).
  static StatusOr<std::unique_ptr<KubeClient>> create(const ClientOptions& options,
                                                      Clock& clock = Clock::real(),
                                                      metrics::Registry* registry = nullptr);
  explicit KubeClient(std::unique_ptr<RestClient> rest) : rest_(std::move(rest)) {}

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
  std::vector<ApiResult<std::string>> writeBatch(std::vector<Write> writes,
                                                 const CallOptions& options = {},
                                                 std::chrono::microseconds gather = {}) override;

  RestClient& rest() { return *rest_; }
  const RestConfig& config() const { return rest_->config(); }

 private:
  static Request writeRequest(Verb verb, const ResourcePath& path, std::string body,
                              std::string_view content_type, const CallOptions& options);
  ApiResult<std::string> write(Verb verb, const ResourcePath& path, std::string body,
                               std::string_view content_type, const CallOptions& options);
  std::unique_ptr<RestClient> rest_;
};

}  // namespace ccm::kube
