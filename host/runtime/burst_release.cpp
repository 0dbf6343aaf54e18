// BurstRelease: counting finished work and releasing free heap when a queue drains.
#include "host/runtime/burst_release.hpp"

#include <chrono>
#include <utility>

#include "host/log/log.hpp"
#include "host/runtime/memory.hpp"

namespace ccm::runtime {

BurstRelease::BurstRelease(Options options, Clock& clock, std::function<bool()> release)
    : options_(options), clock_(clock), release_(std::move(release)) {
  if (!release_) {
    release_ = [] { return releaseFreeMemory(); };
  }
}

void BurstRelease::noteDone(size_t items) {
  std::lock_guard lock(mu_);
  pending_ += items;
}

bool BurstRelease::noteDrained() {
  size_t items = 0;
  {
    std::lock_guard lock(mu_);
    if (pending_ < options_.min_items) {
      return false;
    }
    auto now = clock_.now();
    if (last_ && now - *last_ < options_.min_interval) {
      return false;
    }
    // Claimed under the lock: a second worker seeing the same drain does not release again.
    items = pending_;
    pending_ = 0;
    last_ = now;
    ++releases_;
  }
  size_t before = residentBytes();
  auto started = std::chrono::steady_clock::now();
  release_();
  auto took = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - started);
  size_t after = residentBytes();
  log::infoV(2, "Gave freed heap back after a burst",
             {{"items", items},
              {"residentKiBBefore", before / 1024},
              {"residentKiBAfter", after / 1024},
              {"took", took}});
  return true;
}

uint64_t BurstRelease::releases() const {
  std::lock_guard lock(mu_);
  return releases_;
}

size_t BurstRelease::pendingItems() const {
  std::lock_guard lock(mu_);
  return pending_;
}

}  // namespace ccm::runtime
