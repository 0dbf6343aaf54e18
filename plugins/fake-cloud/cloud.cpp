// The fake cloud: instance lookup, load balancers, routes, persistence and injected faults.
#include "plugins/fake-cloud/cloud.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace ccm::fakecloud {
namespace {

using sdk::Error;

constexpr std::string_view kProvidedNodeIp = "alpha.kubernetes.io/provided-node-ip";

int64_t mtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

std::optional<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Parses "a.b.c.d/n" (IPv4 only).
bool parseCidr4(std::string_view cidr, uint32_t& base, uint32_t& size) {
  auto slash = cidr.find('/');
  if (slash == std::string_view::npos) {
    return false;
  }
  std::string ip(cidr.substr(0, slash));
  int prefix = 0;
  try {
    prefix = std::stoi(std::string(cidr.substr(slash + 1)));
  } catch (const std::exception&) {
    return false;
  }
  in_addr a{};
  if (inet_pton(AF_INET, ip.c_str(), &a) != 1 || prefix < 8 || prefix > 30) {
    return false;
  }
  uint32_t mask = prefix == 0 ? 0 : ~uint32_t{0} << (32 - prefix);
  base = ntohl(a.s_addr) & mask;
  size = uint32_t{1} << (32 - prefix);
  return true;
}

std::string ip4(uint32_t v) {
  in_addr a{};
  a.s_addr = htonl(v);
  char buf[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

// A stable number for a node name: its trailing digits, else an FNV-1a hash.
uint64_t nodeIndex(std::string_view name) {
  size_t i = name.size();
  while (i > 0 && std::isdigit(static_cast<unsigned char>(name[i - 1]))) {
    --i;
  }
  if (i < name.size() && name.size() - i <= 9) {
    return std::stoull(std::string(name.substr(i)));
  }
  uint64_t h = 1469598103934665603ULL;
  for (char c : name) {
    h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  }
  return h;
}

std::string derivedIp(const std::string& cidr, uint64_t index) {
  uint32_t base = 0;
  uint32_t size = 0;
  if (!parseCidr4(cidr, base, size)) {
    return "";
  }
  uint32_t host = static_cast<uint32_t>(index % (size - 2)) + 1;
  return ip4(base + host);
}

bool isIpv4(std::string_view s) {
  in_addr a{};
  return inet_pton(AF_INET, std::string(s).c_str(), &a) == 1;
}

std::string routeName(std::string_view hint, std::string_view cidr) {
  std::string out = "route-" + std::string(hint) + "-";
  for (char c : cidr) {
    out.push_back(c == '/' || c == ':' || c == '.' ? '-' : c);
  }
  return out;
}

void addString(rapidjson::Value& obj, const char* key, const std::string& v,
               rapidjson::Document::AllocatorType& a) {
  obj.AddMember(rapidjson::StringRef(key), rapidjson::Value(v.c_str(), a), a);
}

std::string getString(const rapidjson::Value& obj, const char* key) {
  auto it = obj.FindMember(key);
  return it != obj.MemberEnd() && it->value.IsString() ? it->value.GetString() : "";
}

int64_t getInt(const rapidjson::Value& obj, const char* key) {
  auto it = obj.FindMember(key);
  return it != obj.MemberEnd() && it->value.IsInt64() ? it->value.GetInt64() : 0;
}

}  // namespace

std::string FakeCloud::defaultLoadBalancerName(std::string_view uid) {
  std::string out = "a";
  for (char c : uid) {
    if (c != '-') {
      out.push_back(c);
    }
  }
  if (out.size() > 32) {
    out.resize(32);
  }
  return out;
}

FakeCloud::FakeCloud(Config config, const sdk::Host& host) : config_(std::move(config)), host_(host) {
  if (!parseCidr4(config_.lb_ip_pool, pool_base_, pool_size_)) {
    throw ConfigError("loadBalancer.ipPool: \"" + config_.lb_ip_pool +
                      "\" is not an IPv4 CIDR between /8 and /30");
  }
  for (const auto& cidr : {config_.world.auto_instances.internal_cidr,
                           config_.world.auto_instances.external_cidr}) {
    uint32_t b = 0;
    uint32_t s = 0;
    if (!cidr.empty() && !parseCidr4(cidr, b, s)) {
      throw ConfigError("autoInstances: \"" + cidr + "\" is not an IPv4 CIDR between /8 and /30");
    }
  }
  world_ = std::make_shared<const World>(config_.world);
  if (!config_.cloud_file.empty()) {
    auto text = readFile(config_.cloud_file);
    if (!text) {
      throw ConfigError("cloudFile: cannot read \"" + config_.cloud_file + "\"");
    }
    world_ = std::make_shared<const World>(parseWorld(*text, config_.world, config_.cloud_file));
    struct stat st {};
    if (::stat(config_.cloud_file.c_str(), &st) == 0) {
      world_mtime_ns_ = mtimeNs(st);
    }
  }
  if (!config_.state_file.empty()) {
    std::lock_guard lock(state_mu_);
    int fd = ::open((config_.state_file + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd < 0) {
      throw ConfigError("stateFile: cannot create \"" + config_.state_file + ".lock\"");
    }
    ::close(fd);
    loadStateLocked();
  }
  tokens_ = world_->throttle.burst;
  tokens_at_ = std::chrono::steady_clock::now();
}

std::shared_ptr<const World> FakeCloud::world() {
  std::lock_guard lock(world_mu_);
  if (config_.cloud_file.empty()) {
    return world_;
  }
  auto now = std::chrono::steady_clock::now();
  if (now - world_checked_ < std::chrono::milliseconds(100)) {
    return world_;
  }
  world_checked_ = now;
  struct stat st {};
  if (::stat(config_.cloud_file.c_str(), &st) != 0 || mtimeNs(st) == world_mtime_ns_) {
    return world_;
  }
  auto text = readFile(config_.cloud_file);
  if (!text) {
    return world_;
  }
  try {
    world_ = std::make_shared<const World>(parseWorld(*text, config_.world, config_.cloud_file));
    world_mtime_ns_ = mtimeNs(st);
    host_.info("fake-cloud: reloaded " + config_.cloud_file);
  } catch (const ConfigError& e) {
    // Keep the last good world; a half-written file is retried at the next change.
    host_.warning(std::string("fake-cloud: ignoring invalid cloud file: ") + e.what());
  }
  return world_;
}

std::optional<sdk::Error> FakeCloud::enter(const sdk::Call& call, std::string_view op,
                                           std::string_view node,
                                           const std::shared_ptr<const World>& world_ptr) {
  const World& w = *world_ptr;
  host_.counterAdd("fake_cloud_calls_total", "Calls received by the fake cloud, by operation.",
                   {{"op", std::string(op)}}, 1);
  {
    std::lock_guard lock(faults_mu_);
    if (fault_world_ != world_ptr) {
      fault_world_ = world_ptr;
      fault_hits_.clear();
    }
    if (w.throttle.qps > 0) {
      auto now = std::chrono::steady_clock::now();
      double dt = std::chrono::duration<double>(now - tokens_at_).count();
      tokens_ = std::min(w.throttle.burst, tokens_ + dt * w.throttle.qps);
      tokens_at_ = now;
      if (tokens_ < 1) {
        host_.counterAdd("fake_cloud_throttled_total", "Calls refused by injected throttling.",
                         {{"op", std::string(op)}}, 1);
        return Error::throttled("fake-cloud: request rate exceeded", w.throttle.retry_after);
      }
      tokens_ -= 1;
    }
    for (size_t i = 0; i < w.faults.size(); ++i) {
      const Fault& f = w.faults[i];
      if (f.op != "*" && f.op != op) {
        continue;
      }
      if (!f.nodes.empty() &&
          std::find(f.nodes.begin(), f.nodes.end(), node) == f.nodes.end()) {
        continue;
      }
      if (f.count >= 0 && fault_hits_[i] >= f.count) {
        continue;
      }
      if (f.probability < 1.0 &&
          std::uniform_real_distribution<double>(0, 1)(rng_) >= f.probability) {
        continue;
      }
      ++fault_hits_[i];
      return Error(f.code, f.message, f.retry_after);
    }
  }
  std::chrono::milliseconds latency{0};
  if (auto it = w.latency.find(op); it != w.latency.end()) {
    latency = it->second;
  } else if (auto star = w.latency.find("*"); star != w.latency.end()) {
    latency = star->second;
  }
  if (latency.count() > 0) {
    auto until = std::chrono::steady_clock::now() + latency;
    while (std::chrono::steady_clock::now() < until) {
      if (!w.latency_ignores_deadline && call.cancelled()) {
        return Error::deadlineExceeded("fake-cloud: call cancelled while waiting on the cloud");
      }
      auto left = until - std::chrono::steady_clock::now();
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
          left, std::chrono::milliseconds(5)));
    }
  }
  return std::nullopt;
}

FakeCloud::Resolved FakeCloud::resolve(const World& w, const sdk::NodeView& node) const {
  std::string name(node.name());
  std::string_view pid = node.providerId();
  if (!pid.empty()) {
    for (const auto& spec : w.instances) {
      std::string spec_pid = spec.provider_id.empty() ? w.provider_id_prefix + spec.name
                                                      : spec.provider_id;
      if (spec_pid == pid) {
        return {true, spec};
      }
    }
    if (pid.substr(0, w.provider_id_prefix.size()) != w.provider_id_prefix) {
      return {};
    }
    name = std::string(pid.substr(w.provider_id_prefix.size()));
  }
  for (const auto& spec : w.instances) {
    if (spec.name == name) {
      std::string spec_pid = spec.provider_id.empty() ? w.provider_id_prefix + spec.name
                                                      : spec.provider_id;
      if (!pid.empty() && spec_pid != pid) {
        return {};  // the node claims a machine that is not this one
      }
      return {true, spec};
    }
  }
  const AutoInstances& a = w.auto_instances;
  if (!a.enabled) {
    return {};
  }
  Resolved r;
  r.listed = true;
  InstanceSpec& s = r.spec;
  s.name = name;
  uint64_t index = nodeIndex(name);
  s.type = a.type;
  s.region = a.region;
  if (!a.zones.empty()) {
    s.zone = a.zones[index % a.zones.size()];
  }
  std::string internal;
  if (auto provided = node.annotation(kProvidedNodeIp)) {
    std::string_view first = provided->substr(0, provided->find(','));
    if (isIpv4(first)) {
      internal = std::string(first);
    }
  }
  if (internal.empty()) {
    for (const auto& addr : node.addresses()) {
      if (addr.type == "InternalIP" && isIpv4(addr.address)) {
        internal = std::string(addr.address);
        break;
      }
    }
  }
  if (internal.empty()) {
    internal = derivedIp(a.internal_cidr, index);
  }
  s.addresses.push_back({"InternalIP", internal});
  if (!a.external_cidr.empty()) {
    s.addresses.push_back({"ExternalIP", derivedIp(a.external_cidr, index)});
  }
  if (a.hostname_address) {
    s.addresses.push_back({"Hostname", name});
  }
  s.labels = a.labels;
  return r;
}

sdk::Result<sdk::InstanceMetadata> FakeCloud::metadataFor(const World& w,
                                                          const sdk::NodeView& node) const {
  Resolved r = resolve(w, node);
  if (!r.listed) {
    if (w.unknown_when_unlisted) {
      return Error::unavailable("fake-cloud: cannot tell whether " + std::string(node.name()) +
                                " exists");
    }
    return Error::notFound("fake-cloud: no instance for node " + std::string(node.name()));
  }
  switch (r.spec.state) {
    case InstanceState::Absent:
      return Error::notFound("fake-cloud: instance " + r.spec.name + " does not exist");
    case InstanceState::Unknown:
      return Error::unavailable("fake-cloud: state of instance " + r.spec.name + " is unknown");
    case InstanceState::Running:
    case InstanceState::Shutdown:
      break;
  }
  sdk::InstanceMetadata m;
  m.provider_id = r.spec.provider_id.empty() ? w.provider_id_prefix + r.spec.name
                                             : r.spec.provider_id;
  m.instance_type = r.spec.type;
  m.zone = r.spec.zone;
  m.region = r.spec.region.empty() ? w.region : r.spec.region;
  m.addresses = r.spec.addresses;
  m.additional_labels = r.spec.labels;
  return m;
}

sdk::Result<sdk::Existence> FakeCloud::exists(const sdk::Call& call, const sdk::NodeView& node) {
  auto w = world();
  if (auto err = enter(call, "exists", node.name(), w)) {
    return *err;
  }
  auto m = metadataFor(*w, node);
  if (m.ok()) {
    return sdk::Existence::Exists;
  }
  if (m.error().code() == CCM_STATUS_NOT_FOUND) {
    return sdk::Existence::NotFound;
  }
  return m.error();
}

sdk::Result<sdk::Power> FakeCloud::shutdown(const sdk::Call& call, const sdk::NodeView& node) {
  auto w = world();
  if (auto err = enter(call, "shutdown", node.name(), w)) {
    return *err;
  }
  auto m = metadataFor(*w, node);
  if (!m.ok()) {
    return m.error();
  }
  Resolved r = resolve(*w, node);
  return r.spec.state == InstanceState::Shutdown ? sdk::Power::Shutdown : sdk::Power::Running;
}

sdk::Result<std::optional<sdk::InstanceMetadata>> FakeCloud::metadata(const sdk::Call& call,
                                                                      const sdk::NodeView& node) {
  auto w = world();
  if (auto err = enter(call, "metadata", node.name(), w)) {
    return *err;
  }
  auto m = metadataFor(*w, node);
  if (!m.ok()) {
    return m.error();
  }
  return std::optional<sdk::InstanceMetadata>(std::move(m).value());
}

sdk::Result<std::vector<sdk::Result<sdk::InstanceMetadata>>> FakeCloud::metadataBatch(
    const sdk::Call& call, std::span<const sdk::NodeView> nodes) {
  auto w = world();
  if (auto err = enter(call, "batch", "", w)) {
    return *err;
  }
  std::vector<sdk::Result<sdk::InstanceMetadata>> out;
  out.reserve(nodes.size());
  std::lock_guard lock(faults_mu_);
  for (const auto& node : nodes) {
    // Per-node faults of the "metadata" operation apply inside a batch too.
    std::optional<Error> node_fault;
    for (size_t i = 0; i < w->faults.size() && !node_fault; ++i) {
      const Fault& f = w->faults[i];
      if ((f.op == "metadata" || f.op == "batch") && !f.nodes.empty() &&
          std::find(f.nodes.begin(), f.nodes.end(), node.name()) != f.nodes.end()) {
        node_fault = Error(f.code, f.message, f.retry_after);
      }
    }
    if (node_fault) {
      out.emplace_back(*node_fault);
    } else {
      out.push_back(metadataFor(*w, node));
    }
  }
  return out;
}

// ---- state -----------------------------------------------------------------------------------

template <typename Fn>
auto FakeCloud::withState(Fn&& fn) {
  std::lock_guard lock(state_mu_);
  int lock_fd = -1;
  if (!config_.state_file.empty()) {
    lock_fd = ::open((config_.state_file + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (lock_fd >= 0) {
      ::flock(lock_fd, LOCK_EX);
    }
    loadStateLocked();
  }
  struct Unlock {
    int fd;
    ~Unlock() {
      if (fd >= 0) {
        ::flock(fd, LOCK_UN);
        ::close(fd);
      }
    }
  } unlock{lock_fd};
  bool changed = false;
  auto result = fn(state_, changed);
  if (changed && !config_.state_file.empty()) {
    saveStateLocked();
  }
  return result;
}

void FakeCloud::loadStateLocked() {
  struct stat st {};
  if (::stat(config_.state_file.c_str(), &st) != 0) {
    return;  // no state yet: an empty cloud
  }
  if (mtimeNs(st) == state_mtime_ns_ && st.st_size == state_size_) {
    return;
  }
  auto text = readFile(config_.state_file);
  if (!text) {
    return;
  }
  rapidjson::Document doc;
  doc.Parse(text->c_str());
  if (doc.HasParseError() || !doc.IsObject()) {
    host_.error("fake-cloud: state file " + config_.state_file + " is not valid JSON; ignoring");
    return;
  }
  CloudState s;
  if (auto it = doc.FindMember("loadBalancers"); it != doc.MemberEnd() && it->value.IsArray()) {
    for (const auto& v : it->value.GetArray()) {
      if (!v.IsObject()) {
        continue;
      }
      LoadBalancerRecord lb;
      lb.name = getString(v, "name");
      lb.cluster = getString(v, "cluster");
      lb.namespace_name = getString(v, "namespace");
      lb.service = getString(v, "service");
      lb.uid = getString(v, "uid");
      lb.ip = getString(v, "ip");
      lb.hostname = getString(v, "hostname");
      lb.ensures = getInt(v, "ensures");
      lb.host_updates = getInt(v, "hostUpdates");
      if (auto p = v.FindMember("ports"); p != v.MemberEnd() && p->value.IsArray()) {
        for (const auto& pv : p->value.GetArray()) {
          lb.ports.push_back({getString(pv, "name"), getString(pv, "protocol"),
                              static_cast<int32_t>(getInt(pv, "port")),
                              static_cast<int32_t>(getInt(pv, "nodePort"))});
        }
      }
      for (const char* key : {"nodes", "sourceRanges"}) {
        auto& dst = std::string_view(key) == "nodes" ? lb.nodes : lb.source_ranges;
        if (auto n = v.FindMember(key); n != v.MemberEnd() && n->value.IsArray()) {
          for (const auto& nv : n->value.GetArray()) {
            if (nv.IsString()) {
              dst.emplace_back(nv.GetString());
            }
          }
        }
      }
      s.load_balancers[lb.name] = std::move(lb);
    }
  }
  if (auto it = doc.FindMember("routes"); it != doc.MemberEnd() && it->value.IsArray()) {
    for (const auto& v : it->value.GetArray()) {
      RouteRecord r{getString(v, "name"), getString(v, "cluster"), getString(v, "targetNode"),
                    getString(v, "destinationCIDR"), getString(v, "nameHint")};
      s.routes[r.destination_cidr] = std::move(r);
    }
  }
  if (auto it = doc.FindMember("stats"); it != doc.MemberEnd() && it->value.IsObject()) {
    s.lb_creates = getInt(it->value, "lbCreates");
    s.lb_deletes = getInt(it->value, "lbDeletes");
    s.route_creates = getInt(it->value, "routeCreates");
    s.route_deletes = getInt(it->value, "routeDeletes");
    s.duplicate_route_creates = getInt(it->value, "duplicateRouteCreates");
  }
  state_ = std::move(s);
  state_mtime_ns_ = mtimeNs(st);
  state_size_ = st.st_size;
}

void FakeCloud::saveStateLocked() {
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  rapidjson::Value lbs(rapidjson::kArrayType);
  for (const auto& [name, lb] : state_.load_balancers) {
    rapidjson::Value v(rapidjson::kObjectType);
    addString(v, "name", lb.name, a);
    addString(v, "cluster", lb.cluster, a);
    addString(v, "namespace", lb.namespace_name, a);
    addString(v, "service", lb.service, a);
    addString(v, "uid", lb.uid, a);
    addString(v, "ip", lb.ip, a);
    addString(v, "hostname", lb.hostname, a);
    v.AddMember("ensures", lb.ensures, a);
    v.AddMember("hostUpdates", lb.host_updates, a);
    rapidjson::Value ports(rapidjson::kArrayType);
    for (const auto& p : lb.ports) {
      rapidjson::Value pv(rapidjson::kObjectType);
      addString(pv, "name", p.name, a);
      addString(pv, "protocol", p.protocol, a);
      pv.AddMember("port", p.port, a);
      pv.AddMember("nodePort", p.node_port, a);
      ports.PushBack(pv, a);
    }
    v.AddMember("ports", ports, a);
    rapidjson::Value nodes(rapidjson::kArrayType);
    for (const auto& n : lb.nodes) {
      nodes.PushBack(rapidjson::Value(n.c_str(), a), a);
    }
    v.AddMember("nodes", nodes, a);
    rapidjson::Value ranges(rapidjson::kArrayType);
    for (const auto& r : lb.source_ranges) {
      ranges.PushBack(rapidjson::Value(r.c_str(), a), a);
    }
    v.AddMember("sourceRanges", ranges, a);
    lbs.PushBack(v, a);
  }
  doc.AddMember("loadBalancers", lbs, a);
  rapidjson::Value routes(rapidjson::kArrayType);
  for (const auto& [cidr, r] : state_.routes) {
    rapidjson::Value v(rapidjson::kObjectType);
    addString(v, "name", r.name, a);
    addString(v, "cluster", r.cluster, a);
    addString(v, "targetNode", r.target_node, a);
    addString(v, "destinationCIDR", r.destination_cidr, a);
    addString(v, "nameHint", r.name_hint, a);
    routes.PushBack(v, a);
  }
  doc.AddMember("routes", routes, a);
  rapidjson::Value stats(rapidjson::kObjectType);
  stats.AddMember("lbCreates", state_.lb_creates, a);
  stats.AddMember("lbDeletes", state_.lb_deletes, a);
  stats.AddMember("routeCreates", state_.route_creates, a);
  stats.AddMember("routeDeletes", state_.route_deletes, a);
  stats.AddMember("duplicateRouteCreates", state_.duplicate_route_creates, a);
  doc.AddMember("stats", stats, a);
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buf);
  doc.Accept(writer);

  // Write-then-rename so a reader never sees half a file.
  std::string tmp = config_.state_file + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(buf.GetString(), static_cast<std::streamsize>(buf.GetSize()));
    out.put('\n');
    if (!out) {
      host_.error("fake-cloud: cannot write state file " + tmp);
      return;
    }
  }
  if (std::rename(tmp.c_str(), config_.state_file.c_str()) != 0) {
    host_.error("fake-cloud: cannot replace state file " + config_.state_file);
    return;
  }
  struct stat st {};
  if (::stat(config_.state_file.c_str(), &st) == 0) {
    state_mtime_ns_ = mtimeNs(st);
    state_size_ = st.st_size;
  }
}

CloudState FakeCloud::snapshotState() {
  return withState([](CloudState& s, bool&) { return s; });
}

std::optional<std::string> FakeCloud::allocateIpLocked(std::string_view wanted) {
  std::set<std::string> used;
  for (const auto& [_, lb] : state_.load_balancers) {
    used.insert(lb.ip);
  }
  if (!wanted.empty()) {
    uint32_t w = 0;
    in_addr a{};
    if (inet_pton(AF_INET, std::string(wanted).c_str(), &a) != 1) {
      return std::nullopt;
    }
    w = ntohl(a.s_addr);
    if (w <= pool_base_ || w >= pool_base_ + pool_size_ - 1 || used.count(std::string(wanted))) {
      return std::nullopt;
    }
    return std::string(wanted);
  }
  for (uint32_t i = 1; i + 1 < pool_size_; ++i) {
    std::string ip = ip4(pool_base_ + i);
    if (used.count(ip) == 0) {
      return ip;
    }
  }
  return std::nullopt;
}

sdk::LoadBalancerStatus FakeCloud::statusOf(const LoadBalancerRecord& lb) const {
  sdk::LoadBalancerStatus s;
  sdk::Ingress in;
  in.ip = lb.ip;
  in.hostname = lb.hostname;
  s.ingress.push_back(std::move(in));
  return s;
}

// ---- load balancers ------------------------------------------------------------------------

sdk::Result<std::optional<sdk::LoadBalancerStatus>> FakeCloud::getLoadBalancer(
    const sdk::Call& call, std::string_view, const sdk::ServiceView& svc) {
  auto w = world();
  if (auto err = enter(call, "getLoadBalancer", "", w)) {
    return *err;
  }
  std::string name = defaultLoadBalancerName(svc.uid());
  return withState([&](CloudState& s, bool&) -> std::optional<sdk::LoadBalancerStatus> {
    auto it = s.load_balancers.find(name);
    if (it == s.load_balancers.end()) {
      return std::nullopt;
    }
    return statusOf(it->second);
  });
}

sdk::Result<std::string> FakeCloud::loadBalancerName(const sdk::Call& call, std::string_view,
                                                     const sdk::ServiceView& svc) {
  auto w = world();
  if (auto err = enter(call, "loadBalancerName", "", w)) {
    return *err;
  }
  return defaultLoadBalancerName(svc.uid());
}

sdk::Result<sdk::LoadBalancerStatus> FakeCloud::ensureLoadBalancer(
    const sdk::Call& call, std::string_view cluster, const sdk::ServiceView& svc,
    std::span<const sdk::NodeView> nodes) {
  auto w = world();
  if (auto err = enter(call, "ensureLoadBalancer", "", w)) {
    return *err;
  }
  if (svc.ports().empty()) {
    return Error::invalidArgument("fake-cloud: service " + std::string(svc.namespaceName()) + "/" +
                                  std::string(svc.name()) + " has no ports");
  }
  std::string name = defaultLoadBalancerName(svc.uid());
  return withState([&](CloudState& s, bool& changed) -> sdk::Result<sdk::LoadBalancerStatus> {
    auto it = s.load_balancers.find(name);
    if (it == s.load_balancers.end()) {
      auto ip = allocateIpLocked(svc.loadBalancerIp());
      if (!ip) {
        if (!svc.loadBalancerIp().empty()) {
          return Error::invalidArgument("fake-cloud: loadBalancerIP " +
                                        std::string(svc.loadBalancerIp()) +
                                        " is not a free address of pool " + config_.lb_ip_pool);
        }
        return Error::throttled("fake-cloud: load balancer address pool " + config_.lb_ip_pool +
                                    " is exhausted",
                                std::chrono::seconds(30));
      }
      LoadBalancerRecord lb;
      lb.name = name;
      lb.ip = *ip;
      if (!config_.lb_hostname_suffix.empty()) {
        lb.hostname = name + "." + config_.lb_hostname_suffix;
      }
      it = s.load_balancers.emplace(name, std::move(lb)).first;
      ++s.lb_creates;
    }
    LoadBalancerRecord& lb = it->second;
    lb.cluster = std::string(cluster);
    lb.namespace_name = std::string(svc.namespaceName());
    lb.service = std::string(svc.name());
    lb.uid = std::string(svc.uid());
    lb.ports.clear();
    for (const auto& p : svc.ports()) {
      lb.ports.push_back({std::string(p.name), std::string(p.protocol), p.port, p.node_port});
    }
    lb.nodes.clear();
    for (const auto& n : nodes) {
      lb.nodes.emplace_back(n.name());
    }
    lb.source_ranges.clear();
    for (auto r : svc.sourceRanges()) {
      lb.source_ranges.emplace_back(r);
    }
    ++lb.ensures;
    changed = true;
    return statusOf(lb);
  });
}

sdk::Status FakeCloud::updateLoadBalancer(const sdk::Call& call, std::string_view,
                                          const sdk::ServiceView& svc,
                                          std::span<const sdk::NodeView> nodes) {
  auto w = world();
  if (auto err = enter(call, "updateLoadBalancer", "", w)) {
    return *err;
  }
  std::string name = defaultLoadBalancerName(svc.uid());
  return withState([&](CloudState& s, bool& changed) -> sdk::Status {
    auto it = s.load_balancers.find(name);
    if (it == s.load_balancers.end()) {
      return Error::notFound("fake-cloud: load balancer " + name + " does not exist");
    }
    it->second.nodes.clear();
    for (const auto& n : nodes) {
      it->second.nodes.emplace_back(n.name());
    }
    ++it->second.host_updates;
    changed = true;
    return {};
  });
}

sdk::Status FakeCloud::deleteLoadBalancer(const sdk::Call& call, std::string_view,
                                          const sdk::ServiceView& svc) {
  auto w = world();
  if (auto err = enter(call, "deleteLoadBalancer", "", w)) {
    return *err;
  }
  std::string name = defaultLoadBalancerName(svc.uid());
  return withState([&](CloudState& s, bool& changed) -> sdk::Status {
    if (s.load_balancers.erase(name) > 0) {
      ++s.lb_deletes;
      changed = true;
    }
    return {};
  });
}

// ---- routes ----------------------------------------------------------------------------------

sdk::Result<std::vector<sdk::Route>> FakeCloud::listRoutes(const sdk::Call& call,
                                                           std::string_view cluster) {
  auto w = world();
  if (auto err = enter(call, "listRoutes", "", w)) {
    return *err;
  }
  return withState([&](CloudState& s, bool&) {
    std::vector<sdk::Route> out;
    for (const auto& [cidr, r] : s.routes) {
      if (r.cluster != cluster) {
        continue;
      }
      sdk::Route route;
      route.name = r.name;
      route.target_node = r.target_node;
      route.destination_cidr = r.destination_cidr;
      out.push_back(std::move(route));
    }
    return out;
  });
}

sdk::Status FakeCloud::createRoute(const sdk::Call& call, std::string_view cluster,
                                   std::string_view name_hint, const sdk::Route& route) {
  auto w = world();
  if (auto err = enter(call, "createRoute", route.target_node, w)) {
    return *err;
  }
  return withState([&](CloudState& s, bool& changed) -> sdk::Status {
    auto it = s.routes.find(route.destination_cidr);
    if (it != s.routes.end()) {
      if (it->second.target_node == route.target_node && it->second.cluster == cluster) {
        ++s.duplicate_route_creates;
        changed = true;
        return Error::alreadyExists("fake-cloud: route to " + route.target_node + " for " +
                                    route.destination_cidr + " already exists");
      }
      return Error::failedPrecondition("fake-cloud: destination " + route.destination_cidr +
                                       " is already routed to " + it->second.target_node);
    }
    RouteRecord r{routeName(name_hint, route.destination_cidr), std::string(cluster),
                  route.target_node, route.destination_cidr, std::string(name_hint)};
    s.routes.emplace(route.destination_cidr, std::move(r));
    ++s.route_creates;
    changed = true;
    return {};
  });
}

sdk::Status FakeCloud::deleteRoute(const sdk::Call& call, std::string_view cluster,
                                   const sdk::Route& route) {
  auto w = world();
  if (auto err = enter(call, "deleteRoute", route.target_node, w)) {
    return *err;
  }
  return withState([&](CloudState& s, bool& changed) -> sdk::Status {
    auto it = s.routes.find(route.destination_cidr);
    if (it != s.routes.end() && it->second.cluster == cluster) {
      s.routes.erase(it);
      ++s.route_deletes;
      changed = true;
    }
    return {};
  });
}

}  // namespace ccm::fakecloud
