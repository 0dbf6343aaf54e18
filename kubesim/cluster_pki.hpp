// ClusterPki: kubesim's credentials. Creates (or reuses, from a certificate directory) a CA,
// the server certificate for 127.0.0.1/localhost/kubernetes.default.svc, the admin's client
// certificate (CN=kubesim-admin, O=system:masters) and bearer token, and the secret that signs
// service-account tokens; issues further client certificates; writes kubeconfig files.
//
// Files in the directory: ca.crt ca.key server.crt server.key admin.crt admin.key admin.token
// sa.secret. Reusing the directory keeps every credential valid across restarts.
//
// THREAD: immutable after load(); issueClientCertificate and writeKubeconfig are safe from any
// thread.
#pragma once

#include <string>
#include <vector>

#include "host/runtime/status.hpp"
#include "host/tls/self_signed.hpp"

namespace ccm::kubesim {

class ClusterPki {
 public:
  static constexpr const char* kAdminUser = "kubesim-admin";

  struct Options {
    std::string dir;            // created if missing
    std::string tls_cert_file;  // optional: serve this certificate instead
    std::string tls_key_file;
    std::string client_ca_file;  // optional: extra CA for client certificates
  };

  // Loads what exists in options.dir and generates the rest.
  Status load(const Options& options);

  const tls::PemKeyPair& ca() const { return ca_; }
  const tls::PemKeyPair& server() const { return server_; }
  const tls::PemKeyPair& admin() const { return admin_; }
  const std::string& adminToken() const { return admin_token_; }
  const std::string& serviceAccountSecret() const { return sa_secret_; }
  // PEM bundle of CAs trusted for client certificates.
  std::string clientCaBundle() const;
  const std::string& dir() const { return dir_; }

  StatusOr<tls::PemKeyPair> issueClientCertificate(const std::string& user,
                                                   const std::vector<std::string>& groups) const;

  struct Credentials {
    std::string user_name;   // kubeconfig user entry name
    std::string token;       // either a token ...
    tls::PemKeyPair client;  // ... or a client certificate
  };
  // Writes a kubeconfig for server_url (https://127.0.0.1:port) with these credentials.
  Status writeKubeconfig(const std::string& path, const std::string& server_url,
                         const Credentials& credentials, const std::string& ns = "default") const;

 private:
  std::string dir_;
  tls::PemKeyPair ca_;
  tls::PemKeyPair server_;
  tls::PemKeyPair admin_;
  std::string admin_token_;
  std::string sa_secret_;
  std::string extra_client_ca_;
};

// Writes content to path atomically (temporary file + rename), mode 0600.
Status writeFileAtomically(const std::string& path, const std::string& content);
StatusOr<std::string> readFile(const std::string& path);

}  // namespace ccm::kubesim
