// Continue tokens: encoding and strict decoding.
#include "kubesim/continue_token.hpp"

#include "host/runtime/base64.hpp"
#include "kubesim/json_util.hpp"

namespace ccm::kubesim {
namespace {

constexpr std::string_view kInvalid = "continue key is not valid";

std::string keyPrefix(std::string_view ns) {
  return ns.empty() ? std::string() : std::string(ns) + "/";
}

// path.Clean("/" + key) == "/" + key: no empty, "." or ".." segments, no trailing slash.
bool cleanPath(std::string_view key) {
  size_t pos = 0;
  while (true) {
    size_t slash = key.find('/', pos);
    std::string_view seg = key.substr(pos, slash == std::string_view::npos ? key.npos : slash - pos);
    if (seg.empty() || seg == "." || seg == "..") {
      return false;
    }
    if (slash == std::string_view::npos) {
      return true;
    }
    pos = slash + 1;
  }
}

// The JSON type name Go reports in "cannot unmarshal X into ...".
std::string goKind(const JsonValue& v) {
  if (v.IsString()) {
    return "string";
  }
  if (v.IsNumber()) {
    return "number " + toJson(v);
  }
  if (v.IsBool()) {
    return "bool";
  }
  if (v.IsArray()) {
    return "array";
  }
  return "object";
}

}  // namespace

std::string encodeContinue(int64_t rv, std::string_view ns, std::string_view start_key) {
  std::string prefix = keyPrefix(ns);
  std::string_view rel = start_key;
  if (!prefix.empty() && rel.substr(0, prefix.size()) == prefix) {
    rel.remove_prefix(prefix.size());
  }
  std::string token = R"({"v":"meta.k8s.io/v1","rv":)" + std::to_string(rv) + R"(,"start":)" +
                      jsonString(rel) + "}";
  return base64UrlEncode(token);
}

std::optional<ContinueToken> decodeContinue(std::string_view token, std::string_view ns,
                                            std::string* error) {
  size_t bad = 0;
  auto raw = base64UrlDecodeStrict(token, &bad);
  if (!raw) {
    *error = std::string(kInvalid) + ": illegal base64 data at input byte " + std::to_string(bad);
    return std::nullopt;
  }
  JsonDocument doc;
  doc.Parse(raw->data(), raw->size());
  if (doc.HasParseError()) {
    *error = std::string(kInvalid) + ": " + describeParseError(doc, *raw);
    return std::nullopt;
  }
  if (!doc.IsObject()) {
    if (doc.IsNull()) {
      *error = std::string(kInvalid) + ": server does not recognize this encoded version ";
    } else {
      *error = std::string(kInvalid) + ": json: cannot unmarshal " + goKind(doc) +
               " into Go value of type storage.continueToken";
    }
    return std::nullopt;
  }
  std::string version;
  ContinueToken t;
  std::string start;
  // Go decodes every member in order; the first type error wins (null leaves the zero value).
  for (auto it = doc.MemberBegin(); it != memberEnd(doc); ++it) {
    std::string_view name(it->name.GetString(), it->name.GetStringLength());
    const JsonValue& v = it->value;
    if (v.IsNull()) {
      continue;
    }
    auto mismatch = [&](std::string_view field, std::string_view go_type) {
      *error = std::string(kInvalid) + ": json: cannot unmarshal " + goKind(v) +
               " into Go struct field continueToken." + std::string(field) + " of type " +
               std::string(go_type);
    };
    if (name == "v") {
      if (!v.IsString()) {
        mismatch("v", "string");
        return std::nullopt;
      }
      version.assign(v.GetString(), v.GetStringLength());
    } else if (name == "rv") {
      if (!v.IsInt64()) {
        mismatch("rv", "int64");
        return std::nullopt;
      }
      t.rv = v.GetInt64();
    } else if (name == "start") {
      if (!v.IsString()) {
        mismatch("start", "string");
        return std::nullopt;
      }
      start.assign(v.GetString(), v.GetStringLength());
    }
  }
  if (version != "meta.k8s.io/v1") {
    *error = std::string(kInvalid) + ": server does not recognize this encoded version " + version;
    return std::nullopt;
  }
  if (t.rv == 0) {
    *error = std::string(kInvalid) +
             ": incorrect encoded start resourceVersion (version meta.k8s.io/v1)";
    return std::nullopt;
  }
  if (start.empty()) {
    *error = std::string(kInvalid) + ": encoded start key empty (version meta.k8s.io/v1)";
    return std::nullopt;
  }
  std::string_view rel = start;
  if (!rel.empty() && rel[0] == '/') {
    rel.remove_prefix(1);
  }
  if (!cleanPath(rel)) {
    *error = std::string(kInvalid) + ": " + start;
    return std::nullopt;
  }
  t.start = keyPrefix(ns) + std::string(rel);
  return t;
}

}  // namespace ccm::kubesim
