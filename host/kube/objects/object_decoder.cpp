// Shared metadata decoding for the streaming object decoders.
#include "host/kube/objects/object_decoder.hpp"

#include <rapidjson/memorystream.h>

#include <algorithm>

#include "host/kube/api/time_format.hpp"
#include "host/kube/objects/node.hpp"

namespace ccm::kube::detail {

int64_t timestampOf(const Scalar& v) {
  if (!v.isString()) {
    return 0;
  }
  return parseRfc3339(v.s).value_or(0);
}

void MetaScratch::clear() {
  name = ns = uid = resource_version = SRef{};
  creation_timestamp = deletion_timestamp = 0;
  labels.clear();
  annotations.clear();
  finalizers.clear();
  pending_key_ = SRef{};
}

int MetaScratch::key(int ctx, std::string_view key, ScratchText& text, StringPool& pool) {
  switch (ctx) {
    case kCtxMeta:
      if (key == "name") {
        return kFieldName;
      }
      if (key == "namespace") {
        return kFieldNamespace;
      }
      if (key == "uid") {
        return kFieldUid;
      }
      if (key == "resourceVersion") {
        return kFieldResourceVersion;
      }
      if (key == "creationTimestamp") {
        return kFieldCreationTimestamp;
      }
      if (key == "deletionTimestamp") {
        return kFieldDeletionTimestamp;
      }
      if (key == "labels") {
        return kFieldLabels;
      }
      if (key == "annotations") {
        return kFieldAnnotations;
      }
      if (key == "finalizers") {
        return kFieldFinalizers;
      }
      return 0;
    case kCtxAnnotations:
      pending_key_ = text.intern(pool, key);
      return kFieldMapEntry;
    case kCtxLabels:
      pending_key_ = text.intern(pool, key);
      // The hostname label is unique per node: not worth a pool entry.
      intern_value_ = key != "kubernetes.io/hostname";
      return kFieldMapEntry;
    default:
      return 0;
  }
}

int MetaScratch::child(int ctx, int field, bool is_array) const {
  if (ctx != kCtxMeta) {
    return 0;
  }
  if (!is_array && field == kFieldLabels) {
    return kCtxLabels;
  }
  if (!is_array && field == kFieldAnnotations) {
    return kCtxAnnotations;
  }
  if (is_array && field == kFieldFinalizers) {
    return kCtxFinalizers;
  }
  return 0;
}

void MetaScratch::value(int ctx, int field, const Scalar& v, ScratchText& text, StringPool& pool) {
  switch (ctx) {
    case kCtxMeta:
      if (!v.isString()) {
        return;
      }
      switch (field) {
        case kFieldName:
          name = text.add(v.s);
          break;
        case kFieldNamespace:
          ns = text.intern(pool, v.s);
          break;
        case kFieldUid:
          uid = text.add(v.s);
          break;
        case kFieldResourceVersion:
          resource_version = text.add(v.s);
          break;
        case kFieldCreationTimestamp:
          creation_timestamp = timestampOf(v);
          break;
        case kFieldDeletionTimestamp:
          deletion_timestamp = timestampOf(v);
          break;
        default:
          break;
      }
      return;
    case kCtxLabels:
      if (field == kFieldMapEntry && v.isString()) {
        labels.push_back(KV{pending_key_, intern_value_ ? text.intern(pool, v.s) : text.add(v.s)});
      }
      return;
    case kCtxAnnotations:
      if (field == kFieldMapEntry && v.isString()) {
        // Annotation values are mostly per-object (addresses, IDs, JSON): only tiny ones
        // ("true", "0") are pooled.
        annotations.push_back(KV{pending_key_, text.intern(pool, v.s, 8)});
      }
      return;
    case kCtxFinalizers:
      if (v.isString()) {
        finalizers.push_back(text.intern(pool, v.s));
      }
      return;
    default:
      return;
  }
}

namespace {
constexpr size_t kInsertionSortMax = 64;
}  // namespace

void MetaScratch::sort(const ScratchText& text) {
  // An insertion sort, stable: API servers write map keys sorted, so this is one pass of
  // compares, where std::stable_sort allocated a merge buffer for every object. Long maps
  // (where the insertion sort's worst case would show) still take std::stable_sort.
  auto less = [&text](const KV& a, const KV& b) { return text.view(a.key) < text.view(b.key); };
  auto sorted = [&text, &less](std::vector<KV>& map) {
    if (map.size() > kInsertionSortMax) {
      std::stable_sort(map.begin(), map.end(), less);
      return;
    }
    for (size_t i = 1; i < map.size(); ++i) {
      KV e = map[i];
      std::string_view key = text.view(e.key);
      size_t j = i;
      for (; j > 0 && key < text.view(map[j - 1].key); --j) {
        map[j] = map[j - 1];
      }
      map[j] = e;
    }
  };
  sorted(labels);
  sorted(annotations);
}

void MetaScratch::materialize(ScratchText& text, StringPool& pool) {
  text.materialize(pool, name);
  text.materialize(pool, ns);
  text.materialize(pool, uid);
  text.materialize(pool, resource_version);
  for (std::vector<KV>* map : {&labels, &annotations}) {
    for (KV& e : *map) {
      text.materialize(pool, e.key);
      text.materialize(pool, e.value);
    }
  }
  for (SRef& f : finalizers) {
    text.materialize(pool, f);
  }
}

}  // namespace ccm::kube::detail

namespace ccm::kube {
namespace {

// Tracks the depth of the document and stops the parse (by answering false) once the
// version was read, or once the metadata object closed without one.
class VersionReader : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, VersionReader> {
 public:
  std::optional<std::string> version;

  bool Default() {
    next_ = Next::Other;
    return true;
  }
  bool String(const char* s, rapidjson::SizeType n, bool) {
    if (next_ == Next::Version) {
      version.emplace(s, n);
      return false;
    }
    return Default();
  }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    std::string_view k(s, n);
    if (depth_ == 1 && k == "metadata") {
      next_ = Next::Metadata;
    } else if (meta_depth_ != 0 && depth_ == meta_depth_ && k == "resourceVersion") {
      next_ = Next::Version;
    } else {
      next_ = Next::Other;
    }
    return true;
  }
  bool StartObject() {
    ++depth_;
    if (next_ == Next::Metadata) {
      meta_depth_ = depth_;
    }
    next_ = Next::Other;
    return true;
  }
  bool EndObject(rapidjson::SizeType) {
    if (depth_ == meta_depth_) {
      return false;  // the metadata has no version
    }
    --depth_;
    return true;
  }
  bool StartArray() {
    ++depth_;
    next_ = Next::Other;
    return true;
  }
  bool EndArray(rapidjson::SizeType) {
    --depth_;
    return true;
  }

 private:
  enum class Next { Other, Metadata, Version };
  Next next_ = Next::Other;
  int depth_ = 0;
  int meta_depth_ = 0;
};

}  // namespace

std::optional<std::string> resourceVersionOf(std::string_view json) {
  rapidjson::MemoryStream bytes(json.data(), json.size());
  rapidjson::Reader reader;
  VersionReader handler;
  reader.Parse(bytes, handler);
  return std::move(handler.version);
}

}  // namespace ccm::kube
