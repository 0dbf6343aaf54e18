// TablePrinter: server-side printing (meta.k8s.io/v1 Table) for `kubectl get`, with the
// column sets kubectl users know (nodes: NAME STATUS ROLES AGE VERSION, services: NAME TYPE
// CLUSTER-IP EXTERNAL-IP PORT(S) AGE, ...); other types get NAME and CREATED AT. Rows carry
// the object as PartialObjectMetadata (or whole, or not at all) per includeObject.
//
// THREAD: stateless; safe from any thread.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "kubesim/json_util.hpp"
#include "kubesim/resource_registry.hpp"
#include "kubesim/stored_object.hpp"

namespace ccm::kubesim {

class TablePrinter {
 public:
  enum class IncludeObject { None, Metadata, Object };
  static IncludeObject parseIncludeObject(std::string_view value);

  // A whole Table for a list (or one object): objects are the JSON texts to print (already in
  // the served view, e.g. events.k8s.io); rv and continue go into its metadata.
  static std::string table(const ResourceType& type, const std::vector<std::string>& objects,
                           const std::string& rv, const std::string& continue_token,
                           IncludeObject include, bool with_columns = true);

  // kubectl's human-readable age ("5s", "3m2s", "4h", "12d").
  static std::string humanDuration(std::chrono::seconds d);

 private:
  static std::string columns(const ResourceType& type);
  static void appendRow(std::string& out, const ResourceType& type, const JsonValue& obj,
                        const std::string& raw, IncludeObject include, WallTime now);
};

}  // namespace ccm::kubesim
