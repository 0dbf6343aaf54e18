// The state file's JSON form: CloudState to JSON and back, with RapidJSON.
#include "plugins/fake-cloud/state_json.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <array>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ccm::fakecloud {
namespace {

using Allocator = rapidjson::Document::AllocatorType;

// The fields written and read alike, as (JSON key, member) pairs in the file's order.
constexpr std::array kLbStrings = {std::pair{"name", &LoadBalancerRecord::name},
                                   std::pair{"cluster", &LoadBalancerRecord::cluster},
                                   std::pair{"namespace", &LoadBalancerRecord::namespace_name},
                                   std::pair{"service", &LoadBalancerRecord::service},
                                   std::pair{"uid", &LoadBalancerRecord::uid},
                                   std::pair{"ip", &LoadBalancerRecord::ip},
                                   std::pair{"hostname", &LoadBalancerRecord::hostname}};
constexpr std::array kLbCounters = {std::pair{"ensures", &LoadBalancerRecord::ensures},
                                    std::pair{"hostUpdates", &LoadBalancerRecord::host_updates}};
constexpr std::array kLbLists = {std::pair{"sourceRanges", &LoadBalancerRecord::source_ranges}};
constexpr std::array kRouteStrings = {std::pair{"name", &RouteRecord::name},
                                      std::pair{"cluster", &RouteRecord::cluster},
                                      std::pair{"targetNode", &RouteRecord::target_node},
                                      std::pair{"destinationCIDR", &RouteRecord::destination_cidr},
                                      std::pair{"nameHint", &RouteRecord::name_hint}};
constexpr std::array kStats = {
    std::pair{"lbCreates", &CloudState::lb_creates},
    std::pair{"lbDeletes", &CloudState::lb_deletes},
    std::pair{"routeCreates", &CloudState::route_creates},
    std::pair{"routeDeletes", &CloudState::route_deletes},
    std::pair{"duplicateRouteCreates", &CloudState::duplicate_route_creates}};

// ---- encoding ----------------------------------------------------------------------------------

template <typename Record, typename Fields>
void addStrings(rapidjson::Value& obj, const Record& record, const Fields& fields, Allocator& a) {
  for (const auto& [key, field] : fields) {
    obj.AddMember(rapidjson::StringRef(key), rapidjson::Value((record.*field).c_str(), a), a);
  }
}

template <typename Record, typename Fields>
void addCounters(rapidjson::Value& obj, const Record& record, const Fields& fields, Allocator& a) {
  for (const auto& [key, field] : fields) {
    obj.AddMember(rapidjson::StringRef(key), record.*field, a);
  }
}

rapidjson::Value stringArray(const std::vector<std::string>& strings, Allocator& a) {
  rapidjson::Value list(rapidjson::kArrayType);
  list.Reserve(static_cast<rapidjson::SizeType>(strings.size()), a);
  for (const auto& s : strings) {
    list.PushBack(rapidjson::Value(s.c_str(), a), a);
  }
  return list;
}

// The node lists of the load balancers, each written once ("nodeSets"), and which one each
// load balancer has.
class NodeSetWriter {
 public:
  int indexOf(const NodeNames& names) {
    if (names == nullptr) {
      return -1;
    }
    auto [it, added] = index_.emplace(names.get(), static_cast<int>(sets_.size()));
    if (added) {
      sets_.push_back(names.get());
    }
    return it->second;
  }
  rapidjson::Value encode(Allocator& a) const {
    rapidjson::Value sets(rapidjson::kArrayType);
    for (const auto* names : sets_) {
      sets.PushBack(stringArray(*names, a), a);
    }
    return sets;
  }

 private:
  std::unordered_map<const std::vector<std::string>*, int> index_;
  std::vector<const std::vector<std::string>*> sets_;
};

rapidjson::Value encodeLoadBalancer(const LoadBalancerRecord& lb, NodeSetWriter& node_sets,
                                    Allocator& a) {
  rapidjson::Value v(rapidjson::kObjectType);
  addStrings(v, lb, kLbStrings, a);
  addCounters(v, lb, kLbCounters, a);
  rapidjson::Value ports(rapidjson::kArrayType);
  for (const auto& p : lb.ports) {
    rapidjson::Value pv(rapidjson::kObjectType);
    pv.AddMember("name", rapidjson::Value(p.name.c_str(), a), a);
    pv.AddMember("protocol", rapidjson::Value(p.protocol.c_str(), a), a);
    pv.AddMember("port", p.port, a);
    pv.AddMember("nodePort", p.node_port, a);
    ports.PushBack(pv, a);
  }
  v.AddMember("ports", ports, a);
  v.AddMember("nodeSet", node_sets.indexOf(lb.nodes), a);
  for (const auto& [key, field] : kLbLists) {
    v.AddMember(rapidjson::StringRef(key), stringArray(lb.*field, a), a);
  }
  return v;
}

// ---- decoding ----------------------------------------------------------------------------------

const rapidjson::Value* member(const rapidjson::Value& obj, const char* key) {
  auto it = obj.FindMember(key);
  return it != obj.MemberEnd() ? &it->value : nullptr;
}

std::string stringAt(const rapidjson::Value& obj, const char* key) {
  const rapidjson::Value* v = member(obj, key);
  return v != nullptr && v->IsString() ? v->GetString() : "";
}

int64_t intAt(const rapidjson::Value& obj, const char* key) {
  const rapidjson::Value* v = member(obj, key);
  return v != nullptr && v->IsInt64() ? v->GetInt64() : 0;
}

// The elements of an array member; none when the member is missing or not an array.
rapidjson::Value::ConstArray arrayAt(const rapidjson::Value& obj, const char* key) {
  static const rapidjson::Value kEmpty(rapidjson::kArrayType);
  const rapidjson::Value* v = member(obj, key);
  return v != nullptr && v->IsArray() ? v->GetArray() : kEmpty.GetArray();
}

template <typename Record, typename Fields>
void readStrings(const rapidjson::Value& obj, Record& record, const Fields& fields) {
  for (const auto& [key, field] : fields) {
    record.*field = stringAt(obj, key);
  }
}

template <typename Record, typename Fields>
void readCounters(const rapidjson::Value& obj, Record& record, const Fields& fields) {
  for (const auto& [key, field] : fields) {
    record.*field = intAt(obj, key);
  }
}

std::vector<std::string> stringsAt(const rapidjson::Value& obj, const char* key) {
  std::vector<std::string> out;
  for (const auto& s : arrayAt(obj, key)) {
    if (s.IsString()) {
      out.emplace_back(s.GetString());
    }
  }
  return out;
}

// A load balancer's nodes: its entry of "nodeSets", or its own "nodes" (files written before
// the sets); empty when neither is there.
NodeNames nodesOf(const rapidjson::Value& v, const std::vector<NodeNames>& sets) {
  if (const rapidjson::Value* i = member(v, "nodeSet");
      i != nullptr && i->IsInt() && i->GetInt() >= 0 &&
      static_cast<size_t>(i->GetInt()) < sets.size()) {
    return sets[static_cast<size_t>(i->GetInt())];
  }
  return std::make_shared<const std::vector<std::string>>(stringsAt(v, "nodes"));
}

LoadBalancerRecord decodeLoadBalancer(const rapidjson::Value& v,
                                      const std::vector<NodeNames>& node_sets) {
  LoadBalancerRecord lb;
  readStrings(v, lb, kLbStrings);
  readCounters(v, lb, kLbCounters);
  for (const auto& pv : arrayAt(v, "ports")) {
    lb.ports.push_back({stringAt(pv, "name"), stringAt(pv, "protocol"),
                        static_cast<int32_t>(intAt(pv, "port")),
                        static_cast<int32_t>(intAt(pv, "nodePort"))});
  }
  lb.nodes = nodesOf(v, node_sets);
  for (const auto& [key, field] : kLbLists) {
    lb.*field = stringsAt(v, key);
  }
  return lb;
}

}  // namespace

std::string encodeState(const CloudState& state) {
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  rapidjson::Value lbs(rapidjson::kArrayType);
  NodeSetWriter node_sets;
  for (const auto& [name, lb] : state.load_balancers) {
    lbs.PushBack(encodeLoadBalancer(lb, node_sets, a), a);
  }
  doc.AddMember("loadBalancers", lbs, a);
  doc.AddMember("nodeSets", node_sets.encode(a), a);
  rapidjson::Value routes(rapidjson::kArrayType);
  for (const auto& [cidr, r] : state.routes) {
    rapidjson::Value v(rapidjson::kObjectType);
    addStrings(v, r, kRouteStrings, a);
    routes.PushBack(v, a);
  }
  doc.AddMember("routes", routes, a);
  rapidjson::Value stats(rapidjson::kObjectType);
  addCounters(stats, state, kStats, a);
  doc.AddMember("stats", stats, a);
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buf);
  doc.Accept(writer);
  return {buf.GetString(), buf.GetSize()};
}

std::optional<CloudState> decodeState(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse(text.c_str());
  if (doc.HasParseError() || !doc.IsObject()) {
    return std::nullopt;
  }
  const rapidjson::Value& root = doc;
  CloudState state;
  std::vector<NodeNames> node_sets;
  for (const auto& v : arrayAt(root, "nodeSets")) {
    std::vector<std::string> names;
    if (v.IsArray()) {
      for (const auto& s : v.GetArray()) {
        if (s.IsString()) {
          names.emplace_back(s.GetString());
        }
      }
    }
    node_sets.push_back(std::make_shared<const std::vector<std::string>>(std::move(names)));
  }
  for (const auto& v : arrayAt(root, "loadBalancers")) {
    if (!v.IsObject()) {
      continue;
    }
    LoadBalancerRecord lb = decodeLoadBalancer(v, node_sets);
    std::string name = lb.name;
    state.load_balancers[name] = std::move(lb);
  }
  for (const auto& v : arrayAt(root, "routes")) {
    RouteRecord r;
    readStrings(v, r, kRouteStrings);
    std::string cidr = r.destination_cidr;
    state.routes[cidr] = std::move(r);
  }
  if (const rapidjson::Value* stats = member(root, "stats");
      stats != nullptr && stats->IsObject()) {
    readCounters(*stats, state, kStats);
  }
  return state;
}

}  // namespace ccm::fakecloud
