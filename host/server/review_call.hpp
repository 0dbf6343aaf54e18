// One delegated review (TokenReview or SubjectAccessReview) POSTed to the API server, shared
// by DelegatingAuthenticator and DelegatingAuthorizer: the call with its timeout and stop
// token, upstream's request counter and latency histogram (apiserver_delegated_authn_* /
// apiserver_delegated_authz_*, labelled by the answer's HTTP status, "error" without one),
// and the first step of reading the answer.
//
// THREAD: any thread. The KubeApi, Clock and Registry are borrowed and must outlive this.
#pragma once

#include <rapidjson/document.h>

#include <chrono>
#include <stop_token>
#include <string>
#include <string_view>

#include "host/kube/api/kube_api.hpp"
#include "host/runtime/clock.hpp"
#include "host/runtime/metrics.hpp"

namespace ccm::server {

class ReviewCall {
 public:
  // registry may be null (no metrics).
  ReviewCall(kube::KubeApi& api, Clock& clock, std::chrono::milliseconds timeout,
             metrics::Registry* registry, const std::string& requests_metric,
             const std::string& duration_metric);

  // Creates the review at path; the answer's body, or the call's error.
  kube::ApiResult<std::string> post(const kube::ResourcePath& path, std::string body,
                                    std::stop_token stop);

  Clock& clock() const { return clock_; }

 private:
  kube::KubeApi& api_;
  Clock& clock_;
  const std::chrono::milliseconds timeout_;
  metrics::Family<metrics::Counter>* requests_ = nullptr;
  metrics::Family<metrics::Histogram>* durations_ = nullptr;
};

// Parses a review answer into doc and returns its "status" object; nullptr (and *error, which
// names the kind) when the answer is not a JSON object or has no status.
const rapidjson::Value* reviewStatus(rapidjson::Document& doc, std::string_view json,
                                     std::string_view kind, std::string* error);

}  // namespace ccm::server
