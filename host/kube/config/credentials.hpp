// Credentials: what authenticates each request, kept current for a long-running process.
//  - a static token, basic auth or a static client certificate from the configuration;
//  - a token file (bound service-account tokens rotate): checked at most once a second and
//    re-read when it changed on disk, and at least every 60 s;
//  - an exec plugin: run on first use, cached until its expirationTimestamp, re-run after a
//    401 (the server no longer accepts what it gave).
// Every secret obtained is registered with the logger for redaction.
//
// THREAD: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "host/kube/config/exec_plugin.hpp"
#include "host/kube/config/kube_config.hpp"
#include "host/runtime/clock.hpp"
#include "host/runtime/status.hpp"

namespace ccm::kube {

struct ClientCertificate {
  std::string cert_pem;
  std::string key_pem;
  uint64_t generation = 0;  // changes whenever the pair changes (connections must be rebuilt)
};

class Credentials {
 public:
  Credentials(const RestConfig& config, Clock& clock = Clock::real());

  struct Current {
    std::string authorization;                      // the Authorization header value, or empty
    std::shared_ptr<const ClientCertificate> cert;  // null when none
  };
  // The credentials to use now (may read the token file or run the exec plugin).
  Status get(Current* out);

  // The server answered 401 to credentials from get(). Returns true when a retry may
  // succeed (fresh credentials were, or will be, obtained).
  bool onUnauthorized();

  bool hasDynamicSource() const { return !token_file_.empty() || exec_ != nullptr; }

 private:
  Status refreshTokenFileLocked(bool force);
  Status runExecLocked();

  Clock& clock_;
  const std::string static_authorization_;
  const std::string token_file_;
  std::unique_ptr<ExecPlugin> exec_;

  std::mutex mu_;
  std::shared_ptr<const ClientCertificate> cert_;  // guarded by mu_
  uint64_t cert_generation_ = 0;                   // guarded by mu_
  // token file state, guarded by mu_
  std::string file_token_;
  Clock::MonoTime last_stat_{};
  Clock::MonoTime last_read_{};
  int64_t file_mtime_ns_ = -1;
  int64_t file_size_ = -1;
  uint64_t file_ino_ = 0;
  bool force_reread_ = false;
  // exec state, guarded by mu_
  std::optional<ExecCredential> exec_cred_;
};

}  // namespace ccm::kube
