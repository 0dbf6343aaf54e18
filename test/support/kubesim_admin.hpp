// Tests that run against a kubesim started by run_with_kubesim.py: a client for its admin user
// (KUBESIM_KUBECONFIG) and calls on its admin API (/admin/...).
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <string_view>

#include "host/kube/config/kube_config.hpp"
#include "host/kube/transport/kube_client.hpp"
#include "host/runtime/clock.hpp"
#include "test/support/test_files.hpp"

namespace ccm::testing {

// An unthrottled client for kubesim's admin user; `agent` names the test in kubesim's log.
inline std::unique_ptr<kube::KubeClient> kubesimAdminClient(std::string_view agent,
                                                            metrics::Registry* registry = nullptr) {
  kube::ClientOptions o;
  o.kubeconfig = requiredEnv("KUBESIM_KUBECONFIG", "run_with_kubesim.py");
  o.qps = -1;
  o.user_agent = kube::defaultUserAgent(std::string(agent), "0.1.0", "");
  auto c = kube::KubeClient::create(o, Clock::real(), registry);
  REQUIRE_MESSAGE(c.ok(), c.status().toString());
  return std::move(c).value();
}

// A call on kubesim's admin API; the test fails unless it succeeds. Returns the answer's body.
inline std::string kubesimAdminCall(kube::KubeClient& c, kube::Verb verb, const std::string& path,
                                    const std::string& body = "") {
  kube::Request req;
  req.verb = verb;
  req.path = path;
  req.body = body;
  auto r = c.rest().call(req);
  REQUIRE_MESSAGE(r.ok(), path, ": ", r.status().toString());
  return r->body;
}

}  // namespace ccm::testing
