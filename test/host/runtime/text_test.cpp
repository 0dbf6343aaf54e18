// host/runtime/text.hpp: trimming and percent-decoding.
#include "host/runtime/text.hpp"

#include <doctest/doctest.h>

using namespace ccm;

TEST_CASE("trimBlanks removes spaces and tabs only") {
  CHECK(text::trimBlanks(" \t a b\t ") == "a b");
  CHECK(text::trimBlanks("\r\na\n") == "\r\na\n");
  CHECK(text::trimBlanks("   ").empty());
  CHECK(text::trimBlanks("").empty());
}

TEST_CASE("trimSpace removes all ASCII white space") {
  CHECK(text::trimSpace("\r\n\t\v\f x y \n") == "x y");
  CHECK(text::trimSpace("\n\n").empty());
  // Not Unicode space: a non-breaking space (UTF-8 C2 A0) stays.
  CHECK(text::trimSpace("\xc2\xa0x") == "\xc2\xa0x");
}

TEST_CASE("percentDecode decodes escapes in either case and plus only in queries") {
  CHECK(text::percentDecode("a%2Fb%2fc", false) == "a/b/c");
  CHECK(text::percentDecode("a+b", false) == "a+b");
  CHECK(text::percentDecode("a+b%2B", true) == "a b+");
  CHECK(text::percentDecode("", true) == "");
}

TEST_CASE("percentDecode refuses truncated and non-hex escapes, keeps a decoded NUL") {
  CHECK_FALSE(text::percentDecode("%", false).has_value());
  CHECK_FALSE(text::percentDecode("abc%4", false).has_value());
  CHECK_FALSE(text::percentDecode("%zz", false).has_value());
  CHECK_FALSE(text::percentDecode("%4g", true).has_value());
  auto nul = text::percentDecode("a%00b", false);
  REQUIRE(nul.has_value());
  CHECK(*nul == std::string("a\0b", 3));
}
