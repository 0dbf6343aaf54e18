// LeaseLock: reads and writes the coordination.k8s.io/v1 Lease that leader election uses.
// LeaseLock is the seam (unit tests use an in-memory lock); KubeLeaseLock talks to the API
// server through a KubeApi, with every request bounded by a timeout.
//
// THREAD: a lock is used by one elector thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "host/kube/api/api_status.hpp"
#include "host/kube/api/kube_api.hpp"

namespace ccm::leader {

struct LeaseRecord {
  std::string holder_identity;
  int32_t lease_duration_seconds = 0;
  std::optional<std::chrono::system_clock::time_point> acquire_time;
  std::optional<std::chrono::system_clock::time_point> renew_time;
  int32_t lease_transitions = 0;

  // Set by get(): the object's resourceVersion (the precondition of the next update) and the
  // spec as compared between observations.
  std::string resource_version;
  std::string spec_fingerprint;
};

class LeaseLock {
 public:
  virtual ~LeaseLock() = default;
  // The current record (NotFound when the Lease does not exist).
  virtual kube::ApiResult<LeaseRecord> get(std::chrono::milliseconds timeout) = 0;
  // Creates the Lease; on success returns the stored record (with its resourceVersion).
  virtual kube::ApiResult<LeaseRecord> create(const LeaseRecord& record,
                                              std::chrono::milliseconds timeout) = 0;
  // Replaces the Lease's spec, using record.resource_version as the precondition (409 when
  // someone else wrote it since); returns the stored record.
  virtual kube::ApiResult<LeaseRecord> update(const LeaseRecord& record,
                                              std::chrono::milliseconds timeout) = 0;
  // "kube-system/cloud-controller-manager"
  virtual std::string describe() const = 0;
};

class KubeLeaseLock final : public LeaseLock {
 public:
  KubeLeaseLock(kube::KubeApi& api, std::string ns, std::string name);
  kube::ApiResult<LeaseRecord> get(std::chrono::milliseconds timeout) override;
  kube::ApiResult<LeaseRecord> create(const LeaseRecord& record,
                                      std::chrono::milliseconds timeout) override;
  kube::ApiResult<LeaseRecord> update(const LeaseRecord& record,
                                      std::chrono::milliseconds timeout) override;
  std::string describe() const override { return ns_ + "/" + name_; }

  // The Lease JSON for a record (resourceVersion included when set).
  std::string encode(const LeaseRecord& record) const;
  // Parses a Lease JSON.
  static kube::ApiResult<LeaseRecord> decode(std::string_view json);

 private:
  kube::KubeApi& api_;
  std::string ns_;
  std::string name_;
};

}  // namespace ccm::leader
