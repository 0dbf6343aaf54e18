// AdminApi: kubesim's control surface under /admin/ (system:masters only; never subject to
// fault injection). JSON in, JSON out:
//
//   GET    /admin/status                       counters, resourceVersion, watchers, restarts
//   GET    /admin/nodes                        simulated kubelets
//   POST   /admin/nodes                        {"count":K} | {"names":[..]} [,"ready":"True"]
//   DELETE /admin/nodes/<name>                 delete a Node (and its Lease)
//   POST   /admin/nodes/<name>/ready           {"status":"True|False|Unknown"}
//   POST   /admin/nodes/ready                  {"names":[..],"status":...}
//   POST   /admin/nodes/<name>/heartbeats      {"enabled":bool}
//   POST   /admin/heartbeats                   {"enabled":bool}  (every node)
//   GET    /admin/faults  POST /admin/faults {rule}  DELETE /admin/faults[/<id>]
//   POST   /admin/latency                      {"ms":N,"jitterMs":M}
//   POST   /admin/watches/close                end every watch
//   POST   /admin/connections/close            drop every connection
//   POST   /admin/http2/goaway                 GOAWAY on every HTTP/2 connection
//                                              {"endStreams":bool} (default true: watches end)
//   POST   /admin/http2/reset                  RST_STREAM on every HTTP/2 watch stream
//   POST   /admin/compact                      forget watch history (resumes get 410)
//   POST   /admin/restart                      {"keepState":bool,"downMs":N} (asynchronous)
//   POST   /admin/state/save                   {"path":".."} (default --state-file)
//   POST   /admin/credentials                  {"serviceAccount":"ns/name"} |
//                                              {"user":"u","groups":[..],"type":"token|cert"}
//                                              [,"kubeconfig":"/path","tokenFile":"/path",
//                                               "expirationSeconds":N]
//   POST   /admin/manifests                    {"paths":[..]} load RBAC manifests
//   GET    /admin/authz[?user=U]               recorded authorization decisions
//                                              (--record-authz); DELETE forgets them
//
// THREAD: handleAdmin runs on io threads, concurrently.
#pragma once

#include "kubesim/api_server.hpp"

namespace ccm::kubesim {

class KubesimServer;

class AdminApi : public AdminHandler {
 public:
  explicit AdminApi(KubesimServer& server) : server_(server) {}
  HttpResponse handleAdmin(const ApiRequest& request) override;

 private:
  HttpResponse status();
  std::string transportJson();
  HttpResponse nodes(const ApiRequest& r, const std::vector<std::string>& parts,
                     const JsonValue& body);
  HttpResponse faults(const ApiRequest& r, const std::vector<std::string>& parts,
                      const JsonValue& body);
  HttpResponse credentials(const JsonValue& body);

  KubesimServer& server_;
};

}  // namespace ccm::kubesim
