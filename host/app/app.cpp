// The start-up sequence of cloud-controller-manager.
#include "host/app/app.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stop_token>
#include <thread>

#include "ccm/provider_abi.h"
#include "host/app/config_reloader.hpp"
#include "host/app/controller_manager.hpp"
#include "host/controllers/registry.hpp"
#include "host/kube/transport/kube_client.hpp"
#include "host/kube/write/event_recorder.hpp"
#include "host/leader/leader_elector.hpp"
#include "host/leader/lease_lock.hpp"
#include "host/log/log.hpp"
#include "host/options/options.hpp"
#include "host/plugin/abi_provider.hpp"
#include "host/plugin/crash_report.hpp"
#include "host/plugin/lifecycle_call.hpp"
#include "host/plugin/plugin_loader.hpp"
#include "host/plugin/isolation/child.hpp"
#include "host/plugin/isolation/isolated_provider.hpp"
#include "host/plugin/isolation/process.hpp"
#include "host/providers/provider_set.hpp"
#include "host/providers/routing_rules.hpp"
#include "host/runtime/metrics.hpp"
#include "host/runtime/thread_name.hpp"
#include "host/runtime/version.hpp"
#include "host/server/health_checks.hpp"
#include "host/server/secure_server.hpp"

#ifndef CCM_PLUGIN_DIR
#define CCM_PLUGIN_DIR "/usr/local/lib/ccm/providers"
#endif

namespace ccm::app {
namespace {

constexpr const char* kProgram = "cloud-controller-manager";

void printErr(const std::string& s) {
  std::fputs(s.c_str(), stderr);
}

std::string versionLine() {
  return fmt::format("{} v{} (ccm; plugin ABI {}.{})\n", kProgram, CCM_VERSION, CCM_ABI_MAJOR,
                     CCM_ABI_MINOR);
}

std::string usageText(const options::FlagSet& flags) {
  return fmt::format(
      "The Cloud controller manager is a daemon that embeds the cloud specific control loops "
      "shipped with Kubernetes.\n\nccm loads the cloud provider from a plugin: "
      "--cloud-provider=<name> loads <cloud-provider-plugin-dir>/<name>.so.\n\nUsage:\n  {} "
      "[flags]\n{}",
      kProgram, flags.usage());
}

// Reads --cloud-config; empty path means no configuration.
StatusOr<std::string> readCloudConfig(const std::string& path) {
  if (path.empty()) {
    return std::string();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status(Code::InvalidArgument,
                  fmt::format("cannot read --cloud-config={}: {}", path, std::strerror(errno)));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

plugin::ProviderOptions providerOptions(const options::Options& o, metrics::Registry& registry) {
  plugin::ProviderOptions p;
  if (o.cloud_provider_call_timeout.count() > 0) {
    p.instances_timeout = p.batch_timeout = p.load_balancer_timeout = p.routes_timeout =
        o.cloud_provider_call_timeout;
  }
  p.reconfigure_timeout = o.cloud_config_reload_timeout;
  p.registry = &registry;
  p.start_timeout = o.provider_start_timeout;
  return p;
}

// A start-up call into the provider that was given up on (past --provider-start-timeout, or
// interrupted by a signal) is still running inside the plugin: nothing may unload it or tear
// down what it might use, so the process leaves at once, after one line saying why.
[[noreturn]] void exitAbandonedStartup(const char* what, const Status& s) {
  if (s.code() == Code::Cancelled) {
    log::warning("Interrupted while starting the cloud provider", {{"err", s.message()}});
  } else {
    log::error(what, {{"err", s.message()}});
  }
  std::fflush(nullptr);
  std::_Exit(1);
}

bool abandonedStartup(const Status& s) {
  return s.code() == Code::DeadlineExceeded || s.code() == Code::Cancelled;
}

// SIGTERM and SIGINT stop the process in order; a second one exits at once.
class SignalWatcher {
 public:
  // Blocks the signals in the calling thread (and every thread created after), so only the
  // watcher receives them. Call first thing in main.
  static void block() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
  }

  explicit SignalWatcher(std::stop_source stop)
      : thread_([stop](std::stop_token own) mutable {
          runtime::nameThisThread("signals");
          sigset_t set;
          sigemptyset(&set);
          sigaddset(&set, SIGTERM);
          sigaddset(&set, SIGINT);
          timespec tick{0, 200L * 1000 * 1000};
          while (!own.stop_requested()) {
            int sig = sigtimedwait(&set, nullptr, &tick);
            if (sig <= 0) {
              continue;
            }
            if (stop.stop_requested()) {
              log::warning("Second signal: exiting now", {{"signal", strsignal(sig)}});
              std::_Exit(1);
            }
            log::info("Received signal: shutting down", {{"signal", strsignal(sig)}});
            stop.request_stop();
          }
        }) {}

 private:
  std::jthread thread_;
};

kube::ClientOptions clientOptions(const options::Options& o) {
  kube::ClientOptions c;
  c.kubeconfig = o.kubeconfig;
  c.master = o.master;
  c.qps = o.kube_api_qps;
  c.burst = o.kube_api_burst;
  c.user_agent = kube::defaultUserAgent(kProgram, CCM_VERSION, "");
  return c;
}

// The client for delegated authentication or authorization reviews: its own rate limit (as
// upstream: 200/400) so scrapes never take the controllers' budget; --authentication- or
// --authorization-kubeconfig when given, else the main connection's credentials.
StatusOr<std::unique_ptr<kube::KubeClient>> reviewClient(const options::Options& o,
                                                         const std::string& kubeconfig) {
  kube::ClientOptions c = clientOptions(o);
  if (!kubeconfig.empty()) {
    c.kubeconfig = kubeconfig;
    c.master.clear();
  }
  c.qps = 200;
  c.burst = 400;
  return kube::KubeClient::create(c, Clock::real(), nullptr);
}

leader::LeaderElectionOptions electionOptions(const options::Options& o) {
  leader::LeaderElectionOptions le;
  le.leader_elect = o.leader_elect;
  le.lease_duration = o.leader_elect_lease_duration;
  le.renew_deadline = o.leader_elect_renew_deadline;
  le.retry_period = o.leader_elect_retry_period;
  le.resource_lock = o.leader_elect_resource_lock;
  le.resource_name = o.leader_elect_resource_name;
  le.resource_namespace = o.leader_elect_resource_namespace;
  return le;
}

// Runs the controllers until stop, without leader election.
int runUnelected(ControllerManager& manager, std::stop_source& stop) {
  // A signal while start() still waits (caches that never sync because the API server cannot
  // be reached or trusted) must end the wait too.
  std::stop_callback on_signal(stop.get_token(), [&manager] { manager.stop(); });
  Status s = manager.start();
  if (!s.ok() && s.code() != Code::Cancelled) {
    log::error("Cannot start the controllers", {{"err", s.message()}});
    manager.stop();
    return 1;
  }
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  cv.wait(lock, stop.get_token(), [] { return false; });
  manager.stop();
  return 0;
}

// Runs the controllers while this process holds the lease. Exit 1 on lost leadership (like
// upstream), 0 after a signal (the lease is released first).
int runElected(ControllerManager& manager, std::stop_source& stop, kube::KubeClient& client,
               kube::EventBroadcaster& events, const options::Options& opts,
               server::HealthChecks& health, metrics::Registry& registry) {
  leader::LeaderElectionOptions le = electionOptions(opts);
  leader::KubeLeaseLock lock(client, le.resource_namespace, le.resource_name);
  std::mutex m;
  std::condition_variable cv;
  bool leading = false;
  bool done = false;
  Status result;
  metrics::Gauge* master = nullptr;
  if (auto* f = registry.gauge("leader_election_master_status",
                               "Gauge of if the reporting system is master of the relevant lease, "
                               "0 indicates backup, 1 indicates master. 'name' is the string used "
                               "to identify the lease.",
                               {"name"}, metrics::Stability::Alpha)) {
    master = &f->labels({le.resource_name});
    master->set(0);
  }
  leader::LeaderElector elector(lock, le,
                                {.on_started_leading =
                                     [&] {
                                       if (master != nullptr) {
                                         master->set(1);
                                       }
                                       std::lock_guard l(m);
                                       leading = true;
                                       cv.notify_all();
                                     },
                                 .on_stopped_leading =
                                     [&] {
                                       manager.stop();
                                       if (master != nullptr) {
                                         master->set(0);
                                       }
                                     },
                                 .on_new_leader =
                                     [](const std::string& id) {
                                       log::info("New leader elected", {{"identity", id}});
                                     }},
                                Clock::real(),
                                // Never held up by a full event queue.
                                events.recorder("cloud-controller-manager", /*may_wait=*/false));
  // Fencing: no controller writes unless this process leads and is sure it still does (the
  // Lease itself and Events are exempt). The guard outlives the elector (the event sender may
  // still write after this function returns), so it reaches it through `fence`.
  struct Fence {
    std::mutex mu;
    const leader::LeaderElector* elector = nullptr;  // guarded by mu; null once it is gone
  };
  auto fence = std::make_shared<Fence>();
  fence->elector = &elector;
  client.rest().setWriteGuard([fence](const kube::Request& r) -> kube::ApiStatus {
    if (r.path.find("/leases") != std::string::npos ||
        r.path.find("/events") != std::string::npos) {
      return kube::ApiStatus();
    }
    std::lock_guard l(fence->mu);
    if (fence->elector != nullptr && fence->elector->leadingNow()) {
      return kube::ApiStatus();
    }
    return kube::ApiStatus(0, kube::Reason::Cancelled,
                           "not written: this process is not the leader, or cannot be sure it "
                           "still is (its last lease renewal is older than the renew deadline)");
  });
  // Upstream's leaderElection check: fails only while leading with a stale renewal.
  (void)health.add(
      "leaderElection", [&elector] { return elector.check(); }, server::Probes::liveness());
  log::info("Attempting to acquire the leader lease",
            {{"lease", le.resource_namespace + "/" + le.resource_name},
             {"identity", elector.identity()}});
  std::thread election([&] {
    runtime::nameThisThread("leader-elect");
    Status s = elector.run(stop.get_token());
    std::lock_guard l(m);
    result = s;
    done = true;
    cv.notify_all();
  });
  int code = 0;
  {
    std::unique_lock l(m);
    cv.wait(l, [&] { return leading || done; });
    if (leading && !done) {
      l.unlock();
      log::info("Became leader: starting controllers", {{"identity", elector.identity()}});
      Status s = manager.start();
      if (!s.ok() && s.code() != Code::Cancelled) {
        log::error("Cannot start the controllers", {{"err", s.message()}});
        code = 1;
        stop.request_stop();  // releases the lease
      }
      l.lock();
      cv.wait(l, [&] { return done; });
    }
  }
  election.join();
  manager.stop();
  {
    std::lock_guard l(fence->mu);
    fence->elector = nullptr;
  }
  health.remove("leaderElection");
  if (result.code() == Code::Aborted) {
    log::error("leaderelection lost", {{"identity", elector.identity()}});
    return 1;
  }
  return code;
}

// One provider of --cloud-provider: its name, its --cloud-config and, once created, itself.
struct ConfiguredProvider {
  std::string name;
  std::string config_path;
  std::string config;
  std::unique_ptr<plugin::Provider> provider;
};

// The providers of --cloud-provider with their --cloud-config paths, and the routing rules
// among them (checked before any plugin is loaded: they name listed providers only).
struct Configured {
  std::vector<ConfiguredProvider> providers;
  providers::RoutingRules rules;
};

StatusOr<Configured> configuredProviders(const options::Options& opts) {
  auto names = providers::parseProviderList(opts.cloud_provider);
  if (!names.ok()) {
    return names.status();
  }
  auto paths = providers::parseCloudConfigs(opts.cloud_config, *names);
  if (!paths.ok()) {
    return paths.status();
  }
  auto rules = providers::buildRules(*names, opts.provider_node_selectors, opts.provider_discovery,
                                     opts.load_balancer_class_providers, opts.load_balancer_nodes);
  if (!rules.ok()) {
    return rules.status();
  }
  Configured out{{}, std::move(rules).value()};
  for (size_t i = 0; i < names->size(); ++i) {
    out.providers.push_back({(*names)[i], (*paths)[i], {}, nullptr});
  }
  return out;
}

// The routing flags with one provider (their names were checked against it): a class mapped
// to it is one it serves, as with --load-balancer-class; node selectors and discovery route
// nothing, since every node goes to the one provider. Said once at start, not an error, so a
// configuration written for several providers keeps working while one is listed.
void noticeSingleProviderRules(const options::Options& opts) {
  if (!opts.load_balancer_class_providers.empty()) {
    log::info("One provider is loaded: --load-balancer-class-provider only adds its classes to "
              "--load-balancer-class; the provider serves them",
              {{"provider", opts.cloud_provider},
               {"classes", fmt::format("{}", fmt::join(opts.load_balancer_class_providers, ","))}});
  }
  if (!opts.provider_node_selectors.empty() ||
      (!opts.provider_discovery.empty() && opts.provider_discovery != "none")) {
    log::warning("One provider is loaded: --provider-node-selector and --provider-discovery "
                 "have no effect; every node goes to it",
                 {{"provider", opts.cloud_provider}});
  }
}

// The parts of the start-up the provider child process shares with the host.
plugin::LoadOptions loadOptions(const options::Options& opts, const std::string& name,
                                metrics::Registry& registry, const std::stop_source& stop) {
  plugin::LoadOptions load;
  load.plugin_dir = opts.cloud_provider_plugin_dir;
  load.name = name;
  load.registry = &registry;
  load.start_timeout = opts.provider_start_timeout;
  load.stop = stop.get_token();
  return load;
}

// --provider-isolation=process, in the child: serve the host's calls (host/plugin/isolation).
// The host names the child's one provider with a last --cloud-provider flag.
int runProviderChild(const options::Options& opts, int fd) {
  metrics::Registry registry;  // lives until the process ends (runChild does not return then)
  std::stop_source stop;
  return plugin::isolation::runChild(fd, loadOptions(opts, opts.cloud_provider, registry, stop),
                                     providerOptions(opts, registry));
}

void logLoaded(const plugin::ProviderInfo& info) {
  log::info("Loaded cloud provider", {{"provider", info.name},
                                      {"version", info.version},
                                      {"abi", fmt::format("{}.{}", info.abi_major, info.abi_minor)},
                                      {"path", info.path},
                                      {"capabilities", info.capabilityList()},
                                      {"providerIDPrefix", info.provider_id_prefix},
                                      {"annotationDomain", info.annotation_domain},
                                      {"metricNamespace", info.metric_namespace}});
}

// --provider-isolation=process: the provider in a supervised child process, which is this
// binary again with the host's flags and a last --cloud-provider naming this one provider. A
// failure is logged and gives nullptr (exit 1); a start-up call that was given up on leaves
// the process at once.
std::unique_ptr<plugin::Provider> startIsolated(const options::Options& opts,
                                                const ConfiguredProvider& c,
                                                std::vector<std::string> argv,
                                                const plugin::ProviderOptions& provider_options) {
  auto exe = plugin::isolation::selfExecutable();
  if (!exe.ok()) {
    log::error("Cannot start the provider process", {{"err", exe.status().message()}});
    return nullptr;
  }
  plugin::isolation::IsolationOptions isolation;
  isolation.provider = c.name;
  isolation.executable = *exe;
  isolation.argv = std::move(argv);
  isolation.argv.push_back("--cloud-provider=" + c.name);
  log::info("Starting the cloud provider in a child process",
            {{"provider", c.name},
             {"pluginDir", opts.cloud_provider_plugin_dir},
             {"startTimeout", plugin::describeTimeout(opts.provider_start_timeout)}});
  auto started = plugin::isolation::IsolatedProvider::start(isolation, provider_options, c.config,
                                                            c.config_path);
  if (auto* failed = std::get_if<plugin::isolation::StartFailure>(&started)) {
    const char* what = failed->step == plugin::isolation::StartStep::Load
                           ? "Cannot load the cloud provider"
                           : "Cannot create the cloud provider";
    if (abandonedStartup(failed->status)) {
      exitAbandonedStartup(what, failed->status);
    }
    log::error(what, {{"err", failed->status.message()}});
    return nullptr;
  }
  return std::move(std::get<0>(started));
}

// Reads the config, loads the plugin and creates the provider. Returns the exit code on
// failure (0 on success); exits at once when a start-up call was abandoned.
// `several`: errors name the provider (the plugin's own errors always do).
int createProvider(const options::Options& opts, ConfiguredProvider& c, bool several,
                   metrics::Registry& registry, const std::stop_source& stop,
                   std::vector<std::string> argv) {
  auto config = readCloudConfig(c.config_path);
  if (!config.ok()) {
    Status st = several ? config.status().withPrefix("provider " + c.name) : config.status();
    log::error("Cannot start", {{"err", st.message()}});
    return 1;
  }
  c.config = std::move(config).value();
  plugin::ProviderOptions provider_options = providerOptions(opts, registry);
  provider_options.stop = stop.get_token();
  if (opts.provider_isolation == "process") {
    c.provider = startIsolated(opts, c, std::move(argv), provider_options);
    if (c.provider == nullptr) {
      return 1;
    }
    logLoaded(c.provider->info());
    return 0;
  }
  plugin::LoadOptions load = loadOptions(opts, c.name, registry, stop);
  log::info("Loading the cloud provider",
            {{"provider", c.name},
             {"pluginDir", opts.cloud_provider_plugin_dir},
             {"startTimeout", plugin::describeTimeout(opts.provider_start_timeout)}});
  auto loaded = plugin::PluginLoader::load(load);
  if (!loaded.ok() && abandonedStartup(loaded.status())) {
    exitAbandonedStartup("Cannot load the cloud provider", loaded.status());
  }
  if (!loaded.ok()) {
    log::error("Cannot load the cloud provider", {{"err", loaded.status().message()}});
    return 1;
  }
  log::info("Creating the cloud provider", {{"provider", (*loaded)->name}});
  auto provider = plugin::AbiProvider::create(*loaded, c.config, c.config_path, provider_options);
  if (!provider.ok() && abandonedStartup(provider.status())) {
    exitAbandonedStartup("Cannot create the cloud provider", provider.status());
  }
  if (!provider.ok()) {
    log::error("Cannot create the cloud provider", {{"err", provider.status().message()}});
    return 1;
  }
  c.provider = std::move(provider).value();
  logLoaded(c.provider->info());
  return 0;
}

// `provider-<name>`: one check per loaded provider. In-process, on /healthz and /readyz (it
// fails once the provider takes no more calls, or hangs in every call slot); isolated, on
// /readyz only: the host restarts the child itself, and a failing liveness probe (/healthz in
// the shipped manifests) would restart the whole pod for it.
void addProviderHealthCheck(server::HealthChecks& health, const ConfiguredProvider& c) {
  bool isolated = dynamic_cast<plugin::isolation::IsolatedProvider*>(c.provider.get()) != nullptr;
  Status added =
      health.add("provider-" + c.name, [p = c.provider.get()] { return p->health(); },
                 isolated ? server::Probes{false, false, true} : server::Probes::readiness());
  if (!added.ok()) {
    log::warning("Cannot add the provider's health check",
                 {{"provider", c.name}, {"err", added.message()}});
  }
}

// With several providers, the set that routes among them (checked: providerID prefixes);
// null with one provider, which the controllers then use directly as before.
StatusOr<std::unique_ptr<providers::ProviderSet>> providerSet(const Configured& configured) {
  if (configured.providers.size() < 2) {
    return std::unique_ptr<providers::ProviderSet>();
  }
  std::vector<plugin::Provider*> members;
  for (const auto& c : configured.providers) {
    members.push_back(c.provider.get());
  }
  return providers::ProviderSet::create(std::move(members), configured.rules);
}

}  // namespace

int run(int argc, const char* const* argv) {
  SignalWatcher::block();
  options::Options opts;
  auto flags = options::makeFlagSet(opts, CCM_PLUGIN_DIR, controllers::controllersForHelp());
  Status parsed = flags->parse(argc, argv);
  if (!parsed.ok()) {
    printErr(fmt::format("Error: {}\nRun '{} --help' for usage.\n", parsed.message(), kProgram));
    return 2;
  }
  if (opts.help) {
    std::fputs(usageText(*flags).c_str(), stdout);
    return 0;
  }
  if (opts.version) {
    std::fputs(versionLine().c_str(), stdout);
    return 0;
  }
  log::configure(
      {opts.logging_format == "json" ? log::Format::Json : log::Format::Text, opts.verbosity, 2});
  plugin::installCrashHandlers(opts.logging_format == "json" ? plugin::CrashLineFormat::Json
                                                             : plugin::CrashLineFormat::Text);
  // A class mapped to a provider is one the service controller handles.
  for (const auto& item : opts.load_balancer_class_providers) {
    std::string cls = item.substr(0, item.find('='));
    if (std::find(opts.load_balancer_classes.begin(), opts.load_balancer_classes.end(), cls) ==
        opts.load_balancer_classes.end()) {
      opts.load_balancer_classes.push_back(cls);
    }
  }
  Status valid = options::validate(opts);
  if (valid.ok()) {
    valid = controllers::validateControllersFlag(opts.controllers);
  }
  if (!valid.ok()) {
    printErr(fmt::format("Error: {}\nRun '{} --help' for usage.\n", valid.message(), kProgram));
    return 2;
  }

  if (auto child_fd = plugin::isolation::childFdFromEnvironment()) {
    return runProviderChild(opts, *child_fd);
  }
  log::info("Starting cloud-controller-manager",
            {{"version", CCM_VERSION},
             {"pluginABI", fmt::format("{}.{}", CCM_ABI_MAJOR, CCM_ABI_MINOR)}});
  if (log::enabled(1)) {
    for (const auto& f : flags->flags()) {
      log::infoV(1, "FLAG", {{"name", "--" + f.name}, {"changed", f.changed}});
    }
  }
  for (const auto* f : flags->setButUnimplemented()) {
    log::warning("Flag accepted for compatibility but not implemented by ccm; it has no effect",
                 {{"flag", "--" + f->name}});
  }

  metrics::Registry registry;
  // Signals work from here on, also while a start-up call into the provider runs.
  std::stop_source stop;
  SignalWatcher signals(stop);
  auto configured = configuredProviders(opts);
  if (!configured.ok()) {
    printErr(fmt::format("Error: {}\nRun '{} --help' for usage.\n", configured.status().message(),
                         kProgram));
    return 2;
  }
  if (configured->providers.size() == 1) {
    noticeSingleProviderRules(opts);
  }
  for (auto& c : configured->providers) {
    if (int code = createProvider(opts, c, configured->providers.size() > 1, registry, stop,
                                  std::vector<std::string>(argv, argv + argc));
        code != 0) {
      return code;
    }
  }
  // With several providers, the controllers see one Provider that routes each call.
  auto routed = providerSet(*configured);
  if (!routed.ok()) {
    log::error("Cannot combine the cloud providers", {{"err", routed.status().message()}});
    return 1;
  }
  plugin::Provider& provider =
      *routed ? static_cast<plugin::Provider&>(**routed) : *configured->providers.front().provider;

  if (opts.check_config) {
    if (opts.secure_port != 0) {
      // The client CA bundles of the secure port (the server reads them again at start).
      auto so = server::serverOptionsFrom(opts);
      auto certs = server::CertificateAuthenticator::fromFiles(so.client_ca_file,
                                                               so.request_header);
      if (!certs.ok()) {
        log::error("Invalid secure-port configuration", {{"err", certs.status().message()}});
        return 1;
      }
    }
    for (const auto& c : configured->providers) {
      const plugin::ProviderInfo& info = c.provider->info();
      std::fputs(fmt::format("provider {} {} (ABI {}.{}) from {}\ncapabilities: {}\n"
                             "configuration valid\n",
                             info.name, info.version, info.abi_major, info.abi_minor, info.path,
                             info.capabilityList())
                     .c_str(),
                 stdout);
    }
    return 0;
  }

  auto client = kube::KubeClient::create(clientOptions(opts), Clock::real(), &registry);
  if (!client.ok()) {
    log::error("Cannot configure the Kubernetes client", {{"err", client.status().message()}});
    return 1;
  }
  kube::EventRecorderOptions event_options;
  event_options.metrics = &registry;
  kube::EventBroadcaster events(**client, event_options);
  events.start();
  if (*routed) {
    // A node no provider (or several) claims: a Warning event on it, and no action.
    (*routed)->setNodeWarning(
        [recorder = std::make_shared<kube::EventRecorder>(events.recorder("cloud-provider-router"))](
            std::string_view node, std::string_view uid, const std::string& why) {
          recorder->event({"Node", "", std::string(node), std::string(uid), "v1", "", ""},
                          kube::EventType::Warning, "ProviderNotDetermined", why);
        });
  }
  // Declared before the manager, which removes its controllers' checks when it stops.
  server::HealthChecks health;
  ControllerManager manager(opts, **client, provider, events, registry, Clock::real());
  manager.setHealthChecks(&health);
  if (*routed) {
    // What the set remembers about a node (its owner, a discovery, a warning) goes with it.
    manager.setNodeDeleted([set = routed->get()](std::string_view name, std::string_view uid) {
      set->forgetNode(name, uid);
    });
  }
  for (const auto& c : configured->providers) {
    addProviderHealthCheck(health, c);
  }

  std::unique_ptr<kube::KubeClient> authn_client;
  std::unique_ptr<kube::KubeClient> authz_client;
  if (opts.secure_port != 0) {
    auto authn = reviewClient(opts, opts.authentication_kubeconfig);
    auto authz = opts.authorization_kubeconfig == opts.authentication_kubeconfig
                     ? StatusOr<std::unique_ptr<kube::KubeClient>>(nullptr)
                     : reviewClient(opts, opts.authorization_kubeconfig);
    if (!authn.ok() || !authz.ok()) {
      log::error("Cannot configure the client for delegated authentication/authorization",
                 {{"err", (!authn.ok() ? authn.status() : authz.status()).message()}});
      return 1;
    }
    authn_client = std::move(authn).value();
    authz_client = std::move(authz).value();
  }
  kube::KubeApi* authn_api = authn_client.get();
  kube::KubeApi* authz_api = authz_client ? authz_client.get() : authn_client.get();

  // Watches --cloud-config for changes (a rotated credential) while the process runs, leader
  // or not, so a standby takes over with current credentials. Declared after the provider:
  // it stops before the provider is destroyed.
  std::vector<std::unique_ptr<ConfigReloader>> reloaders;
  for (const auto& c : configured->providers) {
    reloaders.push_back(
        std::make_unique<ConfigReloader>(*c.provider, c.config_path, c.config, &registry));
    if (!c.config_path.empty() && opts.cloud_config_reload_period.count() > 0) {
      reloaders.back()->start(opts.cloud_config_reload_period);
      log::infoV(1, "Watching the cloud config for changes",
                 {{"provider", c.name},
                  {"path", c.config_path},
                  {"period", opts.cloud_config_reload_period}});
    }
  }

  server::SecureServer secure(server::serverOptionsFrom(opts), {.health = &health,
                                                                .metrics = &registry,
                                                                .authentication_api = authn_api,
                                                                .authorization_api = authz_api});
  if (Status st = secure.start(); !st.ok()) {
    log::error("Cannot serve on --secure-port", {{"err", st.message()}});
    return 1;
  }
  if (secure.serving()) {
    log::info("Serving securely",
              {{"address", fmt::format("{}:{}", opts.bind_address, secure.port())}});
  }
  int code = opts.leader_elect ? runElected(manager, stop, **client, events, opts, health, registry)
                               : runUnelected(manager, stop);
  secure.stop();
  events.shutdown();
  log::info("Stopped", {{"exitCode", code}});
  return code;
}

}  // namespace ccm::app
