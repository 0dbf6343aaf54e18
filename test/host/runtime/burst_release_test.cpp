// BurstRelease: when a drained queue gives freed heap back; the malloc arena cap.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "host/runtime/burst_release.hpp"
#include "host/runtime/clock.hpp"
#include "host/runtime/memory.hpp"
#include "test/support/glibc_malloc.hpp"

namespace {

using ccm::FakeClock;
using ccm::runtime::BurstRelease;
using std::chrono::milliseconds;

struct Counted {
  FakeClock clock;
  int calls = 0;
  BurstRelease release{{.min_items = 100, .min_interval = milliseconds(2000)}, clock, [this] {
                         ++calls;
                         return true;
                       }};
};

}  // namespace

TEST_CASE("a drain releases only after enough work") {
  Counted c;
  CHECK_FALSE(c.release.noteDrained());  // nothing done yet
  c.release.noteDone(99);
  CHECK_FALSE(c.release.noteDrained());
  CHECK(c.release.pendingItems() == 99);
  c.release.noteDone(1);
  CHECK(c.release.noteDrained());
  CHECK(c.calls == 1);
  CHECK(c.release.releases() == 1);
  CHECK(c.release.pendingItems() == 0);
  // The same drain seen again (another worker) does not release twice.
  CHECK_FALSE(c.release.noteDrained());
  CHECK(c.calls == 1);
}

TEST_CASE("releases are at least min_interval apart, and early work is kept for later") {
  Counted c;
  c.release.noteDone(500);
  CHECK(c.release.noteDrained());
  c.release.noteDone(500);
  c.clock.advance(milliseconds(1999));
  CHECK_FALSE(c.release.noteDrained());  // too soon
  CHECK(c.release.pendingItems() == 500);
  c.clock.advance(milliseconds(1));
  CHECK(c.release.noteDrained());  // the work counted before is released now
  CHECK(c.calls == 2);
  CHECK(c.release.pendingItems() == 0);
}

TEST_CASE("workers draining at once release once") {
  Counted c;
  c.release.noteDone(1000);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&c] { c.release.noteDrained(); });
  }
  for (auto& t : threads) {
    t.join();
  }
  CHECK(c.calls == 1);
  CHECK(c.release.releases() == 1);
}

TEST_CASE("the default release is the process's own") {
  // No injected function: releaseFreeMemory runs (it must not throw or crash).
  BurstRelease release({.min_items = 1, .min_interval = milliseconds(0)});
  release.noteDone(1);
  CHECK(release.noteDrained());
  CHECK(release.releases() == 1);
}

TEST_CASE("the heap arena cap yields to MALLOC_ARENA_MAX") {
  const char* had = std::getenv("MALLOC_ARENA_MAX");
  std::string saved = had != nullptr ? had : "";
  setenv("MALLOC_ARENA_MAX", "4", 1);
  CHECK_FALSE(ccm::runtime::limitHeapArenas(2));  // the operator's value stands
  unsetenv("MALLOC_ARENA_MAX");
#if CCM_TEST_GLIBC_MALLOC
  CHECK(ccm::runtime::limitHeapArenas(2));
  // Restores glibc's default (0 = 8 per core) for the rest of the tests.
  CHECK(ccm::runtime::limitHeapArenas(0));
#endif
  if (had != nullptr) {
    setenv("MALLOC_ARENA_MAX", saved.c_str(), 1);
  }
}
