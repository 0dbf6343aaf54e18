#include "host/plugin/isolation/dispatch.hpp"

#include <deque>
#include <memory>
#include <vector>

#include "host/plugin/isolation/values.hpp"
#include "host/plugin/isolation/wire.hpp"
#include "host/runtime/memory.hpp"

namespace ccm::plugin::isolation {

namespace {

// Nodes decoded from a list; refs() are views into them.
class NodeList {
 public:
  void decode(Reader& r) {
    uint32_t n = r.count(4);
    for (uint32_t i = 0; i < n && r.ok(); ++i) {
      nodes_.emplace_back().decode(r);
    }
    for (const auto& d : nodes_) {
      refs_.push_back(d.ref());
    }
  }
  std::span<const NodeRef> refs() const { return refs_; }

 private:
  std::deque<NodeData> nodes_;
  std::vector<NodeRef> refs_;
};

}  // namespace

struct HostSetCache::Hosts {
  std::string bytes;  // as sent: what a later call's hosts are compared with
  NodeList nodes;
  HostForms forms;
  SharedHosts shared() const { return {nodes.refs(), &forms}; }
};

HostSetCache::HostSetCache(std::chrono::steady_clock::duration idle) : idle_(idle) {}
HostSetCache::~HostSetCache() = default;

std::shared_ptr<const HostSetCache::Hosts> HostSetCache::take(Reader& r) {
  // One decode at a time: the calls of a wave arrive together, and each would otherwise
  // decode the same new hosts while the first is still at it.
  if (!r.ok()) {
    return nullptr;  // the call is refused before its hosts matter
  }
  std::lock_guard lock(mu_);
  std::string_view block = r.rest();
  used_ = std::chrono::steady_clock::now();
  if (kept_ && kept_->bytes == block) {
    r.skipRest();
    return kept_;
  }
  auto fresh = std::make_shared<Hosts>();
  fresh->nodes.decode(r);
  ++decodes_;
  if (r.ok() && r.rest().empty()) {
    fresh->bytes.assign(block);
    kept_ = fresh;
  }
  return fresh;
}

bool HostSetCache::dropIdle() {
  std::shared_ptr<Hosts> dropped;
  {
    std::lock_guard lock(mu_);
    if (!kept_ || std::chrono::steady_clock::now() - used_ < idle_) {
      return false;
    }
    dropped = std::move(kept_);
  }
  dropped.reset();  // a call still holding them frees them when it ends
  runtime::releaseFreeMemory();
  return true;
}

uint64_t HostSetCache::decodes() const {
  std::lock_guard lock(mu_);
  return decodes_;
}

namespace {

Writer reply(uint64_t id, const Status& s) {
  Writer w(FrameKind::Reply);
  w.u64(id);
  w.status(s);
  return w;
}

template <typename T, typename Put>
std::string replyWith(uint64_t id, const StatusOr<T>& result, Put put) {
  if (!result.ok()) {
    return reply(id, result.status()).payload();
  }
  Writer w = reply(id, okStatus());
  put(w, *result);
  return w.payload();
}

std::string replyStatus(uint64_t id, const Status& s) { return reply(id, s).payload(); }

}  // namespace

std::optional<uint64_t> callId(std::string_view payload) {
  Reader r(payload);
  if (r.u8() != static_cast<uint8_t>(FrameKind::Call)) {
    return std::nullopt;
  }
  uint64_t id = r.u64();
  if (!r.ok()) {
    return std::nullopt;
  }
  return id;
}

std::string serveCall(Provider& provider, std::string_view payload, HostSetCache* hosts) {
  Reader r(payload);
  r.u8();  // the kind, checked by the caller
  uint64_t id = r.u64();
  uint8_t method = r.u8();
  if (r.ok() && (method == 0 || method > kLastMethod)) {
    r.fail("unknown method " + std::to_string(method));
  }
  // The arguments, decoded first: nothing reaches the provider unless all of them read.
  NodeData node;
  NodeList nodes;
  std::shared_ptr<const HostSetCache::Hosts> kept;  // the hosts from `hosts`, when given
  ServiceData service;
  std::string cluster;
  std::string text;
  Route route;
  auto m = static_cast<Method>(method);
  switch (m) {
    case Method::InstanceExists:
    case Method::InstanceShutdown:
    case Method::InstanceMetadata:
      node.decode(r);
      break;
    case Method::InstanceMetadataBatch:
      nodes.decode(r);
      break;
    case Method::GetLoadBalancer:
    case Method::GetLoadBalancerName:
    case Method::EnsureLoadBalancerDeleted:
      cluster = r.str();
      service.decode(r);
      break;
    case Method::EnsureLoadBalancer:
    case Method::UpdateLoadBalancer:
      cluster = r.str();
      service.decode(r);
      if (hosts != nullptr) {
        kept = hosts->take(r);
      } else {
        nodes.decode(r);
      }
      break;
    case Method::ListRoutes:
      cluster = r.str();
      break;
    case Method::CreateRoute:
      cluster = r.str();
      text = r.str();
      route = getRoute(r);
      break;
    case Method::DeleteRoute:
      cluster = r.str();
      route = getRoute(r);
      break;
    case Method::Reconfigure:
      text = r.str();
      break;
  }
  if (Status s = r.finish(); !s.ok()) {
    return replyStatus(id, s);
  }
  switch (m) {
    case Method::InstanceExists:
      return replyWith(id, provider.instanceExists(node.ref()),
                       [](Writer& w, Existence e) { w.u8(static_cast<uint8_t>(e)); });
    case Method::InstanceShutdown:
      return replyWith(id, provider.instanceShutdown(node.ref()),
                       [](Writer& w, Power p) { w.u8(static_cast<uint8_t>(p)); });
    case Method::InstanceMetadata:
      return replyWith(id, provider.instanceMetadata(node.ref()),
                       [](Writer& w, const std::optional<InstanceMetadata>& md) {
                         w.boolean(md.has_value());
                         if (md) {
                           putMetadata(w, *md);
                         }
                       });
    case Method::InstanceMetadataBatch:
      return replyWith(id, provider.instanceMetadataBatch(nodes.refs()),
                       [](Writer& w, const std::vector<MetadataResult>& results) {
                         w.u32(static_cast<uint32_t>(results.size()));
                         for (const auto& one : results) {
                           w.status(one.ok() ? okStatus() : one.status());
                           if (one.ok()) {
                             putMetadata(w, *one);
                           }
                         }
                       });
    case Method::GetLoadBalancer:
      return replyWith(id, provider.getLoadBalancer(cluster, service.ref()),
                       [](Writer& w, const std::optional<LoadBalancerStatus>& st) {
                         w.boolean(st.has_value());
                         if (st) {
                           putLoadBalancerStatus(w, *st);
                         }
                       });
    case Method::GetLoadBalancerName:
      return replyWith(id, provider.getLoadBalancerName(cluster, service.ref()),
                       [](Writer& w, const std::string& name) { w.str(name); });
    case Method::EnsureLoadBalancer:
      return replyWith(id,
                       provider.ensureLoadBalancerShared(
                           cluster, service.ref(),
                           kept ? kept->shared() : SharedHosts{nodes.refs(), nullptr}),
                       [](Writer& w, const LoadBalancerStatus& st) {
                         putLoadBalancerStatus(w, st);
                       });
    case Method::UpdateLoadBalancer:
      return replyStatus(id, provider.updateLoadBalancerShared(
                                 cluster, service.ref(),
                                 kept ? kept->shared() : SharedHosts{nodes.refs(), nullptr}));
    case Method::EnsureLoadBalancerDeleted:
      return replyStatus(id, provider.ensureLoadBalancerDeleted(cluster, service.ref()));
    case Method::ListRoutes:
      return replyWith(id, provider.listRoutes(cluster),
                       [](Writer& w, const std::vector<Route>& routes) {
                         w.u32(static_cast<uint32_t>(routes.size()));
                         for (const auto& one : routes) {
                           putRoute(w, one);
                         }
                       });
    case Method::CreateRoute:
      return replyStatus(id, provider.createRoute(cluster, text, route));
    case Method::DeleteRoute:
      return replyStatus(id, provider.deleteRoute(cluster, route));
    case Method::Reconfigure:
      return replyStatus(id, provider.reconfigure(text));
  }
  return replyStatus(id, Status(Code::Internal, "unreachable"));
}

}  // namespace ccm::plugin::isolation
