// Self-signed certificate generation with the OpenSSL 3 EVP and X509 APIs.
#include "host/tls/self_signed.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <memory>

namespace ccm::tls {
namespace {

struct BioFree {
  void operator()(BIO* p) const { BIO_free(p); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
struct BnFree {
  void operator()(BIGNUM* p) const { BN_free(p); }
};
struct StoreFree {
  void operator()(X509_STORE* p) const { X509_STORE_free(p); }
};
struct StoreCtxFree {
  void operator()(X509_STORE_CTX* p) const { X509_STORE_CTX_free(p); }
};
struct ExtFree {
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
};

using BioPtr = std::unique_ptr<BIO, BioFree>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;

// The text of the most recent OpenSSL error (and clears the queue).
std::string opensslError(std::string_view what) {
  std::string out(what);
  unsigned long code = ERR_get_error();
  if (code != 0) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof(buf));
    out += ": ";
    out += buf;
  }
  ERR_clear_error();
  return out;
}

Status fail(std::string_view what) { return Status(Code::Internal, opensslError(what)); }

std::string bioToString(BIO* bio) {
  char* data = nullptr;
  long len = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(len));
}

StatusOr<PkeyPtr> newKey() {
  PkeyPtr key(EVP_EC_gen("P-256"));
  if (!key) {
    return fail("generating an EC P-256 key");
  }
  return key;
}

StatusOr<PkeyPtr> readKey(std::string_view pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) {
    return fail("reading a PEM private key");
  }
  return key;
}

StatusOr<X509Ptr> readCert(std::string_view pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) {
    return fail("reading a PEM certificate");
  }
  return cert;
}

Status addExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  std::unique_ptr<X509_EXTENSION, ExtFree> ext(
      X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  if (!ext) {
    return fail("building certificate extension " + std::string(OBJ_nid2sn(nid)) + "=" + value);
  }
  if (X509_add_ext(cert, ext.get(), -1) != 1) {
    return fail("adding a certificate extension");
  }
  return okStatus();
}

Status setSubject(X509* cert, const CertificateOptions& options) {
  X509_NAME* name = X509_get_subject_name(cert);
  for (const auto& org : options.organizations) {
    if (X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                                   reinterpret_cast<const unsigned char*>(org.c_str()), -1, -1,
                                   0) != 1) {
      return fail("setting subject O");
    }
  }
  if (!options.common_name.empty() &&
      X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(
                                     options.common_name.c_str()),
                                 -1, -1, 0) != 1) {
    return fail("setting subject CN");
  }
  return okStatus();
}

Status setSerial(X509* cert) {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    return fail("generating a serial number");
  }
  bytes[0] &= 0x7f;  // positive
  bytes[0] |= 0x01;  // non-zero and full length
  std::unique_ptr<BIGNUM, BnFree> bn(BN_bin2bn(bytes, sizeof(bytes), nullptr));
  if (!bn || BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert)) == nullptr) {
    return fail("setting the serial number");
  }
  return okStatus();
}

enum class Role { Ca, Server, Client };

StatusOr<PemKeyPair> build(Role role, const CertificateOptions& options, const PemKeyPair* ca) {
  auto key = newKey();
  if (!key.ok()) {
    return key.status();
  }
  PkeyPtr ca_key;
  X509Ptr ca_cert;
  if (ca != nullptr) {
    auto k = readKey(ca->private_key_pem);
    if (!k.ok()) {
      return k.status().withPrefix("CA key");
    }
    auto c = readCert(ca->certificate_pem);
    if (!c.ok()) {
      return c.status().withPrefix("CA certificate");
    }
    ca_key = std::move(k.value());
    ca_cert = std::move(c.value());
  }

  X509Ptr cert(X509_new());
  if (!cert || X509_set_version(cert.get(), 2) != 1) {
    return fail("creating a certificate");
  }
  CCM_RETURN_IF_ERROR(setSerial(cert.get()));
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()),
                  static_cast<long>(std::chrono::seconds(options.validity).count()));
  if (X509_set_pubkey(cert.get(), key.value().get()) != 1) {
    return fail("setting the public key");
  }
  CCM_RETURN_IF_ERROR(setSubject(cert.get(), options));
  X509* issuer = ca_cert ? ca_cert.get() : cert.get();
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(issuer)) != 1) {
    return fail("setting the issuer");
  }

  switch (role) {
    case Role::Ca:
      CCM_RETURN_IF_ERROR(addExtension(cert.get(), issuer, NID_basic_constraints,
                                       "critical,CA:TRUE"));
      CCM_RETURN_IF_ERROR(addExtension(cert.get(), issuer, NID_key_usage,
                                       "critical,digitalSignature,keyCertSign,cRLSign"));
      break;
    case Role::Server:
    case Role::Client:
      CCM_RETURN_IF_ERROR(addExtension(cert.get(), issuer, NID_basic_constraints,
                                       "critical,CA:FALSE"));
      CCM_RETURN_IF_ERROR(addExtension(cert.get(), issuer, NID_key_usage,
                                       "critical,digitalSignature,keyEncipherment"));
      CCM_RETURN_IF_ERROR(addExtension(cert.get(), issuer, NID_ext_key_usage,
                                       role == Role::Server ? "serverAuth" : "clientAuth"));
      break;
  }
  CCM_RETURN_IF_ERROR(addExtension(cert.get(), issuer, NID_subject_key_identifier, "hash"));
  if (ca_cert) {
    CCM_RETURN_IF_ERROR(
        addExtension(cert.get(), issuer, NID_authority_key_identifier, "keyid:always"));
  }
  std::string san;
  for (const auto& dns : options.dns_names) {
    san += (san.empty() ? "" : ",") + std::string("DNS:") + dns;
  }
  for (const auto& ip : options.ip_addresses) {
    san += (san.empty() ? "" : ",") + std::string("IP:") + ip;
  }
  if (!san.empty()) {
    CCM_RETURN_IF_ERROR(addExtension(cert.get(), issuer, NID_subject_alt_name, san));
  }

  EVP_PKEY* signer = ca_key ? ca_key.get() : key.value().get();
  if (X509_sign(cert.get(), signer, EVP_sha256()) == 0) {
    return fail("signing the certificate");
  }

  PemKeyPair out;
  BioPtr cert_bio(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_X509(cert_bio.get(), cert.get()) != 1) {
    return fail("writing the certificate");
  }
  out.certificate_pem = bioToString(cert_bio.get());
  BioPtr key_bio(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_PrivateKey(key_bio.get(), key.value().get(), nullptr, nullptr, 0, nullptr,
                               nullptr) != 1) {
    return fail("writing the private key");
  }
  out.private_key_pem = bioToString(key_bio.get());
  return out;
}

}  // namespace

StatusOr<PemKeyPair> generateCa(const CertificateOptions& options) {
  return build(Role::Ca, options, nullptr);
}

StatusOr<PemKeyPair> issueServerCertificate(const PemKeyPair& ca,
                                            const CertificateOptions& options) {
  return build(Role::Server, options, &ca);
}

StatusOr<PemKeyPair> issueClientCertificate(const PemKeyPair& ca,
                                            const CertificateOptions& options) {
  return build(Role::Client, options, &ca);
}

CertificateSubject subjectOf(const X509* certificate) {
  CertificateSubject subject;
  if (certificate == nullptr) {
    return subject;
  }
  const X509_NAME* name = X509_get_subject_name(certificate);
  for (int i = 0; i < X509_NAME_entry_count(name); ++i) {
    const X509_NAME_ENTRY* entry = X509_NAME_get_entry(name, i);
    int nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(entry));
    unsigned char* utf8 = nullptr;
    int len = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(entry));
    if (len < 0) {
      continue;
    }
    std::string value(reinterpret_cast<char*>(utf8), static_cast<size_t>(len));
    OPENSSL_free(utf8);
    if (nid == NID_commonName) {
      subject.common_name = std::move(value);
    } else if (nid == NID_organizationName) {
      subject.organizations.push_back(std::move(value));
    }
  }
  return subject;
}

StatusOr<CertificateSubject> readSubject(std::string_view certificate_pem) {
  auto cert = readCert(certificate_pem);
  if (!cert.ok()) {
    return cert.status();
  }
  return subjectOf(cert.value().get());
}

Status verifyCertificate(std::string_view certificate_pem, std::string_view ca_pem) {
  auto cert = readCert(certificate_pem);
  if (!cert.ok()) {
    return cert.status();
  }
  auto ca = readCert(ca_pem);
  if (!ca.ok()) {
    return ca.status();
  }
  std::unique_ptr<X509_STORE, StoreFree> store(X509_STORE_new());
  if (!store || X509_STORE_add_cert(store.get(), ca.value().get()) != 1) {
    return fail("building a trust store");
  }
  std::unique_ptr<X509_STORE_CTX, StoreCtxFree> ctx(X509_STORE_CTX_new());
  if (!ctx || X509_STORE_CTX_init(ctx.get(), store.get(), cert.value().get(), nullptr) != 1) {
    return fail("building a verification context");
  }
  if (X509_verify_cert(ctx.get()) != 1) {
    int err = X509_STORE_CTX_get_error(ctx.get());
    ERR_clear_error();
    return Status(Code::FailedPrecondition,
                  std::string("certificate does not verify: ") +
                      X509_verify_cert_error_string(err));
  }
  return okStatus();
}

}  // namespace ccm::tls
