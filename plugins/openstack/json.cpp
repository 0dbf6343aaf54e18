// JSON building (Json) and lenient reading over RapidJSON.
#include "plugins/openstack/json.hpp"

#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace ccm::openstack {

Json& Json::set(const std::string& key, Json value) {
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i] == key) {
      items_[i] = std::move(value);
      return *this;
    }
  }
  keys_.push_back(key);
  items_.push_back(std::move(value));
  return *this;
}

Json& Json::push(Json value) {
  items_.push_back(std::move(value));
  return *this;
}

template <typename Writer>
void Json::write(Writer& w) const {
  switch (type_) {
    case Type::Null:
      w.Null();
      break;
    case Type::Bool:
      w.Bool(b_);
      break;
    case Type::Int:
      w.Int64(i_);
      break;
    case Type::String:
      w.String(s_.data(), static_cast<rapidjson::SizeType>(s_.size()));
      break;
    case Type::Array:
      w.StartArray();
      for (const Json& item : items_) {
        item.write(w);
      }
      w.EndArray();
      break;
    case Type::Object:
      w.StartObject();
      for (size_t i = 0; i < keys_.size(); ++i) {
        w.Key(keys_[i].data(), static_cast<rapidjson::SizeType>(keys_[i].size()));
        items_[i].write(w);
      }
      w.EndObject();
      break;
  }
}

std::string Json::dump() const {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  write(w);
  return std::string(buf.GetString(), buf.GetSize());
}

sdk::Result<rapidjson::Document> parseJson(std::string_view text) {
  rapidjson::Document doc;
  doc.Parse(text.data(), text.size());
  if (doc.HasParseError()) {
    return sdk::Status(CCM_STATUS_INTERNAL, std::string("invalid JSON in response: ") +
                                      rapidjson::GetParseError_En(doc.GetParseError()) +
                                      " at offset " + std::to_string(doc.GetErrorOffset()));
  }
  return doc;
}

const JsonValue* jsonMember(const JsonValue& obj, const char* key) {
  if (!obj.IsObject()) {
    return nullptr;
  }
  auto it = obj.FindMember(key);
  return it == obj.MemberEnd() ? nullptr : &it->value;
}

std::string jsonString(const JsonValue& obj, const char* key) {
  const JsonValue* v = jsonMember(obj, key);
  if (v == nullptr || !v->IsString()) {
    return {};
  }
  return std::string(v->GetString(), v->GetStringLength());
}

std::optional<int64_t> jsonInt(const JsonValue& obj, const char* key) {
  const JsonValue* v = jsonMember(obj, key);
  if (v == nullptr) {
    return std::nullopt;
  }
  if (v->IsInt64()) {
    return v->GetInt64();
  }
  if (v->IsDouble()) {
    return static_cast<int64_t>(v->GetDouble());
  }
  return std::nullopt;
}

std::optional<bool> jsonBool(const JsonValue& obj, const char* key) {
  const JsonValue* v = jsonMember(obj, key);
  if (v == nullptr || !v->IsBool()) {
    return std::nullopt;
  }
  return v->GetBool();
}

bool jsonIsNull(const JsonValue& obj, const char* key) {
  const JsonValue* v = jsonMember(obj, key);
  return v == nullptr || v->IsNull();
}

std::vector<std::string> jsonStrings(const JsonValue& obj, const char* key) {
  std::vector<std::string> out;
  const JsonValue* v = jsonArray(obj, key);
  if (v == nullptr) {
    return out;
  }
  for (const auto& item : v->GetArray()) {
    if (item.IsString()) {
      out.emplace_back(item.GetString(), item.GetStringLength());
    }
  }
  return out;
}

std::vector<std::string> jsonIds(const JsonValue& obj, const char* key) {
  std::vector<std::string> out;
  const JsonValue* v = jsonArray(obj, key);
  if (v == nullptr) {
    return out;
  }
  for (const auto& item : v->GetArray()) {
    std::string id = jsonString(item, "id");
    if (!id.empty()) {
      out.push_back(std::move(id));
    }
  }
  return out;
}

const JsonValue* jsonArray(const JsonValue& obj, const char* key) {
  const JsonValue* v = jsonMember(obj, key);
  return v != nullptr && v->IsArray() ? v : nullptr;
}

const JsonValue* jsonObject(const JsonValue& obj, const char* key) {
  const JsonValue* v = jsonMember(obj, key);
  return v != nullptr && v->IsObject() ? v : nullptr;
}

}  // namespace ccm::openstack
