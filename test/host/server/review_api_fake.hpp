// ReviewApiFake: a KubeApi for the server's tests that answers TokenReview and
// SubjectAccessReview POSTs with a scripted function, counts the calls, and can hold a call
// until the caller's stop token fires (to test shutdown with a review in flight).
// (FakeKubeApi echoes create bodies and cannot script answers.)
#pragma once

#include <rapidjson/document.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "host/kube/api/kube_api.hpp"

namespace ccm::server::testing {

class ReviewApiFake final : public kube::KubeApi {
 public:
  // (path, body) -> answer.
  using Responder =
      std::function<kube::ApiResult<std::string>(const std::string& path, const std::string& body)>;
  explicit ReviewApiFake(Responder responder) : responder_(std::move(responder)) {}

  kube::ApiResult<std::string> get(const kube::ResourcePath&, std::string_view,
                                   const kube::CallOptions&) override {
    return kube::ApiStatus(405, kube::Reason::MethodNotAllowed, "not in this fake");
  }
  kube::ApiResult<std::string> create(const kube::ResourcePath& path, std::string body,
                                      const kube::CallOptions& options) override {
    std::string p = path.path();
    {
      std::unique_lock lock(mu_);
      bodies_.push_back(body);
      ++calls_[p];
      if (block_) {
        ++blocked_;
        cv_.notify_all();
        std::condition_variable_any cv;
        std::mutex m;
        std::unique_lock ml(m);
        lock.unlock();
        cv.wait(ml, options.stop, [] { return false; });
        return kube::ApiStatus::cancelled();
      }
    }
    return responder_(p, body);
  }
  kube::ApiResult<std::string> update(const kube::ResourcePath&, std::string,
                                      const kube::CallOptions&) override {
    return kube::ApiStatus(405, kube::Reason::MethodNotAllowed, "not in this fake");
  }
  kube::ApiResult<std::string> patch(const kube::ResourcePath&, kube::PatchType, std::string,
                                     const kube::CallOptions&) override {
    return kube::ApiStatus(405, kube::Reason::MethodNotAllowed, "not in this fake");
  }
  kube::ApiStatus remove(const kube::ResourcePath&, const kube::Preconditions&,
                         const kube::CallOptions&) override {
    return kube::ApiStatus(405, kube::Reason::MethodNotAllowed, "not in this fake");
  }

  int calls(const std::string& path) const {
    std::lock_guard lock(mu_);
    auto it = calls_.find(path);
    return it == calls_.end() ? 0 : it->second;
  }
  std::vector<std::string> bodies() const {
    std::lock_guard lock(mu_);
    return bodies_;
  }
  // Every later call waits until its stop token fires, then answers "cancelled".
  void blockCalls() {
    std::lock_guard lock(mu_);
    block_ = true;
  }
  // Waits until at least n calls are being held.
  void waitBlocked(int n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return blocked_ >= n; });
  }

 private:
  Responder responder_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, int> calls_;
  std::vector<std::string> bodies_;
  bool block_ = false;
  int blocked_ = 0;
};

inline constexpr const char* kTokenReviewPath = "/apis/authentication.k8s.io/v1/tokenreviews";
inline constexpr const char* kAccessReviewPath =
    "/apis/authorization.k8s.io/v1/subjectaccessreviews";

// A TokenReview answer for an authenticated user.
inline std::string tokenAccepted(const std::string& user, const std::vector<std::string>& groups,
                                 const std::string& uid = "") {
  std::string g;
  for (const auto& x : groups)
    g += (g.empty() ? "\"" : ",\"") + x + "\"";
  return R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","status":{"authenticated":true,"user":{"username":")" +
         user + R"(","uid":")" + uid + R"(","groups":[)" + g + "]}}}";
}

inline std::string tokenRejected(const std::string& why = "invalid bearer token") {
  return R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","status":{"user":{},"error":")" +
         why + "\"}}";
}

inline std::string accessAnswer(bool allowed, const std::string& reason = "", bool denied = false) {
  return std::string(R"({"kind":"SubjectAccessReview","status":{"allowed":)") +
         (allowed ? "true" : "false") + (denied ? R"(,"denied":true)" : "") +
         (reason.empty() ? "" : R"(,"reason":")" + reason + "\"") + "}}";
}

// A small policy: tokens map to users; users (or groups) map to allowed paths.
struct Policy {
  std::map<std::string, std::pair<std::string, std::vector<std::string>>> tokens;
  std::map<std::string, std::vector<std::string>> allowed_paths;  // user or group -> paths

  ReviewApiFake::Responder responder() const {
    return
        [this](const std::string& path, const std::string& body) -> kube::ApiResult<std::string> {
          rapidjson::Document d;
          d.Parse(body.c_str());
          if (path == kTokenReviewPath) {
            std::string token = d["spec"]["token"].GetString();
            auto it = tokens.find(token);
            if (it == tokens.end())
              return tokenRejected();
            return tokenAccepted(it->second.first, it->second.second);
          }
          const auto& spec = d["spec"];
          std::string p = spec["nonResourceAttributes"]["path"].GetString();
          std::vector<std::string> subjects = {spec["user"].GetString()};
          for (const auto& g : spec["groups"].GetArray())
            subjects.emplace_back(g.GetString());
          for (const auto& s : subjects) {
            auto it = allowed_paths.find(s);
            if (it == allowed_paths.end())
              continue;
            for (const auto& allowed : it->second) {
              if (allowed == p)
                return accessAnswer(true, "policy");
            }
          }
          return accessAnswer(false);
        };
  }
};

}  // namespace ccm::server::testing
