// Media types: parsing Content-Type / Accept headers and choosing the response format the way
// the API server negotiates it (JSON for application/json, */* and application/*; YAML for
// application/yaml; protobuf for application/vnd.kubernetes.protobuf; a
// meta.k8s.io Table when asked for "as=Table"; only the metadata, as meta.k8s.io
// PartialObjectMetadata(List), when asked for "as=PartialObjectMetadata"; 406 when nothing
// acceptable is offered).
//
// THREAD: pure functions.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ccm::kubesim {

struct MediaType {
  std::string type;     // "application"
  std::string subtype;  // "json"
  std::map<std::string, std::string> params;

  std::string essence() const { return type + "/" + subtype; }
  std::string param(const std::string& key) const;
};

// "application/json; charset=utf-8" -> {application, json, {charset: utf-8}} (lower-cased).
MediaType parseMediaType(std::string_view text);
// An Accept header's entries, in order (q-values are ignored, as the API server does).
std::vector<MediaType> parseAccept(std::string_view header);

enum class OutputFormat { Json, Table, PartialObjectMetadata, NotAcceptable };

// table_ok: the request is a get/list/watch of a resource (Table conversion possible).
// list: the answer is a list, whose metadata-only form is asked for as
// "as=PartialObjectMetadataList"; any other answer's (single objects, watch events') as
// "as=PartialObjectMetadata". Both yield OutputFormat::PartialObjectMetadata.
// The serialization of the chosen entry.
enum class WireFormat { Json, Yaml, Protobuf };
struct WireOptions {
  bool yaml = false;      // application/yaml may be chosen (not for watches)
  bool protobuf = false;  // application/vnd.kubernetes.protobuf may be chosen (plain objects)
};
// wire: receives the serialization of the chosen entry (JSON when nullptr or not offered).
OutputFormat negotiateOutput(std::string_view accept_header, bool table_ok, bool list = false,
                             WireFormat* wire = nullptr, WireOptions offered = {});

}  // namespace ccm::kubesim
