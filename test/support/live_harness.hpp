// Integration test support: a real ControllerContext against a running kubesim (started by
// test/host/kube/run_with_kubesim.py, which exports KUBESIM_KUBECONFIG) and the real
// fake-cloud.so loaded through the ABI (CCM_PLUGIN_DIR), with its state in a file the tests
// read back. The cloud's configuration file is also its cloudFile, so tests change faults,
// latency and throttling while the controllers run.
#pragma once

#include <doctest/doctest.h>
#include <rapidjson/document.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "host/controllers/common/controller.hpp"
#include "host/kube/cache/informer.hpp"
#include "host/kube/config/kube_config.hpp"
#include "host/kube/transport/kube_client.hpp"
#include "host/kube/write/event_recorder.hpp"
#include "host/options/options.hpp"
#include "host/plugin/abi_provider.hpp"
#include "host/plugin/plugin_loader.hpp"
#include "host/runtime/metrics.hpp"
#include "test/support/controller_harness.hpp"

namespace ccm::testing {

inline std::string envOrFail(const char* name) {
  const char* v = std::getenv(name);
  REQUIRE_MESSAGE(v != nullptr, name, " is not set (run through meson test)");
  return v;
}

inline std::string readFileText(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// What fake-cloud's state file says.
struct CloudState {
  struct Lb {
    std::string name, service, ns, uid, ip;
    int ensures = 0;
    int host_updates = 0;
    std::vector<std::string> nodes;
  };
  std::vector<Lb> load_balancers;
  std::map<std::string, std::string> routes;  // destination -> target node
  int64_t lb_creates = 0;
  int64_t lb_deletes = 0;
  int64_t route_creates = 0;
  int64_t duplicate_route_creates = 0;
};

class LiveHarness {
 public:
  // `cloud_extra`: YAML lines appended to fake-cloud's configuration.
  explicit LiveHarness(const std::string& cloud_extra = "") {
    char tmpl[] = "/tmp/ccm-ctl-it-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    state_ = dir_ / "state.json";
    cloud_file_ = dir_ / "cloud.yaml";
    writeCloud(cloud_extra);

    kube::ClientOptions co;
    co.kubeconfig = envOrFail("KUBESIM_KUBECONFIG");
    co.qps = -1;  // no client-side limit in tests
    co.user_agent = kube::defaultUserAgent("ccm-controller-tests", "0.1.0", "");
    auto client = kube::KubeClient::create(co, Clock::real(), &registry);
    REQUIRE_MESSAGE(client.ok(), client.status().toString());
    client_ = std::move(client).value();

    plugin::LoadOptions lo;
    lo.plugin_dir = envOrFail("CCM_PLUGIN_DIR");
    lo.name = "fake-cloud";
    lo.registry = &registry;
    lo.check_permissions = false;  // build trees may be group-writable
    auto loaded = plugin::PluginLoader::load(lo);
    REQUIRE_MESSAGE(loaded.ok(), loaded.status().toString());
    plugin::ProviderOptions po;
    po.registry = &registry;
    po.load_balancer_timeout = po.routes_timeout = std::chrono::seconds(20);
    auto provider =
        plugin::AbiProvider::create(*loaded, readFileText(cloud_file_), cloud_file_.string(), po);
    REQUIRE_MESSAGE(provider.ok(), provider.status().toString());
    provider_ = std::move(provider).value();

    nodes_ = std::make_unique<kube::NodeInformer>(client_.get());
    services_ = std::make_unique<kube::ServiceInformer>(client_.get());
    events_ = std::make_unique<kube::EventBroadcaster>(*client_);
    events_->start();
    nodes_->start();
    services_->start();
    std::stop_source stop;
    REQUIRE(kube::waitForCacheSync(stop.get_token(), {nodes_.get(), services_.get()}));

    options.cluster_name = "kubernetes";
    options.concurrent_service_syncs = 10;
    options.configure_cloud_routes = true;
    options.cluster_cidr = "10.244.0.0/16";
    options.route_reconciliation_period = std::chrono::seconds(10);
  }

  ~LiveHarness() {
    nodes_->stop();
    services_->stop();
    events_->shutdown();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  controllers::ControllerContext context() {
    return controllers::ControllerContext{options,    *client_, *nodes_,  *services_,
                                          *provider_, *events_, registry, Clock::real()};
  }

  // Rewrites the cloud file (atomically); fake-cloud re-reads it within ~100 ms.
  void writeCloud(const std::string& extra) {
    std::string text = "stateFile: " + state_.string() + "\ncloudFile: " + cloud_file_.string() +
                       "\nloadBalancer: {ipPool: 10.99.0.0/16}\n" + extra + "\n";
    auto tmp = dir_ / "cloud.yaml.tmp";
    std::ofstream(tmp) << text;
    std::filesystem::rename(tmp, cloud_file_);
    // Make sure the new modification time differs from the previous one for the watcher.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }

  CloudState cloud() const {
    CloudState out;
    std::string text = readFileText(state_);
    if (text.empty()) {
      return out;
    }
    rapidjson::Document d;
    d.Parse(text.c_str());
    REQUIRE_FALSE(d.HasParseError());
    if (d.HasMember("loadBalancers")) {
      for (const auto& v : d["loadBalancers"].GetArray()) {
        CloudState::Lb lb;
        lb.name = v["name"].GetString();
        lb.service = v["service"].GetString();
        lb.ns = v["namespace"].GetString();
        lb.uid = v["uid"].GetString();
        lb.ip = v["ip"].GetString();
        lb.ensures = v["ensures"].GetInt();
        lb.host_updates = v["hostUpdates"].GetInt();
        // Backends are written once per distinct list ("nodeSets"), referred to by index.
        int set = v["nodeSet"].GetInt();
        if (set >= 0) {
          for (const auto& n : d["nodeSets"][set].GetArray()) {
            lb.nodes.emplace_back(n.GetString());
          }
        }
        out.load_balancers.push_back(std::move(lb));
      }
    }
    if (d.HasMember("routes")) {
      for (const auto& v : d["routes"].GetArray()) {
        out.routes[v["destinationCIDR"].GetString()] = v["targetNode"].GetString();
      }
    }
    if (d.HasMember("stats")) {
      const auto& s = d["stats"];
      out.lb_creates = s["lbCreates"].GetInt64();
      out.lb_deletes = s["lbDeletes"].GetInt64();
      out.route_creates = s["routeCreates"].GetInt64();
      out.duplicate_route_creates = s["duplicateRouteCreates"].GetInt64();
    }
    return out;
  }

  std::optional<CloudState::Lb> cloudLb(const std::string& ns, const std::string& name) const {
    for (const auto& lb : cloud().load_balancers) {
      if (lb.ns == ns && lb.service == name) {
        return lb;
      }
    }
    return std::nullopt;
  }

  plugin::Provider& provider() { return *provider_; }
  // Calls GetLoadBalancerName until its answer has this code: the way to know that the cloud
  // has re-read its file (it checks every ~100 ms).
  bool waitForCloudAnswer(Code code) {
    plugin::ServiceRef probe;
    probe.namespace_name = "probe";
    probe.name = "probe";
    probe.uid = "probe-uid";
    return waitUntil([&] {
      auto r = provider_->getLoadBalancerName("kubernetes", probe);
      return (r.ok() ? Code::Ok : r.status().code()) == code;
    });
  }
  // The value of a metric line "name{...label...} value" from the exposition (summed).
  double metricSum(const std::string& name, const std::string& label_part = "") const {
    std::istringstream in(registry.exposition());
    std::string line;
    double sum = 0;
    while (std::getline(in, line)) {
      if (line.rfind(name, 0) != 0 ||
          (line.size() > name.size() && line[name.size()] != '{' && line[name.size()] != ' ')) {
        continue;
      }
      if (!label_part.empty() && line.find(label_part) == std::string::npos) {
        continue;
      }
      sum += std::stod(line.substr(line.rfind(' ') + 1));
    }
    return sum;
  }

  kube::KubeClient& client() { return *client_; }
  kube::NodeInformer& nodes() { return *nodes_; }
  kube::ServiceInformer& services() { return *services_; }
  kube::EventBroadcaster& events() { return *events_; }

  // ---- API helpers ----
  void createNamespace(const std::string& ns) {
    auto r = client_->create(
        kube::ResourcePath{"v1", "namespaces", "", "", ""},
        R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" + ns + R"("}})");
    REQUIRE_MESSAGE((r.ok() || r.status().isAlreadyExists()), r.status().toString());
  }
  void createService(const std::string& ns, const std::string& name,
                     const std::string& type = "LoadBalancer", const std::string& extra_spec = "") {
    std::string body =
        R"({"apiVersion":"v1","kind":"Service","metadata":{"name":")" + name +
        R"(","namespace":")" + ns + R"("},"spec":{"type":")" + type + R"(","selector":{"app":")" +
        name + R"("},"ports":[{"name":"http","protocol":"TCP","port":80,"targetPort":8080}])" +
        extra_spec + "}}";
    auto r = client_->create(kube::servicePath(ns), body);
    REQUIRE_MESSAGE(r.ok(), r.status().toString());
  }
  void patchService(const std::string& ns, const std::string& name, const std::string& patch) {
    auto r = client_->patch(kube::servicePath(ns, name), kube::PatchType::Merge, patch);
    REQUIRE_MESSAGE(r.ok(), r.status().toString());
  }
  void deleteService(const std::string& ns, const std::string& name) {
    auto st = client_->remove(kube::servicePath(ns, name));
    REQUIRE_MESSAGE((st.ok() || st.isNotFound()), st.toString());
  }
  void createNode(const std::string& name, const std::vector<std::string>& pod_cidrs = {},
                  const std::string& extra_labels = "") {
    std::string spec = R"({"providerID":"fake://)" + name + "\"";
    if (!pod_cidrs.empty()) {
      spec += R"(,"podCIDR":")" + pod_cidrs[0] + R"(","podCIDRs":[)";
      for (size_t i = 0; i < pod_cidrs.size(); ++i) {
        spec += (i ? "," : "") + std::string("\"") + pod_cidrs[i] + "\"";
      }
      spec += "]";
    }
    spec += "}";
    std::string body = R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + name +
                       R"(","labels":{"kubernetes.io/hostname":")" + name + "\"" + extra_labels +
                       R"(}},"spec":)" + spec +
                       R"(,"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.)" +
                       std::to_string(std::hash<std::string>()(name) % 250 + 1) + R"("}]}})";
    auto r = client_->create(kube::nodePath(), body);
    REQUIRE_MESSAGE(r.ok(), r.status().toString());
  }
  void deleteNode(const std::string& name) {
    auto st = client_->remove(kube::nodePath(name));
    REQUIRE_MESSAGE((st.ok() || st.isNotFound()), st.toString());
  }
  std::optional<rapidjson::Document> getJson(const kube::ResourcePath& path) {
    auto r = client_->get(path);
    if (!r.ok()) {
      return std::nullopt;
    }
    rapidjson::Document d;
    d.Parse(r->c_str());
    return d;
  }
  // status.loadBalancer.ingress[0].ip of a service ("" when none / absent).
  std::string ingressIp(const std::string& ns, const std::string& name) {
    auto svc = services_->get(ns + "/" + name);
    if (!svc || svc->ingress.empty()) {
      return "";
    }
    return std::string(svc->ingress[0].ip);
  }
  // Event reasons recorded for an object (by involvedObject name), from the API.
  std::multiset<std::string> eventReasons(const std::string& ns, const std::string& name) {
    std::multiset<std::string> out;
    auto d = getJson(kube::eventPath(ns));
    if (!d || !d->HasMember("items")) {
      return out;
    }
    for (const auto& e : (*d)["items"].GetArray()) {
      if (std::string(e["involvedObject"]["name"].GetString()) == name) {
        out.insert(e["reason"].GetString());
      }
    }
    return out;
  }

  options::Options options;
  metrics::Registry registry;

 private:
  std::filesystem::path dir_;
  std::filesystem::path state_;
  std::filesystem::path cloud_file_;
  std::unique_ptr<kube::KubeClient> client_;
  std::unique_ptr<plugin::AbiProvider> provider_;
  std::unique_ptr<kube::NodeInformer> nodes_;
  std::unique_ptr<kube::ServiceInformer> services_;
  std::unique_ptr<kube::EventBroadcaster> events_;
};

// Makes a controller with factory (makeServiceController, makeRouteController, ...) over the
// harness's context and starts it; the test fails if the factory refuses or skips it.
inline std::unique_ptr<controllers::Controller> startController(
    LiveHarness& h,
    StatusOr<controllers::ControllerOrSkip> (*factory)(controllers::ControllerContext&)) {
  auto ctx = h.context();
  auto r = factory(ctx);
  REQUIRE_MESSAGE(r.ok(), r.status().toString());
  REQUIRE(std::holds_alternative<std::unique_ptr<controllers::Controller>>(*r));
  auto c = std::move(std::get<std::unique_ptr<controllers::Controller>>(*r));
  c->start();
  return c;
}

}  // namespace ccm::testing
