// Go-compatible time and IP parsing behind kubesim's 400/422 answers.
#include <doctest/doctest.h>

#include "kubesim/go_time.hpp"
#include "kubesim/ip_text.hpp"

namespace ccm::kubesim {
namespace {

TEST_CASE("MicroTime needs exactly six fractional digits, with Go's error texts") {
  CHECK_FALSE(goTimeParseError(GoTimeLayout::Rfc3339Micro, "2026-11-27T10:00:00.123456Z"));
  CHECK_FALSE(goTimeParseError(GoTimeLayout::Rfc3339Micro, "2026-11-27T10:00:00.123456+02:00"));
  CHECK_EQ(*goTimeParseError(GoTimeLayout::Rfc3339Micro, "2026-11-27T10:00:00Z"),
           "parsing time \"2026-11-27T10:00:00Z\" as \"2006-01-02T15:04:05.000000Z07:00\": "
           "cannot parse \"Z\" as \".000000\"");
  CHECK_EQ(*goTimeParseError(GoTimeLayout::Rfc3339Micro, "2026-11-27T10:00:00.123Z"),
           "parsing time \"2026-11-27T10:00:00.123Z\" as \"2006-01-02T15:04:05.000000Z07:00\": "
           "cannot parse \".123Z\" as \".000000\"");
  CHECK_EQ(*goTimeParseError(GoTimeLayout::Rfc3339Micro, "2026-11-27T10:00:00.1234567Z"),
           "parsing time \"2026-11-27T10:00:00.1234567Z\" as "
           "\"2006-01-02T15:04:05.000000Z07:00\": cannot parse \"7Z\" as \"Z07:00\"");
}

TEST_CASE("Time reads RFC 3339 and tolerates a fraction") {
  CHECK_FALSE(goTimeParseError(GoTimeLayout::Rfc3339, "2026-11-27T10:00:00Z"));
  CHECK_FALSE(goTimeParseError(GoTimeLayout::Rfc3339, "2026-11-27T10:00:00.5Z"));
  CHECK_EQ(*goTimeParseError(GoTimeLayout::Rfc3339, "yesterday"),
           "parsing time \"yesterday\" as \"2006-01-02T15:04:05Z07:00\": cannot parse "
           "\"yesterday\" as \"2006\"");
  CHECK_EQ(*goTimeParseError(GoTimeLayout::Rfc3339, "2026-13-01T00:00:00Z"),
           "parsing time \"2026-13-01T00:00:00Z\": month out of range");
  CHECK_EQ(*goTimeParseError(GoTimeLayout::Rfc3339, "2026-02-30T00:00:00Z"),
           "parsing time \"2026-02-30T00:00:00Z\": day out of range");
  CHECK_EQ(*goTimeParseError(GoTimeLayout::Rfc3339, "2026-11-27T10:00:00Zjunk"),
           "parsing time \"2026-11-27T10:00:00Zjunk\": extra text: \"junk\"");
  CHECK(goTimeParseError(GoTimeLayout::Rfc3339, "2026-11-27 10:00:00Z"));
}

TEST_CASE("IPs and CIDRs as Go's sloppy parsers read them") {
  CHECK(parseIp("203.0.113.1"));
  CHECK(parseIp("010.000.000.001"));  // leading zeros are tolerated
  CHECK(parseIp("fd00::1"));
  CHECK_FALSE(parseIp(" 203.0.113.1"));
  CHECK_FALSE(parseIp("203.0.113.1 "));
  CHECK_FALSE(parseIp("not-an-ip"));
  CHECK_FALSE(parseIp("256.0.0.1"));
  CHECK_FALSE(parseIp("fe80::1%eth0"));
  CHECK(parseIp("::ffff:10.0.0.1")->v4);
  CHECK(parseCidr("10.0.0.0/8"));
  CHECK(parseCidr("fd00::/64"));
  CHECK_FALSE(parseCidr("10.0.0.0/33"));
  CHECK_FALSE(parseCidr("10.0.0.0"));
  CHECK_FALSE(parseCidr("10.0.0.0/"));
  auto c = parseCidr("10.96.3.4/12");
  REQUIRE(c);
  CHECK_EQ(c->toString(), "10.96.0.0/12");
  CHECK(c->contains(*parseIp("10.111.255.254")));
  CHECK_FALSE(c->contains(*parseIp("10.112.0.1")));
  CHECK_EQ(addToIp(*parseIp("10.96.0.255"), 2)->toString(), "10.96.1.1");
  CHECK_FALSE(addToIp(*parseIp("255.255.255.255"), 1));
}

}  // namespace
}  // namespace ccm::kubesim
