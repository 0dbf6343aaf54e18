// leader-elect-probe: runs one LeaderElector against an API server and reports its state, so
// tests can run several as separate processes. Each line on stdout is
//   <CLOCK_MONOTONIC ns> <EVENT> [detail]
// with EVENT one of START, NEW_LEADER <identity>, LEADING, STOPPED, RELEASED, LOST, EXIT <code>.
// SIGTERM/SIGINT stop it gracefully (the lease is released, exit 0); losing the lease exits 1.
//
//   leader-elect-probe --kubeconfig FILE [--master URL] --identity ID
//     [--lease-name NAME] [--lease-namespace NS] [--lease-duration-ms N]
//     [--renew-deadline-ms N] [--retry-period-ms N] [-v N]
#include <signal.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "host/kube/transport/kube_client.hpp"
#include "host/leader/leader_elector.hpp"
#include "host/leader/lease_lock.hpp"
#include "host/log/log.hpp"

namespace {

long long monoNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

void say(const std::string& event, const std::string& detail = {}) {
  std::printf("%lld %s%s%s\n", monoNs(), event.c_str(), detail.empty() ? "" : " ", detail.c_str());
  std::fflush(stdout);
}

int usage(const char* why) {
  std::fprintf(stderr, "leader-elect-probe: %s\n", why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  ccm::kube::ClientOptions client_options;
  ccm::leader::LeaderElectionOptions le;
  int verbosity = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::exit(usage(("missing value for " + a).c_str()));
      }
      return argv[++i];
    };
    if (a == "--kubeconfig")
      client_options.kubeconfig = value();
    else if (a == "--master")
      client_options.master = value();
    else if (a == "--identity")
      le.identity = value();
    else if (a == "--lease-name")
      le.resource_name = value();
    else if (a == "--lease-namespace")
      le.resource_namespace = value();
    else if (a == "--lease-duration-ms")
      le.lease_duration = std::chrono::milliseconds(std::stoll(value()));
    else if (a == "--renew-deadline-ms")
      le.renew_deadline = std::chrono::milliseconds(std::stoll(value()));
    else if (a == "--retry-period-ms")
      le.retry_period = std::chrono::milliseconds(std::stoll(value()));
    else if (a == "-v")
      verbosity = std::stoi(value());
    else
      return usage(("unknown argument " + a).c_str());
  }
  ccm::log::Config lc;
  lc.verbosity = verbosity;
  ccm::log::configure(lc);
  ccm::Status valid = ccm::leader::validate(le);
  if (!valid.ok()) {
    return usage(valid.toString().c_str());
  }

  // Signals are taken by a dedicated thread (blocked everywhere else).
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  client_options.user_agent = ccm::kube::defaultUserAgent("leader-elect-probe", "0.1.0", "");
  auto client = ccm::kube::KubeClient::create(client_options);
  if (!client.ok()) {
    std::fprintf(stderr, "leader-elect-probe: %s\n", client.status().toString().c_str());
    return 2;
  }
  ccm::leader::KubeLeaseLock lock(**client, le.resource_namespace, le.resource_name);
  ccm::leader::LeaderCallbacks callbacks;
  callbacks.on_started_leading = [] { say("LEADING"); };
  callbacks.on_stopped_leading = [] { say("STOPPED"); };
  callbacks.on_new_leader = [](const std::string& id) { say("NEW_LEADER", id.empty() ? "-" : id); };
  ccm::leader::LeaderElector elector(lock, le, callbacks);

  std::stop_source stop;
  std::thread signals([&stop, set] {
    int sig = 0;
    sigwait(&set, &sig);
    stop.request_stop();
  });
  signals.detach();

  say("START", elector.identity());
  ccm::Status result = elector.run(stop.get_token());
  if (result.ok()) {
    say("RELEASED");
    say("EXIT", "0");
    return 0;
  }
  say("LOST", result.message());
  say("EXIT", "1");
  return 1;
}
