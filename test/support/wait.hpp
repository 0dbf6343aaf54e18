// Waiting in tests: poll a condition until it holds or a deadline passes. Tests never sleep
// for a fixed time to be correct, and never wait without a limit.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace ccm::testing {

// Polls cond every 2 ms until it holds or `limit` passes; returns the last answer, so a
// CHECK(waitUntil(...)) fails instead of hanging when the condition never comes.
inline bool waitUntil(const std::function<bool()>& cond,
                      std::chrono::milliseconds limit = std::chrono::seconds(30)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return cond();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace ccm::testing
