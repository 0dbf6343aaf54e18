// Unit tests: health check registration, endpoint membership and the Kubernetes-style
// aggregated answers; process metrics and ccm_build_info; options mapping; target parsing.
#include "host/server/configz.hpp"
#include "host/server/health_checks.hpp"

#include <doctest/doctest.h>
#include <rapidjson/document.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <ctime>

#include "ccm/provider_abi.h"
#include "host/server/build_info.hpp"
#include "host/server/process_metrics.hpp"
#include "host/server/secure_server.hpp"
#include "host/server/server_options.hpp"

namespace ccm::server {

TEST_CASE("ping is always there and passing") {
  HealthChecks h;
  for (auto e : {HealthEndpoint::Healthz, HealthEndpoint::Livez, HealthEndpoint::Readyz}) {
    CHECK(h.names(e) == std::vector<std::string>{"ping"});
    auto a = h.evaluate(e, false);
    CHECK(a.http_status == 200);
    CHECK(a.body == "ok");
  }
  CHECK_FALSE(h.remove("ping"));
  CHECK(h.evaluate(HealthEndpoint::Readyz, true).body == "[+]ping ok\nreadyz check passed\n");
}

TEST_CASE("registration rules") {
  HealthChecks h;
  CHECK(h.add(
             "leaderElection", [] { return okStatus(); }, Probes::liveness())
            .ok());
  CHECK(h.add("leaderElection", [] { return okStatus(); }).code() == Code::AlreadyExists);
  CHECK(h.add("ping", [] { return okStatus(); }).code() == Code::AlreadyExists);
  CHECK(h.add("", [] { return okStatus(); }).code() == Code::InvalidArgument);
  CHECK(h.add("a/b", [] { return okStatus(); }).code() == Code::InvalidArgument);
  CHECK(h.add("a,b", [] { return okStatus(); }).code() == Code::InvalidArgument);
  CHECK(h.add("a b", [] { return okStatus(); }).code() == Code::InvalidArgument);
  CHECK(h.add("none", HealthCheck()).code() == Code::InvalidArgument);
  CHECK(h.add(
             "cloud-node-controller", [] { return okStatus(); }, Probes::readiness())
            .ok());
  CHECK(h.names(HealthEndpoint::Healthz) ==
        std::vector<std::string>{"ping", "leaderElection", "cloud-node-controller"});
  CHECK(h.names(HealthEndpoint::Livez) == std::vector<std::string>{"ping", "leaderElection"});
  CHECK(h.names(HealthEndpoint::Readyz) ==
        std::vector<std::string>{"ping", "cloud-node-controller"});
  CHECK(h.remove("leaderElection"));
  CHECK_FALSE(h.remove("leaderElection"));
  CHECK(h.names(HealthEndpoint::Livez) == std::vector<std::string>{"ping"});
}

TEST_CASE("aggregation: failures are listed without their reasons") {
  HealthChecks h;
  std::atomic<bool> leader_ok{true};
  REQUIRE(h.add(
               "leaderElection",
               [&] {
                 return leader_ok ? okStatus()
                                  : Status(Code::Unavailable, "lease not renewed for 47s");
               },
               Probes::liveness())
              .ok());
  REQUIRE(h.add(
               "informers", [] { return Status(Code::Unavailable, "nodes not synced"); },
               Probes{false, false, true})
              .ok());

  auto healthz = h.evaluate(HealthEndpoint::Healthz, false);
  CHECK(healthz.http_status == 200);
  CHECK(healthz.body == "ok");

  auto readyz = h.evaluate(HealthEndpoint::Readyz, false);
  CHECK(readyz.http_status == 500);
  CHECK(readyz.body == "[+]ping ok\n[-]informers failed: reason withheld\nreadyz check failed\n");
  CHECK(readyz.body.find("not synced") == std::string::npos);

  leader_ok = false;
  auto livez = h.evaluate(HealthEndpoint::Livez, false);
  CHECK(livez.http_status == 500);
  CHECK(livez.body ==
        "[+]ping ok\n[-]leaderElection failed: reason withheld\nlivez check failed\n");

  auto excluded = h.evaluate(HealthEndpoint::Livez, false, {"leaderElection"});
  CHECK(excluded.http_status == 200);
  CHECK(excluded.body == "ok");
  auto excluded_verbose = h.evaluate(HealthEndpoint::Livez, true, {"leaderElection", "nope"});
  CHECK(excluded_verbose.http_status == 200);
  CHECK(excluded_verbose.body ==
        "[+]ping ok\n[+]leaderElection excluded: ok\n"
        "warn: some health checks cannot be excluded: no matches for \"nope\"\n"
        "livez check passed\n");

  auto one = h.evaluateOne(HealthEndpoint::Livez, "leaderElection");
  CHECK(one.http_status == 500);
  CHECK(one.body.find("lease not renewed for 47s") != std::string::npos);
  CHECK(h.evaluateOne(HealthEndpoint::Livez, "ping").body == "ok");
  CHECK(h.evaluateOne(HealthEndpoint::Livez, "informers").http_status == 404);  // not a member
  CHECK(h.evaluateOne(HealthEndpoint::Healthz, "nope").http_status == 404);
}

TEST_CASE("process metrics are read at update()") {
  metrics::Registry r;
  ProcessMetrics p(r);
  CHECK(r.valueForTest("process_resident_memory_bytes") > 1e5);
  CHECK(r.valueForTest("process_virtual_memory_bytes") >=
        r.valueForTest("process_resident_memory_bytes"));
  double start = r.valueForTest("process_start_time_seconds");
  double now = static_cast<double>(std::time(nullptr));
  CHECK(start > now - 3600);
  CHECK(start <= now + 1);
  CHECK(r.valueForTest("process_max_fds") > 0);

  double fds = r.valueForTest("process_open_fds");
  CHECK(fds >= 3);
  int extra[3];
  for (int& fd : extra)
    fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  p.update();
  CHECK(r.valueForTest("process_open_fds") == fds + 3);
  for (int fd : extra)
    ::close(fd);

  double cpu = r.valueForTest("process_cpu_seconds_total");
  volatile double sink = 0;
  for (int i = 0; i < 20'000'000; ++i)
    sink = sink + i * 0.5;  // burn a little CPU
  p.update();
  CHECK(r.valueForTest("process_cpu_seconds_total") > cpu);
  std::string text = r.exposition();
  CHECK(text.find("# TYPE process_cpu_seconds_total counter") != std::string::npos);
  CHECK(text.find("# TYPE process_open_fds gauge") != std::string::npos);
}

TEST_CASE("a taken metric name does not break the process metrics") {
  metrics::Registry r;
  REQUIRE(r.counter("process_open_fds", "someone else's") != nullptr);
  ProcessMetrics p(r);
  p.update();
  CHECK(r.valueForTest("process_resident_memory_bytes") > 0);
}

// `git rev-parse HEAD` in the source tree, or "unknown" when that is not a git checkout.
std::string gitHead() {
  std::string out;
  FILE* p = popen("git -C '" CCM_SOURCE_DIR "' rev-parse HEAD 2>/dev/null", "r");
  if (p == nullptr) {
    return "unknown";
  }
  char buf[128];
  while (fgets(buf, sizeof buf, p) != nullptr) {
    out += buf;
  }
  bool ok = pclose(p) == 0;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) {
    out.pop_back();
  }
  return ok && out.size() == 40 ? out : "unknown";
}

TEST_CASE("ccm_build_info") {
  const std::string abi = std::to_string(CCM_ABI_MAJOR) + "." + std::to_string(CCM_ABI_MINOR);
  metrics::Registry r;
  BuildInfo b = BuildInfo::current();
  CHECK(b.version == "0.1.0");  // meson's project version
  CHECK(b.provider_abi == abi);
  // The commit the tree was at when built ("unknown" outside a git checkout): git asked now
  // must agree (./dev test builds before it tests).
  CHECK(b.git_commit == gitHead());
  CHECK(b.platform.rfind("linux/", 0) == 0);
  CHECK_FALSE(b.compiler.empty());
  b.version = "1.12.3-rc.1";
  b.git_commit = "";
  registerBuildInfo(r, b);
  std::string text = r.exposition();
  CHECK(text.find("# TYPE ccm_build_info gauge") != std::string::npos);
  CHECK(text.find("ccm_build_info{version=\"1.12.3-rc.1\",major=\"1\",minor=\"12\","
                  "git_commit=\"unknown\",provider_abi=\"" + abi + "\",compiler=\"") !=
        std::string::npos);
  CHECK(r.valueForTest("ccm_build_info",
                       {"1.12.3-rc.1", "1", "12", "unknown", abi, b.compiler, b.platform}) == 1);
}

TEST_CASE("serverOptionsFrom maps the flags") {
  options::Options o;
  o.bind_address = "127.0.0.2";
  o.secure_port = 1234;
  o.cert_dir = "/var/run/certs";
  o.tls_cert_file = "/c.crt";
  o.tls_private_key_file = "/c.key";
  o.permit_port_sharing = true;
  o.authorization_always_allow_paths = {"/healthz", "", "/metrics"};
  o.authentication_token_webhook_cache_ttl = std::chrono::milliseconds(1000);
  o.authorization_webhook_cache_authorized_ttl = std::chrono::milliseconds(2000);
  o.authorization_webhook_cache_unauthorized_ttl = std::chrono::milliseconds(3000);
  ServerOptions s = serverOptionsFrom(o);
  CHECK(s.bind_address == "127.0.0.2");
  CHECK(s.secure_port == 1234);
  CHECK_FALSE(s.pick_free_port);
  CHECK(s.reuse_port);
  CHECK(s.cert_dir == "/var/run/certs");
  CHECK(s.tls_cert_file == "/c.crt");
  CHECK(s.tls_private_key_file == "/c.key");
  CHECK(s.always_allow_paths == std::vector<std::string>{"/healthz", "/metrics"});
  CHECK(s.token_cache_ttl == std::chrono::milliseconds(1000));
  CHECK(s.authorized_cache_ttl == std::chrono::milliseconds(2000));
  CHECK(s.unauthorized_cache_ttl == std::chrono::milliseconds(3000));

  auto flags = options::makeFlagSet(o, "/usr/lib/ccm/providers", "a, b");
  const char* argv[] = {"cloud-controller-manager"};
  REQUIRE(flags->parse(1, argv).ok());
  ServerOptions d = serverOptionsFrom(o);
  CHECK(d.bind_address == "0.0.0.0");
  CHECK(d.secure_port == 10258);
  CHECK(d.always_allow_paths == std::vector<std::string>{"/healthz", "/readyz", "/livez"});
  CHECK(d.token_cache_ttl == std::chrono::seconds(10));
  CHECK(d.authorized_cache_ttl == std::chrono::seconds(10));
  CHECK(d.unauthorized_cache_ttl == std::chrono::seconds(10));

  const char* cleared[] = {"cloud-controller-manager", "--authorization-always-allow-paths="};
  REQUIRE(flags->parse(2, cleared).ok());
  CHECK(serverOptionsFrom(o).always_allow_paths.empty());
}

TEST_CASE("serverOptionsFrom maps the client-certificate and request-header flags") {
  options::Options o;
  auto flags = options::makeFlagSet(o, "/usr/lib/ccm/providers", "a, b");
  const char* argv[] = {"cloud-controller-manager", "--client-ca-file=/pki/ca.crt",
                        "--requestheader-client-ca-file=/pki/front-proxy-ca.crt",
                        "--requestheader-allowed-names=front-proxy-client",
                        "--requestheader-username-headers=X-Remote-User",
                        "--requestheader-extra-headers-prefix=X-Remote-Extra-,X-Other-"};
  REQUIRE(flags->parse(6, argv).ok());
  ServerOptions s = serverOptionsFrom(o);
  CHECK(s.client_ca_file == "/pki/ca.crt");
  CHECK(s.request_header.client_ca_file == "/pki/front-proxy-ca.crt");
  CHECK(s.request_header.allowed_names == std::vector<std::string>{"front-proxy-client"});
  CHECK(s.request_header.username_headers == std::vector<std::string>{"X-Remote-User"});
  CHECK(s.request_header.group_headers == std::vector<std::string>{"x-remote-group"});
  CHECK(s.request_header.extra_headers_prefixes ==
        std::vector<std::string>{"X-Remote-Extra-", "X-Other-"});
}

TEST_CASE("/configz: upstream's name and the component configuration's shape") {
  options::Options o;
  auto flags = options::makeFlagSet(o, "/usr/lib/ccm/providers", "a, b");
  const char* argv[] = {"cloud-controller-manager", "--cloud-provider=openstack",
                        "--cloud-config=/etc/config/cloud.conf", "--cluster-name=prod",
                        "--controllers=cloud-node,service", "--kube-api-qps=7.5",
                        "--leader-elect-lease-duration=30s", "--node-status-update-frequency=10m"};
  REQUIRE(flags->parse(8, argv).ok());
  std::string json = configzJson(o);
  rapidjson::Document d;
  d.Parse(json.c_str());
  REQUIRE_FALSE(d.HasParseError());
  REQUIRE(d.IsObject());
  CHECK(d.MemberCount() == 1);
  REQUIRE(d.HasMember("cloudcontrollermanager.config.k8s.io"));
  const auto& c = d["cloudcontrollermanager.config.k8s.io"];
  for (const char* k : {"Generic", "KubeCloudShared", "NodeController", "ServiceController",
                        "NodeStatusUpdateFrequency", "Webhook"}) {
    CHECK_MESSAGE(c.HasMember(k), k);
  }
  CHECK(std::string(c["KubeCloudShared"]["CloudProvider"]["Name"].GetString()) == "openstack");
  CHECK(std::string(c["KubeCloudShared"]["CloudProvider"]["CloudConfigFile"].GetString()) ==
        "/etc/config/cloud.conf");
  CHECK(std::string(c["KubeCloudShared"]["ClusterName"].GetString()) == "prod");
  CHECK(std::string(c["KubeCloudShared"]["RouteReconciliationPeriod"].GetString()) == "10s");
  CHECK(std::string(c["Generic"]["LeaderElection"]["LeaseDuration"].GetString()) == "30s");
  CHECK(std::string(c["Generic"]["MinResyncPeriod"].GetString()) == "12h0m0s");
  CHECK(c["Generic"]["ClientConnection"]["QPS"].GetDouble() == 7.5);
  CHECK(c["Generic"]["ClientConnection"]["Burst"].GetInt() == 30);
  REQUIRE(c["Generic"]["Controllers"].IsArray());
  CHECK(c["Generic"]["Controllers"].Size() == 2);
  CHECK(std::string(c["NodeStatusUpdateFrequency"].GetString()) == "10m0s");
  CHECK(c["ServiceController"]["ConcurrentServiceSyncs"].GetInt() == 10);
  CHECK(c["Webhook"]["Webhooks"].IsNull());
  CHECK(serverOptionsFrom(o).configz == json);
}

TEST_CASE("request targets and queries") {
  std::string path;
  std::string query;
  REQUIRE(splitTarget("/healthz?verbose&exclude=a", &path, &query));
  CHECK(path == "/healthz");
  CHECK(query == "verbose&exclude=a");
  REQUIRE(splitTarget("/health%7A", &path, &query));
  CHECK(path == "/healthz");
  CHECK(query.empty());
  CHECK_FALSE(splitTarget("http://host/metrics", &path, &query));
  CHECK_FALSE(splitTarget("*", &path, &query));
  CHECK_FALSE(splitTarget("", &path, &query));
  CHECK_FALSE(splitTarget("/bad%zz", &path, &query));
  CHECK_FALSE(splitTarget("/bad%2", &path, &query));
  CHECK_FALSE(splitTarget("/nul%00", &path, &query));

  bool present = false;
  CHECK(queryValues("verbose&exclude=a&exclude=b%20c&x=1", "exclude", &present) ==
        std::vector<std::string>{"a", "b c"});
  CHECK(present);
  CHECK(queryValues("verbose&x=1", "verbose", &present).empty());
  CHECK(present);
  CHECK(queryValues("verbose=1", "verbose", &present) == std::vector<std::string>{"1"});
  queryValues("verbosely", "verbose", &present);
  CHECK_FALSE(present);
  CHECK(queryValues("exclude=a+b", "exclude") == std::vector<std::string>{"a b"});
}

}  // namespace ccm::server
