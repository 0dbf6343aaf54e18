// KeystoneAuth::rotateCredentials: switching to new credentials while requests run.
#include "plugins/openstack/keystone.hpp"

#include <utility>

namespace ccm::openstack {

sdk::Status KeystoneAuth::rotateCredentials(const sdk::Call& call, const GlobalConfig& global) {
  // Renewals hold renew_mu_ while they read global_, so none sees a half-changed config.
  std::lock_guard<std::mutex> renew(renew_mu_);
  GlobalConfig previous = global_;
  global_ = global;
  // The login back-off protects one set of credentials from an account lockout; new ones get
  // their own first attempt at once. The old ones' back-off comes back if Keystone refuses
  // the new ones.
  int failures = 0;
  int64_t last_failure_ns = 0;
  int64_t retry_at_ns = 0;
  std::string last_error;
  {
    std::lock_guard<std::mutex> lock(mu_);
    failures = std::exchange(login_failures_, 0);
    last_failure_ns = std::exchange(last_login_failure_ns_, 0);
    retry_at_ns = std::exchange(retry_login_at_ns_, 0);
    last_error = std::exchange(last_login_error_, std::string());
  }
  sdk::Result<Token> fresh = authenticate(call, nullptr);
  if (fresh.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    current_ = std::move(fresh).value();
    return {};
  }
  ccm_status code = fresh.status().code();
  if (code == CCM_STATUS_UNAUTHENTICATED || code == CCM_STATUS_PERMISSION_DENIED ||
      code == CCM_STATUS_INVALID_ARGUMENT || code == CCM_STATUS_NOT_FOUND) {
    global_ = std::move(previous);
    {
      std::lock_guard<std::mutex> lock(mu_);
      login_failures_ = failures;
      last_login_failure_ns_ = last_failure_ns;
      retry_login_at_ns_ = retry_at_ns;
      last_login_error_ = std::move(last_error);
    }
    return sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                  "[Global] credentials: Keystone refused the new credentials, the running ones "
                  "stay: " +
                      fresh.status().message());
  }
  // Keystone could not be asked (down, timed out): keep the new credentials, which are what
  // the operator wants; the next request logs in with them.
  {
    std::lock_guard<std::mutex> lock(mu_);
    current_ = Token{};
  }
  call.warning("Could not log into Keystone with the new credentials now; the next request will",
               {{"error", fresh.status().message()}});
  return {};
}

GlobalConfig KeystoneAuth::credentials() {
  std::lock_guard<std::mutex> renew(renew_mu_);
  return global_;
}

}  // namespace ccm::openstack
