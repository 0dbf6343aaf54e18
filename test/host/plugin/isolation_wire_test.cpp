// The isolation wire (host/plugin/isolation): framing, values, and the child's dispatch of
// one call. Malformed input is refused with a message and never crashes.
#include <sys/socket.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <array>
#include <chrono>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "host/plugin/isolation/dispatch.hpp"
#include "host/plugin/isolation/values.hpp"
#include "host/plugin/isolation/wire.hpp"

using namespace ccm;
using namespace ccm::plugin;
using namespace ccm::plugin::isolation;

namespace {

// Records what it was given and answers with fixed values.
class RecordingProvider final : public Provider {
 public:
  RecordingProvider() { info_.name = "recording"; }
  const ProviderInfo& info() const override { return info_; }
  StatusOr<Existence> instanceExists(const NodeRef& node) override {
    record(node);
    return Existence::NotFound;
  }
  StatusOr<Power> instanceShutdown(const NodeRef& node) override {
    record(node);
    return Status(Code::ResourceExhausted, "slow down", std::chrono::milliseconds(1500));
  }
  StatusOr<std::optional<InstanceMetadata>> instanceMetadata(const NodeRef& node) override {
    record(node);
    InstanceMetadata md;
    md.provider_id = "rec://" + std::string(node.name);
    md.zone = "zone-a";
    md.addresses = {{"InternalIP", "10.0.0.1"}, {"Hostname", std::string(node.name)}};
    md.additional_labels = {{"k", "v"}};
    return std::optional<InstanceMetadata>(md);
  }
  StatusOr<std::vector<MetadataResult>> instanceMetadataBatch(
      std::span<const NodeRef> nodes) override {
    std::vector<MetadataResult> out;
    for (const auto& n : nodes) {
      record(n);
      if (n.name == "missing") {
        out.emplace_back(Status(Code::NotFound, "no such instance"));
      } else {
        InstanceMetadata md;
        md.provider_id = "rec://" + std::string(n.name);
        out.emplace_back(md);
      }
    }
    return out;
  }
  StatusOr<std::optional<LoadBalancerStatus>> getLoadBalancer(std::string_view cluster,
                                                              const ServiceRef& s) override {
    cluster_ = cluster;
    service_name_ = s.name;
    had_status_ = s.current_status != nullptr;
    if (s.current_status != nullptr) {
      seen_status_ = *s.current_status;
    }
    return std::optional<LoadBalancerStatus>();
  }
  StatusOr<std::string> getLoadBalancerName(std::string_view, const ServiceRef& s) override {
    return "lb-" + std::string(s.uid);
  }
  StatusOr<LoadBalancerStatus> ensureLoadBalancer(std::string_view, const ServiceRef& s,
                                                  std::span<const NodeRef> nodes) override {
    ports_ = s.ports.size();
    for (const auto& n : nodes) {
      record(n);
    }
    LoadBalancerStatus st;
    st.ingress.push_back({"192.0.2.1", "", "VIP", {{80, "TCP", ""}}});
    st.annotations = {{"example.com/id", "lb-1"}};
    st.removed_annotations = {"example.com/old"};
    return st;
  }
  Status updateLoadBalancer(std::string_view, const ServiceRef&,
                            std::span<const NodeRef> nodes) override {
    for (const auto& n : nodes) {
      record(n);
    }
    return okStatus();
  }
  // Shared host sets: the forms each call came with, and how often a form was built in them
  // (once per set, as the plugin adapter builds its C form).
  StatusOr<LoadBalancerStatus> ensureLoadBalancerShared(std::string_view cluster,
                                                        const ServiceRef& s,
                                                        const SharedHosts& hosts) override {
    noteShared(hosts);
    return ensureLoadBalancer(cluster, s, hosts.refs);
  }
  Status updateLoadBalancerShared(std::string_view cluster, const ServiceRef& s,
                                  const SharedHosts& hosts) override {
    noteShared(hosts);
    return updateLoadBalancer(cluster, s, hosts.refs);
  }
  Status ensureLoadBalancerDeleted(std::string_view, const ServiceRef&) override {
    return Status(Code::Unavailable, "cloud down");
  }
  StatusOr<std::vector<Route>> listRoutes(std::string_view) override {
    Route r;
    r.name = "r1";
    r.target_node = "n1";
    r.destination_cidr = "10.244.0.0/24";
    r.blackhole = true;
    r.target_node_addresses = {{"InternalIP", "10.0.0.1"}};
    return std::vector<Route>{r};
  }
  Status createRoute(std::string_view, std::string_view hint, const Route& r) override {
    hint_ = hint;
    route_ = r;
    return okStatus();
  }
  Status deleteRoute(std::string_view, const Route& r) override {
    route_ = r;
    return okStatus();
  }
  void cancelAll() override {}
  Status reconfigure(std::string_view config) override {
    config_ = config;
    return okStatus();
  }

  int calls_ = 0;
  std::vector<std::string> node_names_;
  std::vector<std::string> labels_;
  std::string machine_id_;
  std::string cluster_;
  std::string service_name_;
  bool had_status_ = false;
  LoadBalancerStatus seen_status_;
  size_t ports_ = 0;
  std::string hint_;
  Route route_;
  std::string config_;
  std::vector<const HostForms*> shared_forms_;
  int form_builds_ = 0;

 private:
  void noteShared(const SharedHosts& hosts) {
    shared_forms_.push_back(hosts.forms);
    if (hosts.forms != nullptr) {
      hosts.forms->get(this, [this]() -> std::shared_ptr<const void> {
        return std::make_shared<const int>(++form_builds_);
      });
    }
  }
  void record(const NodeRef& n) {
    ++calls_;
    node_names_.emplace_back(n.name);
    for (const auto& kv : n.labels) {
      labels_.push_back(std::string(kv.key) + "=" + std::string(kv.value));
    }
    machine_id_ = n.node_info.machine_id;
  }
  ProviderInfo info_;
};

KeyValueRef kLabels[] = {{"zone", "a"}, {"role", "worker"}};
AddressRef kAddresses[] = {{"InternalIP", "10.0.0.9"}};

NodeRef node(std::string_view name) {
  NodeRef n;
  n.name = name;
  n.uid = "uid-1";
  n.labels = kLabels;
  n.addresses = kAddresses;
  n.node_info.machine_id = "machine-7";
  return n;
}

std::string call(Method m, uint64_t id, const std::function<void(Writer&)>& args) {
  Writer w(FrameKind::Call);
  w.u64(id);
  w.u8(static_cast<uint8_t>(m));
  args(w);
  return w.payload();
}

// Reads a reply's id and status; positions r at the value.
Status replyStatus(Reader& r, uint64_t want_id) {
  CHECK(r.u8() == static_cast<uint8_t>(FrameKind::Reply));
  CHECK(r.u64() == want_id);
  return r.status();
}

}  // namespace

TEST_CASE("a sizer counts exactly what a writer writes; a bare writer has no kind byte") {
  std::vector<NodeRef> nodes;
  for (const char* name : {"node-a", "node-b", "", "a-much-longer-node-name-than-the-others"}) {
    nodes.push_back(node(name));
  }
  Writer framed(FrameKind::Call);
  Writer size = Writer::sizer();
  Writer bare = Writer::bare();
  for (Writer* w : {&framed, &size, &bare}) {
    w->u32(static_cast<uint32_t>(nodes.size()));
    for (const auto& n : nodes) {
      putNode(*w, n);
    }
    w->status(Status(Code::Unavailable, "try later"));
  }
  CHECK(size.payload().empty());  // a sizer keeps nothing
  CHECK(size.size() == bare.size());
  CHECK(framed.size() == bare.size() + 1);
  CHECK(framed.payload().substr(1) == bare.payload());
  bare.reserve(size.size());
  std::string taken = std::move(bare).take();
  CHECK(taken == framed.payload().substr(1));
}

TEST_CASE("a node call reaches the provider with every field, and its value comes back") {
  RecordingProvider p;
  std::string reply = serveCall(p, call(Method::InstanceMetadata, 42,
                                        [](Writer& w) { putNode(w, node("node-1")); }));
  Reader r(reply);
  CHECK(replyStatus(r, 42).ok());
  REQUIRE(r.boolean());
  InstanceMetadata md = getMetadata(r);
  CHECK(r.finish().ok());
  CHECK(md.provider_id == "rec://node-1");
  CHECK(md.addresses.size() == 2);
  CHECK(md.additional_labels == sdk::Labels{{"k", "v"}});
  CHECK(p.node_names_ == std::vector<std::string>{"node-1"});
  CHECK(p.labels_ == std::vector<std::string>{"zone=a", "role=worker"});
  CHECK(p.machine_id_ == "machine-7");
}

TEST_CASE("an error keeps its code, message and retry-after") {
  RecordingProvider p;
  std::string reply = serveCall(p, call(Method::InstanceShutdown, 7,
                                        [](Writer& w) { putNode(w, node("n")); }));
  Reader r(reply);
  Status s = replyStatus(r, 7);
  CHECK(r.finish().ok());
  CHECK(s.code() == Code::ResourceExhausted);
  CHECK(s.message() == "slow down");
  CHECK(s.retryAfter() == std::chrono::milliseconds(1500));
}

TEST_CASE("a batch answers one result per node, errors included") {
  RecordingProvider p;
  std::array<NodeRef, 2> nodes{node("a"), node("missing")};
  std::string reply = serveCall(p, call(Method::InstanceMetadataBatch, 1, [&](Writer& w) {
    w.u32(2);
    putNode(w, nodes[0]);
    putNode(w, nodes[1]);
  }));
  Reader r(reply);
  CHECK(replyStatus(r, 1).ok());
  CHECK(r.count(1) == 2);
  CHECK(r.status().ok());
  CHECK(getMetadata(r).provider_id == "rec://a");
  CHECK(r.status().code() == Code::NotFound);
  CHECK(r.finish().ok());
}

TEST_CASE("services, load balancer status and routes survive the wire") {
  RecordingProvider p;
  LoadBalancerStatus current;
  current.ingress.push_back({"", "lb.example.com", "Proxy", {}});
  ServicePortRef ports[] = {{"http", "TCP", 80, 30080, "8080", ""}};
  std::string_view ranges[] = {"10.0.0.0/8"};
  ServiceRef svc;
  svc.namespace_name = "default";
  svc.name = "web";
  svc.uid = "u-1";
  svc.ports = ports;
  svc.source_ranges = ranges;
  svc.current_status = &current;
  std::string reply = serveCall(p, call(Method::GetLoadBalancer, 3, [&](Writer& w) {
    w.str("kubernetes");
    putService(w, svc);
  }));
  Reader r(reply);
  CHECK(replyStatus(r, 3).ok());
  CHECK_FALSE(r.boolean());  // no load balancer
  CHECK(r.finish().ok());
  CHECK(p.cluster_ == "kubernetes");
  CHECK(p.service_name_ == "web");
  CHECK(p.had_status_);
  CHECK(p.seen_status_ == current);

  std::array<NodeRef, 1> nodes{node("n1")};
  reply = serveCall(p, call(Method::EnsureLoadBalancer, 4, [&](Writer& w) {
    w.str("kubernetes");
    putService(w, svc);
    w.u32(1);
    putNode(w, nodes[0]);
  }));
  Reader e(reply);
  CHECK(replyStatus(e, 4).ok());
  LoadBalancerStatus st = getLoadBalancerStatus(e);
  CHECK(e.finish().ok());
  CHECK(p.ports_ == 1);
  REQUIRE(st.ingress.size() == 1);
  CHECK(st.ingress[0].ip == "192.0.2.1");
  CHECK(st.ingress[0].ports[0].port == 80);
  CHECK(st.annotations == sdk::Labels{{"example.com/id", "lb-1"}});
  CHECK(st.removed_annotations == std::vector<std::string>{"example.com/old"});

  reply = serveCall(p, call(Method::ListRoutes, 5, [](Writer& w) { w.str("kubernetes"); }));
  Reader l(reply);
  CHECK(replyStatus(l, 5).ok());
  CHECK(l.count(1) == 1);
  Route route = getRoute(l);
  CHECK(l.finish().ok());
  CHECK(route.blackhole);
  CHECK(route.target_node_addresses.size() == 1);

  reply = serveCall(p, call(Method::CreateRoute, 6, [&](Writer& w) {
    w.str("kubernetes");
    w.str("hint");
    putRoute(w, route);
  }));
  Reader c(reply);
  CHECK(replyStatus(c, 6).ok());
  CHECK(c.finish().ok());
  CHECK(p.hint_ == "hint");
  CHECK(p.route_ == route);
}

TEST_CASE("the hosts of a wave's load-balancer calls are decoded once and handed on shared") {
  RecordingProvider p;
  HostSetCache cache;
  ServiceRef svc;
  svc.namespace_name = "default";
  svc.name = "web";
  std::array<NodeRef, 3> all{node("n1"), node("n2"), node("n3")};
  auto lbCall = [&](Method m, uint64_t id, std::span<const NodeRef> hosts) {
    return call(m, id, [&](Writer& w) {
      w.str("kubernetes");
      putService(w, svc);
      w.u32(static_cast<uint32_t>(hosts.size()));
      for (const auto& n : hosts) {
        putNode(w, n);
      }
    });
  };
  auto ok = [](const std::string& reply, uint64_t id) {
    Reader r(reply);
    return replyStatus(r, id).ok();
  };

  CHECK(ok(serveCall(p, lbCall(Method::EnsureLoadBalancer, 1, all), &cache), 1));
  CHECK(ok(serveCall(p, lbCall(Method::UpdateLoadBalancer, 2, all), &cache), 2));
  CHECK(ok(serveCall(p, lbCall(Method::EnsureLoadBalancer, 3, all), &cache), 3));
  CHECK(cache.decodes() == 1);
  CHECK(p.node_names_ ==
        std::vector<std::string>{"n1", "n2", "n3", "n1", "n2", "n3", "n1", "n2", "n3"});
  REQUIRE(p.shared_forms_.size() == 3);
  CHECK(p.shared_forms_[0] != nullptr);
  CHECK(p.shared_forms_[1] == p.shared_forms_[0]);
  CHECK(p.shared_forms_[2] == p.shared_forms_[0]);
  CHECK(p.form_builds_ == 1);

  // Other hosts replace the kept ones.
  std::span<const NodeRef> two(all.data(), 2);
  CHECK(ok(serveCall(p, lbCall(Method::UpdateLoadBalancer, 4, two), &cache), 4));
  CHECK(cache.decodes() == 2);
  CHECK(p.shared_forms_.back() != p.shared_forms_[0]);
  CHECK(p.form_builds_ == 2);

  // Hosts cut short or padded are refused as without the cache, and keep nothing.
  p.node_names_.clear();
  std::string cut = lbCall(Method::EnsureLoadBalancer, 5, two);
  cut.pop_back();
  std::string padded = lbCall(Method::EnsureLoadBalancer, 6, two) + "x";
  for (const auto& [payload, id] : {std::pair{cut, 5}, std::pair{padded, 6}}) {
    std::string reply = serveCall(p, payload, &cache);
    Reader r(reply);
    Status st = replyStatus(r, static_cast<uint64_t>(id));
    CHECK(st.code() == Code::InvalidArgument);
    CHECK(st.message().find("malformed message") != std::string::npos);
    CHECK(reply == serveCall(p, payload));  // the same answer as a plain decode
  }
  // A call cut before its hosts never reaches the cache.
  std::string early = lbCall(Method::EnsureLoadBalancer, 11, two).substr(0, 24);
  CHECK(serveCall(p, early, &cache) == serveCall(p, early));
  CHECK(cache.decodes() == 4);
  CHECK(p.node_names_.empty());
  CHECK(ok(serveCall(p, lbCall(Method::EnsureLoadBalancer, 7, two), &cache), 7));
  CHECK(cache.decodes() == 4);  // the two refused lists were decoded; the kept two reused
  CHECK(p.form_builds_ == 2);

  // Unused for the idle time, the hosts are dropped; the next call decodes again.
  CHECK_FALSE(cache.dropIdle());  // used just now (30 s by default)
  HostSetCache quick(std::chrono::seconds(0));
  CHECK(ok(serveCall(p, lbCall(Method::EnsureLoadBalancer, 8, two), &quick), 8));
  CHECK(quick.dropIdle());
  CHECK_FALSE(quick.dropIdle());
  CHECK(ok(serveCall(p, lbCall(Method::EnsureLoadBalancer, 9, two), &quick), 9));
  CHECK(quick.decodes() == 2);

  // Without a cache the hosts come without forms, converted per call.
  CHECK(ok(serveCall(p, lbCall(Method::EnsureLoadBalancer, 10, two)), 10));
  CHECK(p.shared_forms_.back() == nullptr);
}

TEST_CASE("reconfigure carries the configuration bytes") {
  RecordingProvider p;
  std::string config("a\0b", 3);
  std::string reply = serveCall(p, call(Method::Reconfigure, 9, [&](Writer& w) { w.str(config); }));
  Reader r(reply);
  CHECK(replyStatus(r, 9).ok());
  CHECK(p.config_ == config);
}

TEST_CASE("provider info round-trips") {
  ProviderInfo info;
  info.name = "x";
  info.version = "1.2.3";
  info.abi_major = 1;
  info.abi_minor = 1;
  info.provider_id_prefix = "x://";
  info.instances = {true, 8, true};
  info.instances_batch = {true, 0, false};
  info.max_batch_size = 500;
  Writer w(FrameKind::Ready);
  putProviderInfo(w, info);
  Reader r(w.payload());
  r.u8();
  ProviderInfo back = getProviderInfo(r);
  CHECK(r.finish().ok());
  CHECK(back.name == "x");
  CHECK(back.provider_id_prefix == "x://");
  CHECK(back.instances.max_concurrency == 8);
  CHECK(back.instances.wants_object_json);
  CHECK(back.max_batch_size == 500);
  CHECK(back.capabilityList() == info.capabilityList());
}

TEST_CASE("a truncated or padded call is refused and never reaches the provider") {
  RecordingProvider p;
  std::string good = call(Method::InstanceExists, 5, [](Writer& w) { putNode(w, node("n")); });
  for (size_t cut = 10; cut < good.size(); ++cut) {  // id and method kept: a reply is possible
    std::string reply = serveCall(p, good.substr(0, cut));
    Reader r(reply);
    Status s = replyStatus(r, 5);
    CHECK(s.code() == Code::InvalidArgument);
    CHECK(s.message().find("malformed message") != std::string::npos);
  }
  std::string padded_reply_bytes = serveCall(p, good + "x");
  Reader padded_reply(padded_reply_bytes);
  CHECK(replyStatus(padded_reply, 5).message().find("1 bytes left over") != std::string::npos);
  CHECK(p.calls_ == 0);
  std::string ok_reply_bytes = serveCall(p, good);
  Reader ok_reply(ok_reply_bytes);
  CHECK(replyStatus(ok_reply, 5).ok());
  CHECK(p.calls_ == 1);
}

TEST_CASE("impossible values are refused: unknown method, bad boolean, oversized lists") {
  RecordingProvider p;
  Writer unknown(FrameKind::Call);
  unknown.u64(1);
  unknown.u8(200);
  std::string r1_bytes = serveCall(p, unknown.payload());
  Reader r1(r1_bytes);
  CHECK(replyStatus(r1, 1).message().find("unknown method 200") != std::string::npos);

  Writer huge(FrameKind::Call);
  huge.u64(2);
  huge.u8(static_cast<uint8_t>(Method::InstanceMetadataBatch));
  huge.u32(0xffffffffU);  // four billion nodes in a few bytes
  std::string r2_bytes = serveCall(p, huge.payload());
  Reader r2(r2_bytes);
  CHECK(replyStatus(r2, 2).message().find("list of 4294967295 items") != std::string::npos);

  Writer b(FrameKind::Ready);
  b.u8(7);
  Reader r3(b.payload());
  r3.u8();
  CHECK_FALSE(r3.boolean());
  CHECK(r3.finish().message().find("boolean of 7") != std::string::npos);

  Writer longstr(FrameKind::Ready);
  longstr.u32(1000);
  longstr.u8('a');
  Reader r4(longstr.payload());
  r4.u8();
  CHECK(r4.str().empty());
  CHECK(r4.finish().message().find("string of 1000 bytes") != std::string::npos);
  CHECK(p.calls_ == 0);
}

TEST_CASE("random bytes never crash the decoders") {
  RecordingProvider p;
  std::mt19937 rng(1234);
  std::string base = call(Method::EnsureLoadBalancer, 8, [](Writer& w) {
    w.str("c");
    ServiceRef s;
    putService(w, s);
    w.u32(0);
  });
  for (int i = 0; i < 3000; ++i) {
    std::string bytes = base;
    // Flip a few bytes past the header, or make up a payload of random length.
    if (i % 2 == 0) {
      for (int k = 0; k < 3; ++k) {
        bytes[10 + rng() % (bytes.size() - 10)] = static_cast<char>(rng());
      }
    } else {
      bytes.resize(rng() % 64);
      for (auto& ch : bytes) {
        ch = static_cast<char>(rng());
      }
    }
    if (frameKind(bytes) == FrameKind::Call && callId(bytes).has_value()) {
      (void)serveCall(p, bytes);
    }
    Reader r(bytes);
    (void)getLoadBalancerStatus(r);
    Reader r2(bytes);
    (void)getProviderInfo(r2);
    NodeData d;
    Reader r3(bytes);
    d.decode(r3);
  }
}

TEST_CASE("frames: a frame far larger than the socket buffer arrives whole, in order") {
  // The header and the payload are sent from their own buffers, a piece at a time as the
  // reader takes them: each partial send must resume at the right byte, header or payload.
  for (int bound_ms : {0, 10000}) {
    CAPTURE(bound_ms);
    std::array<int, 2> fds{};
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds.data()) == 0);
    int small = 4096;
    REQUIRE(::setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)) == 0);
    std::mt19937 rng(7);
    std::string first(3 * 1024 * 1024 + 3, '\0');
    for (auto& ch : first) {
      ch = static_cast<char>(rng());
    }
    const std::string second = "after";
    Status sent_first;
    Status sent_second;
    std::thread writer([&] {
      sent_first = writeFrame(fds[0], first, std::chrono::milliseconds(bound_ms));
      sent_second = writeFrame(fds[0], second, std::chrono::milliseconds(bound_ms));
    });
    auto a = readFrame(fds[1]);
    auto b = readFrame(fds[1]);
    writer.join();
    CHECK(sent_first.ok());
    CHECK(sent_second.ok());
    REQUIRE(a.ok());
    CHECK(a->size() == first.size());
    CHECK(*a == first);
    REQUIRE(b.ok());
    CHECK(*b == second);
    ::close(fds[0]);
    ::close(fds[1]);
  }
}

TEST_CASE("frames: a tail is sent from its own buffer as the end of the same frame") {
  std::array<int, 2> fds{};
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds.data()) == 0);
  REQUIRE(writeFrame(fds[0], "head", std::chrono::milliseconds(0), "-tail").ok());
  auto f = readFrame(fds[1]);
  REQUIRE(f.ok());
  CHECK(*f == "head-tail");

  // Larger than the socket's buffer: sent in many pieces, some ending inside the head and
  // some inside the tail; the reader sees the same bytes as one payload.
  std::string head(100003, 'h');
  std::string tail(3000017, 't');
  for (size_t i = 0; i < head.size(); i += 97) {
    head[i] = static_cast<char>('a' + i % 26);
  }
  for (size_t i = 0; i < tail.size(); i += 89) {
    tail[i] = static_cast<char>('A' + i % 26);
  }
  StatusOr<std::string> got = Status(Code::Internal, "not read");
  std::thread reader([&] { got = readFrame(fds[1]); });
  Status sent = writeFrame(fds[0], head, std::chrono::milliseconds(60000), tail);
  reader.join();
  CHECK(sent.ok());
  REQUIRE(got.ok());
  CHECK(got->size() == head.size() + tail.size());
  CHECK(*got == head + tail);

  // The frame's limit counts the tail.
  std::string over(kMaxFrame, 'x');
  CHECK(writeFrame(fds[0], "h", std::chrono::milliseconds(0), over).code() ==
        Code::InvalidArgument);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_CASE("frames: sizes checked, a stream that ends early is reported") {
  std::array<int, 2> fds{};
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds.data()) == 0);
  REQUIRE(writeFrame(fds[0], "hello").ok());
  auto f = readFrame(fds[1]);
  REQUIRE(f.ok());
  CHECK(*f == "hello");
  CHECK(writeFrame(fds[0], "").code() == Code::InvalidArgument);

  const char zero[4] = {0, 0, 0, 0};
  REQUIRE(::write(fds[0], zero, 4) == 4);
  auto z = readFrame(fds[1]);
  CHECK(z.status().code() == Code::InvalidArgument);
  CHECK(z.status().message().find("frame of 0 bytes refused") != std::string::npos);

  const char big[4] = {0x01, 0x00, 0x00, 0x04};  // 64 MiB + 1
  REQUIRE(::write(fds[0], big, 4) == 4);
  auto b = readFrame(fds[1]);
  CHECK(b.status().code() == Code::InvalidArgument);

  const char partial[6] = {10, 0, 0, 0, 'a', 'b'};  // 10 bytes announced, 2 sent
  REQUIRE(::write(fds[0], partial, 6) == 6);
  ::close(fds[0]);
  auto p = readFrame(fds[1]);
  CHECK(p.status().code() == Code::Unavailable);
  CHECK(p.status().message().find("in the middle of a frame") != std::string::npos);
  auto eof = readFrame(fds[1]);
  CHECK(eof.status().code() == Code::Unavailable);
  ::close(fds[1]);
}
