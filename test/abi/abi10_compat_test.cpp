// ABI 1.0 on both sides of a newer build: the host reads a 1.0 plugin's shorter table with
// every 1.1 field absent, and the SDK's entry function (and the C example's) answers minor 0
// to a 1.0 host whose service table ends before the 1.1 slots, and refuses another major
// with a message.
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>

#include "ccm/provider.hpp"
#include "host/plugin/abi_provider.hpp"
#include "host/plugin/plugin_loader.hpp"
#include "test/support/provider_inputs.hpp"

using namespace ccm;
using namespace ccm::plugin;

namespace {

std::string envDir(const char* name) {
  const char* v = std::getenv(name);
  REQUIRE_MESSAGE(v != nullptr, name);
  return v;
}

// ---- a provider on the C++ SDK, linked into this test ---------------------------------------

class TinyProvider : public sdk::Provider {
 public:
  static sdk::Result<std::unique_ptr<TinyProvider>> create(const sdk::Host&, std::string_view) {
    return std::make_unique<TinyProvider>();
  }
};

// ---- a hand-made host of a chosen version ---------------------------------------------------

std::string g_error;
bool g_log_fields_called = false;

bool setError(ccm_host_handle, uint64_t, ccm_str message, int64_t) {
  g_error.assign(message.data, message.size);
  return true;
}
void logLine(ccm_host_handle, ccm_log_level, ccm_str) {}
void logFields(ccm_host_handle, ccm_log_level, ccm_str, const ccm_kv*, size_t) {
  g_log_fields_called = true;
}

struct HandMadeHost {
  ccm_host_services services{};
  ccm_host_info info{};
  ccm_call call{};

  // A host of ABI major.minor; a 1.0 host's service table ends where log_fields begins. The
  // slot is filled all the same, so reading past struct_size would be noticed.
  HandMadeHost(uint32_t major, uint32_t minor) {
    services.struct_size = minor == 0
                               ? static_cast<uint32_t>(offsetof(ccm_host_services, log_fields))
                               : static_cast<uint32_t>(sizeof services);
    services.log = &logLine;
    services.set_error = &setError;
    services.log_fields = &logFields;
    info.struct_size = sizeof info;
    info.abi_major = major;
    info.abi_minor = minor;
    info.host_name = {"hand-made", 9};
    info.host_version = {"0.0.1", 5};
    info.host = 7;
    info.services = &services;
    call.struct_size = sizeof call;
    call.call_id = 42;
    g_error.clear();
  }

  ccm_status negotiate(ccm_provider_entry_fn entry, const ccm_plugin** out) {
    return entry(&info, &call, out);
  }
};

ccm_provider_entry_fn minimalEntry() {
  std::string path = envDir("CCM_EXAMPLE_DIR") + "/minimal.so";
  void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE_MESSAGE(lib != nullptr, ::dlerror());
  void* sym = ::dlsym(lib, CCM_PROVIDER_ENTRY_SYMBOL);
  REQUIRE(sym != nullptr);
  return reinterpret_cast<ccm_provider_entry_fn>(sym);
}

std::string version(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace

CCM_SDK_PROVIDER(TinyProvider, "tiny", "0.0.1")

TEST_CASE("the host reads a 1.0 plugin's table with every 1.1 field absent") {
  metrics::Registry reg;
  LoadOptions o;
  o.plugin_dir = envDir("CCM_ABI10_DIR");
  o.name = "abi10";
  o.registry = &reg;
  auto loaded = PluginLoader::load(o);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().toString());
  const ccm_plugin& table = (*loaded)->table;
  // The plugin's own struct_size (72), not ours: the copy is min(both) bytes.
  CHECK(table.struct_size == offsetof(ccm_plugin, reconfigure));
  CHECK(table.struct_size < sizeof(ccm_plugin));
  CHECK(table.abi_minor == 0);
  CHECK((table.reconfigure == nullptr));
  CHECK(table.provider_id_prefix.data == nullptr);
  CHECK(table.provider_id_prefix.size == 0);
  CHECK(table.annotation_domain.size == 0);
  CHECK(table.metric_namespace.size == 0);

  ProviderOptions po;
  po.registry = &reg;
  auto p = AbiProvider::create(*loaded, "", "", po);
  REQUIRE_MESSAGE(p.ok(), p.status().toString());
  CHECK((*p)->info().abi_minor == 0);
  CHECK((*p)->info().instances.present);
  CHECK((*p)->info().load_balancer.present);
  testing::TestNode node{"node-1"};
  node.addresses = {{"InternalIP", "10.0.0.9"}};
  auto md = (*p)->instanceMetadata(node.ref());
  REQUIRE_MESSAGE(md.ok(), md.status().toString());
  REQUIRE(md->has_value());
  CHECK((*md)->provider_id == "abi10://node-1");
  CHECK((*md)->zone == "frozen-zone");
  REQUIRE((*md)->addresses.size() == 2);
  CHECK((*md)->addresses[0].address == "10.0.0.9");
}

TEST_CASE("the C++ SDK answers minor 0 to a 1.0 host and never reads its missing slots") {
  const ccm_plugin* out = nullptr;
  HandMadeHost old_host(CCM_ABI_MAJOR, 0);
  REQUIRE(old_host.negotiate(&ccm_provider_entry_v1, &out) == CCM_STATUS_OK);
  REQUIRE(out != nullptr);
  CHECK(out->abi_minor == 0);
  CHECK(out->struct_size == sizeof(ccm_plugin));
  const sdk::Host& host = sdk::Host::instance();
  CHECK(host.negotiatedMinor() == 0);
  CHECK(host.hostName() == "hand-made");
  // The 1.1 slot lies beyond the 1.0 table: absent, though the memory behind it is set.
  CHECK((host.services().log_fields == nullptr));
  CHECK((host.slot(&ccm_host_services::log_fields, offsetof(ccm_host_services, log_fields)) ==
         nullptr));
  host.info("hello from a 1.1 plugin");
  CHECK_FALSE(g_log_fields_called);

  // A host of our own minor gets our minor, and a 1.0 host again gets 0: the answer follows
  // each negotiation.
  HandMadeHost new_host(CCM_ABI_MAJOR, CCM_ABI_MINOR);
  REQUIRE(new_host.negotiate(&ccm_provider_entry_v1, &out) == CCM_STATUS_OK);
  CHECK(out->abi_minor == CCM_ABI_MINOR);
  CHECK((host.slot(&ccm_host_services::log_fields, offsetof(ccm_host_services, log_fields)) ==
         &logFields));
  HandMadeHost newer_host(CCM_ABI_MAJOR, CCM_ABI_MINOR + 7);
  REQUIRE(newer_host.negotiate(&ccm_provider_entry_v1, &out) == CCM_STATUS_OK);
  CHECK(out->abi_minor == CCM_ABI_MINOR);
  REQUIRE(old_host.negotiate(&ccm_provider_entry_v1, &out) == CCM_STATUS_OK);
  CHECK(out->abi_minor == 0);
}

TEST_CASE("the C++ SDK refuses another major with a message naming both versions") {
  const ccm_plugin* out = nullptr;
  HandMadeHost other(CCM_ABI_MAJOR + 1, 0);
  CHECK(other.negotiate(&ccm_provider_entry_v1, &out) == CCM_STATUS_FAILED_PRECONDITION);
  CHECK(g_error == "plugin tiny speaks ABI " + version(CCM_ABI_MAJOR, CCM_ABI_MINOR) +
                       " but the host speaks ABI " + version(CCM_ABI_MAJOR + 1, 0));
}

TEST_CASE("the C example answers minor 0 to a 1.0 host and refuses another major") {
  ccm_provider_entry_fn entry = minimalEntry();
  const ccm_plugin* out = nullptr;
  HandMadeHost old_host(CCM_ABI_MAJOR, 0);
  REQUIRE(old_host.negotiate(entry, &out) == CCM_STATUS_OK);
  CHECK(out->abi_minor == 0);
  HandMadeHost new_host(CCM_ABI_MAJOR, CCM_ABI_MINOR);
  REQUIRE(new_host.negotiate(entry, &out) == CCM_STATUS_OK);
  CHECK(out->abi_minor == CCM_ABI_MINOR);
  HandMadeHost other(CCM_ABI_MAJOR + 1, 3);
  CHECK(other.negotiate(entry, &out) == CCM_STATUS_FAILED_PRECONDITION);
  CHECK(g_error == "minimal speaks ABI " + version(CCM_ABI_MAJOR, CCM_ABI_MINOR) +
                       ", the host ABI " + version(CCM_ABI_MAJOR + 1, 3));
}
