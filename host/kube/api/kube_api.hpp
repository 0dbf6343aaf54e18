// KubeApi: the small interface controllers use to read single objects and write to the API
// server. KubeClient implements it over HTTP; FakeKubeApi (fake_kube_api.hpp) records calls
// for unit tests. Objects travel as JSON text; the patch builders (patch_builder.hpp) make
// the bodies. Reads of many objects go through informers (informer.hpp), not through here.
//
// THREAD: implementations are safe to call from any thread.
#pragma once

#include <chrono>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "host/kube/api/api_status.hpp"

namespace ccm::kube {

// Media types of request and answer bodies.
inline constexpr std::string_view kJson = "application/json";
inline constexpr std::string_view kMergePatch = "application/merge-patch+json";
inline constexpr std::string_view kStrategicMergePatch = "application/strategic-merge-patch+json";
inline constexpr std::string_view kJsonPatch = "application/json-patch+json";

// Where an object (or a collection, when name is empty) lives.
struct ResourcePath {
  std::string group_version = "v1";  // "v1" (core) or "<group>/<version>"
  std::string resource;              // plural: "nodes", "services", "leases", "events"
  std::string namespace_;            // empty for cluster-scoped resources and all-namespaces lists
  std::string name;                  // empty for the collection
  std::string subresource;           // "status" or empty

  // "/api/v1/nodes/n1/status", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x"
  std::string path() const;
};

ResourcePath nodePath(std::string_view name = {});
ResourcePath nodeStatusPath(std::string_view name);
ResourcePath servicePath(std::string_view ns = {}, std::string_view name = {});
ResourcePath serviceStatusPath(std::string_view ns, std::string_view name);
ResourcePath leasePath(std::string_view ns, std::string_view name = {});
ResourcePath eventPath(std::string_view ns, std::string_view name = {});

enum class PatchType : uint8_t { Strategic, Merge, Json };
std::string_view patchContentType(PatchType type);

// DELETE preconditions (empty fields are not sent).
struct Preconditions {
  std::string uid;
  std::string resource_version;
};

struct CallOptions {
  std::chrono::milliseconds timeout{0};  // 0 = the client's default
  std::stop_token stop;
  bool want_response = false;  // writes: return the server's object JSON (else "")
  // Writes that want the response: its metadata is enough. The server is asked for the
  // object as meta.k8s.io/v1 PartialObjectMetadata (kind, apiVersion, metadata), which is
  // what it then returns, or the whole object where that form is not offered. Writes that do
  // not want the response always ask for that form: it is discarded, and the server's
  // smaller answer costs less to send, encrypt and read.
  bool metadata_only = false;
};

// One write of a batch (KubeApi::writeBatch).
struct Write {
  enum class Verb : uint8_t { Create, Update, Patch };
  Verb verb = Verb::Create;
  ResourcePath path;  // the collection for Create
  std::string body;
  PatchType patch_type = PatchType::Strategic;  // for Patch
};

class KubeApi {
 public:
  virtual ~KubeApi() = default;

  // GET one object's JSON. resource_version "0" lets the server answer from its cache.
  virtual ApiResult<std::string> get(const ResourcePath& path,
                                     std::string_view resource_version = {},
                                     const CallOptions& options = {}) = 0;
  // POST `body` to the collection `path` (name empty).
  virtual ApiResult<std::string> create(const ResourcePath& path, std::string body,
                                        const CallOptions& options = {}) = 0;
  // PUT the whole object (its metadata.resourceVersion is the precondition).
  virtual ApiResult<std::string> update(const ResourcePath& path, std::string body,
                                        const CallOptions& options = {}) = 0;
  virtual ApiResult<std::string> patch(const ResourcePath& path, PatchType type, std::string body,
                                       const CallOptions& options = {}) = 0;
  // DELETE, with optional uid/resourceVersion preconditions.
  virtual ApiStatus remove(const ResourcePath& path, const Preconditions& preconditions = {},
                           const CallOptions& options = {}) = 0;
  // Several writes sent together: one result each, in order, as create/update/patch would
  // give them with `options`. KubeClient pipelines them on one connection, and its reads
  // wait `gather` for answers to pile up, so a burst of writes wakes the server and the
  // caller once for many rather than once each. This default makes the calls one by one.
  virtual std::vector<ApiResult<std::string>> writeBatch(std::vector<Write> writes,
                                                         const CallOptions& options = {},
                                                         std::chrono::microseconds gather = {});
};

// Percent-encodes a query parameter value.
std::string urlEscape(std::string_view value);

}  // namespace ccm::kube
