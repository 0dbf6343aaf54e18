// CallRunner: slots, deadlines, abandonment and exceptions, without a plugin.
#include "host/plugin/call_runner.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <stdexcept>

#include "test/host/plugin/test_plugins.hpp"

using ccm::plugin::CallOutcome;
using ccm::plugin::CallRunner;
using ccm::testing::waitUntil;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

TEST_CASE("a call returns its status; no slots means one") {
  CallRunner runner("test", 0, milliseconds(50), nullptr, "test");
  CHECK(runner.slots() == 1);
  bool abandoned = false;
  CallOutcome out = runner.run(
      Clock::now() + milliseconds(2000), [] { return CCM_STATUS_NOT_FOUND; },
      [&] { abandoned = true; });
  CHECK(out.status == CCM_STATUS_NOT_FOUND);
  CHECK_FALSE(out.abandoned);
  CHECK_FALSE(out.threw);
  CHECK_FALSE(abandoned);
}

TEST_CASE("exceptions are caught on the runner thread") {
  CallRunner runner("test", 1, milliseconds(50), nullptr, "test");
  CallOutcome out = runner.run(
      Clock::now() + milliseconds(2000), []() -> ccm_status { throw std::runtime_error("kaboom"); },
      [] {});
  CHECK(out.threw);
  CHECK(out.status == CCM_STATUS_INTERNAL);
  CHECK(out.exception == "kaboom");
  out = runner.run(
      Clock::now() + milliseconds(2000), []() -> ccm_status { throw 7; }, [] {});
  CHECK(out.exception == "a non-standard exception");
}

TEST_CASE("a hung call is abandoned at deadline + grace and holds its slot until it returns") {
  CallRunner runner("test", 1, milliseconds(100), nullptr, "test");
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  bool abandoned = false;
  auto started = Clock::now();
  CallOutcome out = runner.run(
      started + milliseconds(100),
      [released] {
        released.wait_for(std::chrono::seconds(10));
        return CCM_STATUS_OK;
      },
      [&] { abandoned = true; });
  auto took = Clock::now() - started;
  CHECK(out.abandoned);
  CHECK(out.status == CCM_STATUS_DEADLINE_EXCEEDED);
  CHECK(abandoned);  // before run() returned
  CHECK(took >= milliseconds(200));
  CHECK(took < milliseconds(2000));
  CHECK(runner.abandonedInFlight() == 1);

  // The only slot is held by the hung call: the next call is refused at its deadline.
  CallOutcome refused = runner.run(
      Clock::now() + milliseconds(50), [] { return CCM_STATUS_OK; }, [] {});
  CHECK(refused.status == CCM_STATUS_DEADLINE_EXCEEDED);
  CHECK_FALSE(refused.abandoned);
  CHECK(refused.exception ==
        "every provider slot stayed busy until the deadline (1 slots, 1 held by hung calls)");

  release.set_value();
  CHECK(waitUntil([&] { return runner.abandonedInFlight() == 0; }));
  CallOutcome again = runner.run(
      Clock::now() + milliseconds(2000), [] { return CCM_STATUS_OK; }, [] {});
  CHECK(again.status == CCM_STATUS_OK);
}
