// BurstRelease: gives freed heap back to the kernel once a burst of work is over.
//
// A burst (thousands of nodes joining at once) allocates and frees far more than it keeps:
// watch events, decode buffers, patches and their answers, the workers' batches. glibc keeps
// what was freed in its arenas, so without a trim the resident set after a burst stays near
// its peak. A controller tells BurstRelease how many items it finished (noteDone) and when
// its work queue ran dry (noteDrained); the drain that follows enough work releases free
// memory once (releaseFreeMemory), at most once per min_interval. A drain that comes too
// soon after the last release leaves the work counted, so the next drain releases it.
//
// THREAD: every method may be called from any thread; the release itself runs on the
// thread whose noteDrained() triggered it, outside the lock.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>

#include "host/runtime/clock.hpp"

namespace ccm::runtime {

class BurstRelease {
 public:
  struct Options {
    // Items that must be finished since the last release for a drain to release again.
    size_t min_items = 1000;
    // The shortest time between two releases.
    std::chrono::milliseconds min_interval{2000};
  };
  // `release` defaults to releaseFreeMemory (tests pass a counter).
  explicit BurstRelease(Options options, Clock& clock = Clock::real(),
                        std::function<bool()> release = {});

  // `items` more items were finished.
  void noteDone(size_t items);
  // The queue has no ready item left: releases free memory when enough work was done since
  // the last release and min_interval has passed. Returns whether it released.
  bool noteDrained();

  // Releases done so far, and items finished since the last release.
  uint64_t releases() const;
  size_t pendingItems() const;

 private:
  const Options options_;
  Clock& clock_;
  std::function<bool()> release_;
  mutable std::mutex mu_;
  size_t pending_ = 0;                          // guarded by mu_
  uint64_t releases_ = 0;                       // guarded by mu_
  std::optional<Clock::MonoTime> last_;         // guarded by mu_; the last release
};

}  // namespace ccm::runtime
