// Client-certificate and request-header authentication on the secure port, as
// k8s.io/apiserver's delegating authenticator does them (--client-ca-file,
// --requestheader-*):
//
//   1. request headers: when the client's certificate chain verifies against
//      --requestheader-client-ca-file (for client authentication) and, if
//      --requestheader-allowed-names is not empty, its CN is one of them, the user comes from
//      the first non-empty --requestheader-username-headers header, the groups from every
//      --requestheader-group-headers value and the extra fields from headers starting with
//      --requestheader-extra-headers-prefix (key lower-cased and percent-decoded). A verified
//      front proxy without a user header falls through to the next step;
//   2. client certificates: when the chain verifies against --client-ca-file, the user is
//      the certificate's CN and the groups its O entries;
//   3. otherwise the bearer token decides (auth_filter.hpp). A certificate that verified
//      nowhere is an authentication failure (401) unless a bearer token authenticates.
//
// Authenticated users also get system:authenticated. Header values are never trusted from a
// client whose certificate did not verify against the front-proxy CA.
//
// THREAD: CertificateAuthenticator is immutable after construction; authenticate() may run
// on any thread concurrently. PeerCertificates is immutable once built.
#pragma once

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "host/runtime/status.hpp"
#include "host/server/user_info.hpp"

namespace ccm::server {

// The certificate chain a TLS client presented (leaf first), kept for the connection's life.
class PeerCertificates {
 public:
  // From an SSL connection after its handshake; nullptr when the client sent no certificate.
  static std::shared_ptr<const PeerCertificates> fromConnection(SSL* ssl);
  ~PeerCertificates();
  PeerCertificates(const PeerCertificates&) = delete;
  PeerCertificates& operator=(const PeerCertificates&) = delete;

  X509* leaf() const { return leaf_; }
  STACK_OF(X509) * intermediates() const { return intermediates_; }

 private:
  PeerCertificates(X509* leaf, STACK_OF(X509) * intermediates)
      : leaf_(leaf), intermediates_(intermediates) {}
  X509* leaf_;
  STACK_OF(X509) * intermediates_;
};

// Request-header (front proxy) settings.
struct RequestHeaderOptions {
  std::string client_ca_file;  // "" disables request-header authentication
  std::vector<std::string> username_headers = {"x-remote-user"};
  std::vector<std::string> group_headers = {"x-remote-group"};
  std::vector<std::string> extra_headers_prefixes = {"x-remote-extra-"};
  std::vector<std::string> allowed_names;  // empty: any CN the CA signed
};

struct CertificateAuthentication {
  enum class Outcome {
    NotApplicable,  // no certificate, or nothing configured: the token decides
    Authenticated,  // `user` set
    Failed,         // a certificate that verified nowhere: 401 unless a token authenticates
  };
  Outcome outcome = Outcome::NotApplicable;
  UserInfo user;
  std::string message;  // why it failed (for the log; never for the client)
};

// One request header, as the authenticator sees it (name in any case).
using HeaderList = std::vector<std::pair<std::string_view, std::string_view>>;

class CertificateAuthenticator {
 public:
  // Reads the CA bundles. Errors name the flag and the file (unreadable, no certificate, a
  // PEM block that is not a certificate). Returns nullptr when neither CA file is set.
  static StatusOr<std::unique_ptr<CertificateAuthenticator>> fromFiles(
      const std::string& client_ca_file, const RequestHeaderOptions& request_header);
  ~CertificateAuthenticator();
  CertificateAuthenticator(const CertificateAuthenticator&) = delete;
  CertificateAuthenticator& operator=(const CertificateAuthenticator&) = delete;

  CertificateAuthentication authenticate(const PeerCertificates* peer,
                                         const HeaderList& headers) const;

  // The subjects of every CA, for the TLS CertificateRequest's acceptable-CA list (a new
  // stack the caller owns; SSL_CTX_set_client_CA_list takes it).
  STACK_OF(X509_NAME) * caNames() const;

 private:
  CertificateAuthenticator() = default;
  // "" when the chain verifies against `store` for client authentication, else why not.
  static std::string verify(X509_STORE* store, const PeerCertificates& peer);

  X509_STORE* client_ca_ = nullptr;          // null: no client-certificate authentication
  X509_STORE* request_header_ca_ = nullptr;  // null: no request-header authentication
  std::vector<X509*> ca_certificates_;       // both bundles, for caNames()
  RequestHeaderOptions request_header_;
};

}  // namespace ccm::server
