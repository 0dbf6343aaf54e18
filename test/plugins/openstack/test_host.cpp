// TestHost and Provider over the SDK's fake host.
#include "test/plugins/openstack/test_host.hpp"

#include <cstdlib>
#include <stdexcept>

namespace ccm::openstack::testing {
namespace {

ccm_provider_entry_fn openstackEntry() {
  const char* path = std::getenv("CCM_OPENSTACK_SO");
  if (path == nullptr || *path == '\0') {
    throw std::runtime_error("set CCM_OPENSTACK_SO to the path of openstack.so");
  }
  static ccm_provider_entry_fn entry = sdk::testing::FakeHost::load(path);
  return entry;
}

// The status, message and retry-after of a finished call.
CallResult outcome(const sdk::Status& s) {
  CallResult r;
  r.status = s.code();
  r.error = s.message();
  r.retry_after_ms = s.retryAfter().count();
  return r;
}

template <typename T>
CallResult outcome(const sdk::Result<T>& result) {
  if (result.ok()) {
    return outcome(sdk::Status());
  }
  return outcome(sdk::Status(result.error()));
}

}  // namespace

Node node(std::string name, std::string provider_id, std::vector<NodeAddress> addresses) {
  Node n(std::move(name));
  n.provider_id = std::move(provider_id);
  n.addresses = std::move(addresses);
  return n;
}

std::string ipFamilyPolicyJson(const std::string& policy) {
  if (policy.empty()) {
    return {};
  }
  return R"({"spec":{"ipFamilyPolicy":")" + policy + R"("}})";
}

TestHost::TestHost() : fake_(openstackEntry()) {
  if (sdk::Status s = fake_.negotiate(); !s.ok()) {
    throw std::runtime_error("openstack.so refused to negotiate: " + s.message());
  }
}

TestHost& TestHost::instance() {
  static TestHost* host = new TestHost();
  return *host;
}

std::pair<CallResult, std::unique_ptr<Provider>> TestHost::create(
    const std::string& config, std::chrono::nanoseconds start_timeout) {
  ++generation_;
  fake_.setCallTimeout(start_timeout);
  CallResult r = outcome(fake_.create(config));
  fake_.setCallTimeout(std::chrono::nanoseconds(0));
  std::unique_ptr<Provider> provider;
  if (r.ok()) {
    provider = std::make_unique<Provider>(*this, generation_);
  }
  return {std::move(r), std::move(provider)};
}

std::pair<ccm_status, std::string> TestHost::negotiateWithMajor(uint32_t major) {
  sdk::testing::FakeHost other(openstackEntry(), {.abi_minor = 0, .abi_major = major});
  sdk::Status s = other.create("");
  return {s.code(), s.message()};
}

Provider::~Provider() {
  if (host_.generation_ == generation_) {
    host_.fake_.destroyProvider();
  }
}

sdk::testing::FakeHost& Provider::call(int64_t deadline_ms) {
  if (host_.generation_ != generation_) {
    throw std::logic_error("this provider was replaced by a later TestHost::create");
  }
  host_.fake_.setCallTimeout(std::chrono::milliseconds(deadline_ms));
  return host_.fake_;
}

bool Provider::has(const char* id) { return call().capability<void>(id) != nullptr; }

CallResult Provider::exists(const Node& node, int64_t deadline_ms) {
  auto got = call(deadline_ms).instanceExists(node);
  CallResult r = outcome(got);
  if (got.ok()) {
    r.existence = static_cast<ccm_existence>(got.value());
  }
  return r;
}

CallResult Provider::shutdown(const Node& node) {
  auto got = call().instanceShutdown(node);
  CallResult r = outcome(got);
  if (got.ok()) {
    r.power = static_cast<ccm_power>(got.value());
  }
  return r;
}

CallResult Provider::metadata(const Node& node) {
  auto got = call().instanceMetadata(node);
  CallResult r = outcome(got);
  if (got.ok() && got.value()) {
    r.metadata[0] = *got.value();
  }
  return r;
}

CallResult Provider::metadataBatch(const std::vector<Node>& nodes) {
  auto got = call().instanceMetadataBatch(nodes);
  CallResult r = outcome(got);
  if (!got.ok()) {
    return r;
  }
  for (size_t i = 0; i < got.value().size(); ++i) {
    const auto& item = got.value()[i];
    if (!item.ok()) {
      r.item_errors[i] = {item.error().code(), item.error().message()};
    } else if (item.value()) {
      r.metadata[i] = *item.value();
    }
  }
  return r;
}

CallResult Provider::getLoadBalancer(const Service& svc, const std::string& cluster) {
  auto got = call().getLoadBalancer(svc, cluster);
  CallResult r = outcome(got);
  if (got.ok() && got.value()) {
    r.exists = true;
    r.lb_status = got.value()->ingress;
  }
  return r;
}

CallResult Provider::loadBalancerName(const Service& svc, const std::string& cluster) {
  auto got = call().getLoadBalancerName(svc, cluster);
  CallResult r = outcome(got);
  if (got.ok()) {
    r.string = got.value();
  }
  return r;
}

CallResult Provider::ensure(const Service& svc, const std::vector<Node>& nodes,
                            const std::string& cluster, int64_t deadline_ms) {
  auto got = call(deadline_ms).ensureLoadBalancer(svc, nodes, cluster);
  CallResult r = outcome(got);
  if (got.ok()) {
    r.lb_status = got.value().ingress;
  }
  return r;
}

CallResult Provider::update(const Service& svc, const std::vector<Node>& nodes,
                            const std::string& cluster) {
  return outcome(call().updateLoadBalancer(svc, nodes, cluster));
}

CallResult Provider::remove(const Service& svc, const std::string& cluster) {
  return outcome(call().ensureLoadBalancerDeleted(svc, cluster));
}

CallResult Provider::ensureSettled(const Service& svc, const std::vector<Node>& nodes, int tries,
                                   const std::string& cluster) {
  CallResult r;
  for (int i = 0; i < tries; ++i) {
    r = ensure(svc, nodes, cluster);
    if (r.status != CCM_STATUS_FAILED_PRECONDITION || r.retry_after_ms == 0) {
      return r;
    }
  }
  return r;
}

CallResult Provider::removeSettled(const Service& svc, int tries, const std::string& cluster) {
  CallResult r;
  for (int i = 0; i < tries; ++i) {
    r = remove(svc, cluster);
    if (r.status != CCM_STATUS_FAILED_PRECONDITION || r.retry_after_ms == 0) {
      return r;
    }
  }
  return r;
}

CallResult Provider::listRoutes(const std::string& cluster) {
  auto got = call().listRoutes(cluster);
  CallResult r = outcome(got);
  if (got.ok()) {
    r.routes = got.value();
  }
  return r;
}

CallResult Provider::createRoute(const Route& route, const std::string& cluster) {
  Route passed = route;
  passed.enable_node_addresses = !route.target_node_addresses.empty();
  return outcome(call().createRoute(passed, "node-uid", cluster));
}

CallResult Provider::deleteRoute(const Route& route, const std::string& cluster) {
  Route passed = route;
  passed.enable_node_addresses = !route.target_node_addresses.empty();
  return outcome(call().deleteRoute(passed, cluster));
}

CallResult Provider::reconfigure(const std::string& config) {
  return outcome(call().reconfigure(config));
}

}  // namespace ccm::openstack::testing
