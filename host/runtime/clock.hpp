// Clock: the seam for time. Production code takes a Clock& and asks it for the time; tests
// pass a FakeClock they advance by hand, so nothing waits on wall time for correctness.
//
// THREAD: all methods may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace ccm {

class Clock {
 public:
  using MonoTime = std::chrono::steady_clock::time_point;
  using WallTime = std::chrono::system_clock::time_point;

  virtual ~Clock() = default;
  virtual MonoTime now() const = 0;
  virtual WallTime wallNow() const = 0;

  // The process-wide real clock.
  static Clock& real();

  int64_t nowMonotonicNs() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(now().time_since_epoch())
        .count();
  }
  int64_t nowUnixNs() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(wallNow().time_since_epoch())
        .count();
  }
};

class RealClock final : public Clock {
 public:
  MonoTime now() const override { return std::chrono::steady_clock::now(); }
  WallTime wallNow() const override { return std::chrono::system_clock::now(); }
};

// A clock that only moves when told to.
class FakeClock final : public Clock {
 public:
  FakeClock() : mono_(std::chrono::steady_clock::now()), wall_(std::chrono::system_clock::now()) {}
  MonoTime now() const override {
    std::lock_guard lock(mu_);
    return mono_;
  }
  WallTime wallNow() const override {
    std::lock_guard lock(mu_);
    return wall_;
  }
  void advance(std::chrono::nanoseconds d) {
    std::lock_guard lock(mu_);
    mono_ += d;
    wall_ += std::chrono::duration_cast<std::chrono::system_clock::duration>(d);
  }
  // Moves only the wall clock (a clock jump); the monotonic clock is unaffected.
  void jumpWall(std::chrono::nanoseconds d) {
    std::lock_guard lock(mu_);
    wall_ += std::chrono::duration_cast<std::chrono::system_clock::duration>(d);
  }

 private:
  mutable std::mutex mu_;
  MonoTime mono_;  // guarded by mu_
  WallTime wall_;  // guarded by mu_
};

inline Clock& Clock::real() {
  static RealClock clock;
  return clock;
}

}  // namespace ccm
