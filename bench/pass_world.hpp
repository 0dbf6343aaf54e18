// PassWorld: what the in-process pass tools (lifecycle-pass, route-pass) run one controller
// in: a detached node informer they fill, an empty service informer, a fake API server
// client, events, metrics, and the context the controller is made with. No API server, no
// plugin: the tool's own provider answers.
//
// THREAD: set up on one thread; the controller then uses it as in the host.
#pragma once

#include <cstdio>
#include <string>
#include <utility>

// The harness's providers and fakes only; no doctest test registry in these programs.
#define DOCTEST_CONFIG_DISABLE
#include "test/support/controller_harness.hpp"

namespace ccm::bench {

class PassWorld {
 public:
  explicit PassWorld(plugin::Provider& provider)
      : context{options, api, nodes, services, provider, events, registry, Clock::real()} {
    nodes.start();
    services.start();
  }

  // Decodes a Node and adds it to the cache; false, with the decoder's error on stderr
  // after `tool`'s name, when it does not decode.
  bool addNode(const std::string& json, const char* tool) {
    auto node = kube::decodeNode(json);
    if (!node.ok()) {
      std::fprintf(stderr, "%s: %s\n", tool, node.status().toString().c_str());
      return false;
    }
    nodes.injectForTest("ADDED", std::move(node).value());
    return true;
  }

  options::Options options;
  kube::FakeKubeApi api;
  kube::Informer<kube::Node> nodes{nullptr};
  kube::Informer<kube::Service> services{nullptr};
  kube::EventBroadcaster events{api};
  metrics::Registry registry;
  controllers::ControllerContext context;
};

}  // namespace ccm::bench
