// Conformance kit: C++ providers whose calls throw. "throws-raw" implements the C ABI by hand
// and lets the exception escape into the host; "throws-sdk" uses the SDK, whose guard must
// turn it into INTERNAL.
#include <stdexcept>

#ifdef USE_SDK
#include "ccm/provider.hpp"

class Thrower : public ccm::sdk::Provider, public ccm::sdk::Instances {
 public:
  static ccm::sdk::Result<std::unique_ptr<Thrower>> create(const ccm::sdk::Host&,
                                                           std::string_view) {
    return std::make_unique<Thrower>();
  }
  ccm::sdk::Instances* instances() override { return this; }
  ccm::sdk::Result<ccm::sdk::Existence> instanceExists(const ccm::sdk::Call&,
                                                       const ccm::sdk::NodeView&) override {
    throw std::runtime_error("boom from exists");
  }
  ccm::sdk::Result<ccm::sdk::Power> instanceShutdown(const ccm::sdk::Call&,
                                                     const ccm::sdk::NodeView&) override {
    throw 42;  // not even a std::exception
  }
  ccm::sdk::Result<std::optional<ccm::sdk::InstanceMetadata>> instanceMetadata(
      const ccm::sdk::Call&, const ccm::sdk::NodeView&) override {
    throw std::runtime_error("boom from metadata");
  }
};
CCM_SDK_PROVIDER(Thrower, "throws-sdk", "1.0.0")

#else
#include "ccm/provider_abi.h"

namespace {
struct Dummy {};
Dummy g_dummy;
ccm_status existsFn(ccm_provider*, const ccm_call*, const ccm_node*, ccm_existence*) {
  throw std::runtime_error("boom across the ABI");
}
ccm_status shutdownFn(ccm_provider*, const ccm_call*, const ccm_node*, ccm_power* out) {
  *out = CCM_POWER_RUNNING;
  return CCM_STATUS_OK;
}
ccm_status metadataFn(ccm_provider*, const ccm_call*, const ccm_node*) {
  throw std::logic_error("metadata exploded");
}
const ccm_instances_v1 kInstances = {sizeof(ccm_instances_v1), 0, 0, existsFn, shutdownFn,
                                     metadataFn};
ccm_status createFn(const ccm_call*, ccm_str, ccm_provider** out) {
  *out = reinterpret_cast<ccm_provider*>(&g_dummy);
  return CCM_STATUS_OK;
}
void destroyFn(ccm_provider*) {}
const void* capFn(ccm_provider*, ccm_str id) {
  return std::string_view(id.data, id.size) == CCM_CAP_INSTANCES ? &kInstances : nullptr;
}
const ccm_plugin kPlugin = {sizeof(ccm_plugin), 1, 0, {"throws-raw", 10}, {"1.0.0", 5},
                            createFn, destroyFn, capFn, nullptr, {}, {}, {}};
}  // namespace

extern "C" CCM_PLUGIN_EXPORT ccm_status ccm_provider_entry_v1(const ccm_host_info*,
                                                              const ccm_call*,
                                                              const ccm_plugin** out) {
  *out = &kPlugin;
  return CCM_STATUS_OK;
}
#endif
