// The ABI conformance kit: every deliberately broken plugin must produce the documented error
// or recovery, and the host must keep working. (How the host calls a correct plugin is tested
// with host/plugin, in test/host/plugin.)
#include <doctest/doctest.h>

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "ccm/validation.hpp"
#include "host/log/log.hpp"
#include "host/plugin/abi_provider.hpp"
#include "host/plugin/plugin_loader.hpp"
#include "test/host/plugin/test_plugins.hpp"
#include "test/support/provider_inputs.hpp"

using namespace ccm;
using namespace ccm::plugin;
using namespace ccm::testing;

namespace {

StatusOr<std::shared_ptr<const LoadedPlugin>> loadKit(const std::string& name,
                                                      metrics::Registry* reg = nullptr) {
  LoadOptions o;
  o.plugin_dir = kitDir();
  o.name = name;
  o.registry = reg;
  return PluginLoader::load(o);
}

std::unique_ptr<AbiProvider> provider(const std::string& name, metrics::Registry& reg,
                                      std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  return makeProvider(kitDir(), name, reg, timeout);
}

void expectLoadError(const std::string& name, Code code, const std::string& fragment) {
  auto r = loadKit(name);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == code);
  CHECK_MESSAGE(r.status().message().find(fragment) != std::string::npos,
                r.status().message());
  // One line, naming the file.
  CHECK(r.status().message().find('\n') == std::string::npos);
}

}  // namespace

TEST_CASE("loader refuses every broken plugin with a one-line error naming the cause") {
  expectLoadError("absent", Code::NotFound, "unknown cloud provider \"absent\"");
  expectLoadError("absent", Code::NotFound, "baseline");  // lists what is there
  expectLoadError("not-a-library", Code::FailedPrecondition, "not a loadable shared library");
  expectLoadError("no-entry", Code::FailedPrecondition, "does not export ccm_provider_entry_v1");
  expectLoadError("entry-v2", Code::FailedPrecondition,
                  "exports ccm_provider_entry_v2: it was built for plugin ABI 2");
  expectLoadError("wrong-major", Code::FailedPrecondition,
                  "it speaks plugin ABI 2.0, this host speaks ABI " +
                      std::to_string(CCM_ABI_MAJOR) + "." + std::to_string(CCM_ABI_MINOR));
  expectLoadError("minor-too-new", Code::FailedPrecondition, "chose ABI minor 5");
  expectLoadError("short-struct", Code::FailedPrecondition, "struct_size is 8 bytes");
  expectLoadError("null-slot", Code::FailedPrecondition, "ccm_plugin.create slot is NULL");
  expectLoadError("null-table", Code::FailedPrecondition, "no ccm_plugin table");
  expectLoadError("wrong-name", Code::FailedPrecondition, "calls itself \"somebody-else\"");
  expectLoadError("refuses-negotiation", Code::FailedPrecondition,
                  "this plugin needs ABI 1.3 features");
  expectLoadError("../etc/passwd", Code::InvalidArgument, "is not a provider name");
}

TEST_CASE("ABI 1.1: malformed declarations are refused at load, naming plugin and field") {
  expectLoadError("bad-prefix", Code::FailedPrecondition,
                  "provider bad-prefix declares a malformed ccm_plugin.provider_id_prefix "
                  "\"Kit:/vm\"");
  expectLoadError("bad-domain", Code::FailedPrecondition,
                  "provider bad-domain declares a malformed ccm_plugin.annotation_domain "
                  "\"lb.k8s.io\" is k8s.io or under it");
  expectLoadError("bad-namespace", Code::FailedPrecondition,
                  "provider bad-namespace declares a malformed ccm_plugin.metric_namespace "
                  "\"workqueue\" is reserved");
}

TEST_CASE("ABI 1.1: the declaration and annotation rules shared by host and fake host") {
  using namespace ccm::sdk;
  for (const char* ok : {"", "openstack://", "fake://", "my-cloud+x.y://region/", "a://"}) {
    CHECK_MESSAGE(checkProviderIdPrefix(ok).empty(), ok);
  }
  for (const char* bad : {"openstack", "://x", "OpenStack://", "1x://", "a b://", "x:/"}) {
    CHECK_MESSAGE(!checkProviderIdPrefix(bad).empty(), bad);
  }
  CHECK(!checkProviderIdPrefix("x://" + std::string(61, 'a')).empty());  // 65 bytes
  CHECK(checkProviderIdPrefix("x://" + std::string(60, 'a')).empty());    // 64 bytes
  for (const char* ok : {"", "loadbalancer.openstack.org", "fake-cloud.ccm.io", "k8s.example"}) {
    CHECK_MESSAGE(checkAnnotationDomain(ok).empty(), ok);
  }
  for (const char* bad : {"kubernetes.io", "lb.kubernetes.io", "k8s.io", "x.k8s.io", "Upper.io",
                          "-a.io", "a..b"}) {
    CHECK_MESSAGE(!checkAnnotationDomain(bad).empty(), bad);
  }
  CHECK(checkAnnotationDomain("notkubernetes.io").empty());  // not under kubernetes.io
  for (const char* ok : {"", "openstack", "fakecloud", "a1"}) {
    CHECK_MESSAGE(checkMetricNamespace(ok).empty(), ok);
  }
  for (const char* bad : {"ccm", "node", "workqueue", "Fake", "fake_cloud", "1a", "fake-cloud"}) {
    CHECK_MESSAGE(!checkMetricNamespace(bad).empty(), bad);
  }
  const std::string domain = "lb.example.com";
  for (const char* ok : {"lb.example.com/id", "eu.lb.example.com/load-balancer.id_2"}) {
    CHECK_MESSAGE(checkAnnotationKey(ok, domain).empty(), ok);
  }
  for (const char* bad : {"id", "example.com/id", "xlb.example.com/id", "lb.example.com/",
                          "lb.example.com/-x", "lb.example.com/a/b", "LB.example.com/id"}) {
    CHECK_MESSAGE(!checkAnnotationKey(bad, domain).empty(), bad);
  }
  CHECK(!checkAnnotationKey("lb.example.com/id", "").empty());  // no domain, no annotations
  CHECK(checkAnnotations({{"lb.example.com/a", "1"}, {"lb.example.com/a", "2"}}, {}, domain)
            .find("is set twice") != std::string::npos);
  CHECK(checkProviderId("kit://vm", "kit://").empty());
  CHECK(checkProviderId("anything", "").empty());
  CHECK(!checkProviderId("kitx://vm", "kit://").empty());
}

TEST_CASE("ABI 1.1: a 1.1 plugin's declarations are read; a 1.0 plugin's never are") {
  auto v11 = loadKit("v11");
  REQUIRE(v11.ok());
  CHECK((*v11)->table.abi_minor == 1);
  CHECK((*v11)->provider_id_prefix == "kit://");
  CHECK((*v11)->annotation_domain == "kit.example.com");
  CHECK((*v11)->metric_namespace == "kit");

  // Speaks 1.0 yet fills the 1.1 fields: they read as absent, and so do its annotations.
  auto old = loadKit("minor0-declares");
  REQUIRE(old.ok());
  CHECK((*old)->table.abi_minor == 0);
  CHECK((*old)->provider_id_prefix.empty());
  CHECK((*old)->annotation_domain.empty());
  CHECK((*old)->metric_namespace.empty());
  metrics::Registry reg;
  auto p = provider("minor0-declares", reg);
  TestService svc;
  svc.annotations = {{"test/set", "kit.example.com/lb-id"}};
  auto st = p->ensureLoadBalancer("kubernetes", svc.ref(), {});
  REQUIRE(st.ok());
  CHECK(st->annotations.empty());
  TestNode n{"node-a"};
  n.provider_id = "other://vm-1";
  auto md = p->instanceMetadata(n.ref());
  REQUIRE(md.ok());  // no prefix declared: any providerID goes
  CHECK((*md)->provider_id == "other://vm-1");
}

TEST_CASE("ABI 1.1: metadata outside the declared providerID prefix is invalid output") {
  metrics::Registry reg;
  auto p = provider("v11", reg);
  CHECK(p->info().provider_id_prefix == "kit://");
  TestNode n{"node-a"};
  n.provider_id = "kit://vm-1";
  auto md = p->instanceMetadata(n.ref());
  REQUIRE(md.ok());
  CHECK((*md)->provider_id == "kit://vm-1");
  n.provider_id = "other://vm-1";  // not one of v11's: it answers one inside its prefix
  md = p->instanceMetadata(n.ref());
  REQUIRE(md.ok());
  CHECK((*md)->provider_id == "kit://vm-1");
  // A plugin answering outside its declared prefix is refused.
  auto bad = provider("out-of-prefix", reg);
  md = bad->instanceMetadata(n.ref());
  CHECK(md.status().code() == Code::Internal);
  CHECK_MESSAGE(md.status().message().find("providerID \"other://vm-1\" does not start with the "
                                           "provider's declared prefix \"kit://\"") !=
                    std::string::npos,
                md.status().message());
}

TEST_CASE("ABI 1.1: annotations are carried inside the domain and refused outside it") {
  metrics::Registry reg;
  auto p = provider("v11", reg);
  TestService svc;
  svc.annotations = {{"test/set", "kit.example.com/load-balancer-id"},
                     {"test/remove", "eu.kit.example.com/old"}};
  auto st = p->ensureLoadBalancer("kubernetes", svc.ref(), {});
  REQUIRE(st.ok());
  CHECK(st->annotations ==
        sdk::Labels{{"kit.example.com/load-balancer-id", "v1"}});
  CHECK(st->removed_annotations == std::vector<std::string>{"eu.kit.example.com/old"});

  auto refused = [&](std::vector<KeyValueRef> annotations, const std::string& fragment) {
    TestService bad;
    bad.annotations = std::move(annotations);
    auto r = p->ensureLoadBalancer("kubernetes", bad.ref(), {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Code::Internal);
    CHECK_MESSAGE(r.status().message().find(fragment) != std::string::npos,
                  r.status().message());
  };
  refused({{"test/set", "example.com/id"}},
          "annotation \"example.com/id\" is outside the provider's annotation domain "
          "kit.example.com");
  refused({{"test/set", "notkit.example.com/id"}}, "\"notkit.example.com/id\" is outside");
  refused({{"test/set", "kubernetes.io/id"}}, "\"kubernetes.io/id\" is outside");
  refused({{"test/set", "kit.example.com/-bad-"}}, "the name after the '/' is not");
  refused({{"test/remove", "other.io/x"}}, "\"other.io/x\" is outside");
  refused({{"test/set", "kit.example.com/id"}, {"test/remove", "kit.example.com/id"}},
          "\"kit.example.com/id\" is both set and removed");
}

TEST_CASE("ABI 1.1: metric namespace and structured log fields") {
  std::mutex mu;
  std::vector<std::string> lines;
  log::setSinkForTest([&](std::string_view line) {
    std::lock_guard lock(mu);
    lines.emplace_back(line);
  });
  log::Config saved = log::currentConfig();
  metrics::Registry reg;
  auto p = provider("v11", reg);
  TestNode n{"node-a"};
  REQUIRE(p->instanceExists(n.ref()).ok());
  log::configure({log::Format::Json, saved.verbosity, saved.fd});
  REQUIRE(p->instanceExists(n.ref()).ok());
  log::configure(saved);
  log::setSinkForTest(nullptr);

  // "kit_..." is the plugin's own name; "kitchen_..." is not in the namespace.
  CHECK(reg.valueForTest("kit_checks_total", {}) == 2);
  CHECK(reg.valueForTest("ccm_provider_kitchen_checks_total", {}) == 2);
  CHECK(reg.valueForTest("ccm_provider_kit_checks_total", {}) < 0);  // absent

  std::vector<std::string> ours;
  for (const auto& l : lines) {
    if (l.find("kit: checked an instance") != std::string::npos) {
      ours.push_back(l);
    }
  }
  REQUIRE(ours.size() == 2);
  // klog: the message quoted, then key="value" fields; the bad key is dropped.
  CHECK_MESSAGE(ours[0].find("\"kit: checked an instance\" provider=\"v11\" node=\"node-a\" "
                             "zone=\"zone-a\"\n") != std::string::npos,
                ours[0]);
  CHECK(ours[0].find("dropped") == std::string::npos);
  // JSON: members of the record.
  CHECK_MESSAGE(ours[1].find("\"msg\":\"kit: checked an instance\",\"v\":0,\"provider\":"
                             "\"v11\",\"node\":\"node-a\",\"zone\":\"zone-a\"}") !=
                    std::string::npos,
                ours[1]);
}

TEST_CASE("create errors: refused config and NULL capability slots") {
  metrics::Registry reg;
  auto loaded = loadKit("refuses-config", &reg);
  REQUIRE(loaded.ok());
  auto p = AbiProvider::create(*loaded, "x", "/etc/cloud.conf", ProviderOptions{});
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().code() == Code::InvalidArgument);
  CHECK(p.status().message() ==
        "provider refuses-config refused its configuration (--cloud-config=/etc/cloud.conf): "
        "[Global] auth-url is required but missing");

  loaded = loadKit("null-cap-slot", &reg);
  REQUIRE(loaded.ok());
  p = AbiProvider::create(*loaded, "", "", ProviderOptions{});
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().message().find("required slot instance_metadata set to NULL") !=
        std::string::npos);
}

TEST_CASE("exceptions never cross into the host") {
  metrics::Registry reg;
  TestNode n{"node-a"};
  auto raw = provider("throws-raw", reg);
  auto ex = raw->instanceExists(n.ref());
  CHECK(ex.status().code() == Code::Internal);
  CHECK(ex.status().message().find("threw an exception across the plugin ABI: boom across the "
                                   "ABI") != std::string::npos);
  CHECK(reg.valueForTest("ccm_provider_contract_violations_total", {"throws-raw", "exception"}) >= 1);
  // The host keeps working: the next call to the same plugin is answered.
  auto power = raw->instanceShutdown(n.ref());
  REQUIRE(power.ok());
  CHECK(*power == Power::Running);

  auto sdk = provider("throws-sdk", reg);
  ex = sdk->instanceExists(n.ref());
  CHECK(ex.status().code() == Code::Internal);
  CHECK(ex.status().message() == "provider threw an exception: boom from exists");
  auto sh = sdk->instanceShutdown(n.ref());
  CHECK(sh.status().message() == "provider threw a non-standard exception");
}

TEST_CASE("a hung call is abandoned at its deadline and the slots recover") {
  metrics::Registry reg;
  auto p = provider("hangs", reg, std::chrono::milliseconds(300));
  CHECK(p->info().instances.max_concurrency == 2);
  TestNode n{"node-a"};
  auto started = std::chrono::steady_clock::now();
  auto md = p->instanceMetadata(n.ref());
  auto took = std::chrono::steady_clock::now() - started;
  CHECK(md.status().code() == Code::DeadlineExceeded);
  CHECK(md.status().message().find("abandoned") != std::string::npos);
  CHECK(took < std::chrono::milliseconds(2500));  // well before the plugin's 3 s sleep
  // A second hung call takes the other slot; then every slot is held by a hung call and new
  // calls fail fast and clearly rather than piling up threads.
  CHECK(p->instanceMetadata(n.ref()).status().code() == Code::DeadlineExceeded);
  auto blocked = p->instanceExists(n.ref());
  CHECK(blocked.status().code() == Code::DeadlineExceeded);
  CHECK(blocked.status().message().find("every provider slot stayed busy") != std::string::npos);
  CHECK(reg.valueForTest("ccm_provider_abandoned_calls", {"hangs", "instances"}) == 2);
  // The provider's health check says so while it lasts.
  CHECK(p->health().message() == "provider hangs: every one of the 2 call slots of "
                                 "ccm.instances/1 is held by a call that overstayed its deadline");
  // Once the plugin returns, its late results are discarded and the slots come back.
  REQUIRE(waitUntil(
      [&] { return reg.valueForTest("ccm_provider_abandoned_calls", {"hangs", "instances"}) == 0; },
      std::chrono::seconds(10)));
  CHECK(p->health().ok());
  auto ex = p->instanceExists(n.ref());
  REQUIRE(ex.ok());
  CHECK(*ex == Existence::Exists);
}

TEST_CASE("unknown status codes read as INTERNAL") {
  metrics::Registry reg;
  auto p = provider("unknown-status", reg);
  TestNode n{"node-a"};
  auto ex = p->instanceExists(n.ref());
  CHECK(ex.status().code() == Code::Internal);
  CHECK(ex.status().message() == "unknown status code 777: something odd");
  CHECK(reg.valueForTest("ccm_provider_contract_violations_total", {"unknown-status", "unknown_status"}) == 1);
}

TEST_CASE("output emitted after the call returned is refused") {
  metrics::Registry reg;
  auto p = provider("stray-thread", reg);
  TestNode n{"node-a"};
  auto md = p->instanceMetadata(n.ref());
  REQUIRE(md.ok());
  CHECK_FALSE(md->has_value());
  CHECK(waitUntil([&] {
    return reg.valueForTest("ccm_provider_contract_violations_total", {"stray-thread", "stale_call_id"}) == 1;
  }));
}

TEST_CASE("malformed output becomes a clear INTERNAL error") {
  metrics::Registry reg;
  auto p = provider("malformed", reg);
  TestNode n{"node-a"};
  auto md = p->instanceMetadata(n.ref());
  CHECK(md.status().code() == Code::Internal);
  CHECK(md.status().message().find("addresses[0].type \"Bogus\" is not one of") !=
        std::string::npos);
  TestService svc;
  auto st = p->ensureLoadBalancer("kubernetes", svc.ref(), {});
  CHECK(st.status().code() == Code::Internal);
  CHECK(st.status().message().find("ingress[0].ip \"not-an-ip\" is not an IP address") !=
        std::string::npos);

  // An existence or power state outside the ABI's set is refused, never read as a state.
  auto be = provider("bad-existence", reg);
  auto ex = be->instanceExists(n.ref());
  CHECK(ex.status().code() == Code::Internal);
  CHECK_MESSAGE(ex.status().message().find("instance_exists wrote existence 7") !=
                    std::string::npos,
                ex.status().message());
  auto pw = be->instanceShutdown(n.ref());
  CHECK(pw.status().code() == Code::Internal);
  CHECK(pw.status().message().find("instance_shutdown wrote power state 9") != std::string::npos);
  CHECK(reg.valueForTest("ccm_provider_contract_violations_total",
                         {"bad-existence", "invalid_output"}) == 2);

  // An emit of a kind the call does not return is refused and counted.
  auto wo = provider("wrong-output", reg);
  REQUIRE(wo->instanceExists(n.ref()).ok());
  CHECK(reg.valueForTest("ccm_provider_contract_violations_total", {"wrong-output", "unexpected_output"}) ==
        1);

  // A metric with a name the host refuses is ignored and counted.
  auto bm = provider("bad-metric", reg);
  REQUIRE(bm->instanceExists(n.ref()).ok());
  CHECK(reg.valueForTest("ccm_provider_contract_violations_total", {"bad-metric", "bad_metric"}) == 1);

  auto ns = provider("no-status", reg);
  st = ns->ensureLoadBalancer("kubernetes", svc.ref(), {});
  CHECK(st.status().code() == Code::Internal);
  CHECK(st.status().message().find("without a load balancer status") != std::string::npos);
  // "Exists" without a status is no answer either: an error and a counted violation.
  double before =
      reg.valueForTest("ccm_provider_contract_violations_total", {"no-status", "missing_output"});
  auto got = ns->getLoadBalancer("kubernetes", svc.ref());
  CHECK(got.status().code() == Code::Internal);
  CHECK_MESSAGE(got.status().message().find("from get_load_balancer with exists set but without "
                                            "a load balancer status") != std::string::npos,
                got.status().message());
  CHECK(reg.valueForTest("ccm_provider_contract_violations_total",
                         {"no-status", "missing_output"}) == before + 1);
}
