// ServiceDecoder: a streaming (SAX) decoder from core/v1 Service JSON into the compact
// Service. Besides picking fields it re-serialises the object (compact, without
// metadata.managedFields) for Service::raw_json. Use like NodeDecoder.
//
// THREAD: one thread at a time.
#pragma once

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <memory>
#include <string_view>
#include <vector>

#include "host/kube/objects/object_decoder.hpp"
#include "host/kube/objects/service.hpp"

namespace ccm::kube {

class ServiceDecoder : public detail::SaxDecoder<ServiceDecoder> {
  using Base = detail::SaxDecoder<ServiceDecoder>;

 public:
  using Object = Service;
  // Every event feeds the raw-JSON tee: no raw skipping.
  static constexpr bool kRawSkip = false;

  ServiceDecoder();

  void reset();
  std::shared_ptr<const Service> finish();
  // Whether finished Services carry their JSON (Service::raw_json; on by default). Only
  // load-balancer calls read it; without it a cached LoadBalancer Service is about half as
  // large, and no event is written back out as JSON. Takes effect at the next reset().
  void keepJson(bool keep) { keep_json_ = keep; }
  std::string_view name() const { return text_.view(meta_.name); }
  std::string_view resourceVersion() const { return text_.view(meta_.resource_version); }
  // "namespace/name" of the decoded object (valid until the next event or reset()).
  std::string_view key();

  // SAX events: copied to the JSON writer, then decoded.
  bool Null();
  bool Bool(bool b);
  bool Int(int i);
  bool Uint(unsigned u);
  bool Int64(int64_t i);
  bool Uint64(uint64_t u);
  bool Double(double d);
  bool String(const char* s, unsigned n, bool copy);
  bool StartObject();
  bool Key(const char* s, unsigned n, bool copy);
  bool EndObject(unsigned members);
  bool StartArray();
  bool EndArray(unsigned elements);

  // SAX hooks (see detail::SaxDecoder).
  int rootContext();
  int key(int ctx, std::string_view key);
  int child(int ctx, int field, bool is_array);
  void value(int ctx, int field, const detail::Scalar& v);
  void end(int ctx);

 private:
  struct RawPort {
    detail::SRef name, protocol, app_protocol, target_name;
    int32_t port = 0, node_port = 0, target_port = 0;
  };
  struct RawPortStatus {
    int32_t port = 0;
    detail::SRef protocol, error;
  };
  struct RawIngress {
    detail::SRef ip, hostname, ip_mode;
    uint32_t ports_begin = 0, ports_count = 0;
  };

  // Tee bookkeeping: returns false when the event belongs to a skipped subtree.
  bool teeScalar();
  bool teeOpen();
  bool teeClose();

  std::shared_ptr<StringPool> pool_;
  detail::ScratchText text_;
  detail::MetaScratch meta_;
  detail::SRef type_, cluster_ip_, lb_ip_, etp_, lb_class_, affinity_;
  bool has_lb_class_ = false;
  bool has_affinity_config_ = false;
  int32_t hc_node_port_ = 0;
  int32_t affinity_timeout_ = 0;
  std::vector<RawPort> ports_;
  std::vector<detail::SRef> source_ranges_, ip_families_, external_ips_;
  std::vector<RawIngress> ingress_;
  std::vector<RawPortStatus> port_statuses_;
  RawPort port_;
  RawIngress ingress_item_;
  RawPortStatus port_status_;
  std::string key_scratch_;

  rapidjson::StringBuffer raw_;
  rapidjson::Writer<rapidjson::StringBuffer> writer_;
  int tee_depth_ = 0;
  int tee_skip_ = 0;  // -1: skip the next value; >0: inside a skipped container
  bool keep_json_ = true;
  bool root_key_metadata_ = false;
  bool in_metadata_ = false;
};

}  // namespace ccm::kube
