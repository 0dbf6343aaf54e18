// ProtobufDecoder: reads request bodies in the API server's protobuf encoding
// (application/vnd.kubernetes.protobuf: "k8s\0" + runtime.Unknown{typeMeta, raw}) and turns
// them into the JSON form the rest of kubesim handles. Field numbers come from a table for
// the kinds kubectl's typed clients post (Namespace, ConfigMap, Secret, ServiceAccount,
// Service, Lease, Event, RBAC objects, TokenRequest, TokenReview, the access reviews,
// DeleteOptions); field types come from Schema. Zero values (what gogo-protobuf writes for
// unset non-pointer fields) are dropped, as JSON's omitempty would.
//
// Field numbers are shared with ProtobufEncoder (protobuf_fields.*).
//
// THREAD: immutable after construction; builtin() is safe from any thread.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "kubesim/json_util.hpp"
#include "kubesim/protobuf_fields.hpp"
#include "kubesim/schema.hpp"

namespace ccm::kubesim {

class ProtobufDecoder {
 public:
  static const ProtobufDecoder& builtin();

  // True when the struct (root of a kind) can be decoded.
  bool supports(std::string_view root_struct) const;
  // Decodes an enveloped body whose object is root_struct into doc (a JSON object with
  // apiVersion/kind from the envelope). false with *error on malformed input.
  bool decode(std::string_view body, std::string_view root_struct, JsonDocument& doc,
              std::string* error) const;

 private:
  ProtobufDecoder();
  bool decodeMessage(std::string_view struct_name, std::string_view bytes, JsonValue& out,
                     JsonAllocator& alloc, int depth, std::string* error) const;
  bool decodeValue(const Schema::TypeRef& t, int wire, std::string_view payload, uint64_t varint,
                   JsonValue& out, JsonAllocator& alloc, int depth, std::string* error) const;

  const ProtobufFieldNumbers& numbers_;
};

}  // namespace ccm::kubesim
