// ccm::sdk::Call over a Host of the test's own: the optional time left, checkAlive's codes,
// a lifecycle call that never asks the host about cancellation, and log lines with fields.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "ccm/provider.hpp"

namespace {

using std::chrono::nanoseconds;

// The host services are plain C function pointers: what they answer and saw is kept here.
struct Scripted {
  int64_t now_ns = 1'000;
  bool cancelled = false;
  int probes = 0;
  std::string line;
  std::vector<std::pair<std::string, std::string>> fields;
};

Scripted& scripted() {
  static Scripted s;
  return s;
}

int64_t nowNs(ccm_host_handle /*host*/) { return scripted().now_ns; }

bool isCancelled(ccm_host_handle /*host*/, uint64_t /*call_id*/) {
  ++scripted().probes;
  return scripted().cancelled;
}

void logLine(ccm_host_handle /*host*/, ccm_log_level /*level*/, ccm_str message) {
  scripted().line = std::string(ccm::sdk::view(message));
  scripted().fields.clear();
}

void logFields(ccm_host_handle /*host*/, ccm_log_level /*level*/, ccm_str message,
               const ccm_kv* fields, size_t count) {
  scripted().line = std::string(ccm::sdk::view(message));
  scripted().fields.clear();
  for (size_t i = 0; i < count; ++i) {
    scripted().fields.emplace_back(ccm::sdk::view(fields[i].key), ccm::sdk::view(fields[i].value));
  }
}

// A 1.1 host with a clock and a cancellation answer the test sets.
struct TestHost {
  TestHost() {
    scripted() = Scripted{};
    services.struct_size = sizeof(ccm_host_services);
    services.now_monotonic_ns = &nowNs;
    services.is_cancelled = &isCancelled;
    services.log = &logLine;
    services.log_fields = &logFields;
    ccm_host_info info{};
    info.struct_size = sizeof(ccm_host_info);
    info.abi_major = CCM_ABI_MAJOR;
    info.abi_minor = 1;
    info.services = &services;
    host.init(info, 1);
  }
  ccm_host_services services{};
  ccm::sdk::Host host;
};

ccm_call callWith(uint64_t id, int64_t deadline_ns) {
  return ccm_call{sizeof(ccm_call), id, deadline_ns};
}

}  // namespace

TEST_CASE("Call: time left is optional, remaining() keeps its large value without a deadline") {
  TestHost t;
  ccm_call none = callWith(7, 0);
  ccm::sdk::Call unbounded(t.host, &none);
  CHECK(unbounded.id() == 7);
  CHECK_FALSE(unbounded.hasDeadline());
  CHECK_FALSE(unbounded.timeLeft().has_value());
  CHECK(unbounded.remaining() == std::chrono::hours(24));

  ccm_call bounded_c = callWith(8, 5'000);
  ccm::sdk::Call bounded(t.host, &bounded_c);
  CHECK(bounded.hasDeadline());
  CHECK(bounded.timeLeft() == nanoseconds(4'000));
  CHECK(bounded.remaining() == nanoseconds(4'000));
  scripted().now_ns = 9'000;
  CHECK(bounded.timeLeft() == nanoseconds(0));  // past: zero, never negative
  CHECK(bounded.remaining() == nanoseconds(0));
}

TEST_CASE("Call::checkAlive: OK, DEADLINE_EXCEEDED at the deadline, CANCELLED when told") {
  TestHost t;
  ccm_call c = callWith(3, 2'000);
  ccm::sdk::Call call(t.host, &c);
  CHECK(call.checkAlive().ok());
  CHECK_FALSE(call.cancelled());

  scripted().cancelled = true;
  CHECK(call.checkAlive().code() == CCM_STATUS_CANCELLED);
  CHECK(call.cancelled());

  scripted().cancelled = false;
  scripted().now_ns = 2'000;
  ccm::sdk::Status late = call.checkAlive();
  CHECK(late.code() == CCM_STATUS_DEADLINE_EXCEEDED);
  CHECK(late.message().find("deadline") != std::string::npos);
}

TEST_CASE("Call::lifecycle: no id, no deadline, and the host is never probed") {
  TestHost t;
  scripted().cancelled = true;  // would cancel any ordinary call
  ccm::sdk::Call call = ccm::sdk::Call::lifecycle(t.host);
  CHECK(&call.host() == &t.host);
  CHECK(call.id() == 0);
  CHECK_FALSE(call.hasDeadline());
  CHECK_FALSE(call.timeLeft().has_value());
  CHECK(call.checkAlive().ok());
  CHECK_FALSE(call.cancelled());
  CHECK(scripted().probes == 0);

  ccm_call ordinary = callWith(4, 0);
  CHECK(ccm::sdk::Call(t.host, &ordinary).checkAlive().code() == CCM_STATUS_CANCELLED);
  CHECK(scripted().probes == 1);
}

TEST_CASE("Call logs through its host: fields by log_fields, none by log") {
  TestHost t;
  ccm_call c = callWith(1, 0);
  ccm::sdk::Call call(t.host, &c);
  call.warning("request retried", {{"op", "GET /servers"}, {"attempt", "2"}});
  CHECK(scripted().line == "request retried");
  CHECK(scripted().fields ==
        std::vector<std::pair<std::string, std::string>>{{"op", "GET /servers"},
                                                         {"attempt", "2"}});
  call.info("plain");
  CHECK(scripted().line == "plain");
  CHECK(scripted().fields.empty());
}
