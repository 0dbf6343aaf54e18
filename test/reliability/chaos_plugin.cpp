// chaos.so — a provider plugin for the reliability tests that wraps a real provider
// (fake-cloud.so) and misbehaves on command, per operation and object:
//
//   throw       a C++ exception escapes the ABI function (the host must catch it)
//   malformed   answers OK with output the host must refuse (a bad address type, an ingress
//               "IP" that is not one, a route whose CIDR is not one) or, for instance_exists,
//               an existence value outside the enum (must read as UNKNOWN)
//   unknown     instance_exists / instance_shutdown answer OK with UNKNOWN
//   error       returns `code` (default UNAVAILABLE) with a message and `retryAfterMs`
//   hang        sleeps `hangMs` ignoring the deadline and cancellation, then forwards
//   stray       forwards, and 200 ms later emits a string for the finished call from a thread
//   crash       abort()s the process before forwarding
//   crashAfter  forwards (the cloud did the work) and then abort()s before answering
//
// Its --cloud-config is JSON: {"inner": "<path of fake-cloud.so>", "innerConfig": "<path of
// the inner provider's config>", "rules": "<path of the rules file>"}. The rules file is JSON,
// re-read when it changes: {"rules": [{"op": "metadata", "object": "node-00002", "action":
// "throw"}, ...]}. `op` is an operation name as in fake-cloud (exists, shutdown, metadata,
// getLoadBalancer, loadBalancerName, ensureLoadBalancer, updateLoadBalancer,
// deleteLoadBalancer, listRoutes, createRoute, deleteRoute) or "*"; `object` a node name or
// "<namespace>/<name>" of a Service (empty: any). With "onceFile", a rule fires only while
// that file does not exist and creates it when it fires (a crash that happens once across
// restarts). The first matching rule wins.
//
// Every call is counted in the host's metrics as
// ccm_provider_chaos_calls_total{op, object, action} (action "forward" when no rule matched).
// The batch capability is not offered, so the host asks about nodes one at a time.
#include <dlfcn.h>
#include <rapidjson/document.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ccm/provider_abi.h"

namespace {

ccm_host_handle g_host = 0;
const ccm_host_services* g_svc = nullptr;
const ccm_plugin* g_inner_plugin = nullptr;

ccm_str str(std::string_view s) {
  return ccm_str{s.data(), s.size()};
}
std::string_view view(ccm_str s) {
  return s.data != nullptr ? std::string_view(s.data, s.size) : std::string_view();
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Rule {
  std::string op;
  std::string object;
  std::string action;
  int32_t code = CCM_STATUS_UNAVAILABLE;
  int64_t retry_after_ms = 0;
  int64_t hang_ms = 0;
  std::string once_file;
};

struct Chaos {
  ccm_provider* inner = nullptr;
  const ccm_instances_v1* instances = nullptr;
  const ccm_loadbalancer_v1* lb = nullptr;
  const ccm_routes_v1* routes = nullptr;
  ccm_instances_v1 my_instances{};
  ccm_loadbalancer_v1 my_lb{};
  ccm_routes_v1 my_routes{};

  std::string rules_path;
  std::mutex mu;
  std::vector<Rule> rules;                          // guarded by mu
  struct timespec rules_mtime {};                   // guarded by mu
  std::chrono::steady_clock::time_point checked{};  // guarded by mu

  void reload() {
    std::lock_guard lock(mu);
    auto now = std::chrono::steady_clock::now();
    if (now - checked < std::chrono::milliseconds(100))
      return;
    checked = now;
    struct stat st {};
    if (::stat(rules_path.c_str(), &st) != 0) {
      rules.clear();
      return;
    }
    if (st.st_mtim.tv_sec == rules_mtime.tv_sec && st.st_mtim.tv_nsec == rules_mtime.tv_nsec) {
      return;
    }
    rapidjson::Document d;
    d.Parse(readFile(rules_path).c_str());
    if (d.HasParseError() || !d.IsObject() || !d.HasMember("rules") || !d["rules"].IsArray()) {
      return;  // a half-written file: keep the last rules, look again soon
    }
    rules_mtime = st.st_mtim;
    rules.clear();
    for (const auto& r : d["rules"].GetArray()) {
      Rule rule;
      auto s = [&](const char* k, std::string& out) {
        if (r.HasMember(k) && r[k].IsString())
          out = r[k].GetString();
      };
      s("op", rule.op);
      s("object", rule.object);
      s("action", rule.action);
      s("onceFile", rule.once_file);
      if (r.HasMember("code") && r["code"].IsInt())
        rule.code = r["code"].GetInt();
      if (r.HasMember("retryAfterMs") && r["retryAfterMs"].IsInt64())
        rule.retry_after_ms = r["retryAfterMs"].GetInt64();
      if (r.HasMember("hangMs") && r["hangMs"].IsInt64())
        rule.hang_ms = r["hangMs"].GetInt64();
      rules.push_back(rule);
    }
  }

  // The action for this call ("" = forward).
  Rule match(std::string_view op, std::string_view object) {
    reload();
    std::lock_guard lock(mu);
    for (const Rule& r : rules) {
      if ((r.op == "*" || r.op == op) && (r.object.empty() || r.object == object)) {
        if (!r.once_file.empty()) {
          struct stat st {};
          if (::stat(r.once_file.c_str(), &st) == 0)
            continue;
          std::ofstream(r.once_file) << "fired\n";
        }
        return r;
      }
    }
    return Rule{};
  }
};

void count(std::string_view op, std::string_view object, std::string_view action) {
  ccm_kv labels[3] = {{str("op"), str(op)},
                      {str("object"), str(object)},
                      {str("action"), str(action.empty() ? "forward" : action)}};
  g_svc->metric(g_host, CCM_METRIC_COUNTER, str("chaos_calls_total"),
                str("Calls the chaos provider received, by operation, object and action."), labels,
                3, 1);
}

// Runs the rule's misbehaviour. Returns true when the call is answered (status in *out).
bool misbehave(const Rule& r, const ccm_call* call, std::string_view op, ccm_status* out) {
  if (r.action == "throw") {
    throw std::runtime_error("chaos: " + std::string(op) + " threw");
  }
  if (r.action == "crash") {
    std::abort();
  }
  if (r.action == "error") {
    std::string msg = "chaos: injected error for " + std::string(op);
    g_svc->set_error(g_host, call->call_id, str(msg), r.retry_after_ms);
    *out = r.code;
    return true;
  }
  if (r.action == "hang") {
    std::this_thread::sleep_for(std::chrono::milliseconds(r.hang_ms));
    return false;  // then forwards (long after the deadline)
  }
  return false;
}

void strayLater(uint64_t call_id) {
  std::thread([call_id] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    g_svc->emit_string(g_host, call_id, str("late"));
  }).detach();
}

Chaos* chaos(ccm_provider* p) {
  return reinterpret_cast<Chaos*>(p);
}

std::string serviceKey(const ccm_service* s) {
  return std::string(view(s->namespace_)) + "/" + std::string(view(s->name));
}

template <typename Forward>
ccm_status wrap(Chaos* c, const ccm_call* call, std::string_view op, std::string_view object,
                Forward forward, ccm_status (*malformed)(const ccm_call*) = nullptr) {
  Rule r = c->match(op, object);
  count(op, object, r.action);
  ccm_status st = CCM_STATUS_OK;
  if (misbehave(r, call, op, &st))
    return st;
  if (r.action == "malformed" && malformed != nullptr)
    return malformed(call);
  st = forward();
  if (r.action == "crashAfter")
    std::abort();
  if (r.action == "stray")
    strayLater(call->call_id);
  return st;
}

// ---- instances -----------------------------------------------------------------------------

ccm_status exists(ccm_provider* p, const ccm_call* call, const ccm_node* node, ccm_existence* out) {
  Chaos* c = chaos(p);
  std::string_view name = view(node->name);
  Rule r = c->match("exists", name);
  count("exists", name, r.action);
  ccm_status st = CCM_STATUS_OK;
  if (misbehave(r, call, "exists", &st))
    return st;
  if (r.action == "unknown") {
    *out = CCM_EXISTENCE_UNKNOWN;
    return CCM_STATUS_OK;
  }
  if (r.action == "malformed") {
    *out = 77;  // not an ccm_existence value
    return CCM_STATUS_OK;
  }
  st = c->instances->instance_exists(c->inner, call, node, out);
  if (r.action == "crashAfter")
    std::abort();
  return st;
}

ccm_status shutdown(ccm_provider* p, const ccm_call* call, const ccm_node* node, ccm_power* out) {
  Chaos* c = chaos(p);
  std::string_view name = view(node->name);
  Rule r = c->match("shutdown", name);
  count("shutdown", name, r.action);
  ccm_status st = CCM_STATUS_OK;
  if (misbehave(r, call, "shutdown", &st))
    return st;
  if (r.action == "unknown") {
    *out = CCM_POWER_UNKNOWN;
    return CCM_STATUS_OK;
  }
  if (r.action == "malformed") {
    *out = 77;
    return CCM_STATUS_OK;
  }
  return c->instances->instance_shutdown(c->inner, call, node, out);
}

ccm_status badMetadata(const ccm_call* call) {
  ccm_node_address addr{str("Bogus"), str("not an address")};
  ccm_instance_metadata m{};
  m.struct_size = sizeof m;
  m.provider_id = str("fake://chaos");
  m.addresses = &addr;
  m.address_count = 1;
  g_svc->emit_instance_metadata(g_host, call->call_id, 0, &m);
  return CCM_STATUS_OK;
}

ccm_status metadata(ccm_provider* p, const ccm_call* call, const ccm_node* node) {
  Chaos* c = chaos(p);
  return wrap(
      c, call, "metadata", view(node->name),
      [&] { return c->instances->instance_metadata(c->inner, call, node); }, badMetadata);
}

// ---- load balancers ------------------------------------------------------------------------

ccm_status badLbStatus(const ccm_call* call) {
  ccm_lb_ingress ing{};
  ing.struct_size = sizeof ing;
  ing.ip = str("999.999.0.1");
  const ccm_lb_ingress* list[1] = {&ing};
  ccm_lb_status s{};
  s.struct_size = sizeof s;
  s.ingress = list;
  s.ingress_count = 1;
  g_svc->emit_lb_status(g_host, call->call_id, &s);
  return CCM_STATUS_OK;
}

ccm_status getLb(ccm_provider* p, const ccm_call* call, ccm_str cluster, const ccm_service* s,
                 bool* out) {
  Chaos* c = chaos(p);
  return wrap(
      c, call, "getLoadBalancer", serviceKey(s),
      [&] { return c->lb->get_load_balancer(c->inner, call, cluster, s, out); },
      [](const ccm_call* call) -> ccm_status { return badLbStatus(call); });
}

ccm_status lbName(ccm_provider* p, const ccm_call* call, ccm_str cluster, const ccm_service* s) {
  Chaos* c = chaos(p);
  return wrap(
      c, call, "loadBalancerName", serviceKey(s),
      [&] { return c->lb->get_load_balancer_name(c->inner, call, cluster, s); },
      [](const ccm_call* call) -> ccm_status {
        g_svc->emit_string(g_host, call->call_id, str("\xff\xfe not UTF-8"));
        return CCM_STATUS_OK;
      });
}

ccm_status ensureLb(ccm_provider* p, const ccm_call* call, ccm_str cluster, const ccm_service* s,
                    const ccm_node* const* nodes, size_t n) {
  Chaos* c = chaos(p);
  return wrap(
      c, call, "ensureLoadBalancer", serviceKey(s),
      [&] { return c->lb->ensure_load_balancer(c->inner, call, cluster, s, nodes, n); },
      badLbStatus);
}

ccm_status updateLb(ccm_provider* p, const ccm_call* call, ccm_str cluster, const ccm_service* s,
                    const ccm_node* const* nodes, size_t n) {
  Chaos* c = chaos(p);
  return wrap(c, call, "updateLoadBalancer", serviceKey(s),
              [&] { return c->lb->update_load_balancer(c->inner, call, cluster, s, nodes, n); });
}

ccm_status deleteLb(ccm_provider* p, const ccm_call* call, ccm_str cluster, const ccm_service* s) {
  Chaos* c = chaos(p);
  return wrap(c, call, "deleteLoadBalancer", serviceKey(s),
              [&] { return c->lb->ensure_load_balancer_deleted(c->inner, call, cluster, s); });
}

// ---- routes --------------------------------------------------------------------------------

ccm_status listRoutes(ccm_provider* p, const ccm_call* call, ccm_str cluster) {
  Chaos* c = chaos(p);
  return wrap(
      c, call, "listRoutes", "", [&] { return c->routes->list_routes(c->inner, call, cluster); },
      [](const ccm_call* call) -> ccm_status {
        ccm_route r{};
        r.struct_size = sizeof r;
        r.target_node = str("node-x");
        r.destination_cidr = str("not a cidr");
        g_svc->emit_route(g_host, call->call_id, &r);
        return CCM_STATUS_OK;
      });
}

ccm_status createRoute(ccm_provider* p, const ccm_call* call, ccm_str cluster, ccm_str hint,
                       const ccm_route* route) {
  Chaos* c = chaos(p);
  return wrap(c, call, "createRoute", view(route->target_node),
              [&] { return c->routes->create_route(c->inner, call, cluster, hint, route); });
}

ccm_status deleteRoute(ccm_provider* p, const ccm_call* call, ccm_str cluster,
                       const ccm_route* route) {
  Chaos* c = chaos(p);
  return wrap(c, call, "deleteRoute", view(route->target_node),
              [&] { return c->routes->delete_route(c->inner, call, cluster, route); });
}

// ---- lifecycle -----------------------------------------------------------------------------

ccm_status refuse(const ccm_call* call, const std::string& message) {
  g_svc->set_error(g_host, call->call_id, str(message), 0);
  return CCM_STATUS_INVALID_ARGUMENT;
}

std::string member(const rapidjson::Document& d, const char* key) {
  return d.HasMember(key) && d[key].IsString() ? d[key].GetString() : "";
}

ccm_status create(const ccm_call* call, ccm_str config, ccm_provider** out) {
  rapidjson::Document d;
  std::string text(view(config));
  d.Parse(text.c_str());
  if (d.HasParseError() || !d.IsObject())
    return refuse(call, "chaos: config is not JSON");
  std::string inner_path = member(d, "inner");
  void* lib = ::dlopen(inner_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr)
    return refuse(call, "chaos: inner: cannot load " + inner_path);
  auto entry = reinterpret_cast<ccm_provider_entry_fn>(::dlsym(lib, CCM_PROVIDER_ENTRY_SYMBOL));
  if (entry == nullptr)
    return refuse(call, "chaos: inner: no entry symbol");
  ccm_host_info info{};
  info.struct_size = sizeof info;
  info.abi_major = CCM_ABI_MAJOR;
  info.abi_minor = CCM_ABI_MINOR;
  info.host_name = str("cloud-controller-manager");
  info.host_version = str("chaos");
  info.host = g_host;
  info.services = g_svc;
  if (entry(&info, call, &g_inner_plugin) != CCM_STATUS_OK || g_inner_plugin == nullptr) {
    return refuse(call, "chaos: inner: negotiation failed");
  }
  std::string inner_config = readFile(member(d, "innerConfig"));
  auto c = std::make_unique<Chaos>();
  c->rules_path = member(d, "rules");
  ccm_status st = g_inner_plugin->create(call, str(inner_config), &c->inner);
  if (st != CCM_STATUS_OK)
    return st;
  auto cap = [&](const char* id) { return g_inner_plugin->get_capability(c->inner, str(id)); };
  c->instances = static_cast<const ccm_instances_v1*>(cap(CCM_CAP_INSTANCES));
  c->lb = static_cast<const ccm_loadbalancer_v1*>(cap(CCM_CAP_LOADBALANCER));
  c->routes = static_cast<const ccm_routes_v1*>(cap(CCM_CAP_ROUTES));
  if (c->instances != nullptr) {
    c->my_instances = {
        sizeof(ccm_instances_v1), c->instances->max_concurrency, 0, exists, shutdown, metadata};
  }
  if (c->lb != nullptr) {
    c->my_lb = {sizeof(ccm_loadbalancer_v1),
                c->lb->max_concurrency,
                0,
                getLb,
                lbName,
                ensureLb,
                updateLb,
                deleteLb};
  }
  if (c->routes != nullptr) {
    c->my_routes = {
        sizeof(ccm_routes_v1), c->routes->max_concurrency, 0, listRoutes, createRoute, deleteRoute};
  }
  *out = reinterpret_cast<ccm_provider*>(c.release());
  return CCM_STATUS_OK;
}

void destroy(ccm_provider* p) {
  Chaos* c = chaos(p);
  g_inner_plugin->destroy(c->inner);
  delete c;
}

const void* getCapability(ccm_provider* p, ccm_str id) {
  Chaos* c = chaos(p);
  std::string_view want = view(id);
  if (want == CCM_CAP_INSTANCES && c->instances != nullptr)
    return &c->my_instances;
  if (want == CCM_CAP_LOADBALANCER && c->lb != nullptr)
    return &c->my_lb;
  if (want == CCM_CAP_ROUTES && c->routes != nullptr)
    return &c->my_routes;
  return nullptr;
}

const ccm_plugin kPlugin = {sizeof(ccm_plugin), CCM_ABI_MAJOR, 0,       {"chaos", 5},
                            {"0.1.0", 5},       create,        destroy, getCapability,
                            nullptr,            {},            {},      {}};

}  // namespace

extern "C" CCM_PLUGIN_EXPORT ccm_status ccm_provider_entry_v1(const ccm_host_info* host,
                                                              const ccm_call* call,
                                                              const ccm_plugin** out) {
  (void)call;
  g_host = host->host;
  g_svc = host->services;
  *out = &kPlugin;
  return CCM_STATUS_OK;
}
