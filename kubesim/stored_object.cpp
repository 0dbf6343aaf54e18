// StoredObject / PreparedObject: serialisation with a resourceVersion placeholder and the index.
#include "kubesim/stored_object.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cstring>

namespace ccm::kubesim {
namespace {

void extractIndex(const ResourceType& type, const JsonValue& doc, std::string& ns,
                  std::string& name, std::string& uid, Labels& labels,
                  std::vector<std::string>& fields, bool& deleting, bool& has_finalizers) {
  const JsonValue* meta = member(doc, "metadata");
  if (meta != nullptr) {
    ns = std::string(stringMember(*meta, "namespace"));
    name = std::string(stringMember(*meta, "name"));
    uid = std::string(stringMember(*meta, "uid"));
    if (const JsonValue* l = member(*meta, "labels"); l != nullptr && l->IsObject()) {
      for (auto it = l->MemberBegin(); it != memberEnd(*l); ++it) {
        if (it->value.IsString()) {
          labels.emplace_back(std::string(it->name.GetString(), it->name.GetStringLength()),
                              std::string(it->value.GetString(), it->value.GetStringLength()));
        }
      }
      std::sort(labels.begin(), labels.end());
    }
    const JsonValue* dt = member(*meta, "deletionTimestamp");
    deleting = dt != nullptr && dt->IsString();
    const JsonValue* fin = member(*meta, "finalizers");
    has_finalizers = fin != nullptr && fin->IsArray() && !fin->Empty();
  }
  if (!type.namespaced) {
    ns.clear();
  }
  for (const auto& label : type.allFieldLabels()) {
    fields.push_back(fieldValue(doc, label));
  }
}

}  // namespace

std::string StoredObject::jsonWithRv(uint64_t new_rv) const {
  std::string digits = decimal(new_rv);
  std::string out;
  out.reserve(json.size() + digits.size());
  out.append(json, 0, rv_pos);
  out.append(digits);
  out.append(json, rv_pos + rv_len, std::string::npos);
  return out;
}

bool PreparedObject::sameContentAs(const StoredObject& stored) const {
  size_t marker_len = kRvMarker.size();
  if (json.size() - marker_len != stored.json.size() - stored.rv_len) {
    return false;
  }
  if (marker_pos != stored.rv_pos) {
    return false;
  }
  return std::memcmp(json.data(), stored.json.data(), marker_pos) == 0 &&
         std::memcmp(json.data() + marker_pos + marker_len,
                     stored.json.data() + stored.rv_pos + stored.rv_len,
                     json.size() - marker_pos - marker_len) == 0;
}

ObjectPtr PreparedObject::finish(uint64_t rv) && {
  auto obj = std::make_shared<StoredObject>();
  std::string digits = decimal(rv);
  obj->json = std::move(json);
  obj->json.replace(marker_pos, kRvMarker.size(), digits);
  obj->rv = rv;
  obj->rv_pos = static_cast<uint32_t>(marker_pos);
  obj->rv_len = static_cast<uint32_t>(digits.size());
  obj->ns = std::move(ns);
  obj->name = std::move(name);
  obj->uid = std::move(uid);
  obj->labels = std::move(labels);
  obj->fields = std::move(fields);
  obj->deleting = deleting;
  obj->has_finalizers = has_finalizers;
  return obj;
}

ObjectPtr PreparedObject::finish(uint64_t rv) const& {
  auto obj = std::make_shared<StoredObject>();
  std::string digits = decimal(rv);
  obj->json.reserve(json.size() - kRvMarker.size() + digits.size());
  obj->json.append(json, 0, marker_pos);
  obj->json.append(digits);
  obj->json.append(json, marker_pos + kRvMarker.size(), std::string::npos);
  obj->rv = rv;
  obj->rv_pos = static_cast<uint32_t>(marker_pos);
  obj->rv_len = static_cast<uint32_t>(digits.size());
  obj->ns = ns;
  obj->name = name;
  obj->uid = uid;
  obj->labels = labels;
  obj->fields = fields;
  obj->deleting = deleting;
  obj->has_finalizers = has_finalizers;
  return obj;
}

namespace {

// What prepareObject searches for: the resourceVersion member holding the marker.
constexpr std::string_view kRvNeedle = "\"resourceVersion\":\"@@kubesim-resource-version@@";
static_assert(kRvNeedle.substr(kRvNeedle.size() - kRvMarker.size()) == kRvMarker);

// The per-thread serialisation buffer keeps its memory between writes up to this size.
constexpr size_t kKeptBufferBytes = size_t{256} * 1024;

// ObjectMeta's fields in the order kube-apiserver writes them (the Go struct's order), so
// answers and watch events read like the real server's: a client that stops at the
// resourceVersion finds it near the top. Fields it does not know keep their order, after.
void orderObjectMeta(JsonValue& meta, JsonAllocator& alloc) {
  static constexpr std::string_view kOrder[] = {"name",
                                                "generateName",
                                                "namespace",
                                                "selfLink",
                                                "uid",
                                                "resourceVersion",
                                                "generation",
                                                "creationTimestamp",
                                                "deletionTimestamp",
                                                "deletionGracePeriodSeconds",
                                                "labels",
                                                "annotations",
                                                "ownerReferences",
                                                "finalizers",
                                                "managedFields"};
  if (!meta.IsObject()) {
    return;
  }
  JsonValue ordered(rapidjson::kObjectType);
  for (std::string_view key : kOrder) {
    auto it = meta.FindMember(
        rapidjson::StringRef(key.data(), static_cast<rapidjson::SizeType>(key.size())));
    if (it != memberEnd(meta)) {
      ordered.AddMember(it->name, it->value, alloc);  // moves both out of `meta`
      meta.EraseMember(it);
    }
  }
  for (auto it = meta.MemberBegin(); it != memberEnd(meta); ++it) {
    ordered.AddMember(it->name, it->value, alloc);
  }
  meta = ordered;
}

}  // namespace

PreparedObject prepareObject(const ResourceType& type, JsonValue& doc, JsonAllocator& alloc) {
  PreparedObject p;
  JsonValue& meta = ensureObject(doc, "metadata", alloc);
  setMember(meta, "resourceVersion",
            JsonValue(rapidjson::StringRef(kRvMarker.data(),
                                           static_cast<rapidjson::SizeType>(kRvMarker.size()))),
            alloc);
  orderObjectMeta(meta, alloc);
  {
    // One buffer per thread, kept between writes: a fresh one would grow from 256 bytes by
    // reallocation to the object's size on every write (8.6 KB for a Node).
    thread_local rapidjson::StringBuffer buf;
    buf.Clear();
    rapidjson::Writer<rapidjson::StringBuffer> writer(buf);
    doc.Accept(writer);
    p.json.assign(buf.GetString(), buf.GetSize());
    if (buf.GetSize() > kKeptBufferBytes) {
      buf.Clear();
      buf.ShrinkToFit();  // a rare large object does not stay pinned to the thread
    }
  }
  // The marker's first occurrence is ours: user strings containing it would be escaped the
  // same way, so search for the exact member.
  size_t pos = p.json.find(kRvNeedle);
  p.marker_pos = pos + kRvNeedle.size() - kRvMarker.size();
  extractIndex(type, doc, p.ns, p.name, p.uid, p.labels, p.fields, p.deleting, p.has_finalizers);
  // Drop the marker from the document so callers can keep using it.
  removeMember(meta, "resourceVersion");
  return p;
}

ObjectPtr storedFromJson(const ResourceType& type, std::string json) {
  JsonDocument doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return nullptr;
  }
  uint64_t rv = 0;
  if (const JsonValue* meta = member(doc, "metadata")) {
    rv = parseDecimal(stringMember(*meta, "resourceVersion")).value_or(0);
  }
  PreparedObject p = prepareObject(type, doc, doc.GetAllocator());
  return std::move(p).finish(rv);
}

std::string fieldValue(const JsonValue& obj, std::string_view label) {
  if (label == "source") {
    const JsonValue* src = member(obj, "source");
    return src ? std::string(stringMember(*src, "component")) : std::string();
  }
  const JsonValue* cur = &obj;
  size_t start = 0;
  while (cur != nullptr) {
    size_t dot = label.find('.', start);
    std::string_view part =
        label.substr(start, dot == std::string_view::npos ? label.npos : dot - start);
    cur = member(*cur, part);
    if (dot == std::string_view::npos) {
      break;
    }
    start = dot + 1;
  }
  if (cur == nullptr || cur->IsNull()) {
    if (label == "spec.unschedulable" || label == "spec.hostNetwork") {
      return "false";
    }
    return {};
  }
  if (cur->IsString()) {
    return {cur->GetString(), cur->GetStringLength()};
  }
  if (cur->IsBool()) {
    return cur->GetBool() ? "true" : "false";
  }
  if (cur->IsInt64()) {
    return std::to_string(cur->GetInt64());
  }
  return {};
}

}  // namespace ccm::kubesim
