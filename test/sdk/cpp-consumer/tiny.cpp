// tiny.cpp — a C++ provider built out of tree against the installed SDK, the way an outside
// author builds one (test/sdk/sdk_install_test.py): the C++ helper, CCM_SDK_PROVIDER and the
// fake host's header all compile in C++20 with -Wall -Wextra -Werror, and refuse C++17 with a
// clear #error. Every node exists, runs, and is in zone "tiny-zone".
#include <ccm/provider.hpp>
#include <ccm/testing/fake_host.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace {

class TinyProvider : public ccm::sdk::Provider, public ccm::sdk::Instances {
 public:
  static ccm::sdk::Result<std::unique_ptr<TinyProvider>> create(const ccm::sdk::Host& host,
                                                                std::string_view config) {
    if (!config.empty()) {
      return ccm::sdk::Error::invalidArgument("tiny takes no configuration");
    }
    host.info("tiny provider ready (ABI minor " + std::to_string(host.negotiatedMinor()) + ")");
    return std::make_unique<TinyProvider>();
  }

  ccm::sdk::Instances* instances() override { return this; }

  ccm::sdk::Result<ccm::sdk::Existence> instanceExists(const ccm::sdk::Call&,
                                                       const ccm::sdk::NodeView&) override {
    return ccm::sdk::Existence::Exists;
  }
  ccm::sdk::Result<ccm::sdk::Power> instanceShutdown(const ccm::sdk::Call&,
                                                     const ccm::sdk::NodeView&) override {
    return ccm::sdk::Power::Running;
  }
  ccm::sdk::Result<std::optional<ccm::sdk::InstanceMetadata>> instanceMetadata(
      const ccm::sdk::Call&, const ccm::sdk::NodeView& node) override {
    ccm::sdk::InstanceMetadata md;
    md.provider_id = "tiny://" + std::string(node.name());
    md.zone = "tiny-zone";
    return std::optional<ccm::sdk::InstanceMetadata>(std::move(md));
  }
};

}  // namespace

CCM_SDK_PROVIDER(TinyProvider, "tiny", "0.1.0")
