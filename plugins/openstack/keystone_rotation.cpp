// KeystoneAuth::rotateCredentials: switching to new credentials while requests run.
#include "plugins/openstack/keystone.hpp"

namespace ccm::openstack {

Status KeystoneAuth::rotateCredentials(const CallContext& call, const GlobalConfig& global) {
  // Renewals hold renew_mu_ while they read global_, so none sees a half-changed config.
  std::lock_guard<std::mutex> renew(renew_mu_);
  GlobalConfig previous = global_;
  global_ = global;
  StatusOr<Token> fresh = authenticate(call, nullptr);
  if (fresh.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    current_ = std::move(fresh).value();
    return {};
  }
  Code code = fresh.status().code();
  if (code == Code::Unauthenticated || code == Code::PermissionDenied ||
      code == Code::InvalidArgument || code == Code::NotFound) {
    global_ = std::move(previous);
    return Status(Code::InvalidArgument,
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

}  // namespace ccm::openstack
