// ServiceDecoder: SAX contexts and fields of core/v1 Service, the raw-JSON tee, and freezing
// into a Service.
#include "host/kube/objects/service_decoder.hpp"

#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <algorithm>
#include <limits>

#include "host/kube/objects/string_pool.hpp"

namespace ccm::kube {

using detail::Scalar;
using detail::SRef;

namespace {

enum Ctx : int {
  kPorts = detail::kCtxFirstFree,
  kPort,
  kSourceRanges,
  kIpFamilies,
  kExternalIps,
  kAffinityConfig,
  kClientIp,
  kLoadBalancer,
  kIngressList,
  kIngress,
  kIngressPorts,
  kIngressPort,
};

enum Field : int {
  kFType = detail::kFieldFirstFree,
  kFClusterIp,
  kFPorts,
  kFLbIp,
  kFSourceRanges,
  kFEtp,
  kFHcNodePort,
  kFIpFamilies,
  kFLbClass,
  kFAffinity,
  kFAffinityConfig,
  kFClientIp,
  kFTimeoutSeconds,
  kFExternalIps,
  kFName,
  kFProtocol,
  kFPort,
  kFNodePort,
  kFTargetPort,
  kFAppProtocol,
  kFLoadBalancer,
  kFIngress,
  kFIp,
  kFHostname,
  kFIpMode,
  kFError,
};

constexpr size_t kPoolEntries = 16384;

int32_t int32Of(const Scalar& v) {
  return v.isInt() ? static_cast<int32_t>(v.i) : 0;
}

}  // namespace

ServiceDecoder::ServiceDecoder() : pool_(std::make_shared<StringPool>(kPoolEntries)) {}

void ServiceDecoder::reset() {
  resetSax();
  if (pool_->full()) {
    pool_ = std::make_shared<StringPool>(kPoolEntries);
  }
  text_.clear();
  meta_.clear();
  type_ = cluster_ip_ = lb_ip_ = etp_ = lb_class_ = affinity_ = SRef{};
  has_lb_class_ = has_affinity_config_ = false;
  hc_node_port_ = affinity_timeout_ = 0;
  ports_.clear();
  source_ranges_.clear();
  ip_families_.clear();
  external_ips_.clear();
  ingress_.clear();
  port_statuses_.clear();
  raw_.Clear();
  writer_.Reset(raw_);
  tee_depth_ = 0;
  // Without JSON kept, the tee stays inside a "skipped container" that never closes: it
  // writes nothing.
  tee_skip_ = keep_json_ ? 0 : std::numeric_limits<int>::max() / 2;
  root_key_metadata_ = false;
  in_metadata_ = false;
}

std::string_view ServiceDecoder::key() {
  key_scratch_.assign(text_.view(meta_.ns));
  key_scratch_.push_back('/');
  key_scratch_.append(text_.view(meta_.name));
  return key_scratch_;
}

// ---- tee ------------------------------------------------------------------------------------

bool ServiceDecoder::teeScalar() {
  if (tee_skip_ == -1) {
    tee_skip_ = 0;
    return false;
  }
  return tee_skip_ == 0;
}

bool ServiceDecoder::teeOpen() {
  if (tee_skip_ == -1) {
    tee_skip_ = 1;
    return false;
  }
  if (tee_skip_ > 0) {
    ++tee_skip_;
    return false;
  }
  if (tee_depth_ == 1) {
    in_metadata_ = root_key_metadata_;
  }
  ++tee_depth_;
  return true;
}

bool ServiceDecoder::teeClose() {
  if (tee_skip_ > 0) {
    --tee_skip_;
    return false;
  }
  --tee_depth_;
  if (tee_depth_ == 1) {
    in_metadata_ = false;
  }
  return true;
}

bool ServiceDecoder::Null() {
  if (teeScalar()) {
    writer_.Null();
  }
  return Base::Null();
}
bool ServiceDecoder::Bool(bool b) {
  if (teeScalar()) {
    writer_.Bool(b);
  }
  return Base::Bool(b);
}
bool ServiceDecoder::Int(int i) {
  if (teeScalar()) {
    writer_.Int(i);
  }
  return Base::Int(i);
}
bool ServiceDecoder::Uint(unsigned u) {
  if (teeScalar()) {
    writer_.Uint(u);
  }
  return Base::Uint(u);
}
bool ServiceDecoder::Int64(int64_t i) {
  if (teeScalar()) {
    writer_.Int64(i);
  }
  return Base::Int64(i);
}
bool ServiceDecoder::Uint64(uint64_t u) {
  if (teeScalar()) {
    writer_.Uint64(u);
  }
  return Base::Uint64(u);
}
bool ServiceDecoder::Double(double d) {
  if (teeScalar()) {
    writer_.Double(d);
  }
  return Base::Double(d);
}
bool ServiceDecoder::String(const char* s, unsigned n, bool copy) {
  if (teeScalar()) {
    writer_.String(s, n, copy);
  }
  return Base::String(s, n, copy);
}
bool ServiceDecoder::StartObject() {
  if (teeOpen()) {
    writer_.StartObject();
  }
  return Base::StartObject();
}
bool ServiceDecoder::Key(const char* s, unsigned n, bool copy) {
  if (tee_skip_ == 0) {
    std::string_view k(s, n);
    if (tee_depth_ == 1) {
      root_key_metadata_ = k == "metadata";
    }
    if (tee_depth_ == 2 && in_metadata_ && k == "managedFields") {
      tee_skip_ = -1;
    } else {
      writer_.Key(s, n, copy);
    }
  }
  return Base::Key(s, n, copy);
}
bool ServiceDecoder::EndObject(unsigned members) {
  if (teeClose()) {
    writer_.EndObject();
  }
  return Base::EndObject(members);
}
bool ServiceDecoder::StartArray() {
  if (teeOpen()) {
    writer_.StartArray();
  }
  return Base::StartArray();
}
bool ServiceDecoder::EndArray(unsigned elements) {
  if (teeClose()) {
    writer_.EndArray();
  }
  return Base::EndArray(elements);
}

// ---- fields ---------------------------------------------------------------------------------

int ServiceDecoder::rootContext() {
  return detail::kCtxRoot;
}

int ServiceDecoder::key(int ctx, std::string_view k) {
  if (meta_.owns(ctx)) {
    return meta_.key(ctx, k, text_, *pool_);
  }
  switch (ctx) {
    case detail::kCtxRoot:
      return detail::rootKey(k);
    case detail::kCtxSpec:
      if (k == "type") {
        return kFType;
      }
      if (k == "clusterIP") {
        return kFClusterIp;
      }
      if (k == "ports") {
        return kFPorts;
      }
      if (k == "loadBalancerIP") {
        return kFLbIp;
      }
      if (k == "loadBalancerSourceRanges") {
        return kFSourceRanges;
      }
      if (k == "externalTrafficPolicy") {
        return kFEtp;
      }
      if (k == "healthCheckNodePort") {
        return kFHcNodePort;
      }
      if (k == "ipFamilies") {
        return kFIpFamilies;
      }
      if (k == "loadBalancerClass") {
        return kFLbClass;
      }
      if (k == "sessionAffinity") {
        return kFAffinity;
      }
      if (k == "sessionAffinityConfig") {
        return kFAffinityConfig;
      }
      if (k == "externalIPs") {
        return kFExternalIps;
      }
      return 0;
    case kPort:
      if (k == "name") {
        return kFName;
      }
      if (k == "protocol") {
        return kFProtocol;
      }
      if (k == "port") {
        return kFPort;
      }
      if (k == "nodePort") {
        return kFNodePort;
      }
      if (k == "targetPort") {
        return kFTargetPort;
      }
      if (k == "appProtocol") {
        return kFAppProtocol;
      }
      return 0;
    case kAffinityConfig:
      return k == "clientIP" ? kFClientIp : 0;
    case kClientIp:
      return k == "timeoutSeconds" ? kFTimeoutSeconds : 0;
    case detail::kCtxStatus:
      return k == "loadBalancer" ? kFLoadBalancer : 0;
    case kLoadBalancer:
      return k == "ingress" ? kFIngress : 0;
    case kIngress:
      if (k == "ip") {
        return kFIp;
      }
      if (k == "hostname") {
        return kFHostname;
      }
      if (k == "ipMode") {
        return kFIpMode;
      }
      if (k == "ports") {
        return kFPorts;
      }
      return 0;
    case kIngressPort:
      if (k == "port") {
        return kFPort;
      }
      if (k == "protocol") {
        return kFProtocol;
      }
      if (k == "error") {
        return kFError;
      }
      return 0;
    default:
      return 0;
  }
}

int ServiceDecoder::child(int ctx, int field, bool is_array) {
  if (meta_.owns(ctx)) {
    return meta_.child(ctx, field, is_array);
  }
  switch (ctx) {
    case detail::kCtxRoot:
      return detail::rootChild(field, is_array);
    case detail::kCtxSpec:
      if (is_array) {
        if (field == kFPorts) {
          return kPorts;
        }
        if (field == kFSourceRanges) {
          return kSourceRanges;
        }
        if (field == kFIpFamilies) {
          return kIpFamilies;
        }
        if (field == kFExternalIps) {
          return kExternalIps;
        }
        return 0;
      }
      if (field == kFAffinityConfig) {
        has_affinity_config_ = true;
        return kAffinityConfig;
      }
      return 0;
    case kPorts:
      if (is_array) {
        return 0;
      }
      port_ = RawPort{};
      return kPort;
    case kAffinityConfig:
      return !is_array && field == kFClientIp ? kClientIp : 0;
    case detail::kCtxStatus:
      return !is_array && field == kFLoadBalancer ? kLoadBalancer : 0;
    case kLoadBalancer:
      return is_array && field == kFIngress ? kIngressList : 0;
    case kIngressList:
      if (is_array) {
        return 0;
      }
      ingress_item_ = RawIngress{};
      ingress_item_.ports_begin = static_cast<uint32_t>(port_statuses_.size());
      return kIngress;
    case kIngress:
      return is_array && field == kFPorts ? kIngressPorts : 0;
    case kIngressPorts:
      if (is_array) {
        return 0;
      }
      port_status_ = RawPortStatus{};
      return kIngressPort;
    default:
      return 0;
  }
}

void ServiceDecoder::value(int ctx, int field, const Scalar& v) {
  if (meta_.owns(ctx)) {
    meta_.value(ctx, field, v, text_, *pool_);
    return;
  }
  StringPool& pool = *pool_;
  switch (ctx) {
    case detail::kCtxSpec:
      if (field == kFHcNodePort) {
        hc_node_port_ = int32Of(v);
        return;
      }
      if (field == kFLbClass) {
        has_lb_class_ = v.isString();
      }
      if (!v.isString()) {
        return;
      }
      switch (field) {
        case kFType:
          type_ = text_.intern(pool, v.s);
          break;
        case kFClusterIp:
          cluster_ip_ = text_.add(v.s);
          break;
        case kFLbIp:
          lb_ip_ = text_.add(v.s);
          break;
        case kFEtp:
          etp_ = text_.intern(pool, v.s);
          break;
        case kFLbClass:
          lb_class_ = text_.intern(pool, v.s);
          break;
        case kFAffinity:
          affinity_ = text_.intern(pool, v.s);
          break;
        default:
          break;
      }
      return;
    case kSourceRanges:
      if (v.isString()) {
        source_ranges_.push_back(text_.intern(pool, v.s));
      }
      return;
    case kIpFamilies:
      if (v.isString()) {
        ip_families_.push_back(text_.intern(pool, v.s));
      }
      return;
    case kExternalIps:
      if (v.isString()) {
        external_ips_.push_back(text_.add(v.s));
      }
      return;
    case kClientIp:
      if (field == kFTimeoutSeconds) {
        affinity_timeout_ = int32Of(v);
      }
      return;
    case kPort:
      switch (field) {
        case kFName:
          if (v.isString()) {
            port_.name = text_.intern(pool, v.s);
          }
          break;
        case kFProtocol:
          if (v.isString()) {
            port_.protocol = text_.intern(pool, v.s);
          }
          break;
        case kFAppProtocol:
          if (v.isString()) {
            port_.app_protocol = text_.intern(pool, v.s);
          }
          break;
        case kFPort:
          port_.port = int32Of(v);
          break;
        case kFNodePort:
          port_.node_port = int32Of(v);
          break;
        case kFTargetPort:
          if (v.isInt()) {
            port_.target_port = int32Of(v);
          } else if (v.isString()) {
            port_.target_name = text_.intern(pool, v.s);
          }
          break;
        default:
          break;
      }
      return;
    case kIngress:
      if (!v.isString()) {
        return;
      }
      if (field == kFIp) {
        ingress_item_.ip = text_.add(v.s);
      }
      if (field == kFHostname) {
        ingress_item_.hostname = text_.add(v.s);
      }
      if (field == kFIpMode) {
        ingress_item_.ip_mode = text_.intern(pool, v.s);
      }
      return;
    case kIngressPort:
      if (field == kFPort) {
        port_status_.port = int32Of(v);
      }
      if (field == kFProtocol && v.isString()) {
        port_status_.protocol = text_.intern(pool, v.s);
      }
      if (field == kFError && v.isString()) {
        port_status_.error = text_.intern(pool, v.s);
      }
      return;
    default:
      return;
  }
}

void ServiceDecoder::end(int ctx) {
  switch (ctx) {
    case kPort:
      ports_.push_back(port_);
      break;
    case kIngressPort:
      port_statuses_.push_back(port_status_);
      break;
    case kIngress:
      ingress_item_.ports_count =
          static_cast<uint32_t>(port_statuses_.size()) - ingress_item_.ports_begin;
      ingress_.push_back(ingress_item_);
      break;
    default:
      break;
  }
}

std::shared_ptr<const Service> ServiceDecoder::finish() {
  meta_.sort(text_);
  // The cache key "namespace/name" is stored once; namespace_ and name are views into it.
  uint32_t ns_len = meta_.ns.len;
  SRef key_ref = text_.add(key());
  SRef raw_ref =
      keep_json_ ? text_.add(std::string_view(raw_.GetString(), raw_.GetSize())) : SRef{};

  detail::Arena arena;
  size_t labels_off = arena.reserve<KeyValue>(meta_.labels.size());
  size_t annotations_off = arena.reserve<KeyValue>(meta_.annotations.size());
  size_t finalizers_off = arena.reserve<std::string_view>(meta_.finalizers.size());
  size_t ports_off = arena.reserve<ServicePort>(ports_.size());
  size_t ranges_off = arena.reserve<std::string_view>(source_ranges_.size());
  size_t families_off = arena.reserve<std::string_view>(ip_families_.size());
  size_t eips_off = arena.reserve<std::string_view>(external_ips_.size());
  size_t ingress_off = arena.reserve<LoadBalancerIngress>(ingress_.size());
  size_t pstat_off = arena.reserve<PortStatus>(port_statuses_.size());
  arena.allocate(text_.text());

  auto svc = std::make_shared<Service>();
  auto r = [&arena](SRef ref) { return arena.resolve(ref); };
  svc->key_ = r(key_ref);
  svc->namespace_ = svc->key_.substr(0, ns_len);
  svc->name = svc->key_.substr(ns_len + 1);
  svc->uid = r(meta_.uid);
  svc->resource_version = r(meta_.resource_version);
  svc->creation_timestamp = meta_.creation_timestamp;
  svc->deletion_timestamp = meta_.deletion_timestamp;
  auto kv = [&r](const detail::KV& e) { return KeyValue{r(e.key), r(e.value)}; };
  auto [lp, ln] = detail::fillArray<KeyValue>(arena, labels_off, meta_.labels, kv);
  svc->labels = {lp, ln};
  auto [ap, an] = detail::fillArray<KeyValue>(arena, annotations_off, meta_.annotations, kv);
  svc->annotations = {ap, an};
  auto [fp, fn] = detail::fillArray<std::string_view>(arena, finalizers_off, meta_.finalizers, r);
  svc->finalizers = {fp, fn};
  svc->type = r(type_);
  svc->cluster_ip = r(cluster_ip_);
  auto [pp, pn] = detail::fillArray<ServicePort>(arena, ports_off, ports_, [&r](const RawPort& p) {
    return ServicePort{r(p.name),   r(p.protocol), r(p.app_protocol), p.port,
                       p.node_port, p.target_port, r(p.target_name)};
  });
  svc->ports = {pp, pn};
  svc->load_balancer_ip = r(lb_ip_);
  auto [rp, rn] = detail::fillArray<std::string_view>(arena, ranges_off, source_ranges_, r);
  svc->load_balancer_source_ranges = {rp, rn};
  svc->external_traffic_policy = r(etp_);
  svc->health_check_node_port = hc_node_port_;
  auto [ip, in] = detail::fillArray<std::string_view>(arena, families_off, ip_families_, r);
  svc->ip_families = {ip, in};
  svc->has_load_balancer_class = has_lb_class_;
  svc->load_balancer_class = r(lb_class_);
  svc->session_affinity = r(affinity_);
  svc->has_session_affinity_config = has_affinity_config_;
  svc->session_affinity_timeout_seconds = affinity_timeout_;
  auto [ep, en] = detail::fillArray<std::string_view>(arena, eips_off, external_ips_, r);
  svc->external_ips = {ep, en};
  auto [sp, sn] =
      detail::fillArray<PortStatus>(arena, pstat_off, port_statuses_, [&r](const RawPortStatus& p) {
        return PortStatus{p.port, r(p.protocol), r(p.error)};
      });
  (void)sn;
  const PortStatus* statuses = sp;
  auto [gp, gn] = detail::fillArray<LoadBalancerIngress>(
      arena, ingress_off, ingress_, [&r, statuses](const RawIngress& g) {
        return LoadBalancerIngress{
            r(g.ip), r(g.hostname), r(g.ip_mode), {statuses + g.ports_begin, g.ports_count}};
      });
  svc->ingress = {gp, gn};
  svc->raw_json = r(raw_ref);
  svc->arena_bytes_ = arena.bytes() + text_.size();
  svc->arena_ = arena.release();
  svc->pool_ = pool_;
  return svc;
}

bool Service::hasFinalizer(std::string_view f) const {
  return std::find(finalizers.begin(), finalizers.end(), f) != finalizers.end();
}

ApiResult<std::shared_ptr<const Service>> decodeService(std::string_view json) {
  ServiceDecoder decoder;
  decoder.reset();
  rapidjson::Reader reader;
  rapidjson::MemoryStream ms(json.data(), json.size());
  rapidjson::ParseResult ok = reader.Parse(ms, decoder);
  if (!ok) {
    return ApiStatus(
        0, Reason::Decode,
        std::string("invalid Service JSON: ") + rapidjson::GetParseError_En(ok.Code()));
  }
  return decoder.finish();
}

}  // namespace ccm::kube
