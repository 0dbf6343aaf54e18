// ClusterPki: certificates, tokens and kubeconfigs for kubesim.
#include "kubesim/cluster_pki.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "host/runtime/base64.hpp"
#include "kubesim/json_util.hpp"

namespace ccm::kubesim {
namespace {

std::string randomHex(size_t bytes) {
  std::random_device rd;
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes; ++i) {
    unsigned v = rd() & 0xff;
    out.push_back(kHex[v >> 4]);
    out.push_back(kHex[v & 15]);
  }
  return out;
}

bool exists(const std::string& p) {
  return std::filesystem::exists(p);
}

}  // namespace

Status writeFileAtomically(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      return Status(Code::Unavailable, "cannot write " + tmp);
    }
    out << content;
    if (!out.flush()) {
      return Status(Code::Unavailable, "cannot write " + tmp);
    }
  }
  ::chmod(tmp.c_str(), 0600);
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    return Status(Code::Unavailable, "cannot rename " + tmp + " to " + path + ": " + ec.message());
  }
  return okStatus();
}

StatusOr<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status(Code::NotFound, "cannot read " + path);
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status ClusterPki::load(const Options& options) {
  dir_ = options.dir;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) {
    return Status(Code::Unavailable, "cannot create " + dir_ + ": " + ec.message());
  }
  auto path = [&](const char* name) { return dir_ + "/" + name; };
  auto loadPair = [&](const char* crt, const char* key, tls::PemKeyPair& out) -> bool {
    if (!exists(path(crt)) || !exists(path(key))) {
      return false;
    }
    auto c = readFile(path(crt));
    auto k = readFile(path(key));
    if (!c.ok() || !k.ok()) {
      return false;
    }
    out.certificate_pem = c.value();
    out.private_key_pem = k.value();
    return true;
  };
  auto savePair = [&](const char* crt, const char* key, const tls::PemKeyPair& p) -> Status {
    CCM_RETURN_IF_ERROR(writeFileAtomically(path(crt), p.certificate_pem));
    return writeFileAtomically(path(key), p.private_key_pem);
  };

  bool new_ca = false;
  if (!loadPair("ca.crt", "ca.key", ca_)) {
    tls::CertificateOptions o;
    o.common_name = "kubesim-ca";
    o.validity = std::chrono::hours(24 * 365 * 10);
    auto ca = tls::generateCa(o);
    if (!ca.ok()) {
      return ca.status();
    }
    ca_ = ca.value();
    CCM_RETURN_IF_ERROR(savePair("ca.crt", "ca.key", ca_));
    new_ca = true;
  }
  if (!options.tls_cert_file.empty()) {
    auto c = readFile(options.tls_cert_file);
    auto k = readFile(options.tls_key_file);
    if (!c.ok()) {
      return c.status();
    }
    if (!k.ok()) {
      return k.status();
    }
    server_ = {c.value(), k.value()};
  } else if (new_ca || !loadPair("server.crt", "server.key", server_)) {
    tls::CertificateOptions o;
    o.common_name = "kube-apiserver";
    o.dns_names = {"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                   "kubernetes.default.svc.cluster.local"};
    o.ip_addresses = {"127.0.0.1", "::1", "10.96.0.1"};
    auto s = tls::issueServerCertificate(ca_, o);
    if (!s.ok()) {
      return s.status();
    }
    server_ = s.value();
    CCM_RETURN_IF_ERROR(savePair("server.crt", "server.key", server_));
  }
  if (new_ca || !loadPair("admin.crt", "admin.key", admin_)) {
    auto a = issueClientCertificate(kAdminUser, {"system:masters"});
    if (!a.ok()) {
      return a.status();
    }
    admin_ = a.value();
    CCM_RETURN_IF_ERROR(savePair("admin.crt", "admin.key", admin_));
  }
  if (auto t = readFile(path("admin.token")); t.ok() && !t.value().empty()) {
    admin_token_ = t.value();
    while (!admin_token_.empty() && (admin_token_.back() == '\n' || admin_token_.back() == '\r')) {
      admin_token_.pop_back();
    }
  } else {
    admin_token_ = randomHex(24);
    CCM_RETURN_IF_ERROR(writeFileAtomically(path("admin.token"), admin_token_ + "\n"));
  }
  if (auto s = readFile(path("sa.secret")); s.ok() && s.value().size() >= 32) {
    sa_secret_ = s.value();
  } else {
    sa_secret_ = randomHex(32);
    CCM_RETURN_IF_ERROR(writeFileAtomically(path("sa.secret"), sa_secret_));
  }
  if (!options.client_ca_file.empty()) {
    auto c = readFile(options.client_ca_file);
    if (!c.ok()) {
      return c.status();
    }
    extra_client_ca_ = c.value();
  }
  return okStatus();
}

std::string ClusterPki::clientCaBundle() const {
  std::string out = ca_.certificate_pem;
  if (!extra_client_ca_.empty()) {
    out += "\n" + extra_client_ca_;
  }
  return out;
}

StatusOr<tls::PemKeyPair> ClusterPki::issueClientCertificate(
    const std::string& user, const std::vector<std::string>& groups) const {
  tls::CertificateOptions o;
  o.common_name = user;
  o.organizations = groups;
  o.validity = std::chrono::hours(24 * 365);
  return tls::issueClientCertificate(ca_, o);
}

Status ClusterPki::writeKubeconfig(const std::string& path, const std::string& server_url,
                                   const Credentials& c, const std::string& ns) const {
  std::string user = c.user_name.empty() ? std::string(kAdminUser) : c.user_name;
  std::string out;
  out += "apiVersion: v1\nkind: Config\nclusters:\n- name: kubesim\n  cluster:\n";
  out += "    server: " + server_url + "\n";
  out += "    certificate-authority-data: " + base64Encode(ca_.certificate_pem) + "\n";
  out += "contexts:\n- name: kubesim\n  context:\n    cluster: kubesim\n";
  out += "    user: " + jsonString(user) + "\n    namespace: " + jsonString(ns) + "\n";
  out += "current-context: kubesim\npreferences: {}\nusers:\n- name: " + jsonString(user) +
         "\n  user:\n";
  if (!c.token.empty()) {
    out += "    token: " + jsonString(c.token) + "\n";
  } else {
    out += "    client-certificate-data: " + base64Encode(c.client.certificate_pem) + "\n";
    out += "    client-key-data: " + base64Encode(c.client.private_key_pem) + "\n";
  }
  return writeFileAtomically(path, out);
}

}  // namespace ccm::kubesim
