// The timeout of one HTTP request the OpenStack clients make within a host call.
#pragma once

#include <algorithm>
#include <chrono>

#include "ccm/provider.hpp"
#include "ccm/types.hpp"

namespace ccm::openstack {

// The timeout for one HTTP request of this call: the configured request timeout, shortened
// to what is left before the call's deadline. DEADLINE_EXCEEDED / CANCELLED when nothing is
// left or the host cancelled the call.
inline sdk::Result<std::chrono::milliseconds> requestTimeout(const sdk::Call& call,
                                                             std::chrono::nanoseconds configured) {
  sdk::Status alive = call.checkAlive();
  if (!alive.ok()) {
    return alive;
  }
  auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(configured);
  if (auto left = call.timeLeft()) {
    timeout = std::min(timeout, std::chrono::duration_cast<std::chrono::milliseconds>(*left));
  }
  if (timeout.count() <= 0) {
    return sdk::Error::deadlineExceeded("the call's deadline has passed");
  }
  return timeout;
}

}  // namespace ccm::openstack
