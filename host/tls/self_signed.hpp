// Self-signed certificates with OpenSSL: a CA, server certificates (with DNS/IP SANs) and
// client certificates (CN = user, O = groups), all as PEM. Used by kubesim today and by the
// host's own HTTPS server (health, metrics) when it is given no certificate files.
//
// Keys are ECDSA P-256 (PKCS#8 PEM); signatures SHA-256; certificates X.509 v3 with the
// extensions Go, Python (OpenSSL) and libcurl verify: basicConstraints, keyUsage,
// extendedKeyUsage, subjectKeyIdentifier, authorityKeyIdentifier, subjectAltName.
//
// THREAD: every function may be called from any thread (OpenSSL 3 is thread-safe).
#pragma once

#include <openssl/types.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "host/runtime/status.hpp"

namespace ccm::tls {

// A certificate and its private key, both PEM text.
struct PemKeyPair {
  std::string certificate_pem;
  std::string private_key_pem;
};

struct CertificateOptions {
  std::string common_name;                 // subject CN
  std::vector<std::string> organizations;  // subject O, one RDN per entry (client certs: groups)
  std::vector<std::string> dns_names;      // subjectAltName DNS entries (server certs)
  std::vector<std::string> ip_addresses;   // subjectAltName IP entries, IPv4 or IPv6 text
  std::chrono::hours validity{24 * 365};   // notAfter = now + validity (notBefore = now - 1 h)
};

// A new self-signed CA certificate (basicConstraints CA:TRUE, keyCertSign).
StatusOr<PemKeyPair> generateCa(const CertificateOptions& options);

// A leaf certificate for TLS servers, signed by ca (extendedKeyUsage serverAuth).
StatusOr<PemKeyPair> issueServerCertificate(const PemKeyPair& ca, const CertificateOptions& options);

// A leaf certificate for TLS clients, signed by ca (extendedKeyUsage clientAuth).
StatusOr<PemKeyPair> issueClientCertificate(const PemKeyPair& ca, const CertificateOptions& options);

// The subject of a certificate: what an API server reads as user (CN) and groups (O).
struct CertificateSubject {
  std::string common_name;
  std::vector<std::string> organizations;
};

StatusOr<CertificateSubject> readSubject(std::string_view certificate_pem);

// The subject of a parsed certificate, e.g. a TLS peer's (SSL_get0_peer_certificate): the last
// CN and every O in order. Empty for nullptr; entries that are not valid strings are skipped.
CertificateSubject subjectOf(const X509* certificate);

// Verifies that certificate_pem chains to ca_pem and is valid now (tests and diagnostics).
Status verifyCertificate(std::string_view certificate_pem, std::string_view ca_pem);

}  // namespace ccm::tls
