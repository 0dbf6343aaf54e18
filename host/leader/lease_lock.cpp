// KubeLeaseLock: Lease JSON encoding/decoding and the GET/POST/PUT calls.
#include "host/leader/lease_lock.hpp"

#include <fmt/format.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "host/kube/api/time_format.hpp"

namespace ccm::leader {

using kube::ApiResult;
using kube::ApiStatus;

KubeLeaseLock::KubeLeaseLock(kube::KubeApi& api, std::string ns, std::string name)
    : api_(api), ns_(std::move(ns)), name_(std::move(name)) {}

std::string KubeLeaseLock::encode(const LeaseRecord& r) const {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("apiVersion");
  w.String("coordination.k8s.io/v1");
  w.Key("kind");
  w.String("Lease");
  w.Key("metadata");
  w.StartObject();
  w.Key("name");
  w.String(name_);
  w.Key("namespace");
  w.String(ns_);
  if (!r.resource_version.empty()) {
    w.Key("resourceVersion");
    w.String(r.resource_version);
  }
  w.EndObject();
  w.Key("spec");
  w.StartObject();
  w.Key("holderIdentity");
  w.String(r.holder_identity);
  w.Key("leaseDurationSeconds");
  w.Int(r.lease_duration_seconds);
  if (r.acquire_time) {
    w.Key("acquireTime");
    w.String(kube::formatMicroTime(*r.acquire_time));
  }
  if (r.renew_time) {
    w.Key("renewTime");
    w.String(kube::formatMicroTime(*r.renew_time));
  }
  w.Key("leaseTransitions");
  w.Int(r.lease_transitions);
  w.EndObject();
  w.EndObject();
  return buf.GetString();
}

ApiResult<LeaseRecord> KubeLeaseLock::decode(std::string_view json) {
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return ApiStatus(0, kube::Reason::Decode, "invalid Lease JSON");
  }
  LeaseRecord r;
  auto meta = doc.FindMember("metadata");
  if (meta != doc.MemberEnd() && meta->value.IsObject()) {
    auto rv = meta->value.FindMember("resourceVersion");
    if (rv != meta->value.MemberEnd() && rv->value.IsString()) {
      r.resource_version = rv->value.GetString();
    }
  }
  auto spec = doc.FindMember("spec");
  if (spec != doc.MemberEnd() && spec->value.IsObject()) {
    const auto& s = spec->value;
    auto str = [&s](const char* k) -> std::string {
      auto it = s.FindMember(k);
      return it != s.MemberEnd() && it->value.IsString() ? it->value.GetString() : "";
    };
    auto num = [&s](const char* k) -> int32_t {
      auto it = s.FindMember(k);
      return it != s.MemberEnd() && it->value.IsInt() ? it->value.GetInt() : 0;
    };
    r.holder_identity = str("holderIdentity");
    r.lease_duration_seconds = num("leaseDurationSeconds");
    r.lease_transitions = num("leaseTransitions");
    if (auto t = kube::parseRfc3339Time(str("acquireTime"))) {
      r.acquire_time = *t;
    }
    if (auto t = kube::parseRfc3339Time(str("renewTime"))) {
      r.renew_time = *t;
    }
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    s.Accept(w);
    r.spec_fingerprint = buf.GetString();
  }
  return r;
}

ApiResult<LeaseRecord> KubeLeaseLock::get(std::chrono::milliseconds timeout) {
  kube::CallOptions o;
  o.timeout = timeout;
  auto r = api_.get(kube::leasePath(ns_, name_), {}, o);
  if (!r.ok()) {
    return r.status();
  }
  return decode(*r);
}

ApiResult<LeaseRecord> KubeLeaseLock::create(const LeaseRecord& record,
                                             std::chrono::milliseconds timeout) {
  kube::CallOptions o;
  o.timeout = timeout;
  o.want_response = true;
  LeaseRecord fresh = record;
  fresh.resource_version.clear();
  auto r = api_.create(kube::leasePath(ns_), encode(fresh), o);
  if (!r.ok()) {
    return r.status();
  }
  return decode(*r);
}

ApiResult<LeaseRecord> KubeLeaseLock::update(const LeaseRecord& record,
                                             std::chrono::milliseconds timeout) {
  kube::CallOptions o;
  o.timeout = timeout;
  o.want_response = true;
  auto r = api_.update(kube::leasePath(ns_, name_), encode(record), o);
  if (!r.ok()) {
    return r.status();
  }
  return decode(*r);
}

}  // namespace ccm::leader
