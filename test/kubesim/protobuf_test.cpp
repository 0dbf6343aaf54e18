// Unit tests: decoding Kubernetes protobuf request bodies.
#include <doctest/doctest.h>

#include "kubesim/protobuf_decoder.hpp"

namespace ccm::kubesim {
namespace {

// A tiny protobuf writer for building test messages.
struct Pb {
  std::string out;
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out.push_back(static_cast<char>(v));
  }
  Pb& str(int field, std::string_view s) {
    varint(static_cast<uint64_t>(field) << 3 | 2);
    varint(s.size());
    out.append(s);
    return *this;
  }
  Pb& num(int field, uint64_t v) {
    varint(static_cast<uint64_t>(field) << 3);
    varint(v);
    return *this;
  }
};

std::string envelope(std::string_view api_version, std::string_view kind, std::string_view raw) {
  Pb tm;
  tm.str(1, api_version).str(2, kind);
  Pb unknown;
  unknown.str(1, tm.out).str(2, raw).str(3, "").str(4, "");
  return std::string("k8s\0", 4) + unknown.out;
}

TEST_CASE("protobuf ConfigMap with metadata, labels, data and zero values") {
  Pb label;
  label.str(1, "app").str(2, "web");
  Pb created;  // Time{seconds: 1, nanos: 0}
  created.num(1, 1700000000);
  Pb meta;
  meta.str(1, "cfg").str(2, "").str(3, "default").num(7, 0).str(8, created.out).str(11, label.out);
  Pb data;
  data.str(1, "k").str(2, "v");
  Pb cm;
  cm.str(1, meta.out).str(2, data.out).num(4, 0);
  JsonDocument doc;
  std::string err;
  REQUIRE(ProtobufDecoder::builtin().decode(envelope("v1", "ConfigMap", cm.out), "ConfigMap", doc,
                                            &err));
  CHECK(toJson(doc) ==
        R"({"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cfg","namespace":"default","creationTimestamp":"2023-11-14T22:13:20Z","labels":{"app":"web"}},"data":{"k":"v"}})");
}

TEST_CASE("protobuf RoleBinding with repeated messages and SSAR") {
  Pb subject;
  subject.str(1, "User").str(3, "bob");
  Pb ref;
  ref.str(1, "rbac.authorization.k8s.io").str(2, "Role").str(3, "r");
  Pb meta;
  meta.str(1, "rb");
  Pb rb;
  rb.str(1, meta.out).str(2, subject.out).str(2, subject.out).str(3, ref.out);
  JsonDocument doc;
  std::string err;
  REQUIRE(ProtobufDecoder::builtin().decode(envelope("rbac.authorization.k8s.io/v1",
                                                     "RoleBinding", rb.out),
                                            "RoleBinding", doc, &err));
  CHECK((*member(doc, "subjects")).Size() == 2);
  CHECK(stringMember(*member(doc, "roleRef"), "kind") == "Role");

  Pb attrs;
  attrs.str(2, "list").str(5, "nodes");
  Pb spec;
  spec.str(1, attrs.out);
  Pb ssar;
  ssar.str(1, "").str(2, spec.out);
  JsonDocument s;
  REQUIRE(ProtobufDecoder::builtin().decode(envelope("authorization.k8s.io/v1",
                                                     "SelfSubjectAccessReview", ssar.out),
                                            "SelfSubjectAccessReview", s, &err));
  CHECK(toJson(*member(s, "spec")) == R"({"resourceAttributes":{"verb":"list","resource":"nodes"}})");
}

TEST_CASE("malformed protobuf is rejected, not crashed on") {
  JsonDocument doc;
  std::string err;
  CHECK_FALSE(ProtobufDecoder::builtin().decode("{}", "ConfigMap", doc, &err));
  CHECK_FALSE(ProtobufDecoder::builtin().decode(std::string("k8s\0\x12\x7f", 6), "ConfigMap", doc,
                                                &err));
  // Garbage inside a known message field is an error; unknown fields are skipped.
  Pb cm;
  cm.str(1, std::string("\x0a\x7f", 2));
  CHECK_FALSE(ProtobufDecoder::builtin().decode(envelope("v1", "ConfigMap", cm.out), "ConfigMap",
                                                doc, &err));
  Pb skip;
  skip.str(99, "whatever").num(98, 5);
  CHECK(ProtobufDecoder::builtin().decode(envelope("v1", "ConfigMap", skip.out), "ConfigMap", doc,
                                          &err));
  CHECK(ProtobufDecoder::builtin().supports("Namespace"));
  CHECK(ProtobufDecoder::builtin().supports("Node"));  // the table is shared with the encoder
  CHECK_FALSE(ProtobufDecoder::builtin().supports("Pod"));
}

}  // namespace
}  // namespace ccm::kubesim
