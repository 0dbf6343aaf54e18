// Helpers shared by the kube client tests: clients for the fake API server (fake_api_server.hpp)
// and a Node body; waitUntil comes from wait.hpp.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "host/kube/transport/kube_client.hpp"
#include "host/kube/transport/rest_client.hpp"
#include "test/support/wait.hpp"

namespace ccm::kube::testing {

using ccm::testing::waitUntil;

inline std::unique_ptr<RestClient> makeRest(const std::string& url, ClientOptions options = {},
                                            metrics::Registry* registry = nullptr,
                                            RestConfig config = {}) {
  config.server = url;
  if (options.user_agent.empty()) {
    options.user_agent = "ccm-test/v0.0.0 (linux/amd64) kubernetes/abcdef0";
  }
  auto r = RestClient::create(config, options, Clock::real(), registry);
  if (!r.ok()) {
    return nullptr;
  }
  return std::move(r).value();
}

inline std::unique_ptr<KubeClient> makeClient(const std::string& url, ClientOptions options = {},
                                              metrics::Registry* registry = nullptr,
                                              RestConfig config = {}) {
  auto rest = makeRest(url, std::move(options), registry, std::move(config));
  return rest ? std::make_unique<KubeClient>(std::move(rest)) : nullptr;
}

inline std::string nodeJson(const std::string& name, const std::string& extra_label = "x") {
  return R"({"kind":"Node","apiVersion":"v1","metadata":{"name":")" + name + R"(","uid":"uid-)" +
         name + R"(","labels":{"l":")" + extra_label + R"("}},"spec":{"providerID":"fake://)" +
         name + R"("}})";
}

}  // namespace ccm::kube::testing
