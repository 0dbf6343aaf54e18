// Status, metrics registry and exposition, fake clock, freeing heap memory, thread names.
#include <doctest/doctest.h>
#include <unistd.h>

#include <fmt/format.h>

#include <fstream>

#include <pthread.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "host/runtime/clock.hpp"
#include "host/runtime/memory.hpp"
#include "host/runtime/metrics.hpp"
#include "host/runtime/status.hpp"
#include "host/runtime/thread_name.hpp"
#include "test/support/glibc_malloc.hpp"

using namespace ccm;

TEST_CASE("status codes map from any integer, unknown ones to INTERNAL") {
  CHECK(codeFromInt(5) == Code::NotFound);
  CHECK(codeFromInt(64) == Code::ImplementedElsewhere);
  CHECK(codeFromInt(2) == Code::Internal);
  CHECK(codeFromInt(-1) == Code::Internal);
  CHECK(codeFromInt(777) == Code::Internal);
  Status s(Code::Unavailable, "cloud down", std::chrono::milliseconds(1500));
  CHECK(s.toString() == "UNAVAILABLE: cloud down");
  CHECK(s.withPrefix("get metadata").toString() == "UNAVAILABLE: get metadata: cloud down");
  CHECK(s.withPrefix("x").retryAfter() == std::chrono::milliseconds(1500));
  StatusOr<int> v = 3;
  CHECK(v.ok());
  StatusOr<int> e = Status(Code::NotFound, "nope");
  CHECK_FALSE(e.ok());
  StatusOr<int> bad = okStatus();  // a bug: reads as an error, never as a value
  CHECK_FALSE(bad.ok());
  CHECK(bad.status().code() == Code::Internal);
}

TEST_CASE("metrics registry: families, labels, exposition") {
  metrics::Registry reg;
  auto* c = reg.counter("workqueue_adds_total", "Total adds", {"name"}, metrics::Stability::Alpha);
  REQUIRE(c != nullptr);
  c->labels({"Nodes"}).inc();
  c->labels({"Nodes"}).inc(2);
  c->labels({"service"}).inc();
  CHECK(reg.counter("workqueue_adds_total", "x", {"name"}) == c);
  CHECK(reg.counter("workqueue_adds_total", "x", {"other"}) == nullptr);  // label set fixed
  CHECK(reg.gauge("workqueue_adds_total", "x", {"name"}) == nullptr);     // kind fixed
  auto* h = reg.histogram("latency_seconds", "Latency", {1, 4, 16}, {});
  h->noLabels().observe(0.5);
  h->noLabels().observe(3);
  h->noLabels().observe(100);
  auto* g = reg.gauge("up", "Up", {"component"});
  g->labels({"a\"b"}).set(1);
  std::string text = reg.exposition();
  CHECK(text.find("# HELP workqueue_adds_total [ALPHA] Total adds\n# TYPE workqueue_adds_total "
                  "counter\nworkqueue_adds_total{name=\"Nodes\"} 3\n") != std::string::npos);
  CHECK(text.find("latency_seconds_bucket{le=\"1\"} 1\n") != std::string::npos);
  CHECK(text.find("latency_seconds_bucket{le=\"4\"} 2\n") != std::string::npos);
  CHECK(text.find("latency_seconds_bucket{le=\"+Inf\"} 3\n") != std::string::npos);
  CHECK(text.find("latency_seconds_sum 103.5\n") != std::string::npos);
  CHECK(text.find("latency_seconds_count 3\n") != std::string::npos);
  CHECK(text.find("up{component=\"a\\\"b\"} 1\n") != std::string::npos);
  CHECK(reg.valueForTest("workqueue_adds_total", {"Nodes"}) == 3);
  CHECK(reg.valueForTest("workqueue_adds_total") == 4);
  CHECK(reg.valueForTest("absent") == -1);
}

TEST_CASE("counters are safe under concurrency") {
  metrics::Registry reg;
  auto* c = reg.counter("hits_total", "Hits");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c->noLabels().inc();
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  CHECK(c->noLabels().value() == 40000);
}

TEST_CASE("fake clock only moves when told") {
  FakeClock clock;
  auto t0 = clock.now();
  auto w0 = clock.wallNow();
  clock.advance(std::chrono::seconds(5));
  CHECK(clock.now() - t0 == std::chrono::seconds(5));
  clock.jumpWall(std::chrono::hours(-1));
  CHECK(clock.now() - t0 == std::chrono::seconds(5));
  CHECK(clock.wallNow() < w0);
}

// Resident bytes of this process (the second field of /proc/self/statm, in pages).
size_t residentBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t size = 0;
  size_t resident = 0;
  statm >> size >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

TEST_CASE("releaseFreeMemory gives freed heap pages back") {
  // 40 MiB in blocks below the mmap threshold (so they live in the heap), then freed: glibc
  // keeps them in the arena until asked, so the resident set stays high until the call.
  // Under ASan the allocator is ASan's, not glibc's, and nothing is given back.
  constexpr size_t kBlock = 100 * 1024;
  constexpr size_t kTotal = 400 * kBlock;
  std::vector<std::unique_ptr<char[]>> blocks;
  for (size_t i = 0; i < kTotal / kBlock; ++i) {
    blocks.emplace_back(new char[kBlock]);
    std::memset(blocks.back().get(), 1, kBlock);
  }
  // Keep the last block so the heap's top is in use: only a trim that also returns pages
  // from the middle of the heap (what the host relies on) brings the resident set down.
  std::unique_ptr<char[]> top(new char[kBlock]);
  std::memset(top.get(), 1, kBlock);
  blocks.clear();
#if CCM_TEST_GLIBC_MALLOC
  size_t before = residentBytes();
  CHECK(ccm::runtime::releaseFreeMemory());
  size_t after = residentBytes();
  MESSAGE("resident before " << before / 1024 << " KiB, after " << after / 1024 << " KiB");
  CHECK(before > after);
  CHECK(before - after >= kTotal / 2);
#else
  ccm::runtime::releaseFreeMemory();
#endif
}

TEST_CASE("nameThisThread names the calling thread, cut to the kernel's 15 bytes") {
  std::string short_name, long_name;
  std::thread t([&] {
    char buf[32] = {};
    ccm::runtime::nameThisThread("node-sync");
    pthread_getname_np(pthread_self(), buf, sizeof buf);
    short_name = buf;
    ccm::runtime::nameThisThread("ccm-instances.batch/1");
    pthread_getname_np(pthread_self(), buf, sizeof buf);
    long_name = buf;
  });
  t.join();
  CHECK(short_name == "node-sync");
  CHECK(long_name == "ccm-instances.b");
}

TEST_CASE("metrics registry: every external source is exposed, one header per family") {
  metrics::Registry reg;
  reg.gauge("ccm_provider_process_up", "Up")->noLabels().set(1);
  auto child = [](const char* provider, int calls) {
    return [provider, calls] {
      return fmt::format(
          "# HELP ccm_provider_calls_total Calls.\n# TYPE ccm_provider_calls_total counter\n"
          "ccm_provider_calls_total{{provider=\"{}\"}} {}\n"
          "# HELP lat_seconds Latency.\n# TYPE lat_seconds histogram\n"
          "lat_seconds_bucket{{provider=\"{}\",le=\"+Inf\"}} 1\n"
          "lat_seconds_sum{{provider=\"{}\"}} 0.5\nlat_seconds_count{{provider=\"{}\"}} 1\n",
          provider, calls, provider, provider, provider);
    };
  };
  auto a = reg.addExternalSource(child("a", 3));
  auto b = reg.addExternalSource(child("b", 5));
  std::string text = reg.exposition();
  CHECK(text.find("ccm_provider_process_up 1\n") != std::string::npos);
  CHECK(text.find("ccm_provider_calls_total{provider=\"a\"} 3\n"
                  "ccm_provider_calls_total{provider=\"b\"} 5\n") != std::string::npos);
  CHECK(text.find("lat_seconds_count{provider=\"a\"} 1\n"
                  "lat_seconds_bucket{provider=\"b\",le=\"+Inf\"} 1\n") != std::string::npos);
  auto count = [&](std::string_view needle) {
    size_t n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
      ++n;
    }
    return n;
  };
  CHECK(count("# TYPE ccm_provider_calls_total counter\n") == 1);
  CHECK(count("# HELP lat_seconds ") == 1);
  // The same series from two sources is one series with the sum.
  auto c = reg.addExternalSource(child("b", 2));
  CHECK(reg.exposition().find("ccm_provider_calls_total{provider=\"b\"} 7\n") != std::string::npos);
  reg.removeExternalSource(c);
  reg.removeExternalSource(a);
  text = reg.exposition();
  CHECK(text.find("provider=\"a\"") == std::string::npos);
  CHECK(text.find("ccm_provider_calls_total{provider=\"b\"} 5\n") != std::string::npos);
  reg.removeExternalSource(b);
  CHECK(reg.exposition().find("ccm_provider_calls_total") == std::string::npos);
}
