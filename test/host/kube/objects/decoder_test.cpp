// Node and Service decoding (SAX, straight into compact objects), the watch/list envelopes,
// and the measured memory per cached node.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <malloc.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "host/kube/objects/envelope_decoder.hpp"
#include "host/kube/objects/node_decoder.hpp"
#include "host/kube/objects/node_event_scan.hpp"
#include "host/kube/objects/service_decoder.hpp"
#include "host/kube/objects/string_pool.hpp"

namespace ccm::kube {
namespace {

std::string readTestdata(const std::string& name) {
  std::ifstream in(std::string(CCM_TESTDATA) + "/" + name);
  REQUIRE(in);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Replaces the first occurrence of `from` with `to`.
std::string replaced(std::string s, const std::string& from, const std::string& to) {
  auto pos = s.find(from);
  REQUIRE(pos != std::string::npos);
  s.replace(pos, from.size(), to);
  return s;
}

// Decodes one object from memory with a reused decoder and freezes it.
template <typename Decoder>
auto decodeWith(Decoder& d, const std::string& json) {
  d.reset();
  rapidjson::Reader reader;
  rapidjson::MemoryStream ms(json.data(), json.size());
  REQUIRE(reader.Parse(ms, d));
  return d.finish();
}

// Every field of a Node, for comparing two nodes whole.
std::string describe(const Node& n) {
  std::string out = fmt::format("name={} uid={} rv={} created={} deleted={}\n", n.name(), n.uid(),
                                n.resourceVersion(), n.creationTimestamp(), n.deletionTimestamp());
  for (const KeyValue& kv : n.labels()) {
    out += fmt::format("label {}={}\n", kv.key, kv.value);
  }
  for (const KeyValue& kv : n.annotations()) {
    out += fmt::format("annotation {}={}\n", kv.key, kv.value);
  }
  out += fmt::format("providerID={} podCIDR={} unschedulable={}\n", n.providerId(), n.podCidr(),
                     n.unschedulable());
  for (std::string_view c : n.podCidrs()) {
    out += fmt::format("podCIDRs {}\n", c);
  }
  for (const Taint& t : n.taints()) {
    out += fmt::format("taint {}={}:{} @{}\n", t.key, t.value, t.effect, t.time_added);
  }
  for (const NodeAddress& a : n.addresses()) {
    out += fmt::format("address {} {}\n", a.type, a.address);
  }
  for (const NodeCondition& c : n.conditions()) {
    out += fmt::format("condition {} {} {} beat={} transition={}\n", c.type, c.status, c.reason,
                       c.last_heartbeat_time, c.last_transition_time);
  }
  const NodeSystemInfo& i = n.nodeInfo();
  out += fmt::format("info {} {} {} {} {} {} {} {} {} {}\n", i.machine_id, i.system_uuid, i.boot_id,
                     i.kernel_version, i.os_image, i.container_runtime_version, i.kubelet_version,
                     i.kube_proxy_version, i.operating_system, i.architecture);
  return out;
}

// Decodes a Node as the informer decodes a buffered watch event: in situ, strings deferred,
// finished against the cached version `previous`.
std::shared_ptr<const Node> decodeAgainst(NodeDecoder& d, const std::string& json,
                                          const Node* previous) {
  d.reset();
  d.deferStrings();
  std::string scratch;
  rapidjson::Reader reader;
  REQUIRE(detail::parseInMemory<rapidjson::kParseDefaultFlags>(reader, json, scratch, d,
                                                               &d.skipSignal()));
  auto node = d.finish(previous);
  // What the node holds must not be the parse buffer's.
  std::fill(scratch.begin(), scratch.end(), '#');
  return node;
}

// Replaces every occurrence of `from` with `to`.
std::string replacedAll(std::string s, const std::string& from, const std::string& to) {
  size_t pos = s.find(from);
  REQUIRE(pos != std::string::npos);
  for (; pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
  return s;
}

// The realistic node with a NetworkUnavailable condition and a deletion-free, schedulable
// spec; heartbeat() is that node as a kubelet's next status post leaves it.
const std::string kNetworkCondition =
    R"({"type":"NetworkUnavailable","status":"False","lastHeartbeatTime":"2026-07-24T10:05:00Z","lastTransitionTime":"2026-07-24T10:00:20Z","reason":"RouteCreated","message":"routes created"},)";

std::string baseNode() {
  return replaced(readTestdata("node.json"), R"("conditions":[)",
                  R"("conditions":[)" + kNetworkCondition);
}

std::string heartbeat(std::string json, const std::string& rv, const std::string& beat) {
  json = replaced(std::move(json), R"("resourceVersion":"123456")",
                  R"("resourceVersion":")" + rv + "\"");
  return replacedAll(std::move(json), R"("lastHeartbeatTime":"2026-07-24T10:05:00Z")",
                     R"("lastHeartbeatTime":")" + beat + "\"");
}

struct Change {
  const char* what;
  std::string from, to;
};

// Single changes to baseNode() of fields a controller reads.
std::vector<Change> controllerVisibleChanges() {
  return {
      {"uid", "5b3a8c2e-8f1d", "5b3a8c2e-8f1e"},
      {"creationTimestamp", R"("creationTimestamp":"2026-07-24T10:00:00Z")",
       R"("creationTimestamp":"2026-07-24T10:00:01Z")"},
      {"deletionTimestamp", R"("creationTimestamp":)",
       R"("deletionTimestamp":"2026-07-24T11:00:00Z","creationTimestamp":)"},
      {"label value", R"("node.kubernetes.io/instance-type":"m5.xlarge")",
       R"("node.kubernetes.io/instance-type":"m5.2xlarge")"},
      {"label added", R"("labels":{)", R"("labels":{"a.example/new":"x",)"},
      {"label removed", R"("node-role.kubernetes.io/worker":"",)", ""},
      {"annotation value", R"("node.alpha.kubernetes.io/ttl":"0")",
       R"("node.alpha.kubernetes.io/ttl":"15")"},
      {"annotation added", R"("annotations":{)", R"("annotations":{"b.example/new":"y",)"},
      {"providerID", R"("providerID":"aws:///eu-west-1a/i-0123456789abcdef0")",
       R"("providerID":"aws:///eu-west-1a/i-0123456789abcdef1")"},
      {"podCIDR", R"("podCIDR":"10.244.12.0/24")", R"("podCIDR":"10.244.13.0/24")"},
      {"podCIDRs", R"("fd00:10:244:12::/64")", R"("fd00:10:244:13::/64")"},
      {"taint effect", R"("effect":"NoSchedule")", R"("effect":"PreferNoSchedule")"},
      {"taint timeAdded", R"("timeAdded":"2026-07-24T10:00:05Z")",
       R"("timeAdded":"2026-07-24T10:00:06Z")"},
      {"taint removed",
       R"({"key":"node.cloudprovider.kubernetes.io/uninitialized","value":"true","effect":"NoSchedule"},)",
       ""},
      {"unschedulable", R"("spec":{)", R"("spec":{"unschedulable":true,)"},
      {"address", R"({"type":"InternalIP","address":"10.0.12.34"})",
       R"({"type":"InternalIP","address":"10.0.12.35"})"},
      {"address type", R"({"type":"InternalIP","address":"10.0.12.34"})",
       R"({"type":"ExternalIP","address":"10.0.12.34"})"},
      {"condition status", R"("status":"True")", R"("status":"False")"},
      {"condition reason", R"("reason":"KubeletReady")", R"("reason":"KubeletNotReady")"},
      {"condition transition", R"("lastTransitionTime":"2026-07-24T10:00:30Z")",
       R"("lastTransitionTime":"2026-07-24T10:05:10Z")"},
      {"condition removed", R"({"type":"NetworkUnavailable",)", R"({"type":"NetworkGone",)"},
      {"kubeletVersion", R"("kubeletVersion":")", R"("kubeletVersion":"x)"},
      {"bootID", R"("bootID":")", R"("bootID":"x)"},
      {"architecture", R"("architecture":"amd64")", R"("architecture":"arm64")"},
  };
}

}  // namespace

TEST_CASE("a realistic Node decodes into every field the controllers use") {
  auto r = decodeNode(readTestdata("node.json"));
  REQUIRE(r.ok());
  const Node& n = **r;
  CHECK(n.name() == "ip-10-0-12-34.eu-west-1.compute.internal");
  CHECK(n.key() == n.name());
  CHECK(n.uid() == "5b3a8c2e-8f1d-4c7a-9e2b-1a2b3c4d5e6f");
  CHECK(n.resourceVersion() == "123456");
  CHECK(n.creationTimestamp() == 1784887200);  // 2026-07-24T10:00:00Z
  CHECK(n.deletionTimestamp() == 0);
  CHECK(n.labels().size() == 13);
  CHECK(n.label("topology.kubernetes.io/zone") == "eu-west-1a");
  CHECK(n.label("node-role.kubernetes.io/worker") == "");
  CHECK_FALSE(n.label("missing").has_value());
  CHECK(n.annotation("alpha.kubernetes.io/provided-node-ip") == "10.0.12.34");
  CHECK(n.annotation("csi.volume.kubernetes.io/nodeid") ==
        R"({"ebs.csi.aws.com":"i-0123456789abcdef0"})");
  CHECK(n.providerId() == "aws:///eu-west-1a/i-0123456789abcdef0");
  CHECK(n.podCidr() == "10.244.12.0/24");
  REQUIRE(n.podCidrs().size() == 2);
  CHECK(n.podCidrs()[1] == "fd00:10:244:12::/64");
  REQUIRE(n.taints().size() == 2);
  CHECK(n.taints()[0].key == "node.cloudprovider.kubernetes.io/uninitialized");
  CHECK(n.taints()[0].value == "true");
  CHECK(n.taints()[0].effect == "NoSchedule");
  CHECK(n.taints()[0].time_added == 0);
  CHECK(n.taints()[1].time_added == 1784887205);
  CHECK(n.hasTaint("node.kubernetes.io/not-ready", "NoExecute"));
  CHECK_FALSE(n.hasTaint("node.kubernetes.io/not-ready", "NoSchedule"));
  CHECK_FALSE(n.unschedulable());
  REQUIRE(n.addresses().size() == 3);
  CHECK(n.addresses()[0].type == "InternalIP");
  CHECK(n.addresses()[0].address == "10.0.12.34");
  // Of the four conditions only Ready is kept (MemoryPressure, DiskPressure and PIDPressure
  // are read by no controller), without its message.
  REQUIRE(n.conditions().size() == 1);
  std::optional<NodeCondition> ready = n.condition("Ready");
  REQUIRE(ready.has_value());
  CHECK(n.condition("MemoryPressure") == std::nullopt);
  CHECK(ready->status == "True");
  CHECK(ready->reason == "KubeletReady");
  CHECK(ready->last_heartbeat_time == 1784887500);
  CHECK(ready->last_transition_time == 1784887230);
  CHECK(n.nodeInfo().machine_id == "ec2a1b2c3d4e5f60718293a4b5c6d7e8");
  CHECK(n.nodeInfo().boot_id == "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b");
  CHECK(n.nodeInfo().kernel_version == "5.10.215-203.850.amzn2.x86_64");
  CHECK(n.nodeInfo().kubelet_version == "v1.29.3-eks-ae9a62a");
  CHECK(n.nodeInfo().operating_system == "linux");
  CHECK(n.nodeInfo().architecture == "amd64");
}

TEST_CASE("a Node's own strings and lists lie in its one allocation") {
  auto r = decodeNode(readTestdata("node.json"));
  REQUIRE(r.ok());
  const Node& n = **r;
  // The allocation holds the control block (the Node inside it), then the node's own bytes
  // (arenaBytes() counts all of it but the Node).
  const char* lo = reinterpret_cast<const char*>(&n) + sizeof(Node);
  const char* hi = reinterpret_cast<const char*>(&n) + sizeof(Node) + n.arenaBytes();
  auto inside = [&](const void* p) {
    const char* c = static_cast<const char*>(p);
    return c >= lo && c < hi;
  };
  CHECK(inside(n.name().data()));
  CHECK(inside(n.uid().data()));
  CHECK(inside(n.providerId().data()));
  CHECK(inside(n.labels().data()));
  CHECK(inside(n.addresses().data()));
  CHECK(inside(n.conditions().data()));
  CHECK(inside(n.nodeInfo().machine_id.data()));
  // Repeated strings are the pool's, outside it.
  CHECK_FALSE(inside(n.label("kubernetes.io/os")->data()));
  CHECK_FALSE(inside(n.nodeInfo().kubelet_version.data()));
  CHECK(n.arenaBytes() < 1024);
}

TEST_CASE("decodeNode without status reads metadata and spec only, and nodes outlive calls") {
  std::string json = readTestdata("node.json");
  auto full = decodeNode(json);
  auto lean = decodeNode(json, NodeParts::kMetadataAndSpec);
  REQUIRE(full.ok());
  REQUIRE(lean.ok());
  const Node& n = **lean;
  CHECK(n.name() == (*full)->name());
  CHECK(n.resourceVersion() == "123456");
  CHECK(n.labels().size() == 13);
  CHECK(n.providerId() == "aws:///eu-west-1a/i-0123456789abcdef0");
  CHECK(n.taints().size() == 2);
  CHECK(n.addresses().empty());
  CHECK(n.conditions().empty());
  CHECK(n.nodeInfo().kernel_version.empty());
  // The per-thread decoder is reused: earlier results keep their own storage.
  auto other =
      decodeNode(replaced(json, "\"resourceVersion\":\"123456\"", "\"resourceVersion\":\"9\""));
  REQUIRE(other.ok());
  CHECK((*full)->resourceVersion() == "123456");
  CHECK((*other)->resourceVersion() == "9");
  CHECK((*full)->addresses().size() == 3);
  CHECK((*full)->label("topology.kubernetes.io/zone") == "eu-west-1a");
}

TEST_CASE("resourceVersionOf reads metadata.resourceVersion and nothing that looks like it") {
  CHECK(resourceVersionOf(readTestdata("node.json")) == "123456");
  // Wherever it is in the metadata, after nested maps that hold the same key.
  CHECK(resourceVersionOf(R"({"kind":"Node","metadata":{"annotations":{"resourceVersion":"1"},)"
                          R"("labels":{"a":"b"},"managedFields":[{"resourceVersion":"2"}],)"
                          R"("resourceVersion":"77"},"spec":{}})") == "77");
  // Not outside the object's own metadata.
  CHECK(resourceVersionOf(R"({"resourceVersion":"1","spec":{"metadata":{"resourceVersion":"2"}},)"
                          R"("metadata":{"name":"n"}})") == std::nullopt);
  CHECK(resourceVersionOf(R"([{"metadata":{"resourceVersion":"3"}}])") == std::nullopt);
  CHECK(resourceVersionOf(R"({"metadata":{"resourceVersion":5}})") == std::nullopt);
  CHECK(resourceVersionOf(R"({"metadata":[{"resourceVersion":"6"}]})") == std::nullopt);
  // Text that is not JSON, or is cut before the version.
  CHECK(resourceVersionOf("") == std::nullopt);
  CHECK(resourceVersionOf("<html>") == std::nullopt);
  CHECK(resourceVersionOf(R"({"metadata":{"name":"n","resourceVer)") == std::nullopt);
  // A version that is read before the document is cut still counts: the parse stops there.
  CHECK(resourceVersionOf(R"({"metadata":{"resourceVersion":"8","labels":{)") == "8");
}

TEST_CASE("only the conditions a controller reads are kept, whatever the key order") {
  // Type first (as API servers write it), type last, a duplicate, an odd type; a kept type
  // after an unwanted one must not inherit anything of it.
  auto r = decodeNode(
      R"({"metadata":{"name":"n"},"status":{"conditions":[)"
      R"({"type":"DiskPressure","status":"True","reason":"KubeletHasDiskPressure"},)"
      R"({"status":"False","reason":"RouteCreated","lastTransitionTime":"2026-01-02T03:04:05Z",)"
      R"("type":"NetworkUnavailable"},)"
      R"({"status":"True","reason":"X","type":"MemoryPressure"},)"
      R"({"type":"Ready","lastHeartbeatTime":"2026-01-02T03:04:06Z"},)"
      R"({"type":7,"status":"True"},{"type":"PIDPressure","message":")" +
      std::string(10000, 'm') + R"("}]}})");
  REQUIRE(r.ok());
  const Node& n = **r;
  REQUIRE(n.conditions().size() == 2);
  std::optional<NodeCondition> net = n.condition("NetworkUnavailable");
  REQUIRE(net.has_value());
  CHECK(net->status == "False");
  CHECK(net->reason == "RouteCreated");
  CHECK(net->last_transition_time == 1767323045);
  std::optional<NodeCondition> ready = n.condition("Ready");
  REQUIRE(ready.has_value());
  CHECK(ready->status.empty());
  CHECK(ready->reason.empty());
  CHECK(ready->last_heartbeat_time == 1767323046);
  CHECK(n.condition("DiskPressure") == std::nullopt);
  CHECK(n.condition("MemoryPressure") == std::nullopt);
  // The 10,000-byte message of a dropped condition is not kept anywhere.
  CHECK(n.arenaBytes() < 1000);
}

TEST_CASE("a string a node repeats is stored once, and each field still reads its own") {
  // A kubelet's node names itself three more times: the hostname label and the Hostname and
  // InternalDNS addresses. Kept once, every field still reads the right text.
  const std::string name = "ip-10-0-12-34.eu-west-1.compute.internal";
  auto json = [&name](const std::string& dns) {
    return R"({"metadata":{"name":")" + name + R"(","labels":{"kubernetes.io/hostname":")" + name +
           R"("}},"status":{"addresses":[{"type":"InternalIP","address":"10.0.12.34"},)"
           R"({"type":"InternalDNS","address":")" +
           dns + R"("},{"type":"Hostname","address":")" + name + R"("}]}})";
  };
  auto same = decodeNode(json(name));
  auto other = decodeNode(json("ip-10-0-12-35.eu-west-1.compute.internal"));
  REQUIRE(same.ok());
  REQUIRE(other.ok());
  const Node& n = **same;
  CHECK(n.name() == name);
  CHECK(n.label("kubernetes.io/hostname") == name);
  REQUIRE(n.addresses().size() == 3);
  CHECK(n.addresses()[0].address == "10.0.12.34");
  CHECK(n.addresses()[1].address == name);
  CHECK(n.addresses()[2].address == name);
  CHECK(n.addresses()[1].address.data() == n.name().data());
  CHECK((*other)->addresses()[1].address == "ip-10-0-12-35.eu-west-1.compute.internal");
  // The other node holds one more copy of a name-sized string, and only that.
  CHECK((*other)->arenaBytes() - n.arenaBytes() >= name.size() - 8);
  CHECK((*other)->arenaBytes() - n.arenaBytes() <= name.size() + 8);
  // Short strings are not looked for (a match saves too little): "10.0.12" appears inside
  // the address but a 7-byte value is appended as it is, and reads right.
  auto short_value = decodeNode(
      R"({"metadata":{"name":"10.0.12.34","labels":{"kubernetes.io/hostname":"10.0.12"}}})");
  REQUIRE(short_value.ok());
  CHECK((*short_value)->label("kubernetes.io/hostname") == "10.0.12");
}

TEST_CASE("a Node survives the decoder being reused, and shares its pool's strings") {
  NodeDecoder d;
  std::string a = readTestdata("node.json");
  std::string b =
      replaced(a, "\"name\":\"ip-10-0-12-34.eu-west-1.compute.internal\"", "\"name\":\"other\"");
  auto first = decodeWith(d, a);
  auto second = decodeWith(d, b);
  CHECK(first->name() == "ip-10-0-12-34.eu-west-1.compute.internal");
  CHECK(second->name() == "other");
  // Another holder of the first node outlives the decoder's later work and `first` itself.
  std::shared_ptr<const Node> held = first;
  first.reset();
  auto third = decodeWith(d, replaced(b, "\"name\":\"other\"", "\"name\":\"third\""));
  CHECK(held->label("kubernetes.io/os") == "linux");
  CHECK(held->conditions().size() == 1);
  CHECK(held->name() == "ip-10-0-12-34.eu-west-1.compute.internal");
  // Repeated strings are shared through the pool.
  CHECK(second->label("kubernetes.io/os")->data() == held->label("kubernetes.io/os")->data());
  CHECK(third->label("kubernetes.io/os")->data() == held->label("kubernetes.io/os")->data());
  // Strings unique to a node are its own.
  CHECK(second->uid().data() != held->uid().data());
}

TEST_CASE("a Node with missing or odd fields decodes to empty values") {
  auto r = decodeNode(
      R"({"metadata":{"name":"n1","labels":null,"deletionTimestamp":"2026-07-24T10:00:00Z"},)"
      R"("spec":{"unschedulable":true,"taints":[{"key":"k","effect":"NoSchedule","extra":{"a":[1,2]}}]},)"
      R"("status":{"conditions":[{"type":"Ready","status":"Unknown"}]},"extra":[{"x":{}}]})");
  REQUIRE(r.ok());
  const Node& n = **r;
  CHECK(n.name() == "n1");
  CHECK(n.labels().empty());
  CHECK(n.deletionTimestamp() == 1784887200);
  CHECK(n.unschedulable());
  REQUIRE(n.taints().size() == 1);
  CHECK(n.taints()[0].value.empty());
  CHECK(n.providerId().empty());
  CHECK(n.condition("Ready")->status == "Unknown");
  CHECK(n.condition("Ready")->last_heartbeat_time == 0);
  CHECK_FALSE(decodeNode("{\"metadata\":").ok());
}

TEST_CASE("unwanted Node values are skipped as raw bytes, brackets in strings included") {
  // Unwanted containers holding strings with brackets, escaped quotes and backslashes, nested
  // arrays of objects, and wanted fields after them: the skip must stop at the right bracket.
  auto r = decodeNode(
      R"({"metadata":{"managedFields":[{"manager":"k]}\"x","fieldsV1":{"f:a":{"}":[[],{}]}}}],)"
      R"("name":"n1","labels":{"a":"b"}},"status":{"images":[{"names":["r/i:[1]","\\"]}],)"
      R"("capacity":{"cpu":"2"},"addresses":[{"type":"InternalIP","address":"10.0.0.1"}]},)"
      R"("spec":{"providerID":"p://1"}})");
  REQUIRE(r.ok());
  const Node& n = **r;
  CHECK(n.name() == "n1");
  CHECK(n.label("a") == "b");
  REQUIRE(n.addresses().size() == 1);
  CHECK(n.addresses()[0].address == "10.0.0.1");
  CHECK(n.providerId() == "p://1");
  // A skipped container whose brackets do not match, or that never ends, is a decode error.
  CHECK_FALSE(decodeNode(R"({"metadata":{"name":"n"},"status":{"images":[{"a":1]}]}})").ok());
  CHECK_FALSE(decodeNode(R"({"metadata":{"name":"n"},"status":{"images":[{"a":"]})").ok());
}

// The skipper scans 16 bytes at a time where it can; this reference scans byte by byte and
// states what the answer must be: where the outer container closes, and whether it failed.
// Feeds s to the skipper in pieces of piece_size() bytes; the offset of the closing byte, or npos
// when the input ran out first.
template <typename PieceSize>
size_t skipInPieces(detail::RawSkipper& skipper, const std::string& s, bool outer_is_array,
                    PieceSize piece_size) {
  skipper.start(outer_is_array);
  size_t pos = 0;
  while (pos < s.size()) {
    size_t piece = std::min<size_t>(s.size() - pos, piece_size());
    size_t used = skipper.feed(s.data() + pos, piece);
    if (used < piece) {
      return pos + used;
    }
    pos += piece;
  }
  return std::string::npos;
}

struct ReferenceSkip {
  size_t close = std::string::npos;  // offset of the outer closing bracket
  bool failed = false;
};
ReferenceSkip referenceSkip(const std::string& s, bool outer_is_array) {
  std::vector<char> open;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      open.push_back(c);
    } else if (c == '}' || c == ']') {
      bool array = c == ']';
      if (open.empty()) {
        return {i, array != outer_is_array};
      }
      bool opened_array = open.back() == '[';
      open.pop_back();
      if (opened_array != array) {
        return {i, true};
      }
    }
  }
  return {};
}

TEST_CASE("the raw skipper finds the closing bracket wherever the input is cut") {
  // Random bracket, quote and backslash soup with long plain runs (which take the 16-byte
  // path), fed in random pieces: every piece boundary inside a string, after a backslash or
  // inside a plain run must give the byte-by-byte answer.
  uint64_t seed = 0x9e3779b97f4a7c15ULL;
  auto next = [&seed](uint32_t bound) {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return static_cast<uint32_t>(seed % bound);
  };
  const char alphabet[] = {'"', '\\', '{', '}', '[', ']', 'a', ' ', ':', ','};
  for (int round = 0; round < 20000; ++round) {
    std::string s;
    size_t len = next(160);
    while (s.size() < len) {
      if (next(4) == 0) {
        s.append(next(40), static_cast<char>('b' + next(20)));  // a plain run
      } else {
        s.push_back(alphabet[next(sizeof alphabet)]);
      }
    }
    bool outer_is_array = next(2) == 1;
    ReferenceSkip want = referenceSkip(s, outer_is_array);
    detail::RawSkipper skipper;
    size_t found = skipInPieces(skipper, s, outer_is_array, [&] { return 1 + next(48); });
    INFO("input: ", s, " outer array: ", outer_is_array);
    REQUIRE(found == want.close);
    REQUIRE(skipper.failed() == want.failed);
  }
}

TEST_CASE("the raw skipper's 64-byte steps give the byte-by-byte answer") {
  // Long inputs fed in long pieces, so that most of the scan takes the 64-byte block step:
  // managedFields-like soup (a quote or bracket every few bytes), strings that span blocks and
  // pieces, and in some rounds no backslash at all (every block takes the step), in others a
  // few (those blocks are walked byte by byte, the rest still step).
  uint64_t seed = 0x2545f4914f6cdd1dULL;
  auto next = [&seed](uint32_t bound) {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return static_cast<uint32_t>(seed % bound);
  };
  const char soup[] = {'"', '{', '}', '[', ']', 'f', ':', ',', '.'};
  int ended_inside = 0;
  for (int round = 0; round < 20000; ++round) {
    bool backslashes = round % 3 == 0;
    std::string s;
    size_t len = 64 + next(900);
    // Open containers first, so the outer one tends to close late, past several blocks.
    for (uint32_t k = next(12); k > 0; --k) {
      s.append(next(2) == 0 ? "{\"f:a\":" : "[");
    }
    while (s.size() < len) {
      uint32_t pick = next(16);
      if (pick == 0) {
        s.append(next(90), static_cast<char>('b' + next(20)));  // a plain run
      } else if (pick == 1 && backslashes) {
        s.push_back('\\');
      } else if (pick == 2) {
        s.append("\"f:[x]{y}\":{}");  // brackets inside a key
      } else {
        s.push_back(soup[next(sizeof soup)]);
      }
    }
    bool outer_is_array = next(2) == 1;
    ReferenceSkip want = referenceSkip(s, outer_is_array);
    detail::RawSkipper skipper;
    size_t found = skipInPieces(skipper, s, outer_is_array, [&] { return 1 + next(400); });
    if (want.close != std::string::npos && want.close >= 64) {
      ++ended_inside;
    }
    INFO("input: ", s, " outer array: ", outer_is_array);
    REQUIRE(found == want.close);
    REQUIRE(skipper.failed() == want.failed);
  }
  // The rounds did exercise the block step: many closed past the first block.
  CHECK(ended_inside > 1000);
}

TEST_CASE("a Service decodes, keeping its JSON without managedFields") {
  auto r = decodeService(readTestdata("service.json"));
  REQUIRE(r.ok());
  const Service& s = **r;
  CHECK(s.key() == "shop/web");
  CHECK(s.namespace_ == "shop");
  CHECK(s.name == "web");
  CHECK(s.uid == "11111111-2222-3333-4444-555555555555");
  CHECK(s.deletion_timestamp != 0);
  CHECK(s.hasFinalizer("service.kubernetes.io/load-balancer-cleanup"));
  CHECK(s.annotation("loadbalancer.openstack.org/keep-floatingip") == "true");
  CHECK(s.type == "LoadBalancer");
  CHECK(s.cluster_ip == "10.96.12.7");
  REQUIRE(s.ports.size() == 2);
  CHECK(s.ports[0].name == "http");
  CHECK(s.ports[0].port == 80);
  CHECK(s.ports[0].target_port == 8080);
  CHECK(s.ports[0].node_port == 31080);
  CHECK(s.ports[1].target_port == 0);
  CHECK(s.ports[1].target_port_name == "https-port");
  CHECK(s.ports[1].app_protocol == "https");
  CHECK(s.load_balancer_ip == "203.0.113.9");
  REQUIRE(s.load_balancer_source_ranges.size() == 2);
  CHECK(s.load_balancer_source_ranges[1] == "192.168.0.0/16");
  CHECK(s.external_traffic_policy == "Local");
  CHECK(s.health_check_node_port == 32000);
  CHECK(s.ip_families.size() == 1);
  CHECK_FALSE(s.has_load_balancer_class);
  CHECK(s.session_affinity == "ClientIP");
  CHECK(s.has_session_affinity_config);
  CHECK(s.session_affinity_timeout_seconds == 10800);
  REQUIRE(s.external_ips.size() == 1);
  REQUIRE(s.ingress.size() == 2);
  CHECK(s.ingress[0].ip == "203.0.113.9");
  CHECK(s.ingress[0].ip_mode == "VIP");
  REQUIRE(s.ingress[0].ports.size() == 2);
  CHECK(s.ingress[0].ports[1].port == 443);
  CHECK(s.ingress[0].ports[1].error == "Pending");
  CHECK(s.ingress[1].hostname == "lb.example.com");
  CHECK(s.ingress[1].ports.empty());
  CHECK(s.raw_json.find("managedFields") == std::string_view::npos);
  CHECK(s.raw_json.find(R"("selector":{"app":"web"})") != std::string_view::npos);
  CHECK(s.raw_json.find(R"("finalizers":["service.kubernetes.io/load-balancer-cleanup"])") !=
        std::string_view::npos);
  // The raw JSON decodes to the same service.
  auto again = decodeService(s.raw_json);
  REQUIRE(again.ok());
  CHECK((*again)->ports.size() == 2);
  CHECK((*again)->raw_json == s.raw_json);
}

TEST_CASE("loadBalancerClass presence is kept") {
  auto r = decodeService(
      R"({"metadata":{"name":"a","namespace":"b"},"spec":{"type":"LoadBalancer","loadBalancerClass":"x.io/lb"}})");
  REQUIRE(r.ok());
  CHECK((*r)->has_load_balancer_class);
  CHECK((*r)->load_balancer_class == "x.io/lb");
}

TEST_CASE("the watch envelope routes the object to the decoder, in any key order") {
  NodeDecoder d;
  WatchEventHandler<NodeDecoder> h(d);
  rapidjson::Reader reader;
  std::string events =
      R"({"type":"ADDED","object":{"kind":"Node","metadata":{"name":"a","resourceVersion":"5"}}})"
      "\n"
      R"({"object":{"metadata":{"name":"b","resourceVersion":"6"}},"type":"MODIFIED"})"
      "\n"
      R"({"type":"BOOKMARK","object":{"kind":"Node","apiVersion":"v1","metadata":{"resourceVersion":"9","creationTimestamp":null}}})"
      "\n"
      R"J({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 5 (10)","reason":"Expired","code":410}})J";
  rapidjson::MemoryStream ms(events.data(), events.size());
  h.reset();
  REQUIRE(reader.Parse<rapidjson::kParseStopWhenDoneFlag>(ms, h));
  CHECK(h.type == WatchEventType::Added);
  CHECK(d.finish()->name() == "a");
  h.reset();
  REQUIRE(reader.Parse<rapidjson::kParseStopWhenDoneFlag>(ms, h));
  CHECK(h.type == WatchEventType::Modified);
  CHECK(d.finish()->name() == "b");
  h.reset();
  REQUIRE(reader.Parse<rapidjson::kParseStopWhenDoneFlag>(ms, h));
  CHECK(h.type == WatchEventType::Bookmark);
  CHECK(d.resourceVersion() == "9");
  h.reset();
  REQUIRE(reader.Parse<rapidjson::kParseStopWhenDoneFlag>(ms, h));
  CHECK(h.type == WatchEventType::Error);
  CHECK(h.status_code == 410);
  CHECK(h.status_reason == "Expired");
  CHECK(h.status_message == "too old resource version: 5 (10)");
}

TEST_CASE("a Service decoded without its JSON has every field but raw_json, and is smaller") {
  std::string json = readTestdata("service.json");
  ServiceDecoder d;
  auto parse = [&d, &json](bool keep) {
    d.keepJson(keep);
    return decodeWith(d, json);
  };
  auto with = parse(true);
  auto without = parse(false);
  auto again = parse(true);  // the switch is per reset(), not sticky
  CHECK(without->raw_json.empty());
  CHECK_FALSE(with->raw_json.empty());
  CHECK(again->raw_json == with->raw_json);
  CHECK(without->key() == with->key());
  CHECK(without->uid == with->uid);
  CHECK(without->annotation("loadbalancer.openstack.org/keep-floatingip") == "true");
  CHECK(without->hasFinalizer("service.kubernetes.io/load-balancer-cleanup"));
  REQUIRE(without->ports.size() == 2);
  CHECK(without->ports[1].target_port_name == "https-port");
  REQUIRE(without->ingress.size() == with->ingress.size());
  CHECK(without->load_balancer_source_ranges.size() == with->load_balancer_source_ranges.size());
  // The JSON was the bulk of the Service's own bytes.
  CHECK(without->arenaBytes() + with->raw_json.size() == with->arenaBytes());
}

TEST_CASE("a watch event with two objects is malformed, not decoded twice") {
  // Found by the watch_stream fuzzer: the Service decoder's re-serialiser asserted on the
  // second root object.
  ServiceDecoder d;
  WatchEventHandler<ServiceDecoder> h(d);
  rapidjson::Reader reader;
  std::string event = R"({"type":"ADDED","object":{"metadata":{"name":"a","namespace":"n"}},)"
                      R"("object":{"metadata":{"name":"b","namespace":"n"}}})";
  rapidjson::MemoryStream ms(event.data(), event.size());
  h.reset();
  CHECK_FALSE(reader.Parse<rapidjson::kParseStopWhenDoneFlag>(ms, h));
  // The decoder is usable again after a reset.
  std::string good = R"({"type":"ADDED","object":{"metadata":{"name":"c","namespace":"n"}}})";
  rapidjson::MemoryStream ms2(good.data(), good.size());
  h.reset();
  REQUIRE(reader.Parse<rapidjson::kParseStopWhenDoneFlag>(ms2, h));
  CHECK(d.finish()->name == "c");
}

TEST_CASE("the list envelope yields each item and the list metadata") {
  ServiceDecoder d;
  std::vector<std::string> keys;
  ListHandler<ServiceDecoder> h(d, [&] {
    keys.emplace_back(d.finish()->key());
    return true;
  });
  std::string list =
      R"({"kind":"ServiceList","apiVersion":"v1","metadata":{"resourceVersion":"42","continue":"tok","remainingItemCount":7},)"
      R"("items":[{"metadata":{"name":"a","namespace":"x"}},{"metadata":{"name":"b","namespace":"y"},"spec":{"ports":[{"port":1}]}}]})";
  rapidjson::Reader reader;
  rapidjson::MemoryStream ms(list.data(), list.size());
  REQUIRE(reader.Parse(ms, h));
  CHECK(h.resource_version == "42");
  CHECK(h.continue_token == "tok");
  CHECK(h.remaining_item_count == 7);
  CHECK(keys == std::vector<std::string>{"x/a", "y/b"});
}

// Makes `count` distinct realistic nodes from the fixture (unique name, hostname label, uid,
// provider ID, addresses, machine/boot IDs, CIDRs).
std::vector<std::string> realisticNodes(int count) {
  std::string base = readTestdata("node.json");
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) {
    std::string name = fmt::format("ip-10-0-{}", i / 250) + fmt::format("-{}", i % 250) +
                       ".eu-west-1.compute.internal";
    std::string json = base;
    for (const char* unique :
         {"ip-10-0-12-34.eu-west-1.compute.internal", "i-0123456789abcdef0",
          "5b3a8c2e-8f1d-4c7a-9e2b", "ec2a1b2c3d4e5f60718293a4b5c6d7e8", "ec2a1b2c-3d4e-5f60",
          "0f1e2d3c-4b5a-6978", "10.0.12.34", "10.244.12.0", "fd00:10:244:12::"}) {
      std::string u = unique;
      std::string v = u.substr(0, u.size() - 5) + std::to_string(10000 + i).substr(0, 5);
      if (u.rfind("ip-10", 0) == 0)
        v = name;
      size_t pos = 0;
      while ((pos = json.find(u, pos)) != std::string::npos) {
        json.replace(pos, u.size(), v);
        pos += v.size();
      }
    }
    out.push_back(std::move(json));
  }
  return out;
}

TEST_CASE("bytes per cached node (5,000 realistic nodes)") {
  std::vector<std::string> jsons = realisticNodes(5000);
  size_t json_bytes = 0;
  for (const auto& j : jsons)
    json_bytes += j.size();
  // Everything the cache holds is measured as heap in use (malloc's own accounting): the
  // Node objects and control blocks, arenas, pooled strings, and a cache map like the
  // informer's.
  NodeDecoder d;
  std::unordered_map<std::string_view, std::shared_ptr<const Node>> cache;
  cache.reserve(8192);
  size_t before = mallinfo2().uordblks;
  for (const auto& json : jsons) {
    d.reset();
    rapidjson::Reader reader;
    rapidjson::MemoryStream ms(json.data(), json.size());
    REQUIRE(reader.Parse(ms, d));
    auto node = d.finish();
    cache.emplace(node->key(), node);
  }
  size_t after = mallinfo2().uordblks;
  size_t per_node = (after - before) / cache.size();
  MESSAGE("cached nodes: " << cache.size() << ", JSON " << json_bytes / jsons.size()
                           << " bytes/node, cache heap " << per_node << " bytes/node");
  // 852 bytes with 4-byte string references in one allocation per node; the layout of
  // 16-byte views and 32-byte pairs in a second allocation took about twice that.
  CHECK(per_node < 1000);
  auto any = cache.begin()->second;
  CHECK(any->label("kubernetes.io/hostname") == any->name());
}

TEST_CASE("the string pool names each string by a position that reads it back") {
  StringPool pool;
  std::vector<std::pair<std::string, uint32_t>> stored;
  // Lengths around the varint's one-byte limit (127), and enough strings to fill several
  // chunks, so positions cross chunk boundaries.
  for (int i = 0; i < 3000; ++i) {
    std::string s = fmt::format("{}-{}", i, std::string(static_cast<size_t>(i % 140), 'x'));
    StringPool::Interned in = pool.internRef(s);
    REQUIRE(in.view == s);
    stored.emplace_back(s, in.ref);
  }
  CHECK(pool.bytes() > StringPool::kChunk * 2);
  for (const auto& entry : stored) {
    CHECK(pool.at(entry.second) == entry.first);
    CHECK(pool.internRef(entry.first).ref == entry.second);  // again: the same position
  }
  // Too long to intern: the caller keeps its own copy.
  CHECK(pool.internRef(std::string(StringPool::kMaxLength + 1, 'y')).view.data() == nullptr);
  CHECK(pool.internRef("").view.data() == nullptr);
}

TEST_CASE("the string pool interns and stops when full") {
  StringPool pool(2);
  auto a = pool.intern("alpha");
  CHECK(pool.intern("alpha").data() == a.data());
  CHECK(pool.intern("beta") == "beta");
  CHECK(pool.full());
  CHECK(pool.intern("gamma").data() == nullptr);
  CHECK(pool.intern("alpha").data() == a.data());
}

}  // namespace ccm::kube

namespace ccm::kube {

TEST_CASE("a heartbeat-only Node event is made from the cached node, equal to a full decode") {
  NodeDecoder d;
  NodeDecoder full;
  std::string base = baseNode();
  auto first = decodeAgainst(d, base, nullptr);
  REQUIRE(first->conditions().size() == 2);
  CHECK(d.heartbeatCopies() == 0);
  const std::string first_text = describe(*first);

  // The version, every heartbeat time, managedFields' time, a message no controller reads,
  // and the images change; nothing a controller reads does.
  std::string next = heartbeat(base, "123457", "2026-07-24T10:05:10Z");
  next = replacedAll(std::move(next), R"("time":"2026-07-24T10:00:00Z")",
                     R"("time":"2026-07-24T10:05:10Z")");
  next = replaced(std::move(next), "kubelet has sufficient memory available", "plenty");
  next = replaced(std::move(next), R"("sizeBytes":)", R"("sizeBytes":1)");
  auto second = decodeAgainst(d, next, first.get());
  CHECK(d.heartbeatCopies() == 1);
  CHECK(describe(*second) == describe(*decodeWith(full, next)));
  CHECK(second->resourceVersion() == "123457");
  CHECK(second->condition("Ready")->last_heartbeat_time == 1784887510);
  CHECK(second->condition("NetworkUnavailable")->last_heartbeat_time == 1784887510);
  CHECK(second->condition("Ready")->last_transition_time == 1784887230);
  // The cached node is untouched, and the copy does not depend on it.
  CHECK(describe(*first) == first_text);
  CHECK(first->resourceVersion() == "123456");

  // Heartbeats for ever: each made from the one before, with the size the node was decoded
  // with, the version growing a digit included.
  std::shared_ptr<const Node> cached = second;
  first.reset();
  second.reset();
  size_t bytes = 0;
  for (int i = 0; i < 30; ++i) {
    std::string rv = std::to_string(999990 + i);
    std::string beat = fmt::format("2026-07-24T10:{:02}:00Z", 10 + i);
    std::string json = heartbeat(base, rv, beat);
    auto got = decodeAgainst(d, json, cached.get());
    cached = got;
    CHECK(describe(*got) == describe(*decodeWith(full, json)));
    if (i == 29) {
      CHECK(got->resourceVersion() == "1000019");
    }
    if (i == 1) {
      bytes = got->arenaBytes();
    }
    if (i > 10) {
      CHECK(got->arenaBytes() == bytes + 1);  // one more digit
    }
  }
  CHECK(d.heartbeatCopies() == 31);
}

TEST_CASE("a Node event that changes anything a controller reads is decoded in full") {
  NodeDecoder d;
  NodeDecoder full;
  std::string base = baseNode();
  auto cached = decodeAgainst(d, base, nullptr);
  // Each change comes with a heartbeat, as it would from a kubelet or a controller's patch.
  std::string beat = heartbeat(base, "123457", "2026-07-24T10:05:10Z");
  const std::vector<Change> changes = controllerVisibleChanges();
  uint64_t copies = d.heartbeatCopies();
  for (const Change& c : changes) {
    CAPTURE(c.what);
    std::string json = replaced(beat, c.from, c.to);
    auto got = decodeAgainst(d, json, cached.get());
    CHECK(d.heartbeatCopies() == copies);
    CHECK(describe(*got) == describe(*decodeWith(full, json)));
    CHECK(describe(*got) != describe(*decodeWith(full, beat)));
  }
  // The same heartbeat without a change is taken.
  auto same = decodeAgainst(d, beat, cached.get());
  CHECK(d.heartbeatCopies() == copies + 1);
  CHECK(describe(*same) == describe(*decodeWith(full, beat)));
}

}  // namespace ccm::kube

namespace ccm::kube {

// One watch event line of `type` carrying `object`.
std::string watchEvent(const std::string& type, const std::string& object) {
  return R"({"type":")" + type + R"(","object":)" + object + "}";
}

// A full decode of a watch event's object with the event's fingerprint, as the informer does
// when the scan does not make the node.
std::shared_ptr<const Node> decodeScanned(NodeDecoder& d, const std::string& object,
                                          const NodeEventScan& scan) {
  d.reset();
  rapidjson::Reader reader;
  rapidjson::MemoryStream ms(object.data(), object.size());
  REQUIRE(reader.Parse(ms, d));
  d.fingerprint(scan.fingerprint);
  return d.finish();
}

TEST_CASE("a scanned heartbeat event is made from the cached node without a parse") {
  NodeDecoder d;
  NodeDecoder full;
  NodeEventScan scan;
  std::string base = baseNode();
  std::string added = watchEvent("ADDED", base);
  REQUIRE(scanNodeEvent(added, scan));
  CHECK(scan.type == "ADDED");
  CHECK(scan.name == "ip-10-0-12-34.eu-west-1.compute.internal");
  CHECK(scan.resource_version == "123456");
  REQUIRE(scan.conditions.size() >= 2);
  CHECK(scan.conditions[0].type == "NetworkUnavailable");
  CHECK(scan.conditions[0].heartbeat == "2026-07-24T10:05:00Z");
  auto first = decodeScanned(d, base, scan);
  // A node without a fingerprint (listed) is never made from a scan.
  CHECK(d.finishScanned(*decodeWith(full, base), scan) == nullptr);

  // The version, every heartbeat time and managedFields' time change.
  std::shared_ptr<const Node> cached = first;
  uint64_t copies = d.heartbeatCopies();
  for (int i = 0; i < 30; ++i) {
    std::string rv = std::to_string(999990 + i);
    std::string beat = fmt::format("2026-07-24T10:{:02}:00Z", 10 + i);
    std::string json = replacedAll(heartbeat(base, rv, beat), R"("time":"2026-07-24T10:00:00Z")",
                                   R"("time":")" + beat + "\"");
    std::string line = watchEvent("MODIFIED", json);
    REQUIRE(scanNodeEvent(line, scan));
    CHECK(scan.type == "MODIFIED");
    CHECK(scan.resource_version == rv);
    auto got = d.finishScanned(*cached, scan);
    REQUIRE(got != nullptr);
    std::fill(line.begin(), line.end(), '#');  // the node holds nothing of the line
    CHECK(describe(*got) == describe(*decodeWith(full, json)));
    CHECK(got->resourceVersion() == rv);
    CHECK(got->condition("Ready")->last_heartbeat_time ==
          decodeWith(full, json)->condition("Ready")->last_heartbeat_time);
    // The first copy appends its version; later ones replace the copy's (7 digits at most,
    // behind a 1-byte length).
    CHECK(got->arenaBytes() <= first->arenaBytes() + 8);
    cached = got;
  }
  CHECK(d.heartbeatCopies() == copies + 30);
  CHECK(first->resourceVersion() == "123456");  // the cached node is untouched
}

TEST_CASE("a scanned event that changes anything but a heartbeat is left to the parser") {
  NodeDecoder d;
  NodeEventScan scan;
  std::string base = baseNode();
  std::string added = watchEvent("ADDED", base);
  REQUIRE(scanNodeEvent(added, scan));
  auto cached = decodeScanned(d, base, scan);
  std::string beat = heartbeat(base, "123457", "2026-07-24T10:05:10Z");
  std::vector<Change> changes = controllerVisibleChanges();
  // Changes no controller reads still change the bytes: the parser decides about them.
  changes.push_back({"condition message", "kubelet has sufficient memory available", "plenty"});
  changes.push_back({"image size", R"("sizeBytes":)", R"("sizeBytes":1)"});
  changes.push_back({"managedFields manager", R"("manager":")", R"("manager":"x)"});
  for (const Change& c : changes) {
    CAPTURE(c.what);
    std::string changed = watchEvent("MODIFIED", replaced(beat, c.from, c.to));
    REQUIRE(scanNodeEvent(changed, scan));
    CHECK(scan.fingerprint != cached->eventFingerprint());
    CHECK(d.finishScanned(*cached, scan) == nullptr);
  }
  // The same heartbeat without a change is taken.
  std::string same = watchEvent("MODIFIED", beat);
  REQUIRE(scanNodeEvent(same, scan));
  CHECK(d.finishScanned(*cached, scan) != nullptr);
  // A heartbeat of another node with the same bytes otherwise is not this node's.
  std::string other = replacedAll(beat, "ip-10-0-12-34.eu-west-1.compute.internal", "other");
  std::string others = watchEvent("MODIFIED", other);
  REQUIRE(scanNodeEvent(others, scan));
  CHECK(d.finishScanned(*cached, scan) == nullptr);
}

TEST_CASE("the scan answers false for what it cannot follow, never reading past the line") {
  NodeEventScan scan;
  std::string line = watchEvent("MODIFIED", baseNode());
  REQUIRE(scanNodeEvent(line, scan));
  uint64_t whole = scan.fingerprint;
  // Every cut of the event is refused up to the end of its conditions; after them the scan
  // only fingerprints, and a cut there fingerprints differently (a copy of each prefix, so
  // ASan sees any overread).
  size_t conditions_end = line.find("]", line.find(R"("conditions":[)"));
  for (size_t n = 0; n < line.size(); ++n) {
    std::string cut = line.substr(0, n);
    CAPTURE(n);
    if (n <= conditions_end) {
      CHECK_FALSE(scanNodeEvent(cut, scan));
    } else if (scanNodeEvent(cut, scan)) {
      CHECK(scan.fingerprint != whole);
    }
  }
  REQUIRE(scanNodeEvent(line + "x", scan));
  CHECK(scan.fingerprint != whole);
  CHECK_FALSE(scanNodeEvent("[" + line + "]", scan));
  CHECK_FALSE(scanNodeEvent("\"text\"", scan));
  CHECK_FALSE(scanNodeEvent(R"({"type":"MODIFIED" "object":{}})", scan));
  CHECK_FALSE(scanNodeEvent(R"({"type":"MODIFIED","object":{]})", scan));
  // Containers nothing is read from are stepped over whole, however deep; their bytes count.
  std::string deep = R"({"type":"MODIFIED","object":{"spec":)" + std::string(40, '[') + R"("]")" +
                     std::string(40, ']') + "}}";
  REQUIRE(scanNodeEvent(deep, scan));
  uint64_t deep_print = scan.fingerprint;
  REQUIRE(scanNodeEvent(replaced(deep, R"("]")", R"("}")"), scan));
  CHECK(scan.fingerprint != deep_print);
  CHECK_FALSE(scanNodeEvent(deep.substr(0, deep.size() - 3), scan));
  // A name or version with an escape is left to the parser, which unescapes it.
  CHECK_FALSE(scanNodeEvent(
      R"({"type":"MODIFIED","object":{"metadata":{"name":"a\u0062","resourceVersion":"1"}}})",
      scan));
  // Escaped quotes and backslashes inside other strings are read through, and their bytes
  // count.
  REQUIRE(
      scanNodeEvent(R"({"type":"MODIFIED","object":{"metadata":{"name":"n","resourceVersion":"1",)"
                    R"("annotations":{"a":"x\"y\\","b":"\\\""}}}})",
                    scan));
  CHECK(scan.name == "n");
  uint64_t escaped = scan.fingerprint;
  REQUIRE(
      scanNodeEvent(R"({"type":"MODIFIED","object":{"metadata":{"name":"n","resourceVersion":"2",)"
                    R"("annotations":{"a":"x\"y\\","b":"\\\""}}}})",
                    scan));
  CHECK(scan.fingerprint == escaped);  // only the version differs
  REQUIRE(
      scanNodeEvent(R"({"type":"MODIFIED","object":{"metadata":{"name":"n","resourceVersion":"1",)"
                    R"("annotations":{"a":"x\"z\\","b":"\\\""}}}})",
                    scan));
  CHECK(scan.fingerprint != escaped);
  // Whitespace the server may leave around values does not stop it.
  REQUIRE(scanNodeEvent(" { \"type\" : \"MODIFIED\" , \"object\" : { } } \r", scan));
  CHECK(scan.type == "MODIFIED");
  CHECK(whole != 0);
}

TEST_CASE("the scan finds a skipped container's end wherever its quotes and brackets fall") {
  // The scan searches 16 bytes at a time: quotes, escapes and brackets inside and outside
  // strings are moved across every position of a block by the padding in front of them. The
  // name and version come after the container, so they are read only if its end was found.
  const std::string container =
      R"({"a":"x\"}]{[\\","b":[{"c":"]}"},[]],"k:{\"type\":\"Ready\"}":{".":{}},"d":"\\"})";
  NodeEventScan scan;
  for (size_t pad = 0; pad < 40; ++pad) {
    CAPTURE(pad);
    std::string line = R"({"type":"MODIFIED","object":{"spec":{"p":")" + std::string(pad, 'p') +
                       R"(","q":)" + container + R"(},"metadata":{"name":"n)" +
                       std::to_string(pad) +
                       R"(","resourceVersion":"7"},"status":{"conditions":[]}}})";
    REQUIRE(scanNodeEvent(line, scan));
    CHECK(scan.name == "n" + std::to_string(pad));
    CHECK(scan.resource_version == "7");
    // Cut inside the container (an open string or escape, an unclosed bracket): refused.
    size_t at = line.find(container);
    for (size_t n = at; n < at + container.size(); ++n) {
      CHECK_FALSE(scanNodeEvent(line.substr(0, n), scan));
    }
  }
}

TEST_CASE("a Node with hundreds of its own strings reads every one back") {
  // Values too long for the pool (over 96 bytes) are the node's own; past the first 64 the
  // decoder stores a repeat again instead of looking for it.
  std::string annotations;
  for (int i = 0; i < 300; ++i) {
    annotations +=
        fmt::format(R"({}"note.example.com/k{:03}":"{}")", i == 0 ? "" : ",", i,
                    std::string(100, static_cast<char>('a' + i % 26)) + std::to_string(i % 150));
  }
  auto r = decodeNode(R"({"metadata":{"name":"big","uid":"u-1","annotations":{)" + annotations +
                      R"(}},"spec":{"providerID":"fake://big"},"status":{"addresses":[)"
                      R"({"type":"Hostname","address":"big"}]}})");
  REQUIRE(r.ok());
  const Node& n = **r;
  REQUIRE(n.annotations().size() == 300);
  for (int i = 0; i < 300; ++i) {
    std::string want = std::string(100, static_cast<char>('a' + i % 26)) + std::to_string(i % 150);
    CHECK(n.annotation(fmt::format("note.example.com/k{:03}", i)) == want);
  }
  CHECK(n.name() == "big");
  CHECK(n.providerId() == "fake://big");
  CHECK(n.addresses()[0].address == "big");
}

TEST_CASE("labels and annotations in any order are kept sorted by key, equal keys in order") {
  for (int count : {3, 20, 64, 65, 200}) {
    CAPTURE(count);
    std::string labels;
    std::string annotations;
    for (int i = count - 1; i >= 0; --i) {
      labels += fmt::format(R"("k{:03}":"v{}",)", i, i);
      annotations += fmt::format(R"("a{:03}":"w{}",)", (i * 7) % count, i);
    }
    labels.pop_back();
    annotations.pop_back();
    auto r = decodeNode(fmt::format(R"({{"metadata":{{"name":"n","labels":{{{}}},)"
                                    R"("annotations":{{{}}}}}}})",
                                    labels, annotations));
    REQUIRE(r.ok());
    const Node& n = **r;
    REQUIRE(n.labels().size() == static_cast<size_t>(count));
    CHECK(std::is_sorted(n.labels().begin(), n.labels().end(),
                         [](const KeyValue& a, const KeyValue& b) { return a.key < b.key; }));
    CHECK(std::is_sorted(n.annotations().begin(), n.annotations().end(),
                         [](const KeyValue& a, const KeyValue& b) { return a.key < b.key; }));
    for (int i = 0; i < count; ++i) {
      CHECK(n.label(fmt::format("k{:03}", i)) == fmt::format("v{}", i));
    }
  }
  // Equal keys (a malformed map) keep their order, as before.
  auto r = decodeNode(R"({"metadata":{"name":"n","labels":{"b":"1","a":"x","b":"2","a":"y"}}})");
  REQUIRE(r.ok());
  REQUIRE((*r)->labels().size() == 4);
  CHECK((*r)->labels()[0].value == "x");
  CHECK((*r)->labels()[1].value == "y");
  CHECK((*r)->labels()[2].value == "1");
  CHECK((*r)->labels()[3].value == "2");
}

}  // namespace ccm::kube
