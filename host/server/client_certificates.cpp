// Client-certificate and request-header authentication.
#include "host/server/client_certificates.hpp"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "host/runtime/text.hpp"
#include "host/tls/self_signed.hpp"

namespace ccm::server {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return out;
}

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && lower(a) == lower(b);
}

std::string opensslError() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) {
    return "unknown error";
  }
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

// Every certificate of a PEM bundle; errors name the flag and the file.
StatusOr<std::vector<X509*>> readBundle(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status(Code::InvalidArgument, fmt::format("{} {}: cannot read the file", flag, path));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string pem = ss.str();
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  std::vector<X509*> certs;
  ERR_clear_error();
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    certs.push_back(cert);
  }
  unsigned long last = ERR_peek_last_error();
  bool clean_end = ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE;
  if (last != 0 && !clean_end) {
    std::string why = opensslError();
    for (X509* c : certs) {
      X509_free(c);
    }
    return Status(Code::InvalidArgument,
                  fmt::format("{} {}: not a PEM certificate bundle ({})", flag, path, why));
  }
  ERR_clear_error();
  if (certs.empty()) {
    return Status(Code::InvalidArgument,
                  fmt::format("{} {}: the file holds no PEM certificate", flag, path));
  }
  return certs;
}

X509_STORE* storeOf(const std::vector<X509*>& certs) {
  X509_STORE* store = X509_STORE_new();
  for (X509* c : certs) {
    X509_STORE_add_cert(store, c);  // takes its own reference
  }
  return store;
}

// The first non-empty value of the first of `names` that has one.
std::string_view firstValue(const HeaderList& headers, const std::vector<std::string>& names) {
  for (const auto& name : names) {
    std::string_view n = text::trimSpace(name);
    if (n.empty()) {
      continue;
    }
    for (const auto& [k, v] : headers) {
      if (equalsIgnoreCase(k, n) && !v.empty()) {
        return v;
      }
    }
  }
  return {};
}

}  // namespace

// ---- PeerCertificates -------------------------------------------------------------------------

std::shared_ptr<const PeerCertificates> PeerCertificates::fromConnection(SSL* ssl) {
  X509* leaf = SSL_get1_peer_certificate(ssl);
  if (leaf == nullptr) {
    return nullptr;
  }
  // On the server side the chain holds the certificates after the leaf (may be null on a
  // resumed session).
  STACK_OF(X509)* chain = SSL_get_peer_cert_chain(ssl);
  STACK_OF(X509)* copy = chain != nullptr ? X509_chain_up_ref(chain) : sk_X509_new_null();
  return std::shared_ptr<const PeerCertificates>(new PeerCertificates(leaf, copy));
}

PeerCertificates::~PeerCertificates() {
  X509_free(leaf_);
  sk_X509_pop_free(intermediates_, X509_free);
}

// ---- CertificateAuthenticator -----------------------------------------------------------------

StatusOr<std::unique_ptr<CertificateAuthenticator>> CertificateAuthenticator::fromFiles(
    const std::string& client_ca_file, const RequestHeaderOptions& request_header) {
  if (client_ca_file.empty() && request_header.client_ca_file.empty()) {
    return std::unique_ptr<CertificateAuthenticator>();
  }
  std::unique_ptr<CertificateAuthenticator> a(new CertificateAuthenticator());
  a->request_header_ = request_header;
  if (!client_ca_file.empty()) {
    auto certs = readBundle("--client-ca-file", client_ca_file);
    if (!certs.ok()) {
      return certs.status();
    }
    a->client_ca_ = storeOf(*certs);
    a->ca_certificates_.insert(a->ca_certificates_.end(), certs->begin(), certs->end());
  }
  if (!request_header.client_ca_file.empty()) {
    auto certs = readBundle("--requestheader-client-ca-file", request_header.client_ca_file);
    if (!certs.ok()) {
      return certs.status();
    }
    a->request_header_ca_ = storeOf(*certs);
    a->ca_certificates_.insert(a->ca_certificates_.end(), certs->begin(), certs->end());
  }
  return a;
}

CertificateAuthenticator::~CertificateAuthenticator() {
  X509_STORE_free(client_ca_);
  X509_STORE_free(request_header_ca_);
  for (X509* c : ca_certificates_) {
    X509_free(c);
  }
}

STACK_OF(X509_NAME) * CertificateAuthenticator::caNames() const {
  STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
  for (X509* c : ca_certificates_) {
    sk_X509_NAME_push(names, X509_NAME_dup(X509_get_subject_name(c)));
  }
  return names;
}

std::string CertificateAuthenticator::verify(X509_STORE* store, const PeerCertificates& peer) {
  std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> ctx(X509_STORE_CTX_new(),
                                                                      &X509_STORE_CTX_free);
  if (!ctx || X509_STORE_CTX_init(ctx.get(), store, peer.leaf(), peer.intermediates()) != 1) {
    return "cannot set up certificate verification: " + opensslError();
  }
  // A client certificate: extended key usage, when present, must allow client auth.
  X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_CLIENT);
  if (X509_verify_cert(ctx.get()) == 1) {
    return {};
  }
  std::string why = X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get()));
  ERR_clear_error();
  return why;
}

CertificateAuthentication CertificateAuthenticator::authenticate(const PeerCertificates* peer,
                                                                 const HeaderList& headers) const {
  CertificateAuthentication result;
  if (peer == nullptr) {
    return result;
  }
  std::vector<std::string> failures;
  auto authenticated = [&](UserInfo user) {
    if (!user.inGroup(kAuthenticatedGroup)) {
      user.groups.emplace_back(kAuthenticatedGroup);
    }
    result.outcome = CertificateAuthentication::Outcome::Authenticated;
    result.user = std::move(user);
    return result;
  };

  if (request_header_ca_ != nullptr) {
    std::string why = verify(request_header_ca_, *peer);
    std::string cn = tls::subjectOf(peer->leaf()).common_name;
    const auto& allowed = request_header_.allowed_names;
    if (why.empty() && !allowed.empty() &&
        std::find(allowed.begin(), allowed.end(), cn) == allowed.end()) {
      why = fmt::format("the certificate's CN \"{}\" is not in --requestheader-allowed-names", cn);
    }
    if (!why.empty()) {
      failures.push_back("front proxy: " + why);
    } else if (std::string_view name = firstValue(headers, request_header_.username_headers);
               !name.empty()) {
      UserInfo user;
      user.name = std::string(name);
      for (const auto& g : request_header_.group_headers) {
        for (const auto& [k, v] : headers) {
          if (equalsIgnoreCase(k, text::trimSpace(g)) && !v.empty()) {
            user.groups.emplace_back(v);
          }
        }
      }
      for (const auto& prefix : request_header_.extra_headers_prefixes) {
        std::string p = lower(text::trimSpace(prefix));
        if (p.empty()) {
          continue;
        }
        for (const auto& [k, v] : headers) {
          std::string key = lower(k);
          if (key.size() <= p.size() || key.compare(0, p.size(), p) != 0) {
            continue;
          }
          key.erase(0, p.size());
          auto decoded = text::percentDecode(key, false);
          user.extra[decoded ? *decoded : key].emplace_back(v);
        }
      }
      return authenticated(std::move(user));
    }
  }

  if (client_ca_ != nullptr) {
    std::string why = verify(client_ca_, *peer);
    if (why.empty()) {
      auto subject = tls::subjectOf(peer->leaf());
      if (!subject.common_name.empty()) {
        UserInfo user;
        user.name = subject.common_name;
        user.groups = std::move(subject.organizations);
        return authenticated(std::move(user));
      }
      // Verified but nameless: not an identity, as upstream.
    } else {
      failures.push_back("client certificate: " + why);
    }
  }

  if (!failures.empty()) {
    result.outcome = CertificateAuthentication::Outcome::Failed;
    for (const auto& f : failures) {
      result.message += (result.message.empty() ? "" : "; ") + f;
    }
  }
  return result;
}

}  // namespace ccm::server
