// Loading, generating and checking the secure port's certificate.
#include "host/server/serving_certificate.hpp"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/ip/address.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>

#include "host/log/log.hpp"
#include "host/tls/self_signed.hpp"

namespace ccm::server {
namespace {

struct BioFree {
  void operator()(BIO* p) const { BIO_free(p); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

BioPtr memBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

StatusOr<std::string> readFile(const std::string& path, const std::string& what) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) {
    return Status(Code::InvalidArgument, what + ": cannot read: " + std::strerror(errno));
  }
  std::string out;
  char buf[8192];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) {
    out.append(buf, n);
    if (out.size() > (1u << 20)) {
      return Status(Code::InvalidArgument, what + ": larger than 1 MiB, not a PEM file");
    }
  }
  if (std::ferror(f.get())) {
    return Status(Code::InvalidArgument, what + ": cannot read: " + std::strerror(errno));
  }
  return out;
}

// Writes data to path through a temporary file and a rename, with the given mode.
Status writeFileAtomically(const std::string& path, const std::string& data, mode_t mode,
                           const std::string& what) {
  std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    return Status(Code::FailedPrecondition, what + ": cannot create: " + std::strerror(errno));
  }
  size_t done = 0;
  while (done < data.size()) {
    ssize_t w = ::write(fd, data.data() + done, data.size() - done);
    if (w < 0) {
      if (errno == EINTR) {
        continue;
      }
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return Status(Code::FailedPrecondition, what + ": cannot write: " + std::strerror(err));
    }
    done += static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Status(Code::FailedPrecondition, what + ": cannot write: " + std::strerror(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Status(Code::FailedPrecondition, what + ": cannot rename: " + std::strerror(err));
  }
  return okStatus();
}

std::string hostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) {
    return {};
  }
  return buf;
}

// A CA and a serving certificate signed by it, for the names of this host.
StatusOr<ServingCertificate> generate(const CertificateSources& sources) {
  const std::string stamp = std::to_string(std::time(nullptr));
  tls::CertificateOptions ca_options;
  ca_options.common_name = std::string(kCertDirPairName) + "-ca@" + stamp;
  auto ca = tls::generateCa(ca_options);
  if (!ca.ok()) {
    return ca.status().withPrefix("generating a self-signed CA");
  }
  tls::CertificateOptions leaf;
  leaf.common_name = std::string(kCertDirPairName) + "@" + stamp;
  leaf.dns_names = {"localhost"};
  if (std::string h = hostName(); !h.empty() && h != "localhost") {
    leaf.dns_names.push_back(h);
  }
  leaf.ip_addresses = {"127.0.0.1", "::1"};
  for (const auto& d : sources.extra_dns_names) {
    if (!d.empty()) {
      leaf.dns_names.push_back(d);
    }
  }
  for (const auto& ip : sources.extra_ip_addresses) {
    boost::system::error_code ec;
    auto addr = boost::asio::ip::make_address(ip, ec);
    if (!ec && !addr.is_unspecified() && ip != "127.0.0.1" && ip != "::1") {
      leaf.ip_addresses.push_back(addr.to_string());
    }
  }
  auto pair = tls::issueServerCertificate(ca.value(), leaf);
  if (!pair.ok()) {
    return pair.status().withPrefix("generating a self-signed serving certificate");
  }
  ServingCertificate out;
  out.chain_pem = pair->certificate_pem + ca->certificate_pem;
  out.key_pem = pair->private_key_pem;
  out.ca_pem = ca->certificate_pem;
  return out;
}

// The PEM of every certificate in chain_pem, in order.
std::vector<std::string> splitChain(const std::string& chain_pem) {
  std::vector<std::string> out;
  BioPtr in = memBio(chain_pem);
  while (X509Ptr cert{PEM_read_bio_X509(in.get(), nullptr, nullptr, nullptr)}) {
    BioPtr outb(BIO_new(BIO_s_mem()));
    PEM_write_bio_X509(outb.get(), cert.get());
    char* data = nullptr;
    long len = BIO_get_mem_data(outb.get(), &data);
    out.emplace_back(data, static_cast<size_t>(len));
  }
  ERR_clear_error();
  return out;
}

StatusOr<ServingCertificate> fromCertDir(const CertificateSources& sources) {
  namespace fs = std::filesystem;
  const std::string dir = sources.cert_dir;
  const std::string crt = (fs::path(dir) / (std::string(kCertDirPairName) + ".crt")).string();
  const std::string key = (fs::path(dir) / (std::string(kCertDirPairName) + ".key")).string();
  std::error_code ec;
  bool has_crt = fs::exists(crt, ec);
  bool has_key = fs::exists(key, ec);
  if (has_crt && has_key) {
    auto chain = readFile(crt, "--cert-dir file " + crt);
    if (!chain.ok()) {
      return chain.status();
    }
    auto pem = readFile(key, "--cert-dir file " + key);
    if (!pem.ok()) {
      return pem.status();
    }
    CCM_RETURN_IF_ERROR(
        checkKeyPair(*chain, *pem, "--cert-dir file " + crt, "--cert-dir file " + key));
    ServingCertificate out;
    out.chain_pem = std::move(chain).value();
    out.key_pem = std::move(pem).value();
    auto certs = splitChain(out.chain_pem);
    if (certs.size() > 1) {
      out.ca_pem = certs.back();
    }
    out.description = "reused from --cert-dir " + dir;
    return out;
  }
  if (has_crt != has_key) {
    return Status(Code::InvalidArgument, "--cert-dir " + dir + ": found " + (has_crt ? crt : key) +
                                             " but not " + (has_crt ? key : crt) +
                                             "; remove it to generate a new pair");
  }
  fs::create_directories(dir, ec);
  if (ec) {
    return Status(Code::FailedPrecondition,
                  "--cert-dir " + dir + ": cannot create the directory: " + ec.message());
  }
  auto generated = generate(sources);
  if (!generated.ok()) {
    return generated.status();
  }
  CCM_RETURN_IF_ERROR(writeFileAtomically(key, generated->key_pem, 0600, "--cert-dir file " + key));
  CCM_RETURN_IF_ERROR(
      writeFileAtomically(crt, generated->chain_pem, 0644, "--cert-dir file " + crt));
  generated->description = "self-signed, generated in --cert-dir " + dir;
  return generated;
}

}  // namespace

Status checkKeyPair(const std::string& chain_pem, const std::string& key_pem,
                    const std::string& what_cert, const std::string& what_key) {
  BioPtr cert_bio = memBio(chain_pem);
  X509Ptr leaf(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (!leaf) {
    return Status(Code::InvalidArgument, what_cert + ": no PEM certificate found");
  }
  BioPtr key_bio = memBio(key_pem);
  PkeyPtr key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (!key) {
    return Status(Code::InvalidArgument,
                  what_key + ": no PEM private key found (encrypted keys are not supported)");
  }
  if (X509_check_private_key(leaf.get(), key.get()) != 1) {
    ERR_clear_error();
    return Status(Code::InvalidArgument,
                  what_key + " does not match the certificate in " + what_cert);
  }
  if (X509_cmp_current_time(X509_get0_notAfter(leaf.get())) <= 0) {
    log::warning("The serving certificate has expired; clients will refuse it",
                 {{"certificate", what_cert}});
  }
  return okStatus();
}

StatusOr<ServingCertificate> loadServingCertificate(const CertificateSources& sources) {
  if (!sources.tls_cert_file.empty() || !sources.tls_private_key_file.empty()) {
    if (sources.tls_cert_file.empty() || sources.tls_private_key_file.empty()) {
      return Status(Code::InvalidArgument,
                    "--tls-cert-file and --tls-private-key-file must be given together");
    }
    const std::string what_cert = "--tls-cert-file " + sources.tls_cert_file;
    const std::string what_key = "--tls-private-key-file " + sources.tls_private_key_file;
    auto chain = readFile(sources.tls_cert_file, what_cert);
    if (!chain.ok()) {
      return chain.status();
    }
    auto key = readFile(sources.tls_private_key_file, what_key);
    if (!key.ok()) {
      return key.status();
    }
    CCM_RETURN_IF_ERROR(checkKeyPair(*chain, *key, what_cert, what_key));
    ServingCertificate out;
    out.chain_pem = std::move(chain).value();
    out.key_pem = std::move(key).value();
    out.description = what_cert;
    return out;
  }
  if (!sources.cert_dir.empty()) {
    return fromCertDir(sources);
  }
  auto generated = generate(sources);
  if (!generated.ok()) {
    return generated.status();
  }
  generated->description = "self-signed, in memory";
  return generated;
}

}  // namespace ccm::server
