// IsolatedProvider (--provider-isolation=process) against real child processes: the host
// binary re-executed with a conformance kit plugin. Covers the supervisor's races (a stop
// while a child is being spawned, a stop before the first start), a child that stops taking
// frames, the child's socket not leaking into the plugin's own children, the metrics of
// several children all reaching the host's registry, the host's cancelAll reaching a call
// running in the child, and counters that do not go backwards when a child is restarted.
//
// No assertion depends on timing: every wait is bounded only to turn a hang into a failure.
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "host/plugin/isolation/child.hpp"
#include "host/plugin/isolation/isolated_provider.hpp"

using namespace ccm;
using namespace ccm::plugin;
using namespace ccm::plugin::isolation;
using namespace std::chrono_literals;

namespace {

// A hang is a failure, not a wait for ever (generous: CI runs this under ASan).
constexpr auto kHangBound = 120s;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  REQUIRE_MESSAGE(v != nullptr, name, " is not set (run through meson test)");
  return v;
}

IsolationOptions isolationFor(const std::string& plugin) {
  IsolationOptions iso;
  iso.executable = env("CCM_BINARY");
  iso.argv = {iso.executable, "--cloud-provider-plugin-dir=" + env("CCM_CONFORMANCE_DIR"),
              "--cloud-provider=" + plugin};
  iso.first_backoff = 1ms;
  iso.max_backoff = 1ms;
  return iso;
}

// Runs f on a thread; true when it ended within kHangBound. A thread that hangs is left
// behind (the test has failed; the process ends after the suite).
bool endsInTime(std::function<void()> f) {
  auto done = std::make_shared<std::promise<void>>();
  auto ended = done->get_future();
  std::thread([f = std::move(f), done] {
    f();
    done->set_value();
  }).detach();
  return ended.wait_for(kHangBound) == std::future_status::ready;
}

// Records each spawned child's pid.
struct Spawned {
  std::mutex mu;
  std::vector<pid_t> pids;
  void add(pid_t pid) {
    std::lock_guard lock(mu);
    pids.push_back(pid);
  }
  pid_t first() {
    std::lock_guard lock(mu);
    return pids.empty() ? -1 : pids.front();
  }
};

std::unique_ptr<IsolatedProvider> startOk(IsolationOptions iso, ProviderOptions options) {
  auto started = IsolatedProvider::start(std::move(iso), std::move(options), "", "");
  if (auto* failed = std::get_if<StartFailure>(&started)) {
    FAIL("the provider process did not start: ", failed->status.message());
  }
  return std::move(std::get<0>(started));
}

NodeRef node() {
  NodeRef n;
  n.name = "node-1";
  n.uid = "uid-1";
  return n;
}

}  // namespace

TEST_CASE("a stop requested before the first start ends the start as cancelled") {
  std::stop_source stop;
  stop.request_stop();
  ProviderOptions options;
  options.stop = stop.get_token();
  std::variant<std::unique_ptr<IsolatedProvider>, StartFailure> started;
  REQUIRE(endsInTime([&] {
    started = IsolatedProvider::start(isolationFor("baseline"), options, "", "");
  }));
  auto* failed = std::get_if<StartFailure>(&started);
  REQUIRE(failed != nullptr);
  CHECK(failed->status.code() == Code::Cancelled);
}

TEST_CASE("a stop while a restarted child is being spawned still stops that child") {
  Spawned spawned;
  std::promise<void> in_window;
  std::atomic<IsolatedProvider*> provider_ptr{nullptr};
  std::atomic<int> spawns{0};
  IsolationOptions iso = isolationFor("baseline");
  // The second child (the restart) is held between its spawn and its pid being published
  // until the host has begun to stop: the window the destructor used to miss.
  iso.spawned_for_test = [&](pid_t pid) {
    spawned.add(pid);
    if (spawns.fetch_add(1) != 1) {
      return;
    }
    in_window.set_value();
    IsolatedProvider* p = provider_ptr.load();
    NodeRef n = node();
    for (int i = 0; i < 60000; ++i) {  // bounded: at most about a minute
      if (p->instanceExists(n).status().code() == Code::Cancelled) {
        break;  // the destructor has set stopping_
      }
      std::this_thread::sleep_for(1ms);
    }
  };
  auto provider = startOk(std::move(iso), ProviderOptions{});
  provider_ptr = provider.get();
  REQUIRE(::kill(spawned.first(), SIGKILL) == 0);  // a crash: the supervisor restarts it
  auto window = in_window.get_future();
  REQUIRE(window.wait_for(kHangBound) == std::future_status::ready);
  CHECK(endsInTime([&] { provider.reset(); }));
}

TEST_CASE("a child that stops taking frames is killed and restarted; the call fails") {
  Spawned spawned;
  IsolationOptions iso = isolationFor("baseline");
  iso.write_bound = 200ms;
  iso.spawned_for_test = [&](pid_t pid) { spawned.add(pid); };
  auto provider = startOk(std::move(iso), ProviderOptions{});
  pid_t child = spawned.first();
  REQUIRE(::kill(child, SIGSTOP) == 0);  // it reads nothing more
  // Bigger than any socket buffer, so the send cannot complete while the child is stopped.
  std::string config(std::size_t{16} << 20, 'x');
  Status s;
  REQUIRE(endsInTime([&] { s = provider->reconfigure(config); }));
  // Unavailable either way: the send gave up, or the child was seen to die first.
  CHECK_MESSAGE(s.code() == Code::Unavailable, s.message());
  // Later calls fail at once until the restarted child serves, then succeed.
  bool served = false;
  for (int i = 0; i < 60000 && !served; ++i) {  // bounded
    served = provider->health().ok();
    if (!served) {
      std::this_thread::sleep_for(1ms);
    }
  }
  CHECK(served);
  auto exists = provider->instanceExists(node());
  CHECK_MESSAGE(exists.ok(), exists.status().message());
  CHECK(endsInTime([&] { provider.reset(); }));
}

TEST_CASE("the child's socket is made close-on-exec once the child takes it") {
  std::array<int, 2> fds{};
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds.data()) == 0);
  REQUIRE((::fcntl(fds[1], F_GETFD) & FD_CLOEXEC) == 0);  // as inherited across exec
  ::setenv(kChildFdVariable, std::to_string(fds[1]).c_str(), 1);
  auto fd = childFdFromEnvironment();
  REQUIRE(fd.has_value());
  CHECK(*fd == fds[1]);
  CHECK((::fcntl(fds[1], F_GETFD) & FD_CLOEXEC) != 0);
  CHECK(std::getenv(kChildFdVariable) == nullptr);
  ::close(fds[0]);
  ::close(fds[1]);
  // A descriptor that is not open is refused.
  ::setenv(kChildFdVariable, std::to_string(fds[1]).c_str(), 1);
  CHECK_FALSE(childFdFromEnvironment().has_value());
}

TEST_CASE("with several isolated providers, every child's metrics reach the registry") {
  metrics::Registry registry;
  ProviderOptions options;
  options.registry = &registry;
  auto a = startOk(isolationFor("baseline"), options);
  auto b = startOk(isolationFor("v11"), options);
  (void)a->instanceExists(node());
  (void)b->instanceExists(node());
  std::string text = registry.exposition();
  CHECK(text.find("ccm_provider_info{provider=\"baseline\",name=\"baseline\"") != std::string::npos);
  CHECK(text.find("ccm_provider_info{provider=\"v11\",name=\"v11\"") != std::string::npos);
  // One family header, whichever children expose it.
  size_t first = text.find("# TYPE ccm_provider_calls_total counter\n");
  CHECK(first != std::string::npos);
  CHECK(text.find("# TYPE ccm_provider_calls_total counter\n", first + 1) == std::string::npos);
  CHECK(endsInTime([&] {
    a.reset();
    b.reset();
  }));
}

namespace {

bool fileExists(const std::string& path) {
  return ::access(path.c_str(), F_OK) == 0;
}

// Waits (bounded) until path exists.
bool appears(const std::string& path) {
  auto until = std::chrono::steady_clock::now() + kHangBound;
  while (!fileExists(path)) {
    if (std::chrono::steady_clock::now() > until) {
      return false;
    }
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// The sum of every ccm_provider_calls_total sample for `call` in an exposition.
double callsTotal(const std::string& text, const std::string& call) {
  double sum = 0;
  size_t at = 0;
  while ((at = text.find("ccm_provider_calls_total{", at)) != std::string::npos) {
    size_t eol = text.find('\n', at);
    std::string line = text.substr(at, eol - at);
    at = eol;
    if (line.find("call=\"" + call + "\"") != std::string::npos) {
      sum += std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return sum;
}

}  // namespace

TEST_CASE("the host's cancelAll reaches a call running in the child") {
  // baseline.so waits in instance_metadata until the call is cancelled when
  // CCM_KIT_CANCEL_DIR is set, and leaves a file when it starts waiting and when it sees the
  // cancellation. The deadline (10 minutes, in the child too) is far past kHangBound, so only
  // the host's cancelAll can end the call in time.
  std::array<char, 32> dir_template{"/tmp/ccm-cancel-XXXXXX"};
  REQUIRE(::mkdtemp(dir_template.data()) != nullptr);
  std::string dir = dir_template.data();
  IsolationOptions iso = isolationFor("baseline");
  iso.argv.push_back("--cloud-provider-call-timeout=600s");
  ProviderOptions options;
  options.instances_timeout = 600s;
  ::setenv("CCM_KIT_CANCEL_DIR", dir.c_str(), 1);  // inherited by the child started now
  auto provider = startOk(std::move(iso), options);
  ::unsetenv("CCM_KIT_CANCEL_DIR");

  Status result;
  std::thread call([&] { result = provider->instanceMetadata(node()).status(); });
  REQUIRE(appears(dir + "/waiting"));  // the call runs in the child
  CHECK_FALSE(fileExists(dir + "/cancelled"));
  provider->cancelAll();
  CHECK(appears(dir + "/cancelled"));  // the plugin saw is_cancelled() turn true
  bool ended = endsInTime([&] { call.join(); });
  REQUIRE(ended);
  CHECK_MESSAGE(result.code() == Code::Cancelled, result.message());
  // Later calls are refused at once: the host is stopping or lost leadership.
  CHECK(provider->instanceExists(node()).status().code() == Code::Cancelled);
  CHECK(endsInTime([&] { provider.reset(); }));
  ::unlink((dir + "/waiting").c_str());
  ::unlink((dir + "/cancelled").c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("a restarted child's counters continue from the dead child's in /metrics") {
  metrics::Registry registry;
  ProviderOptions options;
  options.registry = &registry;
  Spawned spawned;
  IsolationOptions iso = isolationFor("baseline");
  iso.spawned_for_test = [&](pid_t pid) { spawned.add(pid); };
  auto provider = startOk(std::move(iso), options);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(provider->instanceExists(node()).ok());
  }
  double before = callsTotal(registry.exposition(), "instance_exists");
  CHECK(before == 3);

  REQUIRE(::kill(spawned.first(), SIGKILL) == 0);
  // Bounded: until a second child serves calls again.
  bool restarted = false;
  for (int i = 0; i < 60000 && !restarted; ++i) {
    {
      std::lock_guard lock(spawned.mu);
      restarted = spawned.pids.size() >= 2;
    }
    restarted = restarted && provider->instanceExists(node()).ok();
    if (!restarted) {
      std::this_thread::sleep_for(1ms);
    }
  }
  REQUIRE(restarted);
  // The new child counted one call (its own counter says 1); the host shows the dead child's
  // 3 carried on top, never less than before.
  double after = callsTotal(registry.exposition(), "instance_exists");
  CHECK(after == before + 1);
  CHECK(endsInTime([&] { provider.reset(); }));
}

TEST_CASE("load-balancer calls given a shared host set encode its hosts once per set") {
  auto provider = startOk(isolationFor("baseline"), ProviderOptions{});
  // The refs view these strings (kept alive and unmoved for the whole test).
  std::vector<std::string> names, uids, ids;
  for (int i = 0; i < 300; ++i) {
    names.push_back("node-" + std::to_string(i));
    uids.push_back("uid-" + std::to_string(i));
    ids.push_back("fake://node-" + std::to_string(i));
  }
  std::vector<NodeRef> hosts(names.size());
  for (size_t i = 0; i < hosts.size(); ++i) {
    hosts[i].name = names[i];
    hosts[i].uid = uids[i];
    hosts[i].provider_id = ids[i];
  }
  ServiceRef svc;
  svc.namespace_name = "default";
  svc.name = "lb-1";
  svc.uid = "uid-lb-1";
  svc.type = "LoadBalancer";
  HostForms forms;
  SharedHosts shared{hosts, &forms};

  // Every call's frame is read by the child exactly (a frame with a byte missing or left
  // over is refused as a whole), so OK answers mean the shared block ended each one right.
  for (int i = 0; i < 4; ++i) {
    auto st = provider->ensureLoadBalancerShared("kubernetes", svc, shared);
    REQUIRE_MESSAGE(st.ok(), st.status().toString());
    REQUIRE(st->ingress.size() == 1);
    CHECK(st->ingress[0].ip == "192.0.2.10");
    Status up = provider->updateLoadBalancerShared("kubernetes", svc, shared);
    CHECK_MESSAGE(up.ok(), up.toString());
  }
  CHECK(provider->hostSetEncodings() == 1);

  // Released forms (the wave is over) are encoded again by the next call that needs them.
  forms.clear();
  CHECK(provider->ensureLoadBalancerShared("kubernetes", svc, shared).ok());
  CHECK(provider->hostSetEncodings() == 2);

  // No forms, or forms that belong to other refs: the call encodes its own hosts, and the
  // answer is the same.
  CHECK(provider->updateLoadBalancerShared("kubernetes", svc, SharedHosts{hosts, nullptr}).ok());
  std::vector<NodeRef> fewer(hosts.begin(), hosts.begin() + 10);
  CHECK(provider->updateLoadBalancerShared("kubernetes", svc, SharedHosts{fewer, &forms}).ok());
  CHECK(provider->hostSetEncodings() == 2);
  // And an empty set is a set too.
  HostForms none_forms;
  CHECK(provider->updateLoadBalancerShared("kubernetes", svc, SharedHosts{{}, &none_forms}).ok());
  CHECK(provider->hostSetEncodings() == 3);
}
