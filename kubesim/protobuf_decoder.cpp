// ProtobufDecoder: Kubernetes protobuf request bodies to JSON.
#include "kubesim/protobuf_decoder.hpp"

#include <cstring>

#include "host/runtime/base64.hpp"
#include "kubesim/protobuf_fields.hpp"

namespace ccm::kubesim {
namespace {


constexpr int kMaxDepth = 32;

// Protobuf wire reading over a byte view.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool done() const { return pos_ >= data_.size(); }

  bool varint(uint64_t* out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) {
        return false;
      }
      auto b = static_cast<uint8_t>(data_[pos_++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        *out = v;
        return true;
      }
    }
    return false;
  }
  bool bytes(size_t n, std::string_view* out) {
    if (n > data_.size() - pos_) {
      return false;
    }
    *out = data_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  // Reads one field: number, wire type, and its value (varint or payload).
  bool field(int* number, int* wire, uint64_t* varint_value, std::string_view* payload) {
    uint64_t tag;
    if (!varint(&tag)) {
      return false;
    }
    *number = static_cast<int>(tag >> 3);
    *wire = static_cast<int>(tag & 7);
    if (*number <= 0) {
      return false;
    }
    switch (*wire) {
      case 0:
        return varint(varint_value);
      case 1:
        return bytes(8, payload);
      case 2: {
        uint64_t len;
        return varint(&len) && bytes(static_cast<size_t>(len), payload);
      }
      case 5:
        return bytes(4, payload);
      default:
        return false;  // groups are not used by Kubernetes
    }
  }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

// One field of a message.
struct Field {
  int number = 0;
  int wire = 0;
  uint64_t varint = 0;       // wire type 0
  std::string_view payload;  // wire types 1, 2 and 5
};

// Calls fn(field) for each field of a message; false (with "unexpected EOF") when a field
// cannot be read, or when fn returns false (fn sets its own error).
template <typename Fn>
bool forEachField(std::string_view message, std::string* error, Fn&& fn) {
  Reader r(message);
  while (!r.done()) {
    Field f;
    if (!r.field(&f.number, &f.wire, &f.varint, &f.payload)) {
      *error = "unexpected EOF";
      return false;
    }
    if (!fn(f)) {
      return false;
    }
  }
  return true;
}

bool isZero(const JsonValue& v) {
  return v.IsNull() || (v.IsString() && v.GetStringLength() == 0) || (v.IsBool() && !v.GetBool()) ||
         (v.IsInt64() && v.GetInt64() == 0) || (v.IsDouble() && v.GetDouble() == 0.0);
}

}  // namespace

const ProtobufDecoder& ProtobufDecoder::builtin() {
  static const ProtobufDecoder* decoder = new ProtobufDecoder();
  return *decoder;
}

ProtobufDecoder::ProtobufDecoder() : numbers_(protobufFieldNumbers()) {}

bool ProtobufDecoder::supports(std::string_view root_struct) const {
  return numbers_.find(root_struct) != numbers_.end();
}

bool ProtobufDecoder::decode(std::string_view body, std::string_view root_struct, JsonDocument& doc,
                             std::string* error) const {
  constexpr std::string_view kMagic("k8s\0", 4);
  if (body.size() < 4 || body.substr(0, 4) != kMagic) {
    *error =
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]";
    return false;
  }
  Reader r(body.substr(4));
  std::string api_version;
  std::string kind;
  std::string_view raw;
  while (!r.done()) {
    int number;
    int wire;
    uint64_t v = 0;
    std::string_view payload;
    if (!r.field(&number, &wire, &v, &payload)) {
      *error = "unexpected EOF";
      return false;
    }
    if (number == 1 && wire == 2) {  // TypeMeta
      bool ok = forEachField(payload, error, [&](const Field& f) {
        if (f.number == 1 && f.wire == 2) {
          api_version = std::string(f.payload);
        }
        if (f.number == 2 && f.wire == 2) {
          kind = std::string(f.payload);
        }
        return true;
      });
      if (!ok) {
        return false;
      }
    } else if (number == 2 && wire == 2) {
      raw = payload;
    }
  }
  auto& alloc = doc.GetAllocator();
  doc.SetObject();
  if (!kind.empty()) {
    setString(doc, "kind", kind, alloc);
  }
  if (!api_version.empty()) {
    setString(doc, "apiVersion", api_version, alloc);
  }
  JsonValue obj(rapidjson::kObjectType);
  if (!decodeMessage(root_struct, raw, obj, alloc, 0, error)) {
    return false;
  }
  for (auto it = obj.MemberBegin(); it != memberEnd(obj); ++it) {
    doc.AddMember(it->name, it->value, alloc);
  }
  return true;
}

bool ProtobufDecoder::decodeMessage(std::string_view struct_name, std::string_view bytes,
                                    JsonValue& out, JsonAllocator& alloc, int depth,
                                    std::string* error) const {
  if (depth > kMaxDepth) {
    *error = "protobuf message nested too deeply";
    return false;
  }
  out.SetObject();
  auto numbers = numbers_.find(struct_name);
  const Schema::StructDef* def = Schema::builtin().structDef(struct_name);
  Reader r(bytes);
  while (!r.done()) {
    int number;
    int wire;
    uint64_t v = 0;
    std::string_view payload;
    if (!r.field(&number, &wire, &v, &payload)) {
      *error = "unexpected EOF";
      return false;
    }
    if (numbers == numbers_.end() || def == nullptr) {
      continue;  // a message we do not model: skipped
    }
    auto name_it = numbers->second.find(number);
    if (name_it == numbers->second.end()) {
      continue;  // a field we do not model: dropped, as unknown fields are
    }
    const std::string& name = name_it->second;
    const Schema::TypeRef* t = def->field(name);
    if (t == nullptr) {
      continue;
    }
    JsonValue key(name.data(), static_cast<rapidjson::SizeType>(name.size()), alloc);
    if (t->kind == Schema::Kind::Array) {
      JsonValue* arr = member(out, name);
      if (arr == nullptr) {
        out.AddMember(key, JsonValue(rapidjson::kArrayType), alloc);
        arr = &(out.MemberEnd() - 1)->value;
      }
      JsonValue elem;
      if (!decodeValue(*t->element, wire, payload, v, elem, alloc, depth + 1, error)) {
        return false;
      }
      arr->PushBack(elem, alloc);
    } else if (t->kind == Schema::Kind::Map) {
      JsonValue* map = member(out, name);
      if (map == nullptr) {
        out.AddMember(key, JsonValue(rapidjson::kObjectType), alloc);
        map = &(out.MemberEnd() - 1)->value;
      }
      if (wire != 2) {
        *error = "map entry must be length-delimited";
        return false;
      }
      std::string k;
      JsonValue value(rapidjson::kStringType);
      bool ok = forEachField(payload, error, [&](const Field& f) {
        if (f.number == 1 && f.wire == 2) {
          k = std::string(f.payload);
        } else if (f.number == 2) {
          return decodeValue(*t->element, f.wire, f.payload, f.varint, value, alloc, depth + 1,
                             error);
        }
        return true;
      });
      if (!ok) {
        return false;
      }
      setMember(*map, k, std::move(value), alloc);
    } else {
      JsonValue value;
      if (!decodeValue(*t, wire, payload, v, value, alloc, depth + 1, error)) {
        return false;
      }
      if (isZero(value) ||
          (value.IsObject() && value.ObjectEmpty() &&
           (t->kind == Schema::Kind::Time || t->kind == Schema::Kind::MicroTime))) {
        continue;  // gogo writes zero values of non-pointer fields: omitempty drops them
      }
      setMember(out, name, std::move(value), alloc);
    }
  }
  return true;
}

bool ProtobufDecoder::decodeValue(const Schema::TypeRef& t, int wire, std::string_view payload,
                                  uint64_t varint, JsonValue& out, JsonAllocator& alloc, int depth,
                                  std::string* error) const {
  auto needWire = [&](int want) {
    if (wire != want) {
      *error = "wrong wire type for a field";
      return false;
    }
    return true;
  };
  switch (t.kind) {
    case Schema::Kind::String:
      if (!needWire(2)) {
        return false;
      }
      out.SetString(payload.data(), static_cast<rapidjson::SizeType>(payload.size()), alloc);
      return true;
    case Schema::Kind::Bytes: {
      if (!needWire(2)) {
        return false;
      }
      std::string b64 = base64Encode(payload);
      out.SetString(b64.data(), static_cast<rapidjson::SizeType>(b64.size()), alloc);
      return true;
    }
    case Schema::Kind::Int32:
      if (!needWire(0)) {
        return false;
      }
      out.SetInt64(static_cast<int32_t>(static_cast<uint32_t>(varint)));
      return true;
    case Schema::Kind::Int64:
      if (!needWire(0)) {
        return false;
      }
      out.SetInt64(static_cast<int64_t>(varint));
      return true;
    case Schema::Kind::Bool:
      if (!needWire(0)) {
        return false;
      }
      out.SetBool(varint != 0);
      return true;
    case Schema::Kind::Number: {
      if (!needWire(1)) {
        return false;
      }
      double d;
      std::memcpy(&d, payload.data(), sizeof(d));
      out.SetDouble(d);
      return true;
    }
    case Schema::Kind::Time:
    case Schema::Kind::MicroTime: {
      if (!needWire(2)) {
        return false;
      }
      int64_t seconds = 0;
      int64_t nanos = 0;
      bool ok = forEachField(payload, error, [&](const Field& f) {
        if (f.number == 1 && f.wire == 0) {
          seconds = static_cast<int64_t>(f.varint);
        }
        if (f.number == 2 && f.wire == 0) {
          nanos = static_cast<int32_t>(static_cast<uint32_t>(f.varint));
        }
        return true;
      });
      if (!ok) {
        return false;
      }
      if (seconds == 0 && nanos == 0) {
        out.SetNull();
        return true;
      }
      WallTime when{std::chrono::duration_cast<WallTime::duration>(
          std::chrono::seconds(seconds) + std::chrono::nanoseconds(nanos))};
      std::string text = t.kind == Schema::Kind::Time ? formatTime(when) : formatMicroTime(when);
      out.SetString(text.data(), static_cast<rapidjson::SizeType>(text.size()), alloc);
      return true;
    }
    case Schema::Kind::Quantity: {
      if (!needWire(2)) {
        return false;
      }
      std::string s;
      bool ok = forEachField(payload, error, [&](const Field& f) {
        if (f.number == 1 && f.wire == 2) {
          s = std::string(f.payload);
        }
        return true;
      });
      if (!ok) {
        return false;
      }
      out.SetString(s.data(), static_cast<rapidjson::SizeType>(s.size()), alloc);
      return true;
    }
    case Schema::Kind::IntOrString: {
      if (!needWire(2)) {
        return false;
      }
      int64_t type = 0;
      int64_t iv = 0;
      std::string sv;
      bool ok = forEachField(payload, error, [&](const Field& f) {
        if (f.number == 1 && f.wire == 0) {
          type = static_cast<int64_t>(f.varint);
        }
        if (f.number == 2 && f.wire == 0) {
          iv = static_cast<int32_t>(static_cast<uint32_t>(f.varint));
        }
        if (f.number == 3 && f.wire == 2) {
          sv = std::string(f.payload);
        }
        return true;
      });
      if (!ok) {
        return false;
      }
      if (type == 1) {
        out.SetString(sv.data(), static_cast<rapidjson::SizeType>(sv.size()), alloc);
      } else {
        out.SetInt64(iv);
      }
      return true;
    }
    case Schema::Kind::Struct:
      if (!needWire(2)) {
        return false;
      }
      return decodeMessage(t.struct_name, payload, out, alloc, depth, error);
    case Schema::Kind::Any:
    case Schema::Kind::Map:
    case Schema::Kind::Array:
      out.SetNull();  // not modelled (nested collections do not occur in these kinds)
      return true;
  }
  return true;
}

}  // namespace ccm::kubesim
