// The certificate the secure port serves, in upstream's order of preference:
//
//   1. --tls-cert-file / --tls-private-key-file (PEM; the certificate file may carry the
//      chain after the leaf); errors name the file;
//   2. --cert-dir: <dir>/cloud-controller-manager.crt and .key, generated there (a
//      self-signed CA and a serving certificate it signed; the .crt holds both) when both are
//      absent, reused when both are present;
//   3. otherwise a self-signed pair generated in memory at start.
//
// Generated certificates name localhost, the host name, 127.0.0.1, ::1 and any specific bind
// address; they are valid for a year (see host/tls/self_signed.hpp).
//
// THREAD: any thread (start-up).
#pragma once

#include <string>
#include <vector>

#include "host/runtime/status.hpp"

namespace ccm::server {

struct CertificateSources {
  std::string tls_cert_file;
  std::string tls_private_key_file;
  std::string cert_dir;
  // Subject alternative names of generated certificates, in addition to localhost, the host
  // name, 127.0.0.1 and ::1.
  std::vector<std::string> extra_dns_names;
  std::vector<std::string> extra_ip_addresses;
};

struct ServingCertificate {
  std::string chain_pem;    // the leaf first, then any intermediates / CA
  std::string key_pem;      // its private key
  std::string ca_pem;       // the self-signed CA that signed the leaf ("" for given files)
  std::string description;  // for the log: where it came from
};

inline constexpr const char* kCertDirPairName = "cloud-controller-manager";

StatusOr<ServingCertificate> loadServingCertificate(const CertificateSources& sources);

// Checks that chain_pem holds at least one certificate and key_pem a private key that matches
// the first; what_cert / what_key name them in errors ("--tls-cert-file /etc/x.crt").
Status checkKeyPair(const std::string& chain_pem, const std::string& key_pem,
                    const std::string& what_cert, const std::string& what_key);

}  // namespace ccm::server
