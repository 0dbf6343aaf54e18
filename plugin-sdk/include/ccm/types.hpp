// ccm/types.hpp — C++ value types for the ccm plugin ABI, and conversions between them and the
// C structs of ccm/provider_abi.h. Header-only; used by the provider helper (ccm/provider.hpp),
// by the fake host for provider unit tests (ccm/testing/fake_host.hpp) and by the host itself.
//
// Everything lives in ccm::sdk::v1 (an inline namespace), so two SDK major versions cannot be
// mixed silently in one binary.
#pragma once

#if !defined(__cplusplus) || __cplusplus < 202002L
#error "ccm/types.hpp needs C++20: compile with -std=c++20 or later (CMake's ccm::plugin-sdk target sets it). A provider in C needs only ccm/provider_abi.h."
#endif

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ccm/provider_abi.h"

namespace ccm::sdk {
inline namespace v1 {

// ---- strings -------------------------------------------------------------------------------

inline std::string_view view(ccm_str s) {
  return (s.data != nullptr && s.size != 0) ? std::string_view(s.data, s.size)
                                            : std::string_view();
}
inline ccm_str str(std::string_view s) { return ccm_str{s.data(), s.size()}; }

// Copies an ABI struct the way the rules require: min(sender's struct_size, ours) bytes into
// a zeroed struct of our size; fields the sender did not know read as zero. A NULL pointer or
// a struct_size smaller than the size field itself yields an all-zero struct.
template <typename T>
T copyStruct(const T* in) {
  T out;
  std::memset(static_cast<void*>(&out), 0, sizeof(T));
  if (in == nullptr || in->struct_size < sizeof(uint32_t)) {
    return out;
  }
  size_t n = in->struct_size < sizeof(T) ? in->struct_size : sizeof(T);
  std::memcpy(static_cast<void*>(&out), static_cast<const void*>(in), n);
  out.struct_size = static_cast<uint32_t>(n);
  return out;
}

// True when the sender's struct (of the given struct_size) contains the field at
// offset+size. Used to check required slots: a short struct cannot provide a field past its
// end.
inline bool hasField(uint32_t struct_size, size_t offset, size_t size) {
  return offset + size <= struct_size;
}
#define CCM_SDK_HAS_FIELD(copy, field) \
  ::ccm::sdk::hasField((copy).struct_size, offsetof(decltype(copy), field), sizeof((copy).field))

// ---- errors ---------------------------------------------------------------------------------

// A failed call: one of the ABI's status codes, a message, and an optional retry-after.
// A provider may also tag an Error with a reason of its own (a short word such as "busy") to
// tell apart, inside the plugin, failures that share a code; the reason never reaches the host.
class Error {
 public:
  Error(ccm_status code, std::string message, std::chrono::milliseconds retry_after = {})
      : code_(code), message_(std::move(message)), retry_after_(retry_after) {}

  ccm_status code() const { return code_; }
  const std::string& message() const { return message_; }
  std::chrono::milliseconds retryAfter() const { return retry_after_; }
  const std::string& reason() const { return reason_; }

  // A copy whose message is "<prefix>: <message>"; code, retry-after and reason are kept.
  Error withPrefix(std::string_view prefix) const {
    Error e = *this;
    e.message_ = std::string(prefix) + ": " + message_;
    return e;
  }
  // A copy with this retry-after; code, message and reason are kept.
  Error withRetryAfter(std::chrono::milliseconds retry_after) const {
    Error e = *this;
    e.retry_after_ = retry_after;
    return e;
  }
  // A copy carrying this provider-internal reason (see above).
  Error withReason(std::string reason) const {
    Error e = *this;
    e.reason_ = std::move(reason);
    return e;
  }

  static Error invalidArgument(std::string m) { return {CCM_STATUS_INVALID_ARGUMENT, std::move(m)}; }
  static Error notFound(std::string m) { return {CCM_STATUS_NOT_FOUND, std::move(m)}; }
  static Error alreadyExists(std::string m) { return {CCM_STATUS_ALREADY_EXISTS, std::move(m)}; }
  static Error unavailable(std::string m, std::chrono::milliseconds ra = {}) {
    return {CCM_STATUS_UNAVAILABLE, std::move(m), ra};
  }
  static Error throttled(std::string m, std::chrono::milliseconds ra) {
    return {CCM_STATUS_RESOURCE_EXHAUSTED, std::move(m), ra};
  }
  static Error failedPrecondition(std::string m, std::chrono::milliseconds ra = {}) {
    return {CCM_STATUS_FAILED_PRECONDITION, std::move(m), ra};
  }
  static Error internal(std::string m) { return {CCM_STATUS_INTERNAL, std::move(m)}; }
  static Error unimplemented(std::string m) { return {CCM_STATUS_UNIMPLEMENTED, std::move(m)}; }
  static Error implementedElsewhere(std::string m) {
    return {CCM_STATUS_IMPLEMENTED_ELSEWHERE, std::move(m)};
  }
  static Error deadlineExceeded(std::string m) {
    return {CCM_STATUS_DEADLINE_EXCEEDED, std::move(m)};
  }
  static Error cancelled(std::string m) { return {CCM_STATUS_CANCELLED, std::move(m)}; }
  static Error permissionDenied(std::string m) {
    return {CCM_STATUS_PERMISSION_DENIED, std::move(m)};
  }
  static Error unauthenticated(std::string m) {
    return {CCM_STATUS_UNAUTHENTICATED, std::move(m)};
  }
  static Error aborted(std::string m) { return {CCM_STATUS_ABORTED, std::move(m)}; }

 private:
  ccm_status code_;
  std::string message_;
  std::chrono::milliseconds retry_after_;
  std::string reason_;
};


// The result of a call with no value: OK or an Error. code(), message(), retryAfter() and
// reason() read as CCM_STATUS_OK, "", 0 and "" when OK. An Error whose code is CCM_STATUS_OK
// is a bug: that Status reads as INTERNAL.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error)  // NOLINT(google-explicit-constructor)
      : error_(error.code() == CCM_STATUS_OK
                   ? Error::internal("an Error with code OK: " + error.message())
                   : std::move(error)) {}
  // The same as Status(Error(code, message, retry_after)), except that CCM_STATUS_OK gives
  // an OK Status.
  Status(ccm_status code, std::string message, std::chrono::milliseconds retry_after = {})
      : error_(code, code == CCM_STATUS_OK ? std::string() : std::move(message),
               code == CCM_STATUS_OK ? std::chrono::milliseconds(0) : retry_after) {}
  bool ok() const { return error_.code() == CCM_STATUS_OK; }
  // Precondition: !ok().
  const Error& error() const { return error_; }

  ccm_status code() const { return error_.code(); }
  const std::string& message() const { return error_.message(); }
  std::chrono::milliseconds retryAfter() const { return error_.retryAfter(); }
  const std::string& reason() const { return error_.reason(); }
  // OK stays OK; an Error gets "<prefix>: " before its message.
  Status withPrefix(std::string_view prefix) const {
    return ok() ? Status() : Status(error_.withPrefix(prefix));
  }

 private:
  Error error_{CCM_STATUS_OK, std::string()};
};

inline Status okStatus() { return {}; }

// A value or an Error. Built from a Status, it must be a failed one: an OK Status without a
// value is a bug and reads as INTERNAL. THREAD: as T.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}     // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  Result(const Status& status)                   // NOLINT(google-explicit-constructor)
      : v_(status.ok() ? Error::internal("Result built from an OK Status without a value")
                       : status.error()) {}
  bool ok() const { return v_.index() == 0; }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const Error& error() const { return std::get<1>(v_); }
  // OK with a value, else the Error as a Status (for code that passes failures on).
  Status status() const { return ok() ? Status() : Status(error()); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Error> v_;
};

// ---- value types ------------------------------------------------------------------------------

enum class Existence { Unknown = CCM_EXISTENCE_UNKNOWN, Exists = CCM_EXISTENCE_EXISTS,
                       NotFound = CCM_EXISTENCE_NOT_FOUND };
enum class Power { Unknown = CCM_POWER_UNKNOWN, Running = CCM_POWER_RUNNING,
                   Shutdown = CCM_POWER_SHUTDOWN };

struct NodeAddress {
  std::string type;     // "InternalIP", "ExternalIP", "Hostname", "InternalDNS", "ExternalDNS"
  std::string address;
  bool operator==(const NodeAddress&) const = default;
};

using Labels = std::vector<std::pair<std::string, std::string>>;

struct InstanceMetadata {
  std::string provider_id;
  std::string instance_type;
  std::string zone;
  std::string region;
  std::vector<NodeAddress> addresses;
  Labels additional_labels;
  bool operator==(const InstanceMetadata&) const = default;
};

struct PortStatus {
  int32_t port = 0;
  std::string protocol;
  std::string error;
  bool operator==(const PortStatus&) const = default;
};

struct Ingress {
  std::string ip;
  std::string hostname;
  std::string ip_mode;
  std::vector<PortStatus> ports;
  bool operator==(const Ingress&) const = default;
};

struct LoadBalancerStatus {
  std::vector<Ingress> ingress;
  // Since ABI 1.1: annotations the host sets on the Service, and annotation keys it removes,
  // all inside the plugin's declared annotation_domain (ccm/validation.hpp has the rules).
  // Ignored by a 1.0 host.
  Labels annotations;
  std::vector<std::string> removed_annotations;
  bool operator==(const LoadBalancerStatus&) const = default;
};

// ---- owning copies of the inputs ----------------------------------------------------------
// The helper (ccm/provider.hpp) passes Nodes and Services as views valid for one call;
// NodeView::toNode() and ServiceView::toService() copy them into these values for a provider
// that keeps them longer (across sub-steps, in a cache, on another thread).

// Labels and annotations of a Kubernetes object: keys are unique, looked up by key.
using StringMap = std::map<std::string, std::string>;

// status.nodeInfo of a Node.
struct NodeInfo {
  std::string machine_id;
  std::string system_uuid;
  std::string boot_id;
  std::string kernel_version;
  std::string os_image;
  std::string container_runtime_version;
  std::string kubelet_version;
  std::string operating_system;
  std::string architecture;
  bool operator==(const NodeInfo&) const = default;
};

struct Node {
  std::string name;
  std::string uid;
  std::string provider_id;  // spec.providerID; may be empty
  StringMap labels;
  StringMap annotations;
  std::vector<NodeAddress> addresses;  // status.addresses, in the host's order
  NodeInfo node_info;
  std::string object_json;  // empty unless the capability asked for it (wantsObjectJson)
  bool operator==(const Node&) const = default;
};

// One of spec.ports of a Service.
struct ServicePort {
  std::string name;
  std::string protocol;  // "TCP", "UDP" or "SCTP"
  int32_t port = 0;
  int32_t node_port = 0;  // 0 when not allocated
  std::string target_port;  // a number or a name, as text
  std::string app_protocol;
  bool operator==(const ServicePort&) const = default;
};

struct Service {
  std::string namespace_;  // trailing _: "namespace" is a C++ keyword
  std::string name;
  std::string uid;
  StringMap labels;
  StringMap annotations;
  std::string type;
  std::vector<ServicePort> ports;
  std::string load_balancer_ip;
  std::vector<std::string> source_ranges;
  std::string external_traffic_policy;  // "Cluster" or "Local"
  int32_t health_check_node_port = 0;   // 0 when unset
  std::vector<std::string> ip_families;  // "IPv4", "IPv6", in spec order
  std::string load_balancer_class;
  std::string session_affinity;
  std::string cluster_ip;
  LoadBalancerStatus current_status;  // status.loadBalancer
  // The whole Service as JSON (the host always sends it): for fields the ones above do not
  // carry, such as spec.ipFamilyPolicy.
  std::string object_json;
  bool operator==(const Service&) const = default;
};

struct Route {
  std::string name;
  std::string target_node;
  std::string destination_cidr;
  bool blackhole = false;
  bool enable_node_addresses = false;
  std::vector<NodeAddress> target_node_addresses;
  bool operator==(const Route&) const = default;
};

// ---- C -> C++ (the receiving side copies at once) --------------------------------------------

inline std::vector<NodeAddress> toAddresses(const ccm_node_address* a, size_t n) {
  std::vector<NodeAddress> out;
  if (a == nullptr) {
    return out;
  }
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    out.push_back({std::string(view(a[i].type)), std::string(view(a[i].address))});
  }
  return out;
}

inline Labels toLabels(const ccm_kv* kv, size_t n) {
  Labels out;
  if (kv == nullptr) {
    return out;
  }
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    out.emplace_back(std::string(view(kv[i].key)), std::string(view(kv[i].value)));
  }
  return out;
}

inline InstanceMetadata toInstanceMetadata(const ccm_instance_metadata* in) {
  ccm_instance_metadata m = copyStruct(in);
  InstanceMetadata out;
  out.provider_id = std::string(view(m.provider_id));
  out.instance_type = std::string(view(m.instance_type));
  out.zone = std::string(view(m.zone));
  out.region = std::string(view(m.region));
  out.addresses = toAddresses(m.addresses, m.address_count);
  out.additional_labels = toLabels(m.additional_labels, m.additional_label_count);
  return out;
}

// with_annotations: read the 1.1 fields (when the sender's struct_size covers them). The
// receiver passes false when the sender negotiated minor 0, whose struct has no such fields.
inline LoadBalancerStatus toLoadBalancerStatus(const ccm_lb_status* in,
                                               bool with_annotations = true) {
  ccm_lb_status s = copyStruct(in);
  LoadBalancerStatus out;
  if (with_annotations && CCM_SDK_HAS_FIELD(s, annotation_count)) {
    out.annotations = toLabels(s.annotations, s.annotation_count);
  }
  if (with_annotations && CCM_SDK_HAS_FIELD(s, removed_annotation_count) &&
      s.removed_annotations != nullptr) {
    out.removed_annotations.reserve(s.removed_annotation_count);
    for (size_t i = 0; i < s.removed_annotation_count; ++i) {
      out.removed_annotations.emplace_back(view(s.removed_annotations[i]));
    }
  }
  if (s.ingress == nullptr) {
    return out;
  }
  for (size_t i = 0; i < s.ingress_count; ++i) {
    if (s.ingress[i] == nullptr) {
      continue;
    }
    ccm_lb_ingress ing = copyStruct(s.ingress[i]);
    Ingress o;
    o.ip = std::string(view(ing.ip));
    o.hostname = std::string(view(ing.hostname));
    o.ip_mode = std::string(view(ing.ip_mode));
    if (ing.ports != nullptr) {
      for (size_t j = 0; j < ing.port_count; ++j) {
        if (ing.ports[j] == nullptr) {
          continue;
        }
        ccm_port_status p = copyStruct(ing.ports[j]);
        o.ports.push_back(
            {p.port, std::string(view(p.protocol)), std::string(view(p.error))});
      }
    }
    out.ingress.push_back(std::move(o));
  }
  return out;
}

inline Route toRoute(const ccm_route* in) {
  ccm_route r = copyStruct(in);
  Route out;
  out.name = std::string(view(r.name));
  out.target_node = std::string(view(r.target_node));
  out.destination_cidr = std::string(view(r.destination_cidr));
  out.blackhole = r.blackhole;
  out.enable_node_addresses = r.enable_node_addresses;
  out.target_node_addresses = toAddresses(r.target_node_addresses, r.target_node_address_count);
  return out;
}

// ---- C++ -> C (views into the C++ objects; valid while they live and are not modified) -------

// Holds a ccm_instance_metadata and the arrays it points to.
class CInstanceMetadata {
 public:
  explicit CInstanceMetadata(const InstanceMetadata& m) {
    for (const auto& a : m.addresses) {
      addresses_.push_back({str(a.type), str(a.address)});
    }
    for (const auto& [k, v] : m.additional_labels) {
      labels_.push_back({str(k), str(v)});
    }
    c_ = ccm_instance_metadata{sizeof(ccm_instance_metadata), str(m.provider_id),
                               str(m.instance_type),          str(m.zone),
                               str(m.region),                 addresses_.data(),
                               addresses_.size(),             labels_.data(),
                               labels_.size()};
  }
  CInstanceMetadata(const CInstanceMetadata&) = delete;
  CInstanceMetadata& operator=(const CInstanceMetadata&) = delete;
  const ccm_instance_metadata* get() const { return &c_; }

 private:
  std::vector<ccm_node_address> addresses_;
  std::vector<ccm_kv> labels_;
  ccm_instance_metadata c_{};
};

// Holds a ccm_lb_status and everything it points to.
class CLoadBalancerStatus {
 public:
  explicit CLoadBalancerStatus(const LoadBalancerStatus& s) {
    ports_.resize(s.ingress.size());
    port_ptrs_.resize(s.ingress.size());
    ingress_.reserve(s.ingress.size());
    for (size_t i = 0; i < s.ingress.size(); ++i) {
      const Ingress& in = s.ingress[i];
      for (const auto& p : in.ports) {
        ports_[i].push_back({sizeof(ccm_port_status), p.port, str(p.protocol), str(p.error)});
      }
      for (const auto& p : ports_[i]) {
        port_ptrs_[i].push_back(&p);
      }
      ingress_.push_back({sizeof(ccm_lb_ingress), str(in.ip), str(in.hostname), str(in.ip_mode),
                          port_ptrs_[i].data(), port_ptrs_[i].size()});
    }
    for (const auto& i : ingress_) {
      ingress_ptrs_.push_back(&i);
    }
    for (const auto& [k, v] : s.annotations) {
      annotations_.push_back({str(k), str(v)});
    }
    for (const auto& k : s.removed_annotations) {
      removed_.push_back(str(k));
    }
    c_ = ccm_lb_status{sizeof(ccm_lb_status), ingress_ptrs_.data(), ingress_ptrs_.size(),
                       annotations_.data(), annotations_.size(), removed_.data(),
                       removed_.size()};
  }
  CLoadBalancerStatus(const CLoadBalancerStatus&) = delete;
  CLoadBalancerStatus& operator=(const CLoadBalancerStatus&) = delete;
  const ccm_lb_status* get() const { return &c_; }

 private:
  std::vector<std::vector<ccm_port_status>> ports_;
  std::vector<std::vector<const ccm_port_status*>> port_ptrs_;
  std::vector<ccm_lb_ingress> ingress_;
  std::vector<const ccm_lb_ingress*> ingress_ptrs_;
  std::vector<ccm_kv> annotations_;
  std::vector<ccm_str> removed_;
  ccm_lb_status c_{};
};

// Holds a ccm_route and its address array.
class CRoute {
 public:
  explicit CRoute(const Route& r) {
    for (const auto& a : r.target_node_addresses) {
      addresses_.push_back({str(a.type), str(a.address)});
    }
    c_ = ccm_route{sizeof(ccm_route),     str(r.name),       str(r.target_node),
                   str(r.destination_cidr), r.blackhole,     r.enable_node_addresses,
                   addresses_.data(),      addresses_.size()};
  }
  CRoute(const CRoute&) = delete;
  CRoute& operator=(const CRoute&) = delete;
  const ccm_route* get() const { return &c_; }

 private:
  std::vector<ccm_node_address> addresses_;
  ccm_route c_{};
};

}  // namespace v1
}  // namespace ccm::sdk

// Early returns for Status/Result code (the names the SDK installs; use them or your own).
//   CCM_SDK_RETURN_IF_ERROR(expr): returns the Status of expr when it failed.
//   CCM_SDK_ASSIGN_OR_RETURN(lhs, expr): lhs = the value of the Result expr, or returns its
//   failure. lhs is a declaration ("auto x") or an lvalue.
#define CCM_SDK_CONCAT_INNER(a, b) a##b
#define CCM_SDK_CONCAT(a, b) CCM_SDK_CONCAT_INNER(a, b)
#define CCM_SDK_RETURN_IF_ERROR(expr)           \
  do {                                          \
    ::ccm::sdk::Status ccm_sdk_status_ = (expr); \
    if (!ccm_sdk_status_.ok()) {                \
      return ccm_sdk_status_;                   \
    }                                           \
  } while (false)
// NOLINTBEGIN(bugprone-macro-parentheses): tmp is the name this declares and lhs a declaration
// or an lvalue; neither may be wrapped in parentheses.
#define CCM_SDK_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) {                                    \
    return tmp.error();                               \
  }                                                   \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)
#define CCM_SDK_ASSIGN_OR_RETURN(lhs, expr) \
  CCM_SDK_ASSIGN_OR_RETURN_IMPL(CCM_SDK_CONCAT(ccm_sdk_result_, __LINE__), lhs, expr)
