// ProtobufEncoder: JSON objects to the API server's protobuf encoding.
#include "kubesim/protobuf_encoder.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "host/runtime/base64.hpp"

namespace ccm::kubesim {
namespace {

constexpr int kMaxDepth = 32;
constexpr std::string_view kMagic("k8s\0", 4);

void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

void tag(std::string& out, int number, int wire) {
  varint(out, (static_cast<uint64_t>(number) << 3) | static_cast<uint64_t>(wire));
}

void bytesField(std::string& out, int number, std::string_view b) {
  tag(out, number, 2);
  varint(out, b.size());
  out.append(b);
}

void varintField(std::string& out, int number, uint64_t v) {
  tag(out, number, 0);
  varint(out, v);
}

std::string_view text(const JsonValue& v) { return {v.GetString(), v.GetStringLength()}; }

// Name -> number for one struct.
const std::map<int, std::string>* numbersOf(std::string_view struct_name) {
  const auto& all = protobufFieldNumbers();
  auto it = all.find(struct_name);
  return it == all.end() ? nullptr : &it->second;
}

int numberOf(const std::map<int, std::string>& numbers, std::string_view name) {
  for (const auto& [n, field] : numbers) {
    if (field == name) {
      return n;
    }
  }
  return 0;
}

// apiVersion "group/version" -> group ("" for core).
std::string groupOf(std::string_view api_version) {
  size_t slash = api_version.find('/');
  return slash == std::string_view::npos ? std::string() : std::string(api_version.substr(0, slash));
}

}  // namespace

const ProtobufEncoder& ProtobufEncoder::builtin() {
  static const ProtobufEncoder* encoder = new ProtobufEncoder();
  return *encoder;
}

bool ProtobufEncoder::supports(std::string_view root_struct) const {
  return numbersOf(root_struct) != nullptr && Schema::builtin().structDef(root_struct) != nullptr;
}

std::optional<std::string> ProtobufEncoder::encode(std::string_view json,
                                                   std::string* error) const {
  JsonDocument doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    *error = "not a JSON object";
    return std::nullopt;
  }
  return encodeValue(doc, error);
}

std::optional<std::string> ProtobufEncoder::encodeValue(const JsonValue& obj,
                                                        std::string* error) const {
  const JsonValue* kind_v = member(obj, "kind");
  const JsonValue* version_v = member(obj, "apiVersion");
  if (kind_v == nullptr || !kind_v->IsString() || version_v == nullptr || !version_v->IsString()) {
    *error = "object without apiVersion and kind";
    return std::nullopt;
  }
  std::string kind(text(*kind_v));
  std::string api_version(text(*version_v));
  std::string raw;
  if (kind == "Status") {
    if (!message("Status", obj, raw, 0, error)) {
      return std::nullopt;
    }
  } else if (kind.size() > 4 && kind.compare(kind.size() - 4, 4, "List") == 0) {
    std::string root =
        Schema::builtin().rootFor(groupOf(api_version), kind.substr(0, kind.size() - 4));
    if (!supports(root)) {
      *error = "no protobuf encoding for " + kind;
      return std::nullopt;
    }
    if (const JsonValue* meta = member(obj, "metadata"); meta != nullptr && meta->IsObject()) {
      std::string m;
      if (!message("ListMeta", *meta, m, 1, error)) {
        return std::nullopt;
      }
      bytesField(raw, 1, m);
    }
    if (const JsonValue* items = member(obj, "items"); items != nullptr && items->IsArray()) {
      for (const auto& item : items->GetArray()) {
        std::string m;
        if (!message(root, item, m, 0, error)) {  // items carry apiVersion/kind too
          return std::nullopt;
        }
        bytesField(raw, 2, m);
      }
    }
  } else {
    std::string root = Schema::builtin().rootFor(groupOf(api_version), kind);
    if (!supports(root)) {
      *error = "no protobuf encoding for " + kind;
      return std::nullopt;
    }
    if (!message(root, obj, raw, 0, error)) {
      return std::nullopt;
    }
  }
  std::string type_meta;
  bytesField(type_meta, 1, api_version);
  bytesField(type_meta, 2, kind);
  std::string out(kMagic);
  bytesField(out, 1, type_meta);
  bytesField(out, 2, raw);
  bytesField(out, 3, "");  // contentEncoding
  bytesField(out, 4, "");  // contentType
  return out;
}

bool ProtobufEncoder::message(std::string_view struct_name, const JsonValue& obj,
                              std::string& out, int depth, std::string* error) const {
  if (depth > kMaxDepth) {
    *error = "object nested too deeply";
    return false;
  }
  if (!obj.IsObject()) {
    *error = std::string(struct_name) + " is not an object";
    return false;
  }
  const auto* numbers = numbersOf(struct_name);
  const Schema::StructDef* def = Schema::builtin().structDef(struct_name);
  if (numbers == nullptr || def == nullptr) {
    *error = "no protobuf encoding for " + std::string(struct_name);
    return false;
  }
  // Fields in number order, as the generated marshallers write them.
  std::vector<std::pair<int, const JsonValue::Member*>> fields;
  for (const auto& m : obj.GetObject()) {
    if (m.value.IsNull()) {
      continue;
    }
    std::string_view name = text(m.name);
    int number = numberOf(*numbers, name);
    if (number == 0) {
      if (depth == 0 && (name == "apiVersion" || name == "kind")) {
        continue;  // in the envelope's TypeMeta
      }
      *error = "no protobuf field number for " + std::string(struct_name) + "." + std::string(name);
      return false;
    }
    fields.emplace_back(number, &m);
  }
  std::sort(fields.begin(), fields.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [number, m] : fields) {
    const Schema::TypeRef* t = def->field(text(m->name));
    if (t == nullptr) {
      *error = "no type for " + std::string(struct_name) + "." + std::string(text(m->name));
      return false;
    }
    if (t->kind == Schema::Kind::Any && struct_name == "ManagedFieldsEntry" &&
        text(m->name) == "fieldsV1") {
      // metav1.FieldsV1: its JSON as the message's raw bytes.
      std::string raw;
      bytesField(raw, 1, toJson(m->value));
      bytesField(out, number, raw);
    } else if (t->kind == Schema::Kind::Array) {
      if (!m->value.IsArray()) {
        *error = std::string(text(m->name)) + " is not an array";
        return false;
      }
      for (const auto& e : m->value.GetArray()) {
        if (!field(*t->element, number, e, out, depth + 1, error)) {
          return false;
        }
      }
    } else if (t->kind == Schema::Kind::Map) {
      if (!m->value.IsObject()) {
        *error = std::string(text(m->name)) + " is not an object";
        return false;
      }
      std::vector<const JsonValue::Member*> entries;
      for (const auto& e : m->value.GetObject()) {
        entries.push_back(&e);
      }
      std::sort(entries.begin(), entries.end(),
                [](const auto* a, const auto* b) { return text(a->name) < text(b->name); });
      for (const auto* e : entries) {
        std::string entry;
        bytesField(entry, 1, text(e->name));
        if (!field(*t->element, 2, e->value, entry, depth + 1, error)) {
          return false;
        }
        bytesField(out, number, entry);
      }
    } else if (!field(*t, number, m->value, out, depth + 1, error)) {
      return false;
    }
  }
  return true;
}

bool ProtobufEncoder::field(const Schema::TypeRef& t, int number, const JsonValue& v,
                            std::string& out, int depth, std::string* error) const {
  auto wrong = [&](const char* what) {
    *error = std::string("field ") + std::to_string(number) + " is not " + what;
    return false;
  };
  switch (t.kind) {
    case Schema::Kind::String:
      if (!v.IsString()) {
        return wrong("a string");
      }
      bytesField(out, number, text(v));
      return true;
    case Schema::Kind::Bytes: {
      if (!v.IsString()) {
        return wrong("base64 text");
      }
      auto raw = base64Decode(text(v));
      if (!raw) {
        return wrong("base64 text");
      }
      bytesField(out, number, *raw);
      return true;
    }
    case Schema::Kind::Int32:
    case Schema::Kind::Int64:
      if (!v.IsInt64()) {
        return wrong("an integer");
      }
      varintField(out, number, static_cast<uint64_t>(v.GetInt64()));
      return true;
    case Schema::Kind::Bool:
      if (!v.IsBool()) {
        return wrong("a boolean");
      }
      varintField(out, number, v.GetBool() ? 1 : 0);
      return true;
    case Schema::Kind::Number: {
      if (!v.IsNumber()) {
        return wrong("a number");
      }
      double d = v.GetDouble();
      char buf[8];
      std::memcpy(buf, &d, sizeof(buf));
      tag(out, number, 1);
      out.append(buf, sizeof(buf));
      return true;
    }
    case Schema::Kind::Time:
    case Schema::Kind::MicroTime: {
      if (!v.IsString()) {
        return wrong("a time");
      }
      auto when = parseTime(text(v));
      if (!when) {
        return wrong("a time");
      }
      auto since = when->time_since_epoch();
      auto seconds = std::chrono::floor<std::chrono::seconds>(since);
      auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(since - seconds);
      std::string ts;
      varintField(ts, 1, static_cast<uint64_t>(seconds.count()));
      if (nanos.count() != 0) {
        varintField(ts, 2, static_cast<uint64_t>(nanos.count()));
      }
      bytesField(out, number, ts);
      return true;
    }
    case Schema::Kind::Quantity: {
      std::string q;
      if (v.IsString()) {
        bytesField(q, 1, text(v));
      } else if (v.IsInt64()) {
        bytesField(q, 1, std::to_string(v.GetInt64()));
      } else {
        return wrong("a quantity");
      }
      bytesField(out, number, q);
      return true;
    }
    case Schema::Kind::IntOrString: {
      std::string ios;
      if (v.IsString()) {
        varintField(ios, 1, 1);
        bytesField(ios, 3, text(v));
      } else if (v.IsInt64()) {
        varintField(ios, 1, 0);
        varintField(ios, 2, static_cast<uint64_t>(v.GetInt64()));
      } else {
        return wrong("an int or string");
      }
      bytesField(out, number, ios);
      return true;
    }
    case Schema::Kind::Struct: {
      std::string m;
      if (!message(t.struct_name, v, m, depth, error)) {
        return false;
      }
      bytesField(out, number, m);
      return true;
    }
    case Schema::Kind::Any:
    case Schema::Kind::Map:
    case Schema::Kind::Array:
      *error = "field " + std::to_string(number) + " has no protobuf encoding in kubesim";
      return false;
  }
  return false;
}

std::optional<std::string> ProtobufEncoder::encodeWatchEvent(std::string_view line,
                                                             std::string* error) const {
  JsonDocument doc;
  doc.Parse(line.data(), line.size());
  const JsonValue* type = doc.IsObject() ? member(doc, "type") : nullptr;
  const JsonValue* object = doc.IsObject() ? member(doc, "object") : nullptr;
  if (type == nullptr || !type->IsString() || object == nullptr) {
    *error = "not a watch event";
    return std::nullopt;
  }
  auto raw = encodeValue(*object, error);
  if (!raw) {
    return std::nullopt;
  }
  std::string extension;
  bytesField(extension, 1, *raw);
  std::string event;
  bytesField(event, 1, text(*type));
  bytesField(event, 2, extension);
  std::string frame;
  auto n = static_cast<uint32_t>(event.size());
  frame += static_cast<char>((n >> 24) & 0xff);
  frame += static_cast<char>((n >> 16) & 0xff);
  frame += static_cast<char>((n >> 8) & 0xff);
  frame += static_cast<char>(n & 0xff);
  frame += event;
  return frame;
}

ProtobufWatchSource::ProtobufWatchSource(std::shared_ptr<StreamSource> inner)
    : inner_(std::move(inner)) {}

void ProtobufWatchSource::start(const boost::asio::any_io_executor& strand) {
  inner_->start(strand);
}

bool ProtobufWatchSource::poll(std::string& out) {
  bool more = inner_->poll(partial_);
  size_t start = 0;
  for (;;) {
    size_t nl = partial_.find('\n', start);
    if (nl == std::string::npos) {
      break;
    }
    std::string error;
    auto frame = ProtobufEncoder::builtin().encodeWatchEvent(
        std::string_view(partial_).substr(start, nl - start), &error);
    if (!frame) {
      // An object kubesim cannot encode: the stream ends, as a failed encoder ends it.
      partial_.clear();
      return false;
    }
    out += *frame;
    start = nl + 1;
  }
  partial_.erase(0, start);
  return more;
}

void ProtobufWatchSource::arm(std::function<void()> wake) { inner_->arm(std::move(wake)); }

void ProtobufWatchSource::stop() { inner_->stop(); }

}  // namespace ccm::kubesim
