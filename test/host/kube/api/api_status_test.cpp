// ApiStatus parsing and mapping; RFC 3339 helpers.
#include "host/kube/api/api_status.hpp"

#include <doctest/doctest.h>

#include "host/kube/api/time_format.hpp"

namespace ccm::kube {

TEST_CASE("a JSON Status body gives reason, message, retry-after and causes") {
  auto st = ApiStatus::fromResponse(
      504,
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: Too large resource version: 20, current: 10","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1},"code":504})");
  CHECK(st.reason() == Reason::Timeout);
  CHECK(st.isTooLargeResourceVersion());
  CHECK(st.retryAfter() == std::chrono::seconds(1));
  CHECK(st.toStatus().code() == Code::DeadlineExceeded);
  CHECK(st.toString() == "Timeout (504): Timeout: Too large resource version: 20, current: 10");
}

TEST_CASE("410 Expired carries the fresh continue token; Gone is expired too") {
  auto st = ApiStatus::fromResponse(
      410,
      R"({"kind":"Status","metadata":{"continue":"abc"},"status":"Failure","message":"The provided continue parameter is too old","reason":"Expired","code":410})");
  CHECK(st.isExpired());
  CHECK(st.continueToken() == "abc");
  CHECK(ApiStatus::fromStatusObject(410, "Gone", "old").isExpired());
  CHECK(ApiStatus::fromStatusObject(410, "", "").isExpired());
  CHECK(st.toStatus().code() == Code::FailedPrecondition);
}

TEST_CASE("bodies that are not a Status fall back to the HTTP code") {
  auto st = ApiStatus::fromResponse(409, R"({"kind":"Node"})");
  CHECK(st.isConflict());
  CHECK(st.message() == R"({"kind":"Node"})");  // not a Status: the body is the message
  auto empty = ApiStatus::fromResponse(500, "");
  CHECK(empty.reason() == Reason::InternalError);
  CHECK_FALSE(empty.message().empty());
  auto garbage = ApiStatus::fromResponse(503, "{not json");
  CHECK(garbage.reason() == Reason::ServiceUnavailable);
  CHECK(garbage.message() == "{not json");
  auto retry = ApiStatus::fromResponse(429, "slow down", std::chrono::seconds(7));
  CHECK(retry.retryAfter() == std::chrono::seconds(7));
  CHECK(retry.toStatus().retryAfter() == std::chrono::seconds(7));
}

TEST_CASE("every reason maps to a host status code") {
  CHECK(ApiStatus(404, Reason::NotFound, "x").toStatus().code() == Code::NotFound);
  CHECK(ApiStatus(409, Reason::AlreadyExists, "x").toStatus().code() == Code::AlreadyExists);
  CHECK(ApiStatus(422, Reason::Invalid, "x").toStatus().code() == Code::InvalidArgument);
  CHECK(ApiStatus(400, Reason::BadRequest, "x").toStatus().code() == Code::InvalidArgument);
  CHECK(ApiStatus(401, Reason::Unauthorized, "x").toStatus().code() == Code::Unauthenticated);
  CHECK(ApiStatus(403, Reason::Forbidden, "x").toStatus().code() == Code::PermissionDenied);
  CHECK(ApiStatus(500, Reason::ServerTimeout, "x").toStatus().code() == Code::Unavailable);
  CHECK(ApiStatus::transport("x").toStatus().code() == Code::Unavailable);
  CHECK(ApiStatus::cancelled().toStatus().code() == Code::Cancelled);
  CHECK(ApiStatus().ok());
  CHECK(ApiStatus().toStatus().ok());
  CHECK(reasonFromString("NotFound") == Reason::NotFound);
  CHECK(reasonName(Reason::Conflict) == "Conflict");
  CHECK(ApiStatus(404, Reason::NotFound, "gone").withPrefix("get").message() == "get: gone");
}

TEST_CASE("RFC 3339 timestamps") {
  CHECK(parseRfc3339("1970-01-01T00:00:00Z") == 0);
  CHECK(parseRfc3339("2026-07-24T10:00:00Z") == 1784887200);
  CHECK(parseRfc3339("2026-07-24T10:00:00.123456Z") == 1784887200);
  CHECK(parseRfc3339("2026-07-24T12:00:00+02:00") == 1784887200);
  CHECK_FALSE(parseRfc3339("2026-07-24 10:00").has_value());
  CHECK_FALSE(parseRfc3339("").has_value());
  CHECK(formatRfc3339(1784887200) == "2026-07-24T10:00:00Z");
  auto t = parseRfc3339Time("2003-01-01T01:01:01.000003Z");
  REQUIRE(t);
  CHECK(formatMicroTime(*t) == "2003-01-01T01:01:01.000003Z");
  CHECK(formatRfc3339(*t) == "2003-01-01T01:01:01Z");
}

}  // namespace ccm::kube
