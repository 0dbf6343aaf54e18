// ExecPlugin: runs a kubeconfig exec credential plugin and parses its ExecCredential answer
// (client.authentication.k8s.io/v1 or v1beta1): a bearer token and/or a client certificate,
// with an optional expiry.
//
// THREAD: run() may be called from any thread; it blocks while the plugin runs.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "host/kube/config/kube_config.hpp"
#include "host/runtime/status.hpp"

namespace ccm::kube {

struct ExecCredential {
  std::string token;
  std::string client_cert_pem;
  std::string client_key_pem;
  std::optional<std::chrono::system_clock::time_point> expiry;
};

class ExecPlugin {
 public:
  // `cluster` supplies server/CA for provideClusterInfo.
  ExecPlugin(ExecConfig config, const RestConfig& cluster);

  // Runs the plugin (at most `timeout`) and parses its output.
  Status run(ExecCredential* out, std::chrono::milliseconds timeout = std::chrono::seconds(60));

  // Parses ExecCredential JSON text as printed by a plugin.
  static Status parse(std::string_view json, std::string_view api_version, ExecCredential* out);

 private:
  std::string execInfo() const;

  ExecConfig config_;
  std::string server_;
  std::string tls_server_name_;
  bool insecure_ = false;
  std::string ca_pem_;
  std::string proxy_url_;
};

}  // namespace ccm::kube
