// Client configuration: the options the flag parser fills (ClientOptions, upstream defaults),
// and RestConfig, the resolved connection settings built from --kubeconfig / --master or,
// when neither is given, from the in-cluster service account.
//
// THREAD: plain values and pure functions (loading reads files and the environment).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "host/runtime/status.hpp"

namespace ccm::kube {

// Filled by host/options from the command line. Defaults are cloud-controller-manager's.
struct ClientOptions {
  std::string kubeconfig;  // --kubeconfig
  std::string master;      // --master (overrides the kubeconfig's server)
  std::string context;     // kubeconfig context to use ("" = current-context)
  // --kube-api-qps / --kube-api-burst. As in client-go, 0 means client-go's own default
  // (5 qps, burst 10) and a negative QPS disables client-side rate limiting.
  double qps = 20;
  int burst = 30;
  // Sent as User-Agent; see defaultUserAgent().
  std::string user_agent;
  // Whole-request timeout for non-watch requests (0 = none, like client-go's default; a
  // stalled connection is still detected, see RestClient).
  std::chrono::milliseconds timeout{0};
  std::chrono::milliseconds connect_timeout{30000};
  // Where in-cluster files live (tests point this elsewhere).
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
};

// The rate limit a client applies for ClientOptions::qps / burst, as client-go: QPS 0 means
// its default (5 qps, burst 10); a negative QPS disables limiting.
double effectiveQps(double qps);
int effectiveBurst(double qps, int burst);

// "<binary>/<version> (<os>/<arch>) kubernetes/<commit>", like client-go; the version's
// pre-release/build suffix is dropped and empty parts read "unknown".
std::string defaultUserAgent(std::string_view binary, std::string_view version,
                             std::string_view commit);

// An exec credential plugin (kubeconfig users[].user.exec).
struct ExecConfig {
  std::string command;  // resolved against the kubeconfig's directory when relative with '/'
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string api_version;  // client.authentication.k8s.io/v1 or v1beta1
  std::string interactive_mode;
  bool provide_cluster_info = false;
  std::string install_hint;
};

struct RestConfig {
  std::string server;  // "https://host:port[/prefix]" without a trailing '/'
  std::string ca_pem;  // PEM bundle; empty = the system's trust store
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;
  std::string proxy_url;
  std::string client_cert_pem;  // static client certificate (PEM), with client_key_pem
  std::string client_key_pem;
  std::string token;               // static bearer token
  std::string token_file;          // bearer token re-read from this file as it rotates
  std::string username, password;  // basic auth
  std::string impersonate_user;
  std::vector<std::string> impersonate_groups;
  std::optional<ExecConfig> exec;
  std::string cluster_ca_data_b64;  // for exec provideClusterInfo
  std::string namespace_ = "default";
  // Where this came from, for messages: "kubeconfig /path (context x)", "in-cluster".
  std::string source;
};

// Resolves the options into a RestConfig:
//  - kubeconfig given: that file (context = options.context or current-context); --master
//    overrides its server;
//  - only master: that server, no credentials;
//  - neither: in-cluster (KUBERNETES_SERVICE_HOST/_PORT, token file, ca.crt, namespace).
// Errors name the file and the field, e.g.
//   kubeconfig /etc/k.yaml: users[0] "admin": client-key: cannot read /etc/key.pem: No such file or
//   directory
Status loadRestConfig(const ClientOptions& options, RestConfig* out);

// Parses kubeconfig text (path is used for messages and relative paths).
Status parseKubeconfig(const std::string& text, const std::string& path, const std::string& context,
                       RestConfig* out);

}  // namespace ccm::kube
