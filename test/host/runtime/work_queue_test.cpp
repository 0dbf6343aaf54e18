// Work queue semantics (upstream's), the item rate limiters and the token bucket, driven by
// a FakeClock.
#include "host/runtime/work_queue.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "host/runtime/rate_limiter.hpp"
#include "test/support/wait.hpp"

namespace ccm {
namespace {

using namespace std::chrono_literals;
using ccm::testing::waitUntil;

}  // namespace

TEST_CASE("token bucket: burst, refill, reservations in order, disabled when qps <= 0") {
  FakeClock clock;
  TokenBucket b(10, 3, clock);
  CHECK(b.reserve() == 0ns);
  CHECK(b.reserve() == 0ns);
  CHECK(b.reserve() == 0ns);
  CHECK(b.reserve() == 100ms);  // the 4th token is 0.1 s away at 10/s
  CHECK(b.reserve() == 200ms);  // and the next one after it
  clock.advance(300ms);         // repays the two reservations and accrues one token
  CHECK(b.reserve() == 0ns);
  CHECK(b.reserve() == 100ms);
  clock.advance(10s);
  CHECK(b.tryAccept());
  CHECK(b.tryAccept());
  CHECK(b.tryAccept());
  CHECK_FALSE(b.tryAccept());  // refill never exceeds the burst
  TokenBucket off(0, 1, clock);
  for (int i = 0; i < 100; ++i)
    CHECK(off.reserve() == 0ns);
}

TEST_CASE("token bucket wait can be stopped") {
  TokenBucket b(0.001, 1);
  CHECK(b.wait());
  std::stop_source stop;
  std::thread t([&] {
    std::this_thread::sleep_for(20ms);
    stop.request_stop();
  });
  CHECK_FALSE(b.wait(stop.get_token()));  // would wait ~1000 s
  t.join();
}

TEST_CASE("per-item exponential limiter: 5 ms doubling to 1000 s, forget resets") {
  ItemExponentialLimiter l(5ms, 1000s);
  CHECK(l.when("a") == 5ms);
  CHECK(l.when("a") == 10ms);
  CHECK(l.when("a") == 20ms);
  CHECK(l.when("b") == 5ms);
  CHECK(l.numRequeues("a") == 3);
  for (int i = 0; i < 100; ++i)
    (void)l.when("a");
  CHECK(l.when("a") == 1000s);
  l.forget("a");
  CHECK(l.numRequeues("a") == 0);
  CHECK(l.when("a") == 5ms);
}

TEST_CASE("the default controller limiter is the max of exponential and a 10/s bucket") {
  FakeClock clock;
  auto l = defaultControllerRateLimiter(clock);
  // 100 distinct items pass the burst with their 5 ms first delay...
  for (int i = 0; i < 100; ++i) {
    CHECK(l->when(fmt::format("item{}", i)) == 5ms);
  }
  // ...then the bucket paces the rest at 10/s.
  CHECK(l->when("x") == 100ms);
  CHECK(l->when("y") == 200ms);
  CHECK(l->numRequeues("item1") == 1);
  l->forget("item1");
  CHECK(l->numRequeues("item1") == 0);
}

TEST_CASE("service limiter 5 s..300 s, route limiter one per 10 s capped at 10 s, fast-slow") {
  auto s = serviceControllerRateLimiter();
  CHECK(s->when("k") == 5s);
  CHECK(s->when("k") == 10s);
  for (int i = 0; i < 10; ++i)
    (void)s->when("k");
  CHECK(s->when("k") == 300s);
  FakeClock clock;
  auto r = routeControllerRateLimiter(clock);
  CHECK(r->when("routes") == 0ns);
  CHECK(r->when("routes") == 10s);
  CHECK(r->when("routes") == 10s);  // capped even though the bucket is 20 s behind
  ItemFastSlowLimiter fs(1ms, 1s, 2);
  CHECK(fs.when("a") == 1ms);
  CHECK(fs.when("a") == 1ms);
  CHECK(fs.when("a") == 1s);
}

TEST_CASE("an item is queued once and never processed by two workers at once") {
  WorkQueue q("test");
  q.add("a");
  q.add("a");
  q.add("b");
  CHECK(q.len() == 2);
  auto first = q.get();
  REQUIRE(first);
  CHECK(*first == "a");
  // Re-adding an item being processed marks it dirty; it is not handed out meanwhile.
  q.add("a");
  CHECK(q.len() == 1);
  auto second = q.get();
  CHECK(*second == "b");
  CHECK(q.len() == 0);
  q.done("a");  // dirty: back in the queue
  CHECK(q.len() == 1);
  q.done("b");
  CHECK(*q.get() == "a");
  q.done("a");
  CHECK(q.len() == 0);
}

TEST_CASE("getUpTo hands out a fair share, at most `most`, each item to one worker") {
  WorkQueue q("batches");
  for (int i = 0; i < 10; ++i) {
    q.add(fmt::format("k{}", i));
  }
  // Ten queued among two workers: a share is five, capped at four.
  CHECK(q.getUpTo(4, 2) == std::vector<std::string>{"k0", "k1", "k2", "k3"});
  // Six left among three workers: two.
  CHECK(q.getUpTo(16, 3) == std::vector<std::string>{"k4", "k5"});
  // An item being processed is marked dirty, not handed out again meanwhile.
  q.add("k0");
  CHECK(q.len() == 4);
  CHECK(q.getUpTo(16) == std::vector<std::string>{"k6", "k7", "k8", "k9"});
  CHECK(q.len() == 0);
  for (const char* k : {"k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"}) {
    q.done(k);
  }
  q.done("k0");  // dirty: back in the queue
  // A short queue is still spread: one item even among many workers.
  CHECK(q.getUpTo(16, 10) == std::vector<std::string>{"k0"});
  q.done("k0");
  q.shutDown();
  CHECK(q.getUpTo(16).empty());  // shut down and empty
}

TEST_CASE("concurrent workers never hold the same key") {
  WorkQueue q("concurrent");
  std::atomic<bool> overlap{false};
  std::mutex mu;
  std::set<std::string> active;
  std::atomic<int> processed{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      while (auto item = q.get()) {
        {
          std::lock_guard lock(mu);
          if (!active.insert(*item).second)
            overlap = true;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        {
          std::lock_guard lock(mu);
          active.erase(*item);
        }
        ++processed;
        q.done(*item);
      }
    });
  }
  for (int i = 0; i < 2000; ++i) {
    q.add(fmt::format("k{}", i % 5));
    if (i % 50 == 0)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  q.shutDownWithDrain();
  for (auto& t : workers)
    t.join();
  CHECK_FALSE(overlap.load());
  CHECK(processed > 0);
}

TEST_CASE("addAfter and addRateLimited wait for the clock; forget and numRequeues") {
  FakeClock clock;
  WorkQueue q("delays", nullptr, clock);
  q.addAfter("later", 5s);
  q.addAfter("later", 10s);  // the earlier time wins
  q.addAfter("now", 0s);
  CHECK(q.len() == 1);
  CHECK(q.delayedLen() == 1);
  CHECK(*q.get() == "now");
  q.done("now");
  clock.advance(4s);
  q.wake();
  CHECK(q.delayedLen() == 1);
  clock.advance(1s);
  q.wake();
  REQUIRE(waitUntil([&] { return q.len() == 1; }));
  CHECK(*q.get() == "later");
  q.done("later");

  q.addRateLimited("r");  // 5 ms
  CHECK(q.numRequeues("r") == 1);
  clock.advance(5ms);
  q.wake();
  REQUIRE(waitUntil([&] { return q.len() == 1; }));
  CHECK(*q.get() == "r");
  q.done("r");
  q.addRateLimited("r");  // 10 ms
  CHECK(q.numRequeues("r") == 2);
  clock.advance(9ms);
  q.wake();
  CHECK(q.len() == 0);
  q.forget("r");
  CHECK(q.numRequeues("r") == 0);
}

TEST_CASE("shutdown wakes workers, ignores adds and hands out what was queued") {
  WorkQueue q("shutdown");
  q.add("a");
  std::thread worker([&] {
    auto a = q.get();
    CHECK(a);
    q.done(*a);
    CHECK_FALSE(q.get());  // empty and shut down
  });
  REQUIRE(waitUntil([&] { return q.len() == 0; }));
  q.shutDown();
  q.add("ignored");
  worker.join();
  CHECK(q.shuttingDown());
  CHECK(q.len() == 0);
}

TEST_CASE("work queue metrics use upstream's names") {
  metrics::Registry registry;
  FakeClock clock;
  {
    WorkQueue q("Nodes", nullptr, clock, &registry);
    q.add("a");
    q.add("b");
    CHECK(registry.valueForTest("workqueue_depth", {"Nodes"}) == 2);
    CHECK(registry.valueForTest("workqueue_adds_total", {"Nodes"}) == 2);
    clock.advance(2s);
    auto a = q.get();
    CHECK(registry.valueForTest("workqueue_queue_duration_seconds", {"Nodes"}) == 1);
    clock.advance(3s);
    q.wake();
    REQUIRE(waitUntil([&] {
      return registry.valueForTest("workqueue_unfinished_work_seconds", {"Nodes"}) >= 3;
    }));
    CHECK(registry.valueForTest("workqueue_longest_running_processor_seconds", {"Nodes"}) >= 3);
    q.done(*a);
    CHECK(registry.valueForTest("workqueue_work_duration_seconds", {"Nodes"}) == 1);
    q.addRateLimited("a");
    CHECK(registry.valueForTest("workqueue_retries_total", {"Nodes"}) == 1);
  }
  std::string text = registry.exposition();
  CHECK(text.find("workqueue_depth{name=\"Nodes\"}") != std::string::npos);
}

}  // namespace ccm

namespace ccm {

TEST_CASE("progress: an item in work too long, or ready items nobody takes, is reported") {
  FakeClock clock;
  WorkQueue q("health", nullptr, clock);
  CHECK(q.progress(10min).ok());
  q.add("a");
  clock.advance(9min);
  CHECK(q.progress(10min).ok());
  clock.advance(2min);
  Status waiting = q.progress(10min);
  CHECK(waiting.code() == Code::Unavailable);
  CHECK(waiting.message() == "queue health: 1 items ready and none taken by a worker for 660s");
  auto item = q.get();
  REQUIRE(item);
  CHECK(q.progress(10min).ok());  // taken just now
  clock.advance(10min + 1s);
  Status busy = q.progress(10min);
  CHECK(busy.code() == Code::Unavailable);
  CHECK(busy.message() == "queue health: item a in work for 601s");
  q.done(*item);
  CHECK(q.progress(10min).ok());
  // Items added long after the last take are judged from when they became ready.
  q.add("b");
  CHECK(q.progress(10min).ok());
  q.shutDown();
  clock.advance(1h);
  CHECK(q.progress(10min).ok());  // shut down: nothing to report
}

}  // namespace ccm
