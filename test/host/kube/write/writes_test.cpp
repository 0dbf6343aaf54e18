// Patch bodies for the controllers' writes, conflict retries, and the event recorder.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "host/kube/api/retry.hpp"
#include "host/kube/write/event_recorder.hpp"
#include "host/kube/write/patch_builder.hpp"
#include "host/runtime/metrics.hpp"
#include "test/support/fake_kube_api.hpp"
#include "test/support/log_capture.hpp"
#include "test/support/wait.hpp"

namespace ccm::kube {
namespace {

using namespace std::chrono_literals;

class FixedRandom final : public Random {
 public:
  explicit FixedRandom(double v) : v_(v) {}
  double uniform() override { return v_; }

 private:
  double v_;
};

}  // namespace

TEST_CASE("node metadata/spec patch with a resourceVersion precondition") {
  std::string body = NodePatch()
                         .resourceVersion("42")
                         .setLabel("topology.kubernetes.io/zone", "z1")
                         .removeLabel("old")
                         .providerId("fake://n1")
                         .taints({{"a", "", "NoSchedule", 0},
                                  {"node.kubernetes.io/not-ready", "", "NoExecute", 1784887200}})
                         .build();
  CHECK(
      body ==
      R"({"metadata":{"resourceVersion":"42","labels":{"old":null,"topology.kubernetes.io/zone":"z1"}},)"
      R"("spec":{"providerID":"fake://n1","taints":[{"key":"a","effect":"NoSchedule"},)"
      R"({"key":"node.kubernetes.io/not-ready","effect":"NoExecute","timeAdded":"2026-07-24T10:00:00Z"}]}})");
  CHECK(NodePatch().resourceVersion("1").taints({}).build() ==
        R"({"metadata":{"resourceVersion":"1"},"spec":{"taints":null}})");
  CHECK(NodePatch().podCidrs("10.0.0.0/24", {"10.0.0.0/24", "fd00::/64"}).build() ==
        R"({"spec":{"podCIDR":"10.0.0.0/24","podCIDRs":["10.0.0.0/24","fd00::/64"]}})");
  CHECK(NodePatch().resourceVersion("1").empty());
  CHECK(NodePatch().setAnnotation("a\"b", "c").build() ==
        R"({"metadata":{"annotations":{"a\"b":"c"}}})");
}

TEST_CASE("node status patches: addresses replace, conditions merge by type") {
  CHECK(
      nodeAddressesPatch({{"InternalIP", "10.0.0.5"}, {"Hostname", "n1"}}) ==
      R"({"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.5"},{"type":"Hostname","address":"n1"},{"$patch":"replace"}]}})");
  CHECK(nodeAddressesPatch({{"InternalIP", "10.0.0.5"}}, "42") ==
        R"({"metadata":{"resourceVersion":"42"},"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.5"},{"$patch":"replace"}]}})");
  CHECK(
      nodeConditionsPatch({{"NetworkUnavailable", "False", "RouteCreated",
                            "RouteController created a route", 1784887200, 1784887200}}) ==
      R"({"status":{"conditions":[{"type":"NetworkUnavailable","status":"False","lastHeartbeatTime":"2026-07-24T10:00:00Z","lastTransitionTime":"2026-07-24T10:00:00Z","reason":"RouteCreated","message":"RouteController created a route"}]}})");
}

TEST_CASE("service finalizer and load balancer status patches") {
  CHECK(finalizerAddPatch("service.kubernetes.io/load-balancer-cleanup") ==
        R"({"metadata":{"finalizers":["service.kubernetes.io/load-balancer-cleanup"]}})");
  CHECK(
      finalizerRemovePatch("service.kubernetes.io/load-balancer-cleanup") ==
      R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["service.kubernetes.io/load-balancer-cleanup"]}})");
  CHECK(
      serviceLoadBalancerStatusPatch({{"203.0.113.7", "", "VIP", {{80, "TCP", std::nullopt}}}}) ==
      R"({"status":{"loadBalancer":{"ingress":[{"ip":"203.0.113.7","ipMode":"VIP","ports":[{"port":80,"protocol":"TCP"}]}]}}})");
  CHECK(serviceLoadBalancerStatusPatch({}) == R"({"status":{"loadBalancer":{"ingress":null}}})");
  CHECK(labelsMergePatch({{"a", "b"}, {"c", std::nullopt}}) ==
        R"({"metadata":{"labels":{"a":"b","c":null}}})");
  auto svc = decodeService(
      R"({"metadata":{"name":"s","namespace":"n"},"status":{"loadBalancer":{"ingress":[{"ip":"1.2.3.4","ports":[{"port":80,"protocol":"TCP","error":"x"}]}]}}})");
  REQUIRE(svc.ok());
  CHECK(ingressEqual((*svc)->ingress, {{"1.2.3.4", "", "", {{80, "TCP", "x"}}}}));
  CHECK_FALSE(ingressEqual((*svc)->ingress, {{"1.2.3.4", "", "", {}}}));
}

TEST_CASE("specs copied from a cached node round-trip into a patch") {
  auto node = decodeNode(
      R"({"metadata":{"name":"n"},"spec":{"taints":[{"key":"k","value":"v","effect":"NoSchedule","timeAdded":"2026-07-24T10:00:00Z"}]},"status":{"addresses":[{"type":"InternalIP","address":"1.1.1.1"}]}})");
  REQUIRE(node.ok());
  auto taints = taintSpecs((*node)->taints());
  REQUIRE(taints.size() == 1);
  CHECK(taints[0] == TaintSpec{"k", "v", "NoSchedule", 1784887200});
  CHECK(addressSpecs((*node)->addresses())[0] == AddressSpec{"InternalIP", "1.1.1.1"});
}

TEST_CASE("retryOnConflict: steps, delays and jitter as upstream") {
  FixedRandom half(0.5);
  std::vector<std::chrono::nanoseconds> slept;
  RetryHooks hooks;
  hooks.random = &half;
  hooks.sleep = [&](std::chrono::nanoseconds d) {
    slept.push_back(d);
    return true;
  };
  int calls = 0;
  ApiStatus conflict(409, Reason::Conflict, "modified");
  ApiStatus st = retryOnConflict(
      kDefaultRetry,
      [&] {
        ++calls;
        return conflict;
      },
      hooks);
  CHECK(st.isConflict());
  CHECK(calls == 5);
  REQUIRE(slept.size() == 4);
  CHECK(slept[0] == 10500us);  // 10 ms + 0.5 x 0.1 x 10 ms
  slept.clear();
  calls = 0;
  st = retryOnConflict(
      kDefaultBackoff, [&] { return ++calls < 3 ? conflict : ApiStatus(); }, hooks);
  CHECK(st.ok());
  CHECK(calls == 3);
  REQUIRE(slept.size() == 2);
  CHECK(slept[0] == 10500us);
  CHECK(slept[1] == 52500us);  // x5
  slept.clear();
  calls = 0;
  st = retryOnConflict(
      kUpdateBackoff,
      [&] {
        ++calls;
        return ApiStatus(404, Reason::NotFound, "gone");
      },
      hooks);
  CHECK(st.isNotFound());
  CHECK(calls == 1);  // only conflicts are retried
  auto delays = backoffDelays(kNodeInitBackoff, half);
  CHECK(delays.size() == 19);
  CHECK(delays[0] == 75ms);  // 50 ms + 0.5 x 1.0 x 50 ms
}

TEST_CASE("the reflector backoff doubles to its cap and resets after a calm period") {
  FakeClock clock;
  FixedRandom zero(0.0);
  BackoffManager b(800ms, 30s, 2min, 1.0, clock, zero);
  CHECK(b.next() == 800ms);
  CHECK(b.next() == 1600ms);
  for (int i = 0; i < 10; ++i)
    (void)b.next();
  CHECK(b.next() == 30s);
  clock.advance(3min);
  CHECK(b.next() == 800ms);
}

TEST_CASE("events: first occurrence is a POST in the object's namespace or default") {
  FakeClock clock;
  FakeKubeApi api;
  EventRecorderOptions o;
  o.host = "host-1";
  EventBroadcaster b(api, o, clock);
  EventRecorder rec = b.recorder("cloud-node-controller");
  auto node = decodeNode(R"({"metadata":{"name":"n1","uid":"u-1"}})");
  rec.event(referenceTo(**node), EventType::Normal, "Synced", "Node synced successfully");
  b.processQueuedForTest();
  auto posts = api.callsFor("POST");
  REQUIRE(posts.size() == 1);
  CHECK(posts[0].path == "/api/v1/namespaces/default/events");
  const std::string& e = posts[0].body;
  CHECK(e.find(R"("involvedObject":{"kind":"Node","name":"n1","uid":"u-1","apiVersion":"v1"})") !=
        std::string::npos);
  CHECK(e.find(R"("reason":"Synced","message":"Node synced successfully")") != std::string::npos);
  CHECK(e.find(R"("source":{"component":"cloud-node-controller","host":"host-1"})") !=
        std::string::npos);
  CHECK(e.find(R"("count":1,"type":"Normal")") != std::string::npos);
  CHECK(e.find(R"("metadata":{"name":"n1.)") != std::string::npos);
  CHECK(e.find(R"("reportingComponent":"cloud-node-controller","reportingInstance":"host-1")") !=
        std::string::npos);

  auto svc = decodeService(R"({"metadata":{"name":"web","namespace":"shop","uid":"s-1"}})");
  rec.eventf(referenceTo(**svc), EventType::Warning, "SyncLoadBalancerFailed",
             "Error syncing load balancer: {}", "boom");
  b.processQueuedForTest();
  posts = api.callsFor("POST");
  REQUIRE(posts.size() == 2);
  CHECK(posts[1].path == "/api/v1/namespaces/shop/events");
  CHECK(posts[1].body.find(R"("message":"Error syncing load balancer: boom")") !=
        std::string::npos);
  CHECK(posts[1].body.find(R"("type":"Warning")") != std::string::npos);
  CHECK(b.stats().created == 2);
}

TEST_CASE("events: repeats are PATCHed with count, re-POSTed when gone") {
  FakeClock clock;
  FakeKubeApi api;
  EventBroadcaster b(api, EventRecorderOptions{.host = "h"}, clock);
  EventRecorder rec = b.recorder("service-controller");
  ObjectReference ref{"Service", "ns", "web", "u", "v1", "", ""};
  rec.event(ref, EventType::Normal, "EnsuringLoadBalancer", "Ensuring load balancer");
  clock.advance(5s);
  rec.event(ref, EventType::Normal, "EnsuringLoadBalancer", "Ensuring load balancer");
  b.processQueuedForTest();
  auto posts = api.callsFor("POST");
  auto patches = api.callsFor("PATCH");
  REQUIRE(posts.size() == 1);
  REQUIRE(patches.size() == 1);
  CHECK(patches[0].path.rfind("/api/v1/namespaces/ns/events/web.", 0) == 0);
  CHECK(patches[0].body.find(R"("count":2)") != std::string::npos);
  CHECK(patches[0].body.find(R"("message":"Ensuring load balancer")") != std::string::npos);
  // The event expired on the server: the next repeat is created again.
  api.failNext("PATCH", patches[0].path, ApiStatus(404, Reason::NotFound, "gone"));
  rec.event(ref, EventType::Normal, "EnsuringLoadBalancer", "Ensuring load balancer");
  b.processQueuedForTest();
  CHECK(api.callsFor("POST").size() == 2);
  CHECK(api.callsFor("POST")[1].body.find(R"("count":3)") != std::string::npos);
}

TEST_CASE("events: spam filter (25 then 1 per 5 min) and aggregation after 10 messages") {
  FakeClock clock;
  FakeKubeApi api;
  EventBroadcaster b(api, EventRecorderOptions{.host = "h"}, clock);
  EventRecorder rec = b.recorder("c");
  ObjectReference ref{"Node", "", "n", "u", "v1", "", ""};
  for (int i = 0; i < 30; ++i) {
    rec.event(ref, EventType::Warning, fmt::format("R{}", i % 2), "same");
  }
  b.processQueuedForTest();
  CHECK(b.stats().dropped_spam == 5);
  clock.advance(300s);
  rec.event(ref, EventType::Warning, "R0", "same");
  rec.event(ref, EventType::Warning, "R0", "same");
  b.processQueuedForTest();
  CHECK(b.stats().dropped_spam == 6);

  FakeKubeApi api2;
  EventBroadcaster b2(api2, EventRecorderOptions{.host = "h"}, clock);
  EventRecorder rec2 = b2.recorder("c");
  for (int i = 0; i < 12; ++i) {
    rec2.event(ref, EventType::Normal, "Reason", fmt::format("message {}", i));
  }
  b2.processQueuedForTest();
  auto posts = api2.callsFor("POST");
  auto patches = api2.callsFor("PATCH");
  CHECK(posts.size() == 10);  // 9 distinct + the first aggregate
  CHECK(posts.back().body.find("(combined from similar events): message 9") != std::string::npos);
  REQUIRE(patches.size() == 2);  // later ones bump the aggregate
  CHECK(patches.back().body.find("(combined from similar events): message 11") !=
        std::string::npos);
}

TEST_CASE("events: queued events are written in batches; a repeat waits for its first") {
  FakeClock clock;
  FakeKubeApi api;
  EventBroadcaster b(api, EventRecorderOptions{.host = "h"}, clock);
  EventRecorder rec = b.recorder("cloud-node-controller");
  for (int i = 0; i < 40; ++i) {
    // The sixth is a repeat of the first: it is a PATCH once the first one's POST is done.
    std::string name = fmt::format("n{}", i == 5 ? 0 : i);
    rec.event(ObjectReference{"Node", "", name, "u-" + name, "v1", "", ""}, EventType::Normal,
              "Synced", "Node synced successfully");
  }
  b.processQueuedForTest();
  // 32 taken at once: 5 sent, then (after the repeat) 27; then the last 8.
  CHECK(api.batchSizes() == std::vector<size_t>{5, 27, 8});
  auto posts = api.callsFor("POST");
  auto patches = api.callsFor("PATCH");
  CHECK(posts.size() == 39);
  REQUIRE(patches.size() == 1);
  CHECK(patches[0].path.rfind("/api/v1/namespaces/default/events/n0.", 0) == 0);
  CHECK(patches[0].body.find(R"("count":2)") != std::string::npos);
  CHECK(b.stats().created == 39);
  CHECK(b.stats().patched == 1);
}

TEST_CASE("events never block: the queue is bounded and a rejected event is dropped") {
  FakeClock clock;
  FakeKubeApi api;
  EventRecorderOptions o;
  o.host = "h";
  o.queue_size = 3;
  EventBroadcaster b(api, o, clock);
  EventRecorder rec = b.recorder("c");
  ObjectReference ref{"Node", "", "n", "u", "v1", "", ""};
  ccm::testing::LogCapture logs;
  for (int i = 0; i < 5; ++i) {
    rec.event(ref, EventType::Normal, "R", fmt::format("m{}", i));
  }
  CHECK(b.stats().dropped_queue_full == 2);
  // The operator is told once, not per dropped event; again after a minute if it goes on.
  const char* kFull = "Event queue full; dropping events";
  CHECK(logs.count(kFull) == 1);
  CHECK(logs.get().find("queueSize=3 droppedSoFar=1") != std::string::npos);
  clock.advance(std::chrono::seconds(61));
  rec.event(ref, EventType::Normal, "R", "m5");
  CHECK(logs.count(kFull) == 2);
  CHECK(logs.get().find("droppedSoFar=3") != std::string::npos);
  api.failNext("POST", "/api/v1/namespaces/default/events",
               ApiStatus(403, Reason::Forbidden, "no"));
  b.processQueuedForTest();
  CHECK(b.stats().failed == 1);
  CHECK(b.stats().created == 2);
  EventRecorder none;
  none.event(ref, EventType::Normal, "R", "ignored");  // a default recorder is a no-op
}

TEST_CASE("events: transport errors are retried by the sender thread") {
  FakeKubeApi api;
  EventRecorderOptions o;
  o.host = "h";
  o.retry_interval = 1ms;
  EventBroadcaster b(api, o);
  FixedRandom zero(0.0);
  b.setRandomForTest(&zero);
  api.failNext("POST", "/api/v1/namespaces/default/events", ApiStatus::transport("reset"));
  api.failNext("POST", "/api/v1/namespaces/default/events", ApiStatus::transport("reset"));
  b.start();
  b.recorder("c").event(ObjectReference{"Node", "", "n", "u", "v1", "", ""}, EventType::Normal, "R",
                        "m");
  for (int i = 0; i < 2000 && b.stats().created == 0; ++i) {
    std::this_thread::sleep_for(1ms);
  }
  CHECK(b.stats().created == 1);
  CHECK(api.callsFor("POST").size() == 3);
  b.shutdown();
}

TEST_CASE("events: a full queue waits while the server answers, drops while it does not") {
  FakeKubeApi api;
  metrics::Registry registry;
  EventRecorderOptions o;
  o.host = "h";
  o.queue_size = 1;
  o.batch_size = 1;
  o.retry_interval = std::chrono::minutes(10);  // the sender stays in its retry wait
  o.enqueue_wait = std::chrono::seconds(20);
  o.metrics = &registry;
  EventBroadcaster b(api, o);
  FixedRandom one(1.0);
  b.setRandomForTest(&one);
  for (int i = 0; i < 3; ++i) {
    api.failNext("POST", "/api/v1/namespaces/default/events", ApiStatus::transport("refused"));
  }
  b.start();
  EventRecorder rec = b.recorder("c");
  ObjectReference ref{"Node", "", "n", "u", "v1", "", ""};
  rec.event(ref, EventType::Normal, "R", "first");  // taken by the sender, which then retries
  REQUIRE(ccm::testing::waitUntil([&] { return api.callsFor("POST").size() == 1; }));
  // The server gives no answer: further events must not hold their producers for the 20 s.
  int sent = 1;
  REQUIRE(ccm::testing::waitUntil([&] {
    rec.event(ref, EventType::Normal, "R", fmt::format("m{}", sent++));
    return b.stats().dropped_server_unavailable > 0;
  }));
  CHECK(registry.valueForTest("ccm_events_dropped_total", {"server_unavailable"}) ==
        static_cast<double>(b.stats().dropped_server_unavailable));
  CHECK(registry.valueForTest("ccm_events_queue_peak_length") == 1);
  b.shutdown();
  CHECK(registry.valueForTest("ccm_events_queue_length") == 0);
}

}  // namespace ccm::kube
