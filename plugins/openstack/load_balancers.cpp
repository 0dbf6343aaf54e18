// Octavia load balancers: find, create (fully populated), reconcile listeners, pools, members
// and health monitors, floating IPs, status, and deletion of exactly what this Service owns.
#include "plugins/openstack/load_balancers.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <regex>
#include <set>
#include <thread>

#include "plugins/openstack/instances.hpp"
#include "plugins/openstack/text.hpp"

namespace ccm::openstack {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kRetryAfterCreate{10000};
constexpr milliseconds kRetryAfterBusy{5000};
constexpr milliseconds kDeadlineMargin{2000};
constexpr auto kFeaturesTtl = std::chrono::hours(1);

struct DesiredMember {
  std::string name;
  std::string address;
  int64_t port = 0;
  std::string subnet_id;
  std::optional<int64_t> monitor_port;
};

struct DesiredMonitor {
  std::string name;
  std::string type;
  bool http = false;
};

struct DesiredPort {
  size_t index = 0;
  std::string k8s_protocol;
  int32_t port = 0;
  int32_t node_port = 0;
  std::string listener_protocol;
  std::string pool_protocol;
  std::string listener_name;
  std::string pool_name;
  std::vector<DesiredMember> members;
  std::optional<DesiredMonitor> monitor;
};

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Octavia answers 409 while a load balancer is PENDING_*: that is "busy, retry soon".
Status busyAware(Status st, const std::string& what) {
  if (st.code() == Code::kAborted) {
    return Status(Code::kFailedPrecondition,
                  what + ": Octavia is busy with this load balancer (" + st.message() + ")",
                  kRetryAfterBusy);
  }
  return st.ok() ? st : st.withPrefix(what);
}

bool isPending(const std::string& status) {
  return startsWith(status, "PENDING_");
}

// The node's address for members: its first InternalIP of the family, else its first
// ExternalIP of the family.
std::string memberAddress(const KubeNode& node, int family) {
  for (const char* type : {"InternalIP", "ExternalIP"}) {
    for (const NodeAddress& a : node.addresses) {
      if (a.type == type && ipFamilyOf(a.address) == family)
        return a.address;
    }
  }
  return {};
}

std::string openRange(int family) {
  return family == 6 ? "::/0" : "0.0.0.0/0";
}

std::set<std::string> cidrSet(const std::vector<std::string>& v, int family) {
  std::set<std::string> out;
  for (const auto& c : v) {
    auto cidr = Cidr::parse(c);
    out.insert(cidr ? cidr->toString() : c);
  }
  if (out.empty())
    out.insert(openRange(family));
  return out;
}

// OCCM's floating-subnet name patterns: '!' negates, '~' is a regex, else a shell glob; the
// whole name must match.
bool subnetNameMatches(const std::string& pattern, const std::string& name) {
  std::string_view p = pattern;
  bool negate = false;
  if (!p.empty() && p.front() == '!') {
    negate = true;
    p.remove_prefix(1);
  }
  bool match;
  if (!p.empty() && p.front() == '~') {
    try {
      match = std::regex_match(name, std::regex(std::string(p.substr(1))));
    } catch (const std::regex_error&) {
      match = false;
    }
  } else {
    match = fnmatch(std::string(p).c_str(), name.c_str(), 0) == 0;
  }
  return match != negate;
}

// Sleeps up to d, waking early when the call is cancelled.
Status sleepFor(const CallContext& call, std::chrono::steady_clock::duration d) {
  auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
    CCM_OS_RETURN_IF_ERROR(call.checkAlive());
    auto left = until - std::chrono::steady_clock::now();
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(left, std::chrono::milliseconds(100)));
  }
  return call.checkAlive();
}

}  // namespace

// One reconcile of one Service: settings, features, the load balancer and the wait budget.
class LoadBalancers::Run {
 public:
  Run(LoadBalancers& owner, const CallContext& call, LbSettings s, OctaviaFeatures f)
      : lbs_(owner),
        call_(call),
        s_(std::move(s)),
        f_(f),
        wait_until_(std::chrono::steady_clock::now() +
                    owner.config_.load_balancer.active_wait_timeout) {}

  const LbSettings& settings() const { return s_; }

  // Polls until the load balancer is ACTIVE, within this call's wait budget.
  StatusOr<OctaviaLoadBalancer> waitActive(const std::string& lb_id, const std::string& what) {
    auto interval = milliseconds(500);
    for (;;) {
      auto lb = lbs_.octavia_.getLoadBalancer(call_, lb_id);
      if (!lb.ok()) {
        if (lb.status().code() == Code::kNotFound) {
          return Status(Code::kAborted, "load balancer " + lb_id + " disappeared while " + what);
        }
        return lb.status().withPrefix("waiting for load balancer " + lb_id);
      }
      const std::string& ps = lb->provisioning_status;
      if (ps == "ACTIVE")
        return lb;
      if (ps == "ERROR") {
        return Status(Code::kUnavailable, "load balancer " + lb_id +
                                              " went into provisioning "
                                              "status ERROR while " +
                                              what);
      }
      if (!canWait(interval)) {
        milliseconds retry = ps == "PENDING_CREATE" ? kRetryAfterCreate : kRetryAfterBusy;
        return Status(Code::kFailedPrecondition,
                      "load balancer " + lb_id + " is " + ps + " (" + what +
                          "); Octavia is still working, try again later",
                      retry);
      }
      CCM_OS_RETURN_IF_ERROR(sleepFor(call_, interval));
      interval = std::min(milliseconds(5000), interval * 3 / 2);
    }
  }

  // Polls until the load balancer is gone (404).
  Status waitDeleted(const std::string& lb_id) {
    auto interval = milliseconds(500);
    for (;;) {
      auto lb = lbs_.octavia_.getLoadBalancer(call_, lb_id);
      if (!lb.ok()) {
        if (lb.status().code() == Code::kNotFound)
          return {};
        return lb.status().withPrefix("waiting for load balancer " + lb_id + " to go");
      }
      if (lb->provisioning_status == "DELETED")
        return {};
      if (!canWait(interval)) {
        return Status(Code::kFailedPrecondition,
                      "load balancer " + lb_id + " is " + lb->provisioning_status +
                          " (being deleted); try again later",
                      kRetryAfterBusy);
      }
      CCM_OS_RETURN_IF_ERROR(sleepFor(call_, interval));
      interval = std::min(milliseconds(5000), interval * 3 / 2);
    }
  }

  // A mutation followed by the wait for ACTIVE; 409 reads as "busy".
  Status mutate(const std::string& lb_id, const std::string& what, const Status& result) {
    if (!result.ok())
      return busyAware(result, what);
    call_.info("Changed load balancer", {{"lb", lb_id}, {"change", what}});
    auto lb = waitActive(lb_id, what);
    return lb.ok() ? Status() : lb.status();
  }

  std::vector<DesiredPort> desiredPorts(const KubeService& svc, const std::vector<KubeNode>& nodes,
                                        const std::string& member_subnet) const {
    std::vector<DesiredPort> out;
    bool local = svc.external_traffic_policy == "Local" && svc.health_check_node_port > 0;
    for (size_t i = 0; i < svc.ports.size(); ++i) {
      const ServicePort& p = svc.ports[i];
      DesiredPort d;
      d.index = i;
      d.k8s_protocol = p.protocol.empty() ? "TCP" : p.protocol;
      d.port = p.port;
      d.node_port = p.node_port;
      d.listener_protocol = s_.x_forwarded_for ? "HTTP" : d.k8s_protocol;
      d.pool_protocol = !s_.proxy_protocol.empty() ? s_.proxy_protocol : d.listener_protocol;
      std::string idx = std::to_string(i);
      d.listener_name = truncateUtf8("listener_" + idx + "_" + s_.lb_name, 255);
      d.pool_name = truncateUtf8("pool_" + idx + "_" + s_.lb_name, 255);
      if (s_.health_monitor) {
        DesiredMonitor m;
        m.name = truncateUtf8("monitor_" + idx + "_" + s_.lb_name, 255);
        bool udp = d.k8s_protocol == "UDP";
        m.http = local && !f_.ovn && (!udp || f_.httpMonitorsOnUdp());
        m.type = m.http ? "HTTP" : (udp ? "UDP-CONNECT" : d.k8s_protocol);
        d.monitor = m;
      }
      if (p.node_port > 0) {
        for (const KubeNode& node : nodes) {
          if (!matchesSelector(node, s_.node_selector))
            continue;
          std::string addr = memberAddress(node, s_.ip_family);
          if (addr.empty()) {
            if (i == 0) {
              call_.warning("Node has no address of the Service's IP family; not a member",
                            {{"node", node.name}});
            }
            continue;
          }
          DesiredMember m;
          m.name = node.name;
          m.address = addr;
          m.port = p.node_port;
          m.subnet_id = member_subnet;
          if (d.monitor && d.monitor->http)
            m.monitor_port = svc.health_check_node_port;
          d.members.push_back(std::move(m));
        }
      }
      out.push_back(std::move(d));
    }
    return out;
  }

  Json listenerJson(const DesiredPort& d) const {
    Json l = Json::object();
    l.set("name", d.listener_name);
    l.set("protocol", d.listener_protocol);
    l.set("protocol_port", d.port);
    l.set("connection_limit", s_.connection_limit);
    if (f_.tags())
      l.set("tags", Json::stringArray({s_.lb_name}));
    if (f_.timeouts()) {
      l.set("timeout_client_data", s_.timeout_client_data);
      l.set("timeout_member_connect", s_.timeout_member_connect);
      l.set("timeout_member_data", s_.timeout_member_data);
      l.set("timeout_tcp_inspect", s_.timeout_tcp_inspect);
    }
    if (f_.allowedCidrs() && !s_.source_ranges.empty()) {
      l.set("allowed_cidrs", Json::stringArray(s_.source_ranges));
    }
    if (s_.x_forwarded_for) {
      l.set("insert_headers", Json::object().set("X-Forwarded-For", "true"));
    }
    return l;
  }

  Json poolJson(const DesiredPort& d, const std::string& session_affinity) const {
    Json p = Json::object();
    p.set("name", d.pool_name);
    p.set("protocol", d.pool_protocol);
    p.set("lb_algorithm", s_.lb_method);
    if (session_affinity == "ClientIP") {
      p.set("session_persistence", Json::object().set("type", "SOURCE_IP"));
    }
    if (f_.tags())
      p.set("tags", Json::stringArray({s_.lb_name}));
    return p;
  }

  static Json memberJson(const DesiredMember& m) {
    Json j = Json::object();
    j.set("name", m.name);
    j.set("address", m.address);
    j.set("protocol_port", m.port);
    if (!m.subnet_id.empty())
      j.set("subnet_id", m.subnet_id);
    if (m.monitor_port)
      j.set("monitor_port", *m.monitor_port);
    return j;
  }

  Json monitorJson(const DesiredMonitor& m, bool for_update) const {
    Json j = Json::object();
    j.set("name", m.name);
    if (!for_update)
      j.set("type", m.type);
    j.set("delay", s_.hm_delay);
    j.set("timeout", s_.hm_timeout);
    j.set("max_retries", s_.hm_max_retries);
    j.set("max_retries_down", s_.hm_max_retries_down);
    if (m.http) {
      j.set("url_path", "/healthz");
      j.set("http_method", "GET");
      j.set("expected_codes", "200");
    }
    if (f_.tags() && !for_update)
      j.set("tags", Json::stringArray({s_.lb_name}));
    return j;
  }

  // Whether a listener belongs to this Service: it carries our tag, or it is untagged on a
  // load balancer we own (OCCM before Octavia 2.5 did not tag).
  bool ours(const OctaviaListener& l, bool owner) const {
    return contains(l.tags, s_.lb_name) || (l.tags.empty() && owner);
  }

  const CallContext& call() const { return call_; }
  const OctaviaFeatures& features() const { return f_; }

  // Listeners, pools, members and monitors of one load balancer towards `desired`. With
  // members_only (UpdateLoadBalancer) only the member sets change and missing listeners or
  // pools are an error.
  Status reconcileChildren(const std::string& lb_id, bool owner, const KubeService& svc,
                           const std::vector<DesiredPort>& desired, bool members_only);
  // The external network for a new floating IP.
  StatusOr<std::string> floatingNetwork();
  // The public address of the load balancer: reuses, adopts, creates or releases its floating
  // IP as the settings want; the VIP for internal and IPv6 load balancers.
  StatusOr<std::string> ensureFloatingIp(const OctaviaLoadBalancer& lb, bool owner,
                                         const KubeService& svc);
  // Deletes a floating IP this Service created (unless keep-floatingip), else detaches it.
  Status releaseFloatingIp(const FloatingIp& fip);
  // Deletes floating IPs this Service created that are attached to nothing.
  Status deleteOrphanFloatingIps();
  // Deletes a listener and its pool (with members and monitor), waiting after each.
  Status deleteListener(const std::string& lb_id, const OctaviaListener& l,
                        const std::vector<OctaviaPool>& pools, bool delete_monitor_first);

 private:
  Status reconcileMembers(const std::string& lb_id, const std::string& pool_id,
                          const DesiredPort& d);
  Status reconcileMonitor(const std::string& lb_id, const OctaviaPool& pool, const DesiredPort& d);
  Status createFloatingIp(const OctaviaLoadBalancer& lb, const KubeService& svc,
                          std::string* address);

 public:
 private:
  bool canWait(milliseconds next_sleep) const {
    auto now = std::chrono::steady_clock::now();
    if (now + next_sleep > wait_until_)
      return false;
    if (auto left = call_.remaining()) {
      if (*left <
          std::chrono::duration_cast<std::chrono::nanoseconds>(next_sleep + kDeadlineMargin)) {
        return false;
      }
    }
    return true;
  }

  LoadBalancers& lbs_;
  const CallContext& call_;
  LbSettings s_;
  OctaviaFeatures f_;
  std::chrono::steady_clock::time_point wait_until_;
};

std::string LoadBalancers::name(const std::string& cluster, const KubeService& svc) const {
  return loadBalancerName(cluster, svc);
}

StatusOr<OctaviaFeatures> LoadBalancers::features(const CallContext& call) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (features_ && std::chrono::steady_clock::now() - features_time_ < kFeaturesTtl) {
      return *features_;
    }
  }
  auto version = octavia_.apiVersion(call);
  if (!version.ok())
    return version.status().withPrefix("reading Octavia's API version");
  OctaviaFeatures f;
  f.version = *version;
  f.ovn = config_.load_balancer.lb_provider == "ovn";
  std::lock_guard<std::mutex> lock(mu_);
  features_ = f;
  features_time_ = std::chrono::steady_clock::now();
  return f;
}

StatusOr<LoadBalancers::Found> LoadBalancers::find(const CallContext& call, const LbSettings& s,
                                                   bool lenient) {
  Found found;
  if (!s.lb_id.empty()) {
    auto lb = octavia_.getLoadBalancer(call, s.lb_id);
    if (lb.ok()) {
      found.owner = lb->name == s.lb_name || lb->name == s.legacy_name;
      found.lb = std::move(lb).value();
      return found;
    }
    if (lb.status().code() != Code::kNotFound)
      return lb.status();
    if (!lenient) {
      return Status(Code::kFailedPrecondition,
                    "load balancer " + s.lb_id + " named by annotation " + kAnnotationPrefix +
                        "load-balancer-id does not exist; remove the annotation to have a new "
                        "one created");
    }
  }
  for (const std::string& name : {s.lb_name, s.legacy_name}) {
    CCM_OS_ASSIGN_OR_RETURN(std::vector<OctaviaLoadBalancer> lbs,
                            octavia_.findLoadBalancers(call, name));
    lbs.erase(std::remove_if(lbs.begin(), lbs.end(),
                             [&](const OctaviaLoadBalancer& lb) {
                               return lb.name != name || lb.provisioning_status == "DELETED";
                             }),
              lbs.end());
    if (lbs.size() > 1) {
      return Status(Code::kFailedPrecondition,
                    "several load balancers are named " + name +
                        "; delete the extra ones or set the load-balancer-id annotation");
    }
    if (lbs.size() == 1) {
      found.lb = std::move(lbs.front());
      found.owner = true;
      return found;
    }
  }
  return found;
}

LbSettings LoadBalancers::lenientSettings(const CallContext& call, const std::string& cluster,
                                          const KubeService& svc) const {
  auto built = buildLbSettings(config_.load_balancer, cluster, svc);
  if (built.ok())
    return std::move(built).value();
  // A bad annotation must not keep a Service from being found or deleted: fall back to the
  // names and the annotations that matter for finding and deleting.
  call.warning("Ignoring invalid load balancer settings", {{"error", built.status().message()}});
  KubeService plain = svc;
  plain.annotations.clear();
  plain.source_ranges.clear();
  LbSettings settings = buildLbSettings(LoadBalancerConfig(), cluster, plain).value();
  auto get = [&](const std::string& k) {
    auto it = svc.annotations.find(std::string(kAnnotationPrefix) + k);
    return it == svc.annotations.end() ? std::string() : it->second;
  };
  settings.lb_id = get("load-balancer-id");
  settings.keep_floating_ip = get("keep-floatingip") == "true";
  settings.hostname = get("hostname");
  return settings;
}

StatusOr<std::optional<LbStatus>> LoadBalancers::get(const CallContext& call,
                                                     const std::string& cluster,
                                                     const KubeService& svc) {
  LbSettings s = lenientSettings(call, cluster, svc);
  CCM_OS_ASSIGN_OR_RETURN(Found found, find(call, s, true));
  if (!found.lb) {
    // A floating IP left behind by this Service still counts as part of its load balancer.
    if (!s.keep_floating_ip) {
      CCM_OS_ASSIGN_OR_RETURN(
          std::vector<FloatingIp> fips,
          neutron_.listFloatingIps(call, "description=" + urlEncode(s.fip_description)));
      for (const FloatingIp& f : fips) {
        if (f.description == s.fip_description && f.port_id.empty()) {
          return std::optional<LbStatus>(LbStatus{});
        }
      }
    }
    return std::optional<LbStatus>();
  }
  std::string address = found.lb->vip_address;
  if (!found.lb->vip_port_id.empty()) {
    CCM_OS_ASSIGN_OR_RETURN(
        std::vector<FloatingIp> fips,
        neutron_.listFloatingIps(call, "port_id=" + urlEncode(found.lb->vip_port_id)));
    if (!fips.empty())
      address = fips.front().floating_ip_address;
  }
  LbStatus status;
  LbIngress ingress;
  if (!s.hostname.empty()) {
    ingress.hostname = s.hostname;
  } else if (!s.proxy_protocol.empty() && config_.load_balancer.enable_ingress_hostname) {
    ingress.hostname = address + "." + config_.load_balancer.ingress_hostname_suffix;
  } else {
    ingress.ip = address;
    ingress.ip_mode = s.proxy_protocol.empty() ? "VIP" : "Proxy";
  }
  status.ingress.push_back(std::move(ingress));
  return std::optional<LbStatus>(std::move(status));
}

namespace {

// The pool serving a listener.
const OctaviaPool* poolOf(const std::vector<OctaviaPool>& pools, const OctaviaListener& l) {
  for (const OctaviaPool& p : pools) {
    if (p.id == l.default_pool_id || contains(p.listener_ids, l.id))
      return &p;
  }
  return nullptr;
}

std::string memberKey(const std::string& name, const std::string& address, int64_t port,
                      std::optional<int64_t> monitor_port) {
  return name + "|" + address + "|" + std::to_string(port) + "|" +
         (monitor_port ? std::to_string(*monitor_port) : "");
}

}  // namespace

StatusOr<LbStatus> LoadBalancers::ensure(const CallContext& call, const std::string& cluster,
                                         const KubeService& svc,
                                         const std::vector<KubeNode>& nodes) {
  if (!svc.load_balancer_class.empty()) {
    return Status(Code::kImplementedElsewhere,
                  "Service has loadBalancerClass " + svc.load_balancer_class);
  }
  CCM_OS_ASSIGN_OR_RETURN(LbSettings settings,
                          buildLbSettings(config_.load_balancer, cluster, svc));
  if (svc.ports.empty())
    return Status(Code::kInvalidArgument, "the Service has no ports");
  if (!settings.tls_container_ref.empty()) {
    return Status(Code::kInvalidArgument,
                  "TLS termination (default-tls-container-ref) is not supported by this provider");
  }
  for (const ServicePort& p : svc.ports) {
    if (settings.x_forwarded_for && p.protocol != "TCP" && !p.protocol.empty()) {
      return Status(Code::kInvalidArgument, "x-forwarded-for needs TCP ports; port " +
                                                std::to_string(p.port) + " is " + p.protocol);
    }
  }
  CCM_OS_ASSIGN_OR_RETURN(OctaviaFeatures feats, features(call));
  Run run(*this, call, std::move(settings), feats);
  const LbSettings& s = run.settings();
  const LoadBalancerConfig& cfg = config_.load_balancer;

  if (!s.source_ranges.empty() && !feats.allowedCidrs()) {
    call.warning(
        "Octavia cannot restrict source ranges here (needs API 2.12 and not ovn); "
        "loadBalancerSourceRanges are ignored",
        {{"service", svc.namespace_ + "/" + svc.name}});
  }

  CCM_OS_ASSIGN_OR_RETURN(Found found, find(call, s, false));
  if (found.lb && found.lb->provisioning_status == "PENDING_DELETE") {
    // The previous load balancer of this Service is on its way out: wait (within the budget)
    // for it to go before making a new one under the same name.
    Status gone = run.waitDeleted(found.lb->id);
    if (!gone.ok())
      return gone.withPrefix("the previous load balancer of this Service");
    found = Found{};
  }

  // The floating network is needed before anything is created, so that a Service that cannot
  // get a public address fails before leaving a half-made load balancer behind.
  bool wants_fip = !s.internal && s.ip_family == 4;

  if (!found.lb) {
    Json lb = Json::object();
    lb.set("name", s.lb_name);
    lb.set("description", s.description);
    lb.set("provider", cfg.lb_provider);
    if (feats.tags())
      lb.set("tags", Json::stringArray({s.lb_name}));
    if (!s.flavor_id.empty()) {
      if (feats.flavors()) {
        lb.set("flavor_id", s.flavor_id);
      } else {
        call.warning("Octavia flavors need API 2.6 and a provider other than ovn; ignored");
      }
    }
    if (!s.availability_zone.empty()) {
      if (feats.availabilityZones()) {
        lb.set("availability_zone", s.availability_zone);
      } else {
        call.warning("Octavia availability zones need API 2.14 and not ovn; ignored");
      }
    }
    std::string vip_subnet = s.vip_subnet_id;
    if (!s.vip_port_id.empty()) {
      lb.set("vip_port_id", s.vip_port_id);
    } else {
      if (vip_subnet.empty() && s.vip_network_id.empty()) {
        // Auto-detect: the subnet of the first node's address.
        if (nodes.empty() || nodes.front().provider_id.empty()) {
          return Status(Code::kFailedPrecondition,
                        "cannot find a VIP subnet: set [LoadBalancer] subnet-id or network-id "
                        "(no node with a providerID to detect it from)");
        }
        std::string addr = memberAddress(nodes.front(), s.ip_family);
        auto pid = parseProviderId(nodes.front().provider_id);
        if (!pid.ok())
          return pid.status();
        CCM_OS_ASSIGN_OR_RETURN(std::vector<Port> ports,
                                neutron_.listPorts(call, "device_id=" + urlEncode(pid->server_id)));
        for (const Port& p : ports) {
          for (const FixedIp& ip : p.fixed_ips) {
            if (ip.ip_address == addr && vip_subnet.empty())
              vip_subnet = ip.subnet_id;
          }
        }
        if (vip_subnet.empty()) {
          return Status(Code::kFailedPrecondition, "cannot find the subnet of node " +
                                                       nodes.front().name + " (" + addr +
                                                       "); set [LoadBalancer] subnet-id");
        }
      }
      if (!vip_subnet.empty())
        lb.set("vip_subnet_id", vip_subnet);
      if (!s.vip_network_id.empty())
        lb.set("vip_network_id", s.vip_network_id);
      if (!svc.load_balancer_ip.empty() && (s.internal || s.ip_family == 6)) {
        lb.set("vip_address", svc.load_balancer_ip);
      }
    }
    if (wants_fip && svc.load_balancer_ip.empty()) {
      // Fail early when no public network can be found (nothing is created yet).
      auto net = run.floatingNetwork();
      if (!net.ok())
        return net.status();
    }
    if (!cfg.provider_requires_serial_api_calls) {
      std::string member_subnet = !s.member_subnet_id.empty() ? s.member_subnet_id : vip_subnet;
      Json listeners = Json::array();
      for (const DesiredPort& d : run.desiredPorts(svc, nodes, member_subnet)) {
        Json l = run.listenerJson(d);
        Json pool = run.poolJson(d, svc.session_affinity);
        Json members = Json::array();
        for (const DesiredMember& m : d.members)
          members.push(Run::memberJson(m));
        pool.set("members", std::move(members));
        if (d.monitor)
          pool.set("healthmonitor", run.monitorJson(*d.monitor, false));
        l.set("default_pool", std::move(pool));
        listeners.push(std::move(l));
      }
      lb.set("listeners", std::move(listeners));
    }
    Json body = Json::object().set("loadbalancer", std::move(lb));
    auto created = octavia_.createLoadBalancer(call, body);
    if (!created.ok())
      return busyAware(created.status(), "creating load balancer " + s.lb_name);
    call.info(
        "Created load balancer",
        {{"lb", created->id}, {"name", s.lb_name}, {"service", svc.namespace_ + "/" + svc.name}});
    found.lb = std::move(created).value();
    found.owner = true;
  }

  OctaviaLoadBalancer lb = *found.lb;
  if (lb.provisioning_status == "ERROR") {
    if (found.owner) {
      call.error("Load balancer is in ERROR state; deleting it so that it is created again",
                 {{"lb", lb.id}, {"name", lb.name}});
      Status del = octavia_.deleteLoadBalancer(call, lb.id, true);
      if (!del.ok() && del.code() != Code::kNotFound) {
        return busyAware(del, "deleting load balancer " + lb.id + " in ERROR state");
      }
      return Status(Code::kUnavailable,
                    "load balancer " + lb.id +
                        " went into provisioning status ERROR; it is being "
                        "deleted and will be created again on the next attempt",
                    kRetryAfterCreate);
    }
    return Status(Code::kFailedPrecondition,
                  "load balancer " + lb.id + " (from annotation " + kAnnotationPrefix +
                      "load-balancer-id) is in provisioning status ERROR; repair it in Octavia");
  }
  if (lb.provisioning_status != "ACTIVE") {
    CCM_OS_ASSIGN_OR_RETURN(lb, run.waitActive(lb.id, "waiting for it to become ACTIVE"));
  }

  if (!found.owner) {
    if (!feats.tags()) {
      return Status(Code::kFailedPrecondition, "using load balancer " + lb.id +
                                                   " made by someone else needs Octavia API "
                                                   "2.5 (tags)");
    }
    if (!contains(lb.tags, s.lb_name)) {
      auto others = std::count_if(lb.tags.begin(), lb.tags.end(), [](const std::string& t) {
        return startsWith(t, "kube_service_");
      });
      if (others + 1 > cfg.max_shared_lb) {
        return Status(Code::kFailedPrecondition,
                      "load balancer " + lb.id + " is already shared by " + std::to_string(others) +
                          " Services ([LoadBalancer] max-shared-lb = " +
                          std::to_string(cfg.max_shared_lb) + ")");
      }
    }
  }

  // Children: listeners, pools, members, monitors.
  std::string member_subnet = !s.member_subnet_id.empty() ? s.member_subnet_id : lb.vip_subnet_id;
  std::vector<DesiredPort> desired = run.desiredPorts(svc, nodes, member_subnet);
  CCM_OS_RETURN_IF_ERROR(run.reconcileChildren(lb.id, found.owner, svc, desired, false));

  if (feats.tags() && !contains(lb.tags, s.lb_name)) {
    std::vector<std::string> tags = lb.tags;
    tags.push_back(s.lb_name);
    Json body =
        Json::object().set("loadbalancer", Json::object().set("tags", Json::stringArray(tags)));
    CCM_OS_RETURN_IF_ERROR(
        run.mutate(lb.id, "tagging it", octavia_.updateLoadBalancer(call, lb.id, body)));
  }

  // Address: the floating IP, or the VIP.
  std::string address = lb.vip_address;
  if (!lb.vip_port_id.empty()) {
    CCM_OS_ASSIGN_OR_RETURN(address, run.ensureFloatingIp(lb, found.owner, svc));
  }

  LbStatus status;
  LbIngress ingress;
  bool proxy = !s.proxy_protocol.empty();
  if (!s.hostname.empty()) {
    ingress.hostname = s.hostname;
  } else if (proxy && cfg.enable_ingress_hostname) {
    ingress.hostname = address + "." + cfg.ingress_hostname_suffix;
  } else {
    ingress.ip = address;
    ingress.ip_mode = proxy ? "Proxy" : "VIP";
  }
  status.ingress.push_back(std::move(ingress));
  return status;
}

Status LoadBalancers::Run::deleteListener(const std::string& lb_id, const OctaviaListener& l,
                                          const std::vector<OctaviaPool>& pools,
                                          bool delete_monitor_first) {
  OctaviaClient& oct = lbs_.octavia_;
  if (const OctaviaPool* pool = poolOf(pools, l)) {
    if (delete_monitor_first && !pool->healthmonitor_id.empty()) {
      Status st = oct.deleteMonitor(call_, pool->healthmonitor_id);
      if (st.code() != Code::kNotFound) {
        CCM_OS_RETURN_IF_ERROR(
            mutate(lb_id, "deleting health monitor " + pool->healthmonitor_id, st));
      }
    }
    Status st = oct.deletePool(call_, pool->id);
    if (st.code() != Code::kNotFound) {
      CCM_OS_RETURN_IF_ERROR(mutate(lb_id, "deleting pool " + pool->name, st));
    }
  }
  Status st = oct.deleteListener(call_, l.id);
  if (st.code() != Code::kNotFound) {
    CCM_OS_RETURN_IF_ERROR(mutate(lb_id, "deleting listener " + l.name, st));
  }
  return {};
}

Status LoadBalancers::Run::reconcileChildren(const std::string& lb_id, bool owner,
                                             const KubeService& svc,
                                             const std::vector<DesiredPort>& desired,
                                             bool members_only) {
  OctaviaClient& oct = lbs_.octavia_;
  CCM_OS_ASSIGN_OR_RETURN(std::vector<OctaviaListener> listeners, oct.listListeners(call_, lb_id));
  CCM_OS_ASSIGN_OR_RETURN(std::vector<OctaviaPool> pools, oct.listPools(call_, lb_id));
  auto wanted = [&](const OctaviaListener& l) {
    return std::any_of(desired.begin(), desired.end(), [&](const DesiredPort& d) {
      return d.listener_protocol == l.protocol && d.port == l.protocol_port;
    });
  };
  if (!members_only) {
    // Listeners this Service no longer needs go first: a port may change protocol.
    bool removed = false;
    for (const OctaviaListener& l : listeners) {
      if (ours(l, owner) && !wanted(l)) {
        CCM_OS_RETURN_IF_ERROR(deleteListener(lb_id, l, pools, false));
        removed = true;
      }
    }
    if (removed) {
      CCM_OS_ASSIGN_OR_RETURN(listeners, oct.listListeners(call_, lb_id));
      CCM_OS_ASSIGN_OR_RETURN(pools, oct.listPools(call_, lb_id));
    }
  }
  for (const DesiredPort& d : desired) {
    std::optional<OctaviaListener> listener;
    for (const OctaviaListener& l : listeners) {
      if (l.protocol == d.listener_protocol && l.protocol_port == d.port)
        listener = l;
    }
    if (listener && !ours(*listener, owner)) {
      return Status(Code::kFailedPrecondition,
                    "port " + std::to_string(d.port) + "/" + d.listener_protocol +
                        " of load balancer " + lb_id + " is already used by listener " +
                        listener->id + ", which does not belong to this Service");
    }
    if (!listener) {
      if (members_only) {
        return Status(Code::kFailedPrecondition,
                      "load balancer " + lb_id + " has no listener for port " +
                          std::to_string(d.port) + "/" + d.listener_protocol +
                          " yet; EnsureLoadBalancer will create it");
      }
      Json l = listenerJson(d);
      l.set("loadbalancer_id", lb_id);
      auto created = oct.createListener(call_, Json::object().set("listener", std::move(l)));
      if (!created.ok())
        return busyAware(created.status(), "creating listener " + d.listener_name);
      CCM_OS_RETURN_IF_ERROR(mutate(lb_id, "creating listener " + d.listener_name, Status()));
      listener = std::move(created).value();
    } else if (!members_only) {
      const OctaviaListener& l = *listener;
      Json upd = Json::object();
      bool changed = false;
      if (f_.tags() && !contains(l.tags, s_.lb_name)) {
        std::vector<std::string> tags = l.tags;
        tags.push_back(s_.lb_name);
        upd.set("tags", Json::stringArray(tags));
        changed = true;
      }
      if (l.connection_limit != s_.connection_limit) {
        upd.set("connection_limit", s_.connection_limit);
        changed = true;
      }
      if (d.listener_protocol == "HTTP" && l.x_forwarded_for != s_.x_forwarded_for) {
        upd.set("insert_headers",
                Json::object().set("X-Forwarded-For", s_.x_forwarded_for ? "true" : "false"));
        changed = true;
      }
      if (f_.timeouts()) {
        auto cmp = [&](const char* key, const std::optional<int64_t>& have, int64_t want) {
          if (!have || *have != want) {
            upd.set(key, want);
            changed = true;
          }
        };
        cmp("timeout_client_data", l.timeout_client_data, s_.timeout_client_data);
        cmp("timeout_member_connect", l.timeout_member_connect, s_.timeout_member_connect);
        cmp("timeout_member_data", l.timeout_member_data, s_.timeout_member_data);
        cmp("timeout_tcp_inspect", l.timeout_tcp_inspect, s_.timeout_tcp_inspect);
      }
      if (f_.allowedCidrs() &&
          cidrSet(l.allowed_cidrs, s_.ip_family) != cidrSet(s_.source_ranges, s_.ip_family)) {
        upd.set("allowed_cidrs",
                Json::stringArray(s_.source_ranges.empty()
                                      ? std::vector<std::string>{openRange(s_.ip_family)}
                                      : s_.source_ranges));
        changed = true;
      }
      if (changed) {
        CCM_OS_RETURN_IF_ERROR(
            mutate(lb_id, "updating listener " + l.name,
                   oct.updateListener(call_, l.id, Json::object().set("listener", upd))));
      }
    }

    std::optional<OctaviaPool> pool;
    if (const OctaviaPool* p = poolOf(pools, *listener))
      pool = *p;
    if (pool && pool->protocol != d.pool_protocol && !members_only) {
      CCM_OS_RETURN_IF_ERROR(mutate(lb_id, "deleting pool " + pool->name + " (protocol change)",
                                    oct.deletePool(call_, pool->id)));
      pool.reset();
    }
    if (!pool) {
      if (members_only) {
        return Status(Code::kFailedPrecondition, "listener " + listener->id +
                                                     " has no pool yet; EnsureLoadBalancer will "
                                                     "create it");
      }
      Json p = poolJson(d, svc.session_affinity);
      p.set("listener_id", listener->id);
      auto created = oct.createPool(call_, Json::object().set("pool", std::move(p)));
      if (!created.ok())
        return busyAware(created.status(), "creating pool " + d.pool_name);
      CCM_OS_RETURN_IF_ERROR(mutate(lb_id, "creating pool " + d.pool_name, Status()));
      pool = std::move(created).value();
    } else if (!members_only) {
      Json upd = Json::object();
      bool changed = false;
      if (pool->lb_algorithm != s_.lb_method) {
        upd.set("lb_algorithm", s_.lb_method);
        changed = true;
      }
      std::string want_sp = svc.session_affinity == "ClientIP" ? "SOURCE_IP" : "";
      if (pool->session_persistence != want_sp) {
        if (want_sp.empty()) {
          upd.set("session_persistence", nullptr);
        } else {
          upd.set("session_persistence", Json::object().set("type", want_sp));
        }
        changed = true;
      }
      if (changed) {
        CCM_OS_RETURN_IF_ERROR(
            mutate(lb_id, "updating pool " + pool->name,
                   oct.updatePool(call_, pool->id, Json::object().set("pool", upd))));
      }
    }
    CCM_OS_RETURN_IF_ERROR(reconcileMembers(lb_id, pool->id, d));
    if (!members_only)
      CCM_OS_RETURN_IF_ERROR(reconcileMonitor(lb_id, *pool, d));
  }
  return {};
}

Status LoadBalancers::Run::reconcileMembers(const std::string& lb_id, const std::string& pool_id,
                                            const DesiredPort& d) {
  OctaviaClient& oct = lbs_.octavia_;
  bool serial = lbs_.config_.load_balancer.provider_requires_serial_api_calls;
  CCM_OS_ASSIGN_OR_RETURN(std::vector<OctaviaMember> members, oct.listMembers(call_, pool_id));
  auto key = [serial](const std::string& name, const std::string& addr, int64_t port,
                      std::optional<int64_t> mport) {
    return memberKey(serial ? "" : name, addr, port, mport);
  };
  std::set<std::string> have;
  std::set<std::string> want;
  for (const OctaviaMember& m : members) {
    have.insert(key(m.name, m.address, m.protocol_port, m.monitor_port));
  }
  for (const DesiredMember& m : d.members)
    want.insert(key(m.name, m.address, m.port, m.monitor_port));
  if (have == want)
    return {};
  if (!serial) {
    Json arr = Json::array();
    for (const DesiredMember& m : d.members)
      arr.push(memberJson(m));
    return mutate(lb_id, "setting the members of pool " + d.pool_name,
                  oct.replaceMembers(call_, pool_id, Json::object().set("members", arr)));
  }
  for (const DesiredMember& m : d.members) {
    if (have.count(key(m.name, m.address, m.port, m.monitor_port)) != 0)
      continue;
    CCM_OS_RETURN_IF_ERROR(
        mutate(lb_id, "adding member " + m.address + " to pool " + d.pool_name,
               oct.createMember(call_, pool_id, Json::object().set("member", memberJson(m)))));
  }
  for (const OctaviaMember& m : members) {
    if (want.count(key(m.name, m.address, m.protocol_port, m.monitor_port)) != 0)
      continue;
    Status st = oct.deleteMember(call_, pool_id, m.id);
    if (st.code() == Code::kNotFound)
      continue;
    CCM_OS_RETURN_IF_ERROR(
        mutate(lb_id, "removing member " + m.address + " from pool " + d.pool_name, st));
  }
  return {};
}

Status LoadBalancers::Run::reconcileMonitor(const std::string& lb_id, const OctaviaPool& pool,
                                            const DesiredPort& d) {
  OctaviaClient& oct = lbs_.octavia_;
  auto create = [&]() {
    Json m = monitorJson(*d.monitor, false);
    m.set("pool_id", pool.id);
    return mutate(lb_id, "creating health monitor " + d.monitor->name,
                  oct.createMonitor(call_, Json::object().set("healthmonitor", std::move(m))));
  };
  if (pool.healthmonitor_id.empty()) {
    return d.monitor ? create() : Status();
  }
  if (!d.monitor) {
    Status st = oct.deleteMonitor(call_, pool.healthmonitor_id);
    if (st.code() == Code::kNotFound)
      return {};
    return mutate(lb_id, "deleting health monitor " + pool.healthmonitor_id, st);
  }
  auto existing = oct.getMonitor(call_, pool.healthmonitor_id);
  if (!existing.ok()) {
    if (existing.status().code() == Code::kNotFound)
      return create();
    return existing.status();
  }
  const DesiredMonitor& want = *d.monitor;
  if (existing->type != want.type) {
    CCM_OS_RETURN_IF_ERROR(mutate(lb_id, "replacing health monitor " + existing->id,
                                  oct.deleteMonitor(call_, existing->id)));
    return create();
  }
  bool same = existing->name == want.name && existing->delay == s_.hm_delay &&
              existing->timeout == s_.hm_timeout && existing->max_retries == s_.hm_max_retries &&
              existing->max_retries_down == s_.hm_max_retries_down;
  if (want.http) {
    same = same && existing->url_path == "/healthz" && existing->http_method == "GET" &&
           existing->expected_codes == "200";
  }
  if (same)
    return {};
  return mutate(lb_id, "updating health monitor " + existing->id,
                oct.updateMonitor(call_, existing->id,
                                  Json::object().set("healthmonitor", monitorJson(want, true))));
}

StatusOr<std::string> LoadBalancers::Run::floatingNetwork() {
  if (!s_.floating_network_id.empty())
    return s_.floating_network_id;
  NeutronClient& neu = lbs_.neutron_;
  CCM_OS_ASSIGN_OR_RETURN(std::vector<Network> nets,
                          neu.listNetworks(call_, "router%3Aexternal=true"));
  std::vector<std::string> candidates;
  for (const Network& n : nets) {
    if (!n.external || n.subnets.empty())
      continue;
    CCM_OS_ASSIGN_OR_RETURN(std::vector<Subnet> subs,
                            neu.listSubnets(call_, "network_id=" + urlEncode(n.id)));
    bool usable = false;
    for (const std::string& id : n.subnets) {
      auto it =
          std::find_if(subs.begin(), subs.end(), [&](const Subnet& sn) { return sn.id == id; });
      // A subnet we cannot see (not shared with us) may still hand out floating IPs.
      if (it == subs.end() || it->ip_version == 4)
        usable = true;
    }
    if (usable)
      candidates.push_back(n.id);
  }
  if (candidates.empty()) {
    return Status(Code::kFailedPrecondition,
                  "no external network with an IPv4 subnet was found for the floating IP: set "
                  "[LoadBalancer] floating-network-id or the annotation " +
                      std::string(kAnnotationPrefix) +
                      "floating-network-id, or make the Service internal");
  }
  if (candidates.size() > 1) {
    std::string list;
    for (const auto& c : candidates)
      list += (list.empty() ? "" : ", ") + c;
    return Status(Code::kFailedPrecondition,
                  "several external networks could hold the floating IP (" + list +
                      "): set [LoadBalancer] floating-network-id or the annotation " +
                      std::string(kAnnotationPrefix) + "floating-network-id");
  }
  return candidates.front();
}

Status LoadBalancers::Run::releaseFloatingIp(const FloatingIp& fip) {
  NeutronClient& neu = lbs_.neutron_;
  if (fip.description == s_.fip_description && !s_.keep_floating_ip) {
    call_.info("Deleting floating IP", {{"fip", fip.floating_ip_address}});
    return neu.deleteFloatingIp(call_, fip.id);
  }
  call_.info("Detaching floating IP", {{"fip", fip.floating_ip_address}});
  Status st = neu.setFloatingIpPort(call_, fip.id, "");
  return st.code() == Code::kNotFound ? Status() : st;
}

Status LoadBalancers::Run::deleteOrphanFloatingIps() {
  if (s_.keep_floating_ip)
    return {};
  NeutronClient& neu = lbs_.neutron_;
  CCM_OS_ASSIGN_OR_RETURN(
      std::vector<FloatingIp> fips,
      neu.listFloatingIps(call_, "description=" + urlEncode(s_.fip_description)));
  for (const FloatingIp& f : fips) {
    if (f.description != s_.fip_description || !f.port_id.empty())
      continue;
    call_.info("Deleting floating IP left behind", {{"fip", f.floating_ip_address}});
    CCM_OS_RETURN_IF_ERROR(neu.deleteFloatingIp(call_, f.id));
  }
  return {};
}

Status LoadBalancers::Run::createFloatingIp(const OctaviaLoadBalancer& lb, const KubeService& svc,
                                            std::string* address) {
  NeutronClient& neu = lbs_.neutron_;
  CCM_OS_ASSIGN_OR_RETURN(std::string network, floatingNetwork());
  Json fip = Json::object();
  fip.set("floating_network_id", network);
  fip.set("port_id", lb.vip_port_id);
  fip.set("description", s_.fip_description);
  if (!svc.load_balancer_ip.empty())
    fip.set("floating_ip_address", svc.load_balancer_ip);
  std::vector<std::string> subnets;
  if (!s_.floating_subnet_id.empty()) {
    CCM_OS_ASSIGN_OR_RETURN(Subnet subnet, neu.getSubnet(call_, s_.floating_subnet_id));
    if (subnet.network_id != network) {
      return Status(Code::kInvalidArgument, "floating subnet " + s_.floating_subnet_id +
                                                " is not in floating network " + network);
    }
    subnets.push_back(subnet.id);
  } else if ((!s_.floating_subnet.empty() || !s_.floating_subnet_tags.empty()) &&
             svc.load_balancer_ip.empty()) {
    std::string query = "network_id=" + urlEncode(network);
    auto tags = parseTagFilter(s_.floating_subnet_tags);
    if (tags.ok() && !tags->param.empty())
      query += "&" + tags->param + "=" + urlEncode(tags->tags);
    CCM_OS_ASSIGN_OR_RETURN(std::vector<Subnet> found, neu.listSubnets(call_, query));
    for (const Subnet& sn : found) {
      if (s_.floating_subnet.empty() || subnetNameMatches(s_.floating_subnet, sn.name)) {
        subnets.push_back(sn.id);
      }
    }
    if (subnets.empty()) {
      return Status(Code::kFailedPrecondition,
                    "no subnet of floating network " + network + " matches floating-subnet \"" +
                        s_.floating_subnet + "\" / floating-subnet-tags \"" +
                        s_.floating_subnet_tags + "\"");
    }
  }
  if (subnets.empty())
    subnets.push_back("");
  Status last;
  for (const std::string& subnet : subnets) {
    Json body = fip;
    if (!subnet.empty())
      body.set("subnet_id", subnet);
    auto created = neu.createFloatingIp(call_, Json::object().set("floatingip", body));
    if (created.ok()) {
      call_.info("Created floating IP", {{"fip", created->floating_ip_address}, {"lb", lb.id}});
      *address = created->floating_ip_address;
      return {};
    }
    last = created.status();
  }
  return last.withPrefix("creating a floating IP for load balancer " + lb.id);
}

StatusOr<std::string> LoadBalancers::Run::ensureFloatingIp(const OctaviaLoadBalancer& lb,
                                                           bool owner, const KubeService& svc) {
  NeutronClient& neu = lbs_.neutron_;
  CCM_OS_ASSIGN_OR_RETURN(std::vector<FloatingIp> on_port,
                          neu.listFloatingIps(call_, "port_id=" + urlEncode(lb.vip_port_id)));
  std::optional<FloatingIp> attached;
  if (!on_port.empty())
    attached = on_port.front();
  if (s_.internal || s_.ip_family == 6) {
    if (attached && owner)
      CCM_OS_RETURN_IF_ERROR(releaseFloatingIp(*attached));
    return lb.vip_address;
  }
  const std::string& wanted_ip = svc.load_balancer_ip;
  if (attached) {
    if (wanted_ip.empty() || attached->floating_ip_address == wanted_ip) {
      return attached->floating_ip_address;
    }
    if (!owner) {
      return Status(Code::kFailedPrecondition, "only the Service that created load balancer " +
                                                   lb.id + " can change its floating IP");
    }
    CCM_OS_RETURN_IF_ERROR(releaseFloatingIp(*attached));
  }
  if (!owner) {
    return Status(Code::kFailedPrecondition,
                  "load balancer " + lb.id +
                      " has no floating IP and only the Service that "
                      "created it can add one (or make this Service internal)");
  }
  if (!wanted_ip.empty()) {
    CCM_OS_ASSIGN_OR_RETURN(
        std::vector<FloatingIp> existing,
        neu.listFloatingIps(call_, "floating_ip_address=" + urlEncode(wanted_ip)));
    if (!existing.empty()) {
      const FloatingIp& f = existing.front();
      if (!f.port_id.empty() && f.port_id != lb.vip_port_id) {
        return Status(Code::kFailedPrecondition, "floating IP " + wanted_ip +
                                                     " (loadBalancerIP) is attached to port " +
                                                     f.port_id + " already");
      }
      if (f.port_id.empty())
        CCM_OS_RETURN_IF_ERROR(neu.setFloatingIpPort(call_, f.id, lb.vip_port_id));
      return wanted_ip;
    }
  } else {
    // A floating IP this Service made earlier and that lost its port (its load balancer was
    // re-created, or keep-floatingip kept it): take it back rather than leak it.
    CCM_OS_ASSIGN_OR_RETURN(
        std::vector<FloatingIp> mine,
        neu.listFloatingIps(call_, "description=" + urlEncode(s_.fip_description)));
    for (const FloatingIp& f : mine) {
      if (f.description != s_.fip_description || !f.port_id.empty())
        continue;
      CCM_OS_RETURN_IF_ERROR(neu.setFloatingIpPort(call_, f.id, lb.vip_port_id));
      call_.info("Re-attached floating IP", {{"fip", f.floating_ip_address}, {"lb", lb.id}});
      return f.floating_ip_address;
    }
  }
  std::string address;
  CCM_OS_RETURN_IF_ERROR(createFloatingIp(lb, svc, &address));
  return address;
}

Status LoadBalancers::update(const CallContext& call, const std::string& cluster,
                             const KubeService& svc, const std::vector<KubeNode>& nodes) {
  if (!svc.load_balancer_class.empty()) {
    return Status(Code::kImplementedElsewhere,
                  "Service has loadBalancerClass " + svc.load_balancer_class);
  }
  CCM_OS_ASSIGN_OR_RETURN(LbSettings settings,
                          buildLbSettings(config_.load_balancer, cluster, svc));
  CCM_OS_ASSIGN_OR_RETURN(OctaviaFeatures feats, features(call));
  Run run(*this, call, std::move(settings), feats);
  const LbSettings& s = run.settings();
  CCM_OS_ASSIGN_OR_RETURN(Found found, find(call, s, false));
  if (!found.lb) {
    return Status(Code::kNotFound,
                  "Service " + svc.namespace_ + "/" + svc.name + " has no load balancer yet");
  }
  OctaviaLoadBalancer lb = *found.lb;
  if (lb.provisioning_status == "ERROR") {
    return Status(Code::kFailedPrecondition,
                  "load balancer " + lb.id + " is in provisioning status ERROR");
  }
  if (lb.provisioning_status != "ACTIVE") {
    CCM_OS_ASSIGN_OR_RETURN(lb, run.waitActive(lb.id, "waiting for it to become ACTIVE"));
  }
  std::string member_subnet = !s.member_subnet_id.empty() ? s.member_subnet_id : lb.vip_subnet_id;
  std::vector<DesiredPort> desired = run.desiredPorts(svc, nodes, member_subnet);
  return run.reconcileChildren(lb.id, found.owner, svc, desired, true);
}

Status LoadBalancers::remove(const CallContext& call, const std::string& cluster,
                             const KubeService& svc) {
  LbSettings settings = lenientSettings(call, cluster, svc);
  CCM_OS_ASSIGN_OR_RETURN(OctaviaFeatures feats, features(call));
  Run run(*this, call, std::move(settings), feats);
  const LbSettings& s = run.settings();
  CCM_OS_ASSIGN_OR_RETURN(Found found, find(call, s, true));
  if (found.lb) {
    OctaviaLoadBalancer lb = *found.lb;
    bool gone = false;
    if (lb.provisioning_status == "PENDING_DELETE") {
      CCM_OS_RETURN_IF_ERROR(run.waitDeleted(lb.id));
      gone = true;
    } else if (isPending(lb.provisioning_status)) {
      auto active = run.waitActive(lb.id, "waiting before deleting it");
      if (active.ok()) {
        lb = *active;
      } else if (active.status().code() == Code::kUnavailable) {
        lb.provisioning_status = "ERROR";
      } else {
        return active.status();
      }
    }
    if (!gone) {
      long others = std::count_if(lb.tags.begin(), lb.tags.end(), [&](const std::string& t) {
        return startsWith(t, "kube_service_") && t != s.lb_name;
      });
      bool delete_lb = found.owner && others == 0;
      if (delete_lb) {
        if (!lb.vip_port_id.empty()) {
          CCM_OS_ASSIGN_OR_RETURN(
              std::vector<FloatingIp> on_port,
              neutron_.listFloatingIps(call, "port_id=" + urlEncode(lb.vip_port_id)));
          for (const FloatingIp& f : on_port) {
            if (f.description == s.fip_description && !s.keep_floating_ip) {
              CCM_OS_RETURN_IF_ERROR(neutron_.deleteFloatingIp(call, f.id));
              call.info("Deleted floating IP", {{"fip", f.floating_ip_address}});
            }
          }
        }
        bool cascade = config_.load_balancer.cascade_delete || lb.provisioning_status == "ERROR";
        if (!cascade) {
          CCM_OS_ASSIGN_OR_RETURN(std::vector<OctaviaListener> listeners,
                                  octavia_.listListeners(call, lb.id));
          CCM_OS_ASSIGN_OR_RETURN(std::vector<OctaviaPool> pools, octavia_.listPools(call, lb.id));
          for (const OctaviaListener& l : listeners) {
            CCM_OS_RETURN_IF_ERROR(run.deleteListener(lb.id, l, pools, true));
          }
        }
        Status del = octavia_.deleteLoadBalancer(call, lb.id, cascade);
        if (!del.ok() && del.code() != Code::kNotFound) {
          return busyAware(del, "deleting load balancer " + lb.id);
        }
        call.info("Deleting load balancer", {{"lb", lb.id}, {"name", lb.name}});
        CCM_OS_RETURN_IF_ERROR(run.waitDeleted(lb.id));
      } else {
        // Shared or adopted: remove only what this Service added.
        CCM_OS_ASSIGN_OR_RETURN(std::vector<OctaviaListener> listeners,
                                octavia_.listListeners(call, lb.id));
        CCM_OS_ASSIGN_OR_RETURN(std::vector<OctaviaPool> pools, octavia_.listPools(call, lb.id));
        for (const OctaviaListener& l : listeners) {
          if (!run.ours(l, false))
            continue;
          CCM_OS_RETURN_IF_ERROR(run.deleteListener(lb.id, l, pools, false));
        }
        if (contains(lb.tags, s.lb_name)) {
          std::vector<std::string> tags;
          for (const auto& t : lb.tags) {
            if (t != s.lb_name)
              tags.push_back(t);
          }
          Json body = Json::object().set("loadbalancer",
                                         Json::object().set("tags", Json::stringArray(tags)));
          CCM_OS_RETURN_IF_ERROR(run.mutate(lb.id, "removing this Service's tag",
                                            octavia_.updateLoadBalancer(call, lb.id, body)));
        }
      }
    }
  }
  return run.deleteOrphanFloatingIps();
}

}  // namespace ccm::openstack
