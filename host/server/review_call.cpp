// ReviewCall: see review_call.hpp.
#include "host/server/review_call.hpp"

#include <fmt/format.h>

#include <utility>
#include <vector>

namespace ccm::server {

ReviewCall::ReviewCall(kube::KubeApi& api, Clock& clock, std::chrono::milliseconds timeout,
                       metrics::Registry* registry, const std::string& requests_metric,
                       const std::string& duration_metric)
    : api_(api), clock_(clock), timeout_(timeout) {
  if (registry != nullptr) {
    requests_ = registry->counter(requests_metric,
                                  "Number of HTTP requests partitioned by status code.", {"code"},
                                  metrics::Stability::Alpha);
    // 1 ms, 2 ms, ... about 16 s.
    durations_ = registry->histogram(duration_metric,
                                     "Request latency in seconds. Broken down by status code.",
                                     metrics::exponentialBuckets(0.001, 2, 15), {"code"},
                                     metrics::Stability::Alpha);
  }
}

kube::ApiResult<std::string> ReviewCall::post(const kube::ResourcePath& path, std::string body,
                                              std::stop_token stop) {
  kube::CallOptions call;
  call.timeout = timeout_;
  call.stop = std::move(stop);
  call.want_response = true;
  const auto started = clock_.now();
  auto answer = api_.create(path, std::move(body), call);
  const int http_code = answer.ok() ? 201 : answer.status().httpCode();
  const std::string code = http_code > 0 ? std::to_string(http_code) : std::string("error");
  if (requests_ != nullptr) {
    requests_->labels({code}).inc();
  }
  if (durations_ != nullptr) {
    durations_->labels({code}).observe(
        std::chrono::duration<double>(clock_.now() - started).count());
  }
  return answer;
}

const rapidjson::Value* reviewStatus(rapidjson::Document& doc, std::string_view json,
                                     std::string_view kind, std::string* error) {
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    *error = fmt::format("the {} answer is not a JSON object", kind);
    return nullptr;
  }
  auto status = doc.FindMember("status");
  if (status == doc.MemberEnd() || !status->value.IsObject()) {
    *error = fmt::format("the {} answer has no status", kind);
    return nullptr;
  }
  return &status->value;
}

}  // namespace ccm::server
