// ServedSurface: what the emulated Kubernetes version (--server-version) serves, in one table.
// kubesim serves the API of the newest version it knows; for an older minor version the rows
// below take away what that version's kube-apiserver (default feature gates) did not serve yet.
//
//   minor | LB ingress ipMode   | Service fieldSelector   | sendInitialEvents  | SelfSubjectReview
//   1.26  | unknown: dropped,   | spec.type, spec.cluster | unknown parameter: | absent (alpha)
//         | warning             | IP: 400 not supported   | 422 on rvMatch     |
//   1.27  | unknown             | 400                     | 422 (gate off)     | absent here
//   (v1beta1
//         |                     |                         |                    | is not modelled)
//   1.28  | unknown             | 400                     | 422 (gate off)     | v1
//   1.29  | dropped silently    | served                  | 422 (gate off)     | v1
//         | (alpha gate off)    |                         |                    |
//   1.30  | served              | served                  | 422 (gate off)     | v1
//   1.31  | served              | served                  | 422 (gate off)     | v1
//   1.32  | served              | served                  | served             | v1
//   1.33  | served              | served                  | 422 (gate off)     | v1
//   1.34  | served              | served                  | served             | v1
//
// THREAD: immutable after construction; safe from any thread.
#pragma once

#include <string>
#include <string_view>

#include "host/runtime/status.hpp"
#include "kubesim/json_util.hpp"
#include "kubesim/resource_registry.hpp"

namespace ccm::kubesim {

class ServedSurface {
 public:
  static constexpr int kOldestMinor = 26;
  static constexpr int kNewestMinor = 34;

  // How a version treats Service status.loadBalancer.ingress[].ipMode.
  enum class IpMode { UnknownField, DroppedSilently, Served };
  // How watch requests with sendInitialEvents are answered.
  enum class WatchList { UnknownParameter, GateDisabled, Served };

  // "v1.26.0" ... "v1.34.x" (also "1.30.2"); anything else is an error naming the range.
  static ccm::StatusOr<ServedSurface> forVersion(std::string_view version);
  // The newest version's surface (tests, tools).
  static ServedSurface newest();

  int minorVersion() const { return minor_; }
  IpMode ipMode() const { return ip_mode_; }
  WatchList watchList() const { return watch_list_; }
  bool serviceTypeAndClusterIpFieldSelectors() const { return service_field_selectors_; }
  // False for resources this version does not serve (discovery leaves them out, requests 404).
  bool serves(const ResourceType& type) const;
  bool servesGroupVersion(std::string_view group, std::string_view version) const;

  // False for a field of a schema struct that this version's API types do not have (the
  // OpenAPI documents leave it out).
  bool knowsField(std::string_view struct_name, std::string_view field) const;

  // Decoding a written object of `kind`: removes the fields this version does not know or
  // drops. Fields unknown to the version are appended to *unknown_fields as dotted paths
  // ("status.loadBalancer.ingress[0].ipMode"), for the caller's fieldValidation handling.
  void pruneUnservedFields(std::string_view group, std::string_view kind, JsonValue& object,
                           std::vector<std::string>* unknown_fields) const;

 private:
  explicit ServedSurface(int minor_version);
  int minor_;
  IpMode ip_mode_;
  WatchList watch_list_;
  bool service_field_selectors_;
  bool self_subject_review_v1_;
};

}  // namespace ccm::kubesim
