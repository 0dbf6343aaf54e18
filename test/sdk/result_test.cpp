// The SDK's result types (ccm/types.hpp): Error, Status, Result<T> and the early-return macros,
// as a provider's own code uses them.
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "ccm/types.hpp"

using namespace ccm::sdk;

namespace {

Result<int> parsePositive(int v) {
  if (v <= 0) {
    return Status(CCM_STATUS_INVALID_ARGUMENT, "not positive: " + std::to_string(v));
  }
  return v;
}

Result<int> doubled(int v) {
  CCM_SDK_ASSIGN_OR_RETURN(int p, parsePositive(v));
  return 2 * p;
}

Status checkBoth(int a, int b) {
  CCM_SDK_RETURN_IF_ERROR(parsePositive(a).status());
  CCM_SDK_RETURN_IF_ERROR(parsePositive(b).status().withPrefix("second"));
  return okStatus();
}

}  // namespace

TEST_CASE("Status reads as OK with empty fields, or as its Error") {
  Status ok;
  CHECK(ok.ok());
  CHECK(ok.code() == CCM_STATUS_OK);
  CHECK(ok.message().empty());
  CHECK(ok.retryAfter().count() == 0);
  CHECK(ok.withPrefix("x").ok());
  CHECK(Status(CCM_STATUS_OK, "ignored").ok());

  Status failed(CCM_STATUS_UNAVAILABLE, "down", std::chrono::milliseconds(1500));
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.code() == CCM_STATUS_UNAVAILABLE);
  CHECK(failed.message() == "down");
  CHECK(failed.retryAfter() == std::chrono::milliseconds(1500));
  Status prefixed = failed.withPrefix("nova");
  CHECK(prefixed.message() == "nova: down");
  CHECK(prefixed.retryAfter() == std::chrono::milliseconds(1500));
}

TEST_CASE("Error keeps its reason through withPrefix and withRetryAfter") {
  Error e = Error::failedPrecondition("pending").withReason("busy");
  Error later = e.withPrefix("update").withRetryAfter(std::chrono::milliseconds(20));
  CHECK(later.reason() == "busy");
  CHECK(later.message() == "update: pending");
  CHECK(later.code() == CCM_STATUS_FAILED_PRECONDITION);
  CHECK(later.retryAfter() == std::chrono::milliseconds(20));
  CHECK(Status(later).reason() == "busy");
  CHECK(Status().reason().empty());
}

TEST_CASE("Result from a Status, status(), and the early-return macros") {
  Result<int> good = doubled(4);
  REQUIRE(good.ok());
  CHECK(*good == 8);
  CHECK(good.status().ok());

  Result<int> bad = doubled(-1);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == CCM_STATUS_INVALID_ARGUMENT);
  CHECK(bad.error().message() == "not positive: -1");

  // An OK Status without a value is a bug: INTERNAL, never a Result that claims a value.
  Result<int> broken{Status()};
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.error().code() == CCM_STATUS_INTERNAL);

  CHECK(checkBoth(1, 2).ok());
  CHECK(checkBoth(-1, 2).message() == "not positive: -1");
  CHECK(checkBoth(1, -2).message() == "second: not positive: -2");

  Result<std::string> text = std::string("abc");
  CHECK(text->size() == 3);
}
