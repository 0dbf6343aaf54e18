// ProtobufEncoder: answers in the API server's protobuf encoding
// (application/vnd.kubernetes.protobuf): "k8s\0" + runtime.Unknown{typeMeta{apiVersion, kind},
// raw = the object's message, contentEncoding "", contentType ""}. The object comes as the JSON
// kubesim stores; field numbers from protobuf_fields.*, field types from Schema. Lists
// (<Kind>List: ListMeta and items) and metav1.Status are encoded too.
//
// Watches in protobuf ("...;stream=watch") are frames of a 4-byte big-endian length and a
// metav1.WatchEvent{type, object: RawExtension{raw: the enveloped object}}.
//
// An object with a field kubesim has no number or type for (kinds outside the table, fields
// typed `any` in Schema that are set) cannot be encoded: encode() then fails and the caller
// answers in JSON when the client accepts it, 406 otherwise.
//
// THREAD: immutable; builtin() is safe from any thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kubesim/http_types.hpp"
#include "kubesim/json_util.hpp"
#include "kubesim/protobuf_fields.hpp"
#include "kubesim/schema.hpp"

namespace ccm::kubesim {

class ProtobufEncoder {
 public:
  static const ProtobufEncoder& builtin();

  // The enveloped protobuf of a JSON object that carries apiVersion and kind.
  std::optional<std::string> encode(std::string_view json, std::string* error) const;
  // One watch event line ({"type":..,"object":{..}}) as a length-prefixed WatchEvent frame.
  std::optional<std::string> encodeWatchEvent(std::string_view line, std::string* error) const;
  // Whether objects of this struct can be encoded at all.
  bool supports(std::string_view root_struct) const;

 private:
  ProtobufEncoder() = default;
  std::optional<std::string> encodeValue(const JsonValue& object, std::string* error) const;
  bool message(std::string_view struct_name, const JsonValue& obj, std::string& out,
               int depth, std::string* error) const;
  bool field(const Schema::TypeRef& t, int number, const JsonValue& v, std::string& out,
             int depth, std::string* error) const;
};

// A watch body re-framed as protobuf WatchEvents (see ProtobufEncoder).
class ProtobufWatchSource : public StreamSource {
 public:
  explicit ProtobufWatchSource(std::shared_ptr<StreamSource> inner);
  void start(const boost::asio::any_io_executor& strand) override;
  bool poll(std::string& out) override;
  void arm(std::function<void()> wake) override;
  void stop() override;
  bool resetAtEnd() const override { return inner_->resetAtEnd(); }

 private:
  std::shared_ptr<StreamSource> inner_;
  std::string partial_;  // JSON of an event not complete yet
};

}  // namespace ccm::kubesim
