// RapidJSON helpers, time formats and random identifiers for kubesim.
#include "kubesim/json_util.hpp"

#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>
#include <ctime>
#include <random>
#include <unordered_map>
#include <vector>

#include "host/log/json_string.hpp"

namespace ccm::kubesim {
namespace {

std::mt19937_64& rng() {
  thread_local std::mt19937_64 engine([] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }());
  return engine;
}

JsonValue nameValue(std::string_view name, JsonAllocator& alloc) {
  return JsonValue(name.data(), static_cast<rapidjson::SizeType>(name.size()), alloc);
}

}  // namespace

std::string toJson(const JsonValue& v) {
  std::string out;
  appendJson(out, v);
  return out;
}

void appendJson(std::string& out, const JsonValue& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buf);
  v.Accept(writer);
  out.append(buf.GetString(), buf.GetSize());
}

namespace {

// Length of the well-formed UTF-8 sequence at s[i], 0 when it is not one.
size_t utf8SequenceLength(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  size_t n = 0;
  uint32_t cp = 0;
  if (c < 0x80) {
    return 1;
  }
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
    cp = c & 0x1fU;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    cp = c & 0x0fU;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    cp = c & 0x07U;
  } else {
    return 0;
  }
  if (i + n > s.size()) {
    return 0;
  }
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xc0U) != 0x80) {
      return 0;
    }
    cp = (cp << 6) | (b(i + k) & 0x3fU);
  }
  bool overlong = (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
  bool surrogate = cp >= 0xd800 && cp <= 0xdfff;
  if (overlong || surrogate || cp > 0x10ffff) {
    return 0;
  }
  return n;
}

}  // namespace

std::string validUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8SequenceLength(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD, as Go's encoding/json writes invalid bytes
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

void appendJsonString(std::string& out, std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8SequenceLength(s, i);
    if (n == 0) {
      json::appendString(out, validUtf8(s));
      return;
    }
    i += n;
  }
  json::appendString(out, s);
}

std::string jsonString(std::string_view s) {
  std::string out;
  appendJsonString(out, s);
  return out;
}

const JsonValue* member(const JsonValue& obj, std::string_view name) {
  if (!obj.IsObject()) {
    return nullptr;
  }
  for (auto it = obj.MemberBegin(); it != memberEnd(obj); ++it) {
    if (std::string_view(it->name.GetString(), it->name.GetStringLength()) == name) {
      return &it->value;
    }
  }
  return nullptr;
}

JsonValue* member(JsonValue& obj, std::string_view name) {
  return const_cast<JsonValue*>(member(static_cast<const JsonValue&>(obj), name));
}

std::string_view stringMember(const JsonValue& obj, std::string_view name) {
  const JsonValue* v = member(obj, name);
  if (v == nullptr || !v->IsString()) {
    return {};
  }
  return {v->GetString(), v->GetStringLength()};
}

const JsonValue* memberPath(const JsonValue& obj, std::initializer_list<std::string_view> names) {
  const JsonValue* cur = &obj;
  for (auto n : names) {
    cur = member(*cur, n);
    if (cur == nullptr) {
      return nullptr;
    }
  }
  return cur;
}

JsonValue* memberPath(JsonValue& obj, std::initializer_list<std::string_view> names) {
  JsonValue* cur = &obj;
  for (auto n : names) {
    cur = member(*cur, n);
    if (cur == nullptr) {
      return nullptr;
    }
  }
  return cur;
}

JsonValue& ensureObject(JsonValue& obj, std::string_view name, JsonAllocator& alloc) {
  JsonValue* v = member(obj, name);
  if (v == nullptr) {
    obj.AddMember(nameValue(name, alloc), JsonValue(rapidjson::kObjectType), alloc);
    v = &(obj.MemberEnd() - 1)->value;
  } else if (!v->IsObject()) {
    v->SetObject();
  }
  return *v;
}

void setMember(JsonValue& obj, std::string_view name, JsonValue&& value, JsonAllocator& alloc) {
  if (JsonValue* v = member(obj, name)) {
    *v = value;
    return;
  }
  obj.AddMember(nameValue(name, alloc), value, alloc);
}

void setString(JsonValue& obj, std::string_view name, std::string_view value,
               JsonAllocator& alloc) {
  setMember(obj, name, makeString(value, alloc), alloc);
}

void setInt(JsonValue& obj, std::string_view name, int64_t value, JsonAllocator& alloc) {
  setMember(obj, name, JsonValue(value), alloc);
}

void setBool(JsonValue& obj, std::string_view name, bool value, JsonAllocator& alloc) {
  setMember(obj, name, JsonValue(value), alloc);
}

bool removeMember(JsonValue& obj, std::string_view name) {
  if (!obj.IsObject()) {
    return false;
  }
  for (auto it = obj.MemberBegin(); it != memberEnd(obj); ++it) {
    if (std::string_view(it->name.GetString(), it->name.GetStringLength()) == name) {
      obj.EraseMember(it);
      return true;
    }
  }
  return false;
}

JsonValue makeString(std::string_view s, JsonAllocator& alloc) {
  return JsonValue(s.data(), static_cast<rapidjson::SizeType>(s.size()), alloc);
}

void dedupeKeys(JsonValue& v, JsonAllocator& alloc, std::string_view path,
                std::vector<std::string>* duplicates) {
  if (v.IsArray()) {
    for (auto& e : v.GetArray()) {
      dedupeKeys(e, alloc, path, duplicates);
    }
    return;
  }
  if (!v.IsObject()) {
    return;
  }
  if (v.MemberCount() > 1) {
    // Small objects: quadratic scan is cheaper than hashing.
    bool any = false;
    if (v.MemberCount() <= 16) {
      for (auto a = v.MemberBegin(); a != memberEnd(v) && !any; ++a) {
        for (auto b = a + 1; b != memberEnd(v); ++b) {
          if (a->name == b->name) {
            any = true;
            break;
          }
        }
      }
    } else {
      std::unordered_map<std::string_view, int> seen;
      for (auto a = v.MemberBegin(); a != memberEnd(v); ++a) {
        if (++seen[std::string_view(a->name.GetString(), a->name.GetStringLength())] > 1) {
          any = true;
          break;
        }
      }
    }
    if (any) {
      // Keep the last occurrence of each name, in first-seen order of the survivors.
      JsonValue out(rapidjson::kObjectType);
      std::vector<std::string> names;
      for (auto a = v.MemberBegin(); a != memberEnd(v); ++a) {
        names.emplace_back(a->name.GetString(), a->name.GetStringLength());
      }
      std::unordered_map<std::string, size_t> last;
      for (size_t i = 0; i < names.size(); ++i) {
        auto [it, inserted] = last.emplace(names[i], i);
        if (!inserted) {
          if (duplicates != nullptr) {
            duplicates->push_back(path.empty() ? names[i] : std::string(path) + "." + names[i]);
          }
          it->second = i;
        }
      }
      size_t i = 0;
      for (auto a = v.MemberBegin(); a != memberEnd(v); ++a, ++i) {
        if (last[names[i]] == i) {
          out.AddMember(a->name, a->value, alloc);
        }
      }
      v = out;
    }
  }
  for (auto a = v.MemberBegin(); a != memberEnd(v); ++a) {
    std::string child = path.empty() ? std::string(a->name.GetString(), a->name.GetStringLength())
                                     : std::string(path) + "." + a->name.GetString();
    dedupeKeys(a->value, alloc, child, duplicates);
  }
}

std::optional<WallTime> parseTime(std::string_view text) {
  std::string s(text);
  std::tm tm{};
  const char* p = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (p == nullptr) {
    return std::nullopt;
  }
  int64_t micros = 0;
  if (*p == '.') {
    ++p;
    int digits = 0;
    while (*p >= '0' && *p <= '9') {
      if (digits < 6) {
        micros = micros * 10 + (*p - '0');
      }
      ++digits;
      ++p;
    }
    if (digits == 0) {
      return std::nullopt;
    }
    for (int d = digits; d < 6; ++d) {
      micros *= 10;
    }
  }
  int64_t offset = 0;
  if (*p == 'Z' || *p == 'z') {
    ++p;
  } else if (*p == '+' || *p == '-') {
    int64_t sign = *p == '-' ? -1 : 1;
    int hh = 0;
    int mm = 0;
    if (std::sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2) {
      return std::nullopt;
    }
    offset = sign * (hh * 3600 + mm * 60);
    p += 6;
  } else {
    return std::nullopt;
  }
  if (*p != '\0') {
    return std::nullopt;
  }
  std::time_t secs = timegm(&tm) - offset;
  return WallTime(std::chrono::duration_cast<WallTime::duration>(
      std::chrono::seconds(secs) + std::chrono::microseconds(micros)));
}

std::string newUid() {
  uint64_t a = rng()();
  uint64_t b = rng()();
  a = (a & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;  // version 4
  b = (b & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;  // variant 10
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xffff),
                static_cast<unsigned>(b >> 48),
                static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

std::string randomNameSuffix(size_t n) {
  static constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::uniform_int_distribution<size_t> dist(0, kAlphabet.size() - 1);
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kAlphabet[dist(rng())]);
  }
  return out;
}

int64_t randomInt(int64_t lo, int64_t hi) {
  std::uniform_int_distribution<int64_t> dist(lo, hi);
  return dist(rng());
}

double randomUnit() {
  std::uniform_real_distribution<double> dist(0.0, 1.0);
  return dist(rng());
}

std::string goQuoteByte(unsigned char c) {
  // Go's decoder quotes the offending byte as strconv.Quote(string(rune(c))) without the
  // double quotes (and a quote character as itself).
  static const char kHex[] = "0123456789abcdef";
  switch (c) {
    case '\'':
      return "\\'";
    case '"':
      return "\"";
    case '\\':
      return "\\\\";
    case '\a':
      return "\\a";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    case '\v':
      return "\\v";
    default:
      break;
  }
  if (c >= 0x20 && c < 0x7f) {
    return std::string(1, static_cast<char>(c));
  }
  if (c < 0x20 || c == 0x7f) {
    return std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
  }
  if (c < 0xa1 || c == 0xad) {  // C1 controls, no-break space, soft hyphen: not printable
    return std::string("\\u00") + kHex[c >> 4] + kHex[c & 15];
  }
  // Latin-1 letters and symbols: the character itself, in UTF-8.
  std::string out;
  out.push_back(static_cast<char>(0xc0 | (c >> 6)));
  out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
  return out;
}

std::string describeParseError(const JsonDocument& doc, std::string_view text) {
  size_t off = doc.GetErrorOffset();
  auto code = doc.GetParseError();
  // Skip whitespace to find the offending character, as Go reports it.
  while (off < text.size() &&
         (text[off] == ' ' || text[off] == '\n' || text[off] == '\r' || text[off] == '\t')) {
    ++off;
  }
  if (off >= text.size() || code == rapidjson::kParseErrorDocumentEmpty) {
    return "unexpected end of JSON input";
  }
  std::string ch = "'" + goQuoteByte(static_cast<unsigned char>(text[off])) + "'";
  switch (code) {
    case rapidjson::kParseErrorDocumentRootNotSingular:
      return "invalid character " + ch + " after top-level value";
    case rapidjson::kParseErrorObjectMissName:
      return "invalid character " + ch + " looking for beginning of object key string";
    case rapidjson::kParseErrorObjectMissColon:
      return "invalid character " + ch + " after object key";
    case rapidjson::kParseErrorObjectMissCommaOrCurlyBracket:
      return "invalid character " + ch + " after object key:value pair";
    case rapidjson::kParseErrorArrayMissCommaOrSquareBracket:
      return "invalid character " + ch + " after array element";
    case rapidjson::kParseErrorStringMissQuotationMark:
      return "unexpected end of JSON input";
    case rapidjson::kParseErrorStringEscapeInvalid:
    case rapidjson::kParseErrorStringUnicodeEscapeInvalidHex:
      return "invalid character " + ch + " in string escape code";
    case rapidjson::kParseErrorStringInvalidEncoding:
    case rapidjson::kParseErrorStringUnicodeSurrogateInvalid:
      return "invalid UTF-8 in string literal";
    case rapidjson::kParseErrorNumberMissFraction:
      return "invalid character " + ch + " after decimal point in numeric literal";
    case rapidjson::kParseErrorNumberMissExponent:
      return "invalid character " + ch + " in exponent of numeric literal";
    default:
      return "invalid character " + ch + " looking for beginning of value";
  }
}

namespace {

size_t skipSpace(std::string_view s, size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) {
    ++i;
  }
  return i;
}

// The position just past the string whose opening quote is at i (npos when unterminated).
size_t skipString(std::string_view s, size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// The position just past the value starting at i (npos when it does not end).
size_t skipValue(std::string_view s, size_t i) {
  if (i >= s.size()) {
    return std::string_view::npos;
  }
  if (s[i] == '"') {
    return skipString(s, i);
  }
  if (s[i] != '{' && s[i] != '[') {  // number, true, false, null
    while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' &&
           s[i] != '\n' && s[i] != '\r' && s[i] != '\t') {
      ++i;
    }
    return i;
  }
  size_t depth = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == '"') {
      i = skipString(s, i);
      if (i == std::string_view::npos) {
        return i;
      }
      continue;
    }
    if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return i + 1;
    }
    ++i;
  }
  return std::string_view::npos;
}

}  // namespace

std::string_view rawTopLevelMember(std::string_view s, std::string_view name) {
  size_t i = skipSpace(s, 0);
  if (i >= s.size() || s[i] != '{') {
    return {};
  }
  i = skipSpace(s, i + 1);
  while (i < s.size() && s[i] == '"') {
    size_t key_end = skipString(s, i);
    if (key_end == std::string_view::npos) {
      return {};
    }
    std::string_view key = s.substr(i + 1, key_end - i - 2);
    i = skipSpace(s, key_end);
    if (i >= s.size() || s[i] != ':') {
      return {};
    }
    i = skipSpace(s, i + 1);
    size_t value_end = skipValue(s, i);
    if (value_end == std::string_view::npos) {
      return {};
    }
    if (key == name) {
      return s.substr(i, value_end - i);
    }
    i = skipSpace(s, value_end);
    if (i >= s.size() || s[i] != ',') {
      return {};
    }
    i = skipSpace(s, i + 1);
  }
  return {};
}

std::string partialObjectMetadata(std::string_view object_json, bool managed_fields) {
  std::string_view meta = rawTopLevelMember(object_json, "metadata");
  std::string out = R"({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":)";
  if (!managed_fields && !meta.empty() && !rawTopLevelMember(meta, "managedFields").empty()) {
    JsonDocument doc;
    doc.Parse(meta.data(), meta.size());
    if (doc.IsObject()) {
      removeMember(doc, "managedFields");
      appendJson(out, doc);
      out += '}';
      return out;
    }
  }
  out.append(meta.empty() ? std::string_view("{}") : meta);
  out += '}';
  return out;
}

std::string decimal(uint64_t v) {
  return std::to_string(v);
}

std::optional<uint64_t> parseDecimal(std::string_view s) {
  if (s.empty() || s.size() > 19) {
    return std::nullopt;
  }
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

}  // namespace ccm::kubesim
