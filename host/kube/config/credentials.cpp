// Credentials: static, token-file and exec-plugin sources.
#include "host/kube/config/credentials.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "host/log/log.hpp"
#include "host/runtime/base64.hpp"

namespace ccm::kube {
namespace {

std::string staticAuthorization(const RestConfig& c) {
  if (!c.token.empty()) {
    return "Bearer " + c.token;
  }
  if (!c.username.empty()) {
    std::string header = "Basic " + base64Encode(c.username + ":" + c.password);
    ccm::log::registerSecret(header.substr(6));
    return header;
  }
  return {};
}

std::string trimToken(std::string s) {
  while (!s.empty() &&
         (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) {
    s.pop_back();
  }
  size_t start = s.find_first_not_of(" \t\r\n");
  return start == std::string::npos ? std::string() : s.substr(start);
}

constexpr auto kStatInterval = std::chrono::seconds(1);
constexpr auto kRereadInterval = std::chrono::seconds(60);
constexpr auto kExpiryLeeway = std::chrono::seconds(5);

}  // namespace

Credentials::Credentials(const RestConfig& config, Clock& clock)
    : clock_(clock),
      static_authorization_(staticAuthorization(config)),
      token_file_(config.token.empty() ? config.token_file : std::string()) {
  if (config.exec) {
    exec_ = std::make_unique<ExecPlugin>(*config.exec, config);
  }
  if (!config.client_cert_pem.empty()) {
    cert_ = std::make_shared<ClientCertificate>(
        ClientCertificate{config.client_cert_pem, config.client_key_pem, ++cert_generation_});
  }
}

Status Credentials::refreshTokenFileLocked(bool force) {
  Clock::MonoTime now = clock_.now();
  bool have = !file_token_.empty();
  if (!force && have && now - last_stat_ < kStatInterval) {
    return okStatus();
  }
  last_stat_ = now;
  struct stat st {};
  bool changed = force || !have || now - last_read_ >= kRereadInterval;
  if (stat(token_file_.c_str(), &st) == 0) {
    int64_t mtime = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    if (mtime != file_mtime_ns_ || st.st_size != file_size_ || st.st_ino != file_ino_) {
      changed = true;
    }
    file_mtime_ns_ = mtime;
    file_size_ = st.st_size;
    file_ino_ = st.st_ino;
  }
  if (!changed) {
    return okStatus();
  }
  std::ifstream in(token_file_, std::ios::binary);
  std::string token;
  if (in) {
    std::ostringstream ss;
    ss << in.rdbuf();
    token = trimToken(ss.str());
  }
  if (token.empty()) {
    std::string why = in ? "file is empty" : std::strerror(errno);
    if (have) {
      ccm::log::warning("Cannot re-read the token file; keeping the previous token",
                        {{"file", token_file_}, {"error", why}});
      return okStatus();
    }
    return Status(Code::Unauthenticated,
                  fmt::format("token file {}: cannot read: {}", token_file_, why));
  }
  last_read_ = now;
  if (token != file_token_) {
    ccm::log::registerSecret(token);
    if (have) {
      ccm::log::infoV(2, "Token file changed; using the new token", {{"file", token_file_}});
    }
    file_token_ = std::move(token);
  }
  return okStatus();
}

Status Credentials::runExecLocked() {
  ExecCredential cred;
  CCM_RETURN_IF_ERROR(exec_->run(&cred));
  if (!cred.token.empty()) {
    ccm::log::registerSecret(cred.token);
  }
  if (!cred.client_key_pem.empty()) {
    ccm::log::registerSecret(cred.client_key_pem);
    if (!cert_ || cert_->cert_pem != cred.client_cert_pem ||
        cert_->key_pem != cred.client_key_pem) {
      cert_ = std::make_shared<ClientCertificate>(
          ClientCertificate{cred.client_cert_pem, cred.client_key_pem, ++cert_generation_});
    }
  }
  exec_cred_ = std::move(cred);
  return okStatus();
}

Status Credentials::get(Current* out) {
  std::lock_guard lock(mu_);
  out->authorization = static_authorization_;
  if (!token_file_.empty()) {
    CCM_RETURN_IF_ERROR(refreshTokenFileLocked(force_reread_));
    force_reread_ = false;
    out->authorization = "Bearer " + file_token_;
  }
  if (exec_) {
    bool expired =
        exec_cred_ && exec_cred_->expiry && clock_.wallNow() + kExpiryLeeway >= *exec_cred_->expiry;
    if (!exec_cred_ || expired) {
      CCM_RETURN_IF_ERROR(runExecLocked());
    }
    if (!exec_cred_->token.empty()) {
      out->authorization = "Bearer " + exec_cred_->token;
    }
  }
  out->cert = cert_;
  return okStatus();
}

bool Credentials::onUnauthorized() {
  std::lock_guard lock(mu_);
  if (exec_) {
    exec_cred_.reset();
    return true;
  }
  if (!token_file_.empty()) {
    force_reread_ = true;
    return true;
  }
  return false;
}

}  // namespace ccm::kube
