// Keystone and provider creation through the ABI: negotiation, every credential kind, catalog
// selection, token renewal before expiry, 401 -> re-authenticate and retry once, TLS,
// secrets, request IDs in logs, warnings for unknown keys, capabilities by configuration.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "test/plugins/openstack/test_support.hpp"

using namespace ccm::openstack::testing;

namespace {

struct Fixture : SimFixture {
  std::string conf(const std::string& global) {
    return "[Global]\nauth-url = " + sim.url() + "/identity/v3\nregion = RegionOne\n" + global;
  }

  // The JSON body of the last POST /v3/auth/tokens.
  rapidjson::Document lastAuthBody() {
    auto reqs = sim.requests();
    auto posts = matching(reqs, "POST", "identity", "auth/tokens");
    rapidjson::Document d;
    if (!posts.empty()) {
      d.CopyFrom((*posts.back())["body"], d.GetAllocator());
    }
    return d;
  }

  int authCount() { return sim.state()["auth_count"].GetInt(); }

  // Login attempts, refused ones included.
  size_t loginAttempts() {
    auto reqs = sim.requests();
    size_t n = 0;
    for (const auto& q : reqs["requests"].GetArray()) {
      if (std::string(q["method"].GetString()) == "POST" &&
          std::string(q["path"].GetString()).find("/auth/tokens") != std::string::npos) {
        ++n;
      }
    }
    return n;
  }
};

}  // namespace

TEST_CASE("negotiation: another ABI major is refused, naming both versions") {
  auto [status, message] = TestHost::negotiateWithMajor(2);
  CHECK(status == CCM_STATUS_FAILED_PRECONDITION);
  CHECK(message.find(std::to_string(CCM_ABI_MAJOR) + "." + std::to_string(CCM_ABI_MINOR)) !=
        std::string::npos);
  CHECK(message.find("2.0") != std::string::npos);
  const ccm_plugin& p = TestHost::instance().plugin();
  CHECK(std::string(p.name.data, p.name.size) == "openstack");
  CHECK(p.abi_major == 1u);
}

TEST_CASE_FIXTURE(Fixture, "create: no config is refused") {
  auto [r, p] = host.create("");
  CHECK(r.status == CCM_STATUS_INVALID_ARGUMENT);
  CHECK(r.error.find("auth-url") != std::string::npos);
  CHECK(p == nullptr);
}

TEST_CASE_FIXTURE(Fixture, "password auth: user and project by name, domain by name") {
  auto [r, p] =
      host.create(conf("username = demo\npassword = demo-password\n"
                       "user-domain-name = Default\ntenant-name = demo\n"
                       "tenant-domain-name = Default\n"));
  REQUIRE(r.ok());
  auto body = lastAuthBody();
  const auto& id = body["auth"]["identity"];
  CHECK(std::string(id["methods"][0].GetString()) == "password");
  CHECK(std::string(id["password"]["user"]["name"].GetString()) == "demo");
  CHECK(std::string(id["password"]["user"]["domain"]["name"].GetString()) == "Default");
  CHECK(std::string(body["auth"]["scope"]["project"]["name"].GetString()) == "demo");
  CHECK(std::string(body["auth"]["scope"]["project"]["domain"]["name"].GetString()) == "Default");
}

TEST_CASE_FIXTURE(Fixture, "password auth: user by ID, project by ID") {
  auto [r, p] =
      host.create(conf("user-id = u-demo\npassword = demo-password\ntenant-id = p-demo\n"));
  REQUIRE(r.ok());
  auto body = lastAuthBody();
  CHECK(std::string(body["auth"]["identity"]["password"]["user"]["id"].GetString()) == "u-demo");
  CHECK(!body["auth"]["identity"]["password"]["user"].HasMember("domain"));
  CHECK(std::string(body["auth"]["scope"]["project"]["id"].GetString()) == "p-demo");
}

TEST_CASE_FIXTURE(Fixture, "password auth: domain-id fills the user and project domains") {
  auto [r, p] =
      host.create(conf("username = demo\npassword = demo-password\ndomain-id = default\n"
                       "tenant-name = demo\n"));
  REQUIRE(r.ok());
  auto body = lastAuthBody();
  CHECK(std::string(body["auth"]["identity"]["password"]["user"]["domain"]["id"].GetString()) ==
        "default");
  CHECK(std::string(body["auth"]["scope"]["project"]["domain"]["id"].GetString()) == "default");
}

TEST_CASE_FIXTURE(Fixture, "application credential by ID: no scope") {
  auto [r, p] =
      host.create(conf("application-credential-id = ac-id\n"
                       "application-credential-secret = ac-secret-value\n"));
  REQUIRE(r.ok());
  auto body = lastAuthBody();
  const auto& id = body["auth"]["identity"];
  CHECK(std::string(id["methods"][0].GetString()) == "application_credential");
  CHECK(std::string(id["application_credential"]["id"].GetString()) == "ac-id");
  CHECK(!body["auth"].HasMember("scope"));
  auto secrets = host.secrets();
  CHECK(std::find(secrets.begin(), secrets.end(), "ac-secret-value") != secrets.end());
}

TEST_CASE_FIXTURE(Fixture, "application credential by name with its user") {
  auto [r, p] =
      host.create(conf("application-credential-name = ac-name\n"
                       "application-credential-secret = ac-secret-value\n"
                       "username = demo\nuser-domain-name = Default\n"));
  REQUIRE(r.ok());
  auto body = lastAuthBody();
  const auto& ac = body["auth"]["identity"]["application_credential"];
  CHECK(std::string(ac["name"].GetString()) == "ac-name");
  CHECK(std::string(ac["user"]["name"].GetString()) == "demo");
}

TEST_CASE_FIXTURE(Fixture, "trust auth: the trust is the scope") {
  auto [r, p] =
      host.create(conf("trust-id = trust-1\ntrustee-id = u-demo\n"
                       "trustee-password = demo-password\ntenant-id = p-demo\n"));
  REQUIRE(r.ok());
  auto body = lastAuthBody();
  CHECK(std::string(body["auth"]["scope"]["OS-TRUST:trust"]["id"].GetString()) == "trust-1");
  CHECK(!body["auth"]["scope"].HasMember("project"));
}

TEST_CASE_FIXTURE(Fixture, "a wrong password is UNAUTHENTICATED and never logged") {
  auto [r, p] =
      host.create(conf("username = demo\npassword = wrong-password-123\n"
                       "user-domain-name = Default\ntenant-id = p-demo\n"));
  CHECK(r.status == CCM_STATUS_UNAUTHENTICATED);
  CHECK(r.error.find("Keystone") != std::string::npos);
  CHECK(r.error.find("wrong-password-123") == std::string::npos);
  CHECK_FALSE(host.logged("wrong-password-123"));
  auto secrets = host.secrets();
  CHECK(std::find(secrets.begin(), secrets.end(), "wrong-password-123") != secrets.end());
}

TEST_CASE_FIXTURE(Fixture, "issued tokens are registered as secrets and never logged") {
  auto& p = provider(cloudConf(sim));
  sim.post("/_sim/revoke_tokens", "{}");
  std::string id =
      sim.addServer(R"({"name":"n1","networks":[{"network":"private","ip":"10.0.0.9"}]})");
  auto r = p.exists(node("n1", "openstack:///" + id));
  REQUIRE(r.ok());
  auto reqs = sim.requests();
  auto gets = matching(reqs, "GET", "compute");
  REQUIRE(!gets.empty());
  std::string token = str((*gets.back())["headers"], "x-auth-token");
  REQUIRE(!token.empty());
  auto secrets = host.secrets();
  CHECK(std::find(secrets.begin(), secrets.end(), token) != secrets.end());
  CHECK_FALSE(host.logged(token));
}

TEST_CASE_FIXTURE(Fixture, "versionless auth-url: the v3 endpoint is discovered") {
  auto [r, p] = host.create("[Global]\nauth-url = " + sim.url() +
                            "/identity\nregion = RegionOne\nuser-id = u-demo\n"
                            "password = demo-password\ntenant-id = p-demo\n");
  REQUIRE(r.ok());
  CHECK(countRequests(sim, "GET", "identity", "^/?$") == 1);
  CHECK(countRequests(sim, "POST", "identity", "^/v3/auth/tokens$") == 1);
}

TEST_CASE_FIXTURE(Fixture, "catalog: endpoints by type, interface and region") {
  auto [r, p] = host.create(cloudConf(sim, "region = RegionTwo\nos-endpoint-type = internal\n"));
  REQUIRE(r.ok());
  std::string id =
      sim.addServer(R"({"name":"n2","networks":[{"network":"private","ip":"10.0.0.8"}]})");
  sim.clearRequests();
  auto e = p->exists(node("n2", "openstack:///" + id));
  CHECK(e.ok());
  auto reqs = sim.requests();
  auto gets = matching(reqs, "GET", "compute");
  REQUIRE(gets.size() == 1);
  CHECK(str(*gets[0], "region") == "RegionTwo");
  CHECK(str(*gets[0], "interface") == "internal");
  CHECK(str(*gets[0], "path").find("/compute/v2.1/servers/") != std::string::npos);
}

TEST_CASE_FIXTURE(Fixture, "catalog: a region without endpoints is refused at create") {
  auto [r, p] = host.create(cloudConf(sim, "region = RegionThree\n"));
  CHECK(r.status == CCM_STATUS_NOT_FOUND);
  CHECK(r.error.find("compute") != std::string::npos);
  CHECK(r.error.find("RegionThree") != std::string::npos);
}

TEST_CASE_FIXTURE(Fixture, "token renewal: a token about to expire is renewed before use") {
  auto [r, p] = host.create(cloudConf(sim));
  REQUIRE(r.ok());
  std::string id =
      sim.addServer(R"({"name":"n3","networks":[{"network":"private","ip":"10.0.0.7"}]})");
  int before = authCount();
  CHECK(p->exists(node("n3", "openstack:///" + id)).ok());
  CHECK(authCount() == before);  // still fresh
  // 55 minutes later (the token lives an hour): renewed first, so Nova never sees a 401.
  host.advanceUnix(std::chrono::minutes(55));
  sim.clearRequests();
  auto e = p->exists(node("n3", "openstack:///" + id));
  host.advanceUnix(-std::chrono::minutes(55));
  CHECK(e.ok());
  CHECK(authCount() == before + 1);
  auto reqs = sim.requests();
  for (const auto& q : reqs["requests"].GetArray()) {
    CHECK(q["status"].GetInt() != 401);
  }
}

TEST_CASE_FIXTURE(Fixture, "401: re-authenticate once and retry the request") {
  auto [r, p] = host.create(cloudConf(sim));
  REQUIRE(r.ok());
  std::string id =
      sim.addServer(R"({"name":"n4","networks":[{"network":"private","ip":"10.0.0.6"}]})");
  sim.post("/_sim/expire_tokens", "{}");
  int before = authCount();
  sim.clearRequests();
  auto e = p->exists(node("n4", "openstack:///" + id));
  CHECK(e.ok());
  CHECK(e.existence == CCM_EXISTENCE_EXISTS);
  CHECK(authCount() == before + 1);
  auto doc = sim.requests();
  auto reqs = doc["requests"].GetArray();
  REQUIRE(reqs.Size() == 3);
  CHECK(reqs[0]["status"].GetInt() == 401);
  CHECK(std::string(reqs[1]["service"].GetString()) == "identity");
  CHECK(reqs[2]["status"].GetInt() == 200);
}

TEST_CASE_FIXTURE(Fixture, "401 twice: UNAUTHENTICATED after one retry") {
  auto [r, p] = host.create(cloudConf(sim));
  REQUIRE(r.ok());
  sim.fault(R"({"path":"/compute/v2.1/servers/","status":401,"count":5,
               "body":{"error":{"code":401,"message":"nope"}}})");
  sim.clearRequests();
  auto e = p->exists(node("n5", "openstack:///abc"));
  CHECK(e.status == CCM_STATUS_UNAUTHENTICATED);
  CHECK(e.existence == CCM_EXISTENCE_UNKNOWN);
  CHECK(e.error.find("after re-authentication") != std::string::npos);
  auto reqs = sim.requests();
  size_t compute = 0;
  for (const auto& q : reqs["requests"].GetArray()) {
    if (std::string(q["service"].GetString()) == "compute") {
      ++compute;
    }
  }
  CHECK(compute == 2);
}

TEST_CASE_FIXTURE(Fixture, "concurrent 401s cause a single re-authentication") {
  auto [r, p] = host.create(cloudConf(sim));
  REQUIRE(r.ok());
  std::string id =
      sim.addServer(R"({"name":"n6","networks":[{"network":"private","ip":"10.0.0.5"}]})");
  sim.post("/_sim/revoke_tokens", "{}");
  int before = authCount();
  std::atomic<int> ok{0};
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, prov = p.get()] {
      if (prov->exists(node("n6", "openstack:///" + id)).ok()) {
        ++ok;
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  CHECK(ok.load() == kThreads);
  CHECK(authCount() == before + 1);
}

TEST_CASE_FIXTURE(Fixture, "errors are logged with the service's request ID") {
  auto [r, p] = host.create(cloudConf(sim));
  REQUIRE(r.ok());
  sim.fault(R"({"path":"/compute/v2.1/servers/","status":503,"count":1,
               "headers":{"Retry-After":"7"}})");
  auto e = p->exists(node("n7", "openstack:///abc"));
  CHECK(e.status == CCM_STATUS_UNAVAILABLE);
  CHECK(e.retry_after_ms == 7000);
  bool found = false;
  for (const auto& l : host.logs()) {
    if (l.level == CCM_LOG_WARNING && logField(l, "request_id").rfind("req-", 0) == 0 &&
        logField(l, "status") == "503") {
      found = true;
    }
  }
  CHECK(found);
  CHECK(host.metric("openstack_api_request_errors_total") > 0);
}

TEST_CASE_FIXTURE(Fixture, "requests carry a User-Agent naming the provider") {
  auto [r, p] = host.create(cloudConf(sim));
  REQUIRE(r.ok());
  auto reqs = sim.requests();
  auto posts = matching(reqs, "POST", "identity");
  REQUIRE(!posts.empty());
  CHECK(str((*posts[0])["headers"], "user-agent").find("ccm-openstack/") == 0);
}

TEST_CASE_FIXTURE(Fixture, "create: unknown keys are warned about through the host log") {
  auto [r, p] = host.create(cloudConf(sim, "no-such-key = 1\n",
                                      "[BlockStorage]\nbs-version = v3\n"
                                      "[Mystery]\nx = y\n"));
  REQUIRE(r.ok());
  bool key = false;
  bool section = false;
  bool block_storage = false;
  for (const auto& l : host.logs()) {
    if (l.level != CCM_LOG_WARNING) {
      continue;
    }
    key = key || l.message.find("[Global] no-such-key") != std::string::npos;
    section = section || l.message.find("[mystery]") != std::string::npos;
    block_storage = block_storage || l.message.find("blockstorage") != std::string::npos;
  }
  CHECK(key);
  CHECK(section);
  CHECK_FALSE(block_storage);  // shared with the Cinder CSI plugin: not noise
}

TEST_CASE_FIXTURE(Fixture, "create: a bad value is refused naming section and key") {
  auto [r, p] = host.create(cloudConf(sim, "", "[LoadBalancer]\nmonitor-delay = 5\n"));
  CHECK(r.status == CCM_STATUS_INVALID_ARGUMENT);
  CHECK(r.error.find("[LoadBalancer] monitor-delay") != std::string::npos);
}

TEST_CASE_FIXTURE(Fixture, "create: a cloud that never answers ends at the start-up deadline") {
  // A socket that listens but never accepts: the connection completes in its backlog and no
  // answer ever comes, as from a cloud behind a black-holing firewall.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  REQUIRE(::listen(fd, 16) == 0);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  std::string silent = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/identity/v3";

  std::string conf = "[Global]\nauth-url = " + silent +
                     "\nusername = demo\npassword = demo-password\n"
                     "user-domain-name = Default\ntenant-id = p-demo\nregion = RegionOne\n"
                     "[Metadata]\nrequest-timeout = 10m\n";

  // The host stopped while the provider started: the login is not even tried (a create that
  // never asked the host would wait out its own request timeout instead).
  host.fake().cancelCalls(true);
  auto [cancelled, p1] = host.create(conf);
  host.fake().cancelCalls(false);
  CHECK(cancelled.status == CCM_STATUS_CANCELLED);

  // The host gives create a start-up deadline (--provider-start-timeout); the request timeout
  // is ten minutes, so only the call's deadline can end the login this soon.
  auto [late, p2] = host.create(conf, std::chrono::milliseconds(800));
  ::close(fd);
  CHECK(late.status == CCM_STATUS_DEADLINE_EXCEEDED);
}

TEST_CASE_FIXTURE(Fixture, "capabilities follow the configuration and the cloud") {
  {
    auto [r, p] = host.create(cloudConf(sim));
    REQUIRE(r.ok());
    CHECK(p->has(CCM_CAP_INSTANCES));
    CHECK(p->has(CCM_CAP_INSTANCES_BATCH));
    CHECK(p->has(CCM_CAP_LOADBALANCER));
    CHECK_FALSE(p->has(CCM_CAP_ROUTES));  // no router-id
    CHECK_FALSE(p->has("ccm.instances/2"));
  }
  {
    auto [r, p] = host.create(cloudConf(sim, "",
                                        "[LoadBalancer]\nenabled = false\n"
                                        "[Route]\nrouter-id = router-1\n"));
    REQUIRE(r.ok());
    CHECK_FALSE(p->has(CCM_CAP_LOADBALANCER));
    CHECK(p->has(CCM_CAP_ROUTES));
  }
  {
    sim.config(R"({"neutron_extensions":["allowed-address-pairs"]})");
    auto [r, p] = host.create(cloudConf(sim, "", "[Route]\nrouter-id = router-1\n"));
    REQUIRE(r.ok());
    CHECK_FALSE(p->has(CCM_CAP_ROUTES));  // Neutron cannot do extra routes
  }
}

TEST_CASE("TLS: the CA file is used; without it the certificate is refused") {
  SimProcess tls(true);
  TestHost& host = TestHost::instance();
  std::string base = "[Global]\nauth-url = " + tls.url() +
                     "/identity/v3\nregion = RegionOne\nuser-id = u-demo\n"
                     "password = demo-password\ntenant-id = p-demo\n";
  {
    auto [r, p] = host.create(base + "ca-file = " + tls.caFile() + "\n");
    CHECK(r.ok());
    if (p) {
      std::string id =
          tls.addServer(R"({"name":"t1","networks":[{"network":"private","ip":"10.0.0.4"}]})");
      CHECK(p->exists(node("t1", "openstack:///" + id)).existence == CCM_EXISTENCE_EXISTS);
    }
  }
  {
    auto [r, p] = host.create(base);
    CHECK(r.status == CCM_STATUS_UNAVAILABLE);
    CHECK(p == nullptr);
  }
  {
    auto [r, p] = host.create(base + "tls-insecure = true\n");
    CHECK(r.ok());
  }
}

TEST_CASE_FIXTURE(Fixture, "a refused password is backed off: no lockout (fault 5)") {
  // Keystone locks the user after 3 failed logins in a row. The password is rotated away
  // under a running provider: however many calls come, it must not try 3 logins in a row
  // within the back-off, and it logs in again once the password is right and the delay over.
  auto [r, p] = host.create(cloudConf(sim));
  REQUIRE(r.ok());
  std::string id =
      sim.addServer(R"({"name":"n9","networks":[{"network":"private","ip":"10.0.0.9"}]})");
  sim.config(R"({"keystone_lockout_after":3})");
  sim.post("/_sim/set_user", R"({"id":"u-demo","password":"rotated-away"})");
  sim.post("/_sim/revoke_tokens", "{}");
  sim.clearRequests();
  CallResult last;
  for (int i = 0; i < 20; ++i) {
    last = p->exists(node("n9", "openstack:///" + id));
    CHECK(last.status == CCM_STATUS_UNAUTHENTICATED);
  }
  CHECK(loginAttempts() == 1);
  CHECK(last.error.find("not logging in to Keystone again") != std::string::npos);
  CHECK(last.retry_after_ms >= 1000);
  // The window passes (the delay is at most 10 minutes): one more try, still refused.
  host.advanceUnix(std::chrono::minutes(11));
  CHECK(p->exists(node("n9", "openstack:///" + id)).status == CCM_STATUS_UNAUTHENTICATED);
  CHECK(p->exists(node("n9", "openstack:///" + id)).status == CCM_STATUS_UNAUTHENTICATED);
  CHECK(loginAttempts() == 2);
  CHECK(sim.state()["login_failures"]["u-demo"].GetInt() == 2);
  // The password is right again (the Secret was fixed): after the delay the provider is back.
  sim.post("/_sim/set_user", R"({"id":"u-demo","password":"demo-password"})");
  host.advanceUnix(std::chrono::minutes(11));
  auto ok = p->exists(node("n9", "openstack:///" + id));
  CHECK_MESSAGE(ok.ok(), ok.error);
  CHECK(ok.existence == CCM_EXISTENCE_EXISTS);
}

TEST_CASE_FIXTURE(Fixture, "new credentials are tried at once, not after the old ones' back-off") {
  auto [r, p] = host.create(cloudConf(sim));
  REQUIRE(r.ok());
  std::string id =
      sim.addServer(R"({"name":"n8","networks":[{"network":"private","ip":"10.0.0.8"}]})");
  // The password is changed in Keystone; the running provider's logins are refused and it
  // backs off (up to minutes).
  sim.post("/_sim/set_user", R"({"id":"u-demo","password":"new-password"})");
  sim.post("/_sim/revoke_tokens", "{}");
  CHECK(p->exists(node("n8", "openstack:///" + id)).status == CCM_STATUS_UNAUTHENTICATED);
  CHECK(p->exists(node("n8", "openstack:///" + id)).error.find("not logging in") !=
        std::string::npos);
  // A wrong new password is refused and the old back-off stays.
  std::string wrong = cloudConf(sim);
  wrong.replace(wrong.find("demo-password"), 13, "still-wrong");
  CHECK(p->reconfigure(wrong).status != CCM_STATUS_OK);
  CHECK(p->exists(node("n8", "openstack:///" + id)).error.find("not logging in") !=
        std::string::npos);
  // The Secret is fixed: the reconfigure logs in with it at once, and calls work again
  // without waiting out the old credentials' delay.
  std::string fixed = cloudConf(sim);
  fixed.replace(fixed.find("demo-password"), 13, "new-password");
  auto rc = p->reconfigure(fixed);
  CHECK_MESSAGE(rc.ok(), rc.error);
  auto e = p->exists(node("n8", "openstack:///" + id));
  CHECK_MESSAGE(e.ok(), e.error);
  CHECK(e.existence == CCM_EXISTENCE_EXISTS);
}

TEST_CASE_FIXTURE(Fixture, "a locked account's answer is passed on") {
  sim.config(R"({"keystone_lockout_after":1})");
  sim.post("/_sim/set_user", R"({"id":"u-demo","password":"rotated-away"})");
  auto [bad, none] = host.create(cloudConf(sim));
  CHECK(bad.status == CCM_STATUS_UNAUTHENTICATED);
  // The right password again, but Keystone locked the user after that one failure.
  sim.post("/_sim/set_user", R"({"id":"u-demo","password":"demo-password","keep_failures":true})");
  auto [locked, none2] = host.create(cloudConf(sim));
  CHECK(locked.status == CCM_STATUS_UNAUTHENTICATED);
  CHECK(locked.error.find("The account is locked for user: u-demo.") != std::string::npos);
}

TEST_CASE_FIXTURE(Fixture, "a wrong project name is reported as such, not as refused credentials") {
  auto [r, p] =
      host.create(conf("username = demo\npassword = demo-password\n"
                       "user-domain-name = Default\ntenant-name = no-such-project\n"
                       "tenant-domain-name = Default\n"));
  CHECK(r.status == CCM_STATUS_PERMISSION_DENIED);
  CHECK(r.error.find("project \"no-such-project\" (tenant-name)") != std::string::npos);
  CHECK(r.error.find("refused the credentials") == std::string::npos);
  // A wrong password stays a credentials error.
  auto [w, q] =
      host.create(conf("username = demo\npassword = not-it\n"
                       "user-domain-name = Default\ntenant-name = demo\n"
                       "tenant-domain-name = Default\n"));
  CHECK(w.status == CCM_STATUS_UNAUTHENTICATED);
  CHECK(w.error.find("refused the credentials") != std::string::npos);
}

TEST_CASE_FIXTURE(Fixture,
                  "404 answers are logged at debug level with method, path and request ID") {
  auto& p = provider(cloudConf(sim));
  host.clearLogs();
  auto e = p.exists(node("gone", "openstack:///no-such-server"));
  CHECK(e.ok());
  CHECK(e.existence == CCM_EXISTENCE_NOT_FOUND);
  bool found = false;
  for (const auto& l : host.logs()) {
    if (l.level == CCM_LOG_DEBUG && logField(l, "status") == "404" &&
        logField(l, "method") == "GET" &&
        logField(l, "path") == "/RegionOne/public/compute/v2.1/servers/no-such-server" &&
        logField(l, "request_id").rfind("req-", 0) == 0) {
      found = true;
    }
    CHECK_FALSE((l.level == CCM_LOG_WARNING && (l.message.find("404") != std::string::npos ||
                                                logField(l, "status") == "404")));
  }
  CHECK(found);
}

TEST_CASE_FIXTURE(Fixture,
                  "create (and --check-config): configured IDs must exist for the project") {
  sim.post("/_sim/add", R"({"kind":"subnets","object":{"id":"sub-other-project",
    "network_id":"net-private","cidr":"10.9.0.0/24","hidden":true}})");
  auto [r, p] = host.create(cloudConf(sim, "",
                                      "[Route]\nrouter-id = no-such-router\n"
                                      "[LoadBalancer]\nsubnet-id = sub-other-project\n"
                                      "floating-network-id = net-public\n"
                                      "network-id = net-missing\n"));
  CHECK(r.status == CCM_STATUS_INVALID_ARGUMENT);
  CHECK(p == nullptr);
  CHECK(r.error.find("[Route] router-id = \"no-such-router\": no router") != std::string::npos);
  CHECK(r.error.find("[LoadBalancer] subnet-id = \"sub-other-project\": no subnet") !=
        std::string::npos);
  CHECK(r.error.find("[LoadBalancer] network-id = \"net-missing\": no network") !=
        std::string::npos);
  CHECK(r.error.find("floating-network-id") == std::string::npos);  // that one exists
  // A named pair, not a structured binding: clang 14 (the sanitizer build) cannot capture a
  // binding in the lambda doctest's message makes.
  auto made = host.create(cloudConf(sim, "",
                                         "[Route]\nrouter-id = router-1\n"
                                         "[LoadBalancer]\nsubnet-id = sub-private\n"
                                         "floating-network-id = net-public\n"));
  CHECK_MESSAGE(made.first.ok(), made.first.error);
}
