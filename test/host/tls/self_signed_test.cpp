// Unit tests of host/tls: certificate generation and verification, and reading a subject (the
// user and groups an API server takes from a client certificate) from PEM or a parsed X509.
#include "host/tls/self_signed.hpp"

#include <doctest/doctest.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>
#include <string>
#include <vector>

namespace ccm::tls {
namespace {

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};

std::unique_ptr<X509, X509Free> parse(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  return std::unique_ptr<X509, X509Free>(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

TEST_CASE("CA, server and client certificates chain and carry CN/O") {
  CertificateOptions ca_opts;
  ca_opts.common_name = "test-ca";
  auto ca = generateCa(ca_opts);
  REQUIRE(ca.ok());
  CHECK(ca->certificate_pem.find("BEGIN CERTIFICATE") != std::string::npos);
  CHECK(ca->private_key_pem.find("BEGIN PRIVATE KEY") != std::string::npos);

  CertificateOptions server;
  server.common_name = "kube-apiserver";
  server.dns_names = {"localhost"};
  server.ip_addresses = {"127.0.0.1", "::1"};
  auto srv = issueServerCertificate(*ca, server);
  REQUIRE(srv.ok());
  CHECK(verifyCertificate(srv->certificate_pem, ca->certificate_pem).ok());

  CertificateOptions client;
  client.common_name = "alice";
  client.organizations = {"dev", "system:masters"};
  auto cl = issueClientCertificate(*ca, client);
  REQUIRE(cl.ok());
  auto subject = readSubject(cl->certificate_pem);
  REQUIRE(subject.ok());
  CHECK(subject->common_name == "alice");
  CHECK(subject->organizations == std::vector<std::string>{"dev", "system:masters"});

  // A certificate from another CA does not verify.
  auto other = generateCa(ca_opts);
  REQUIRE(other.ok());
  CHECK_FALSE(verifyCertificate(cl->certificate_pem, other->certificate_pem).ok());
  CHECK_FALSE(readSubject("not a pem").ok());
  PemKeyPair broken{"x", "y"};
  CHECK_FALSE(issueClientCertificate(broken, client).ok());
}

TEST_CASE("subjectOf reads CN and every O of a parsed certificate") {
  CertificateOptions ca_opts;
  ca_opts.common_name = "test-ca";
  auto ca = generateCa(ca_opts);
  REQUIRE(ca.ok());

  CertificateOptions client;
  client.common_name = "system:node:node-00001";
  client.organizations = {"system:nodes", "b", "a"};
  auto cl = issueClientCertificate(*ca, client);
  REQUIRE(cl.ok());
  auto cert = parse(cl->certificate_pem);
  REQUIRE(cert != nullptr);
  CertificateSubject subject = subjectOf(cert.get());
  CHECK(subject.common_name == "system:node:node-00001");
  CHECK(subject.organizations == std::vector<std::string>{"system:nodes", "b", "a"});

  // Without O there are no groups; without a certificate there is no subject.
  CertificateOptions plain;
  plain.common_name = "bob";
  auto bob = issueClientCertificate(*ca, plain);
  REQUIRE(bob.ok());
  auto bob_cert = parse(bob->certificate_pem);
  REQUIRE(bob_cert != nullptr);
  CHECK(subjectOf(bob_cert.get()).common_name == "bob");
  CHECK(subjectOf(bob_cert.get()).organizations.empty());
  CHECK(subjectOf(nullptr).common_name.empty());
}

}  // namespace
}  // namespace ccm::tls
