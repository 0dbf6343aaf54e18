// Fuzz target: the ABI adapter's handling of what a provider hands back (host/plugin/:
// host_services.cpp emit_* and set_error, the struct_size copies, output validation, status
// mapping, metrics and logs from the plugin, abandoned/stray call IDs). The provider is a
// real plugin loaded through the loader (script_plugin.c, built next to this target as
// fuzz-script.so) that runs the input as a script; the first byte picks which provider call
// the host makes. Whatever the plugin does, an answer the host accepts must be valid
// (validateMetadata/validateLbStatus/validateRoute/validateText pass on it), errors carry a
// known code, and nothing crashes.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ccm/output_checks.hpp"

#include "host/plugin/abi_provider.hpp"
#include "host/plugin/plugin_loader.hpp"
#include "host/runtime/metrics.hpp"
#include "test/fuzz/fuzz_support.hpp"
#include "test/support/provider_inputs.hpp"

#ifndef CCM_FUZZ_PLUGIN_DIR
#error "CCM_FUZZ_PLUGIN_DIR must name the directory holding fuzz-script.so"
#endif

namespace {

using namespace ccm;
using ccm::fuzz::require;

struct Host {
  metrics::Registry registry;
  std::unique_ptr<plugin::AbiProvider> provider;

  Host() {
    plugin::LoadOptions lo;
    const char* dir = std::getenv("CCM_FUZZ_PLUGIN_DIR");
    lo.plugin_dir = dir != nullptr ? dir : CCM_FUZZ_PLUGIN_DIR;
    lo.name = "fuzz-script";
    lo.registry = &registry;
    lo.check_permissions = false;
    auto loaded = plugin::PluginLoader::load(lo);
    if (!loaded.ok()) {
      std::fprintf(stderr, "cannot load fuzz-script.so: %s\n", loaded.status().toString().c_str());
      std::abort();
    }
    plugin::ProviderOptions po;
    po.registry = &registry;
    po.instances_timeout = po.batch_timeout = po.load_balancer_timeout = po.routes_timeout =
        std::chrono::seconds(10);
    auto p = plugin::AbiProvider::create(*loaded, "", "fuzz", po);
    if (!p.ok()) {
      std::fprintf(stderr, "cannot create fuzz-script: %s\n", p.status().toString().c_str());
      std::abort();
    }
    provider = std::move(p).value();
  }
};

Host& host() {
  static Host* h = new Host();  // never destroyed: runner threads outlive static destruction
  return *h;
}

void checkStatus(const Status& st) {
  Code c = st.code();
  bool known = c == Code::Ok || c == Code::Cancelled || c == Code::InvalidArgument ||
               c == Code::DeadlineExceeded || c == Code::NotFound || c == Code::AlreadyExists ||
               c == Code::PermissionDenied || c == Code::ResourceExhausted ||
               c == Code::FailedPrecondition || c == Code::Aborted || c == Code::Unimplemented ||
               c == Code::Internal || c == Code::Unavailable || c == Code::Unauthenticated ||
               c == Code::ImplementedElsewhere;
  require(known, "a call's status carries a known code");
  require(st.retryAfter() <= std::chrono::hours(1), "retry-after is capped at an hour");
}

void checkMetadata(const plugin::InstanceMetadata& m) {
  require(sdk::validateMetadata(m).empty(), "accepted metadata is valid");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  Host& h = host();
  plugin::Provider& p = *h.provider;
  std::string script(reinterpret_cast<const char*>(data + 1), size - 1);
  testing::TestNode node(script);
  testing::TestService service;
  plugin::NodeRef ref = node.ref();
  switch (data[0] % 12) {
    case 0: {
      auto r = p.instanceExists(ref);
      checkStatus(r.status());
      break;
    }
    case 1: {
      auto r = p.instanceShutdown(ref);
      checkStatus(r.status());
      break;
    }
    case 2: {
      auto r = p.instanceMetadata(ref);
      checkStatus(r.status());
      if (r.ok() && r->has_value())
        checkMetadata(**r);
      break;
    }
    case 3: {
      // A batch of up to three nodes with the same script.
      size_t n = 1 + (data[0] / 12) % 3;
      std::vector<plugin::NodeRef> refs(n, ref);
      auto r = p.instanceMetadataBatch(refs);
      checkStatus(r.status());
      if (r.ok()) {
        require(r->size() == n, "one batch result per node");
        for (const auto& item : *r) {
          checkStatus(item.status());
          if (item.ok())
            checkMetadata(*item);
        }
      }
      break;
    }
    case 4: {
      auto r = p.getLoadBalancer(script, service.ref());
      checkStatus(r.status());
      if (r.ok() && r->has_value()) {
        require(sdk::validateLbStatus(**r).empty(), "accepted LB status is valid");
      }
      break;
    }
    case 5: {
      auto r = p.getLoadBalancerName(script, service.ref());
      checkStatus(r.status());
      if (r.ok())
        require(sdk::validateText("name", *r, 1024).empty(), "valid LB name");
      break;
    }
    case 6: {
      auto r =
          p.ensureLoadBalancer(script, service.ref(), std::span<const plugin::NodeRef>(&ref, 1));
      checkStatus(r.status());
      if (r.ok())
        require(sdk::validateLbStatus(*r).empty(), "accepted LB status is valid");
      break;
    }
    case 7:
      checkStatus(
          p.updateLoadBalancer(script, service.ref(), std::span<const plugin::NodeRef>(&ref, 1)));
      break;
    case 8:
      checkStatus(p.ensureLoadBalancerDeleted(script, service.ref()));
      break;
    case 9: {
      auto r = p.listRoutes(script);
      checkStatus(r.status());
      if (r.ok()) {
        for (const auto& route : *r) {
          require(sdk::validateRoute(route).empty(), "accepted route is valid");
        }
      }
      break;
    }
    case 10: {
      plugin::Route route;
      route.target_node = "node-1";
      route.destination_cidr = "10.244.1.0/24";
      checkStatus(p.createRoute(script, "uid-1", route));
      break;
    }
    default: {
      plugin::Route route;
      route.target_node = "node-1";
      route.destination_cidr = "10.244.1.0/24";
      checkStatus(p.deleteRoute(script, route));
      break;
    }
  }
  // Scraping must work whatever the plugin recorded.
  if (data[0] >= 240) {
    fuzz::touch(h.registry.exposition());
  }
  return 0;
}
