// Unit tests of host/runtime/base64 (used by the host's kubeconfig loader and by kubesim).
#include "host/runtime/base64.hpp"

#include <doctest/doctest.h>

#include <string>

namespace ccm {
namespace {

TEST_CASE("base64: RFC 4648 test vectors, standard alphabet, padded") {
  CHECK(base64Encode("") == "");
  CHECK(base64Encode("f") == "Zg==");
  CHECK(base64Encode("fo") == "Zm8=");
  CHECK(base64Encode("foo") == "Zm9v");
  CHECK(base64Encode("foob") == "Zm9vYg==");
  CHECK(base64Encode("fooba") == "Zm9vYmE=");
  CHECK(base64Encode("foobar") == "Zm9vYmFy");
  CHECK(base64Encode("hello") == "aGVsbG8=");
}

TEST_CASE("base64: URL-safe alphabet without padding") {
  CHECK(base64UrlEncode("") == "");
  CHECK(base64UrlEncode("f") == "Zg");
  CHECK(base64UrlEncode("fo") == "Zm8");
  CHECK(base64UrlEncode("foo") == "Zm9v");
  // 0xfb 0xff is where the alphabets differ: 62 and 63.
  CHECK(base64Encode("\xfb\xff") == "+/8=");
  CHECK(base64UrlEncode("\xfb\xff") == "-_8");
}

TEST_CASE("base64: decoding takes either alphabet, with or without padding") {
  CHECK(base64Decode("") == "");
  CHECK(base64Decode("Zm9vYmFy") == "foobar");
  CHECK(base64Decode("Zm9vYg==") == "foob");
  CHECK(base64Decode("Zm9vYg") == "foob");
  CHECK(base64Decode("+/8=") == "\xfb\xff");
  CHECK(base64Decode("-_8") == "\xfb\xff");
  // White space is skipped (PEM-style line breaks, YAML folding).
  CHECK(base64Decode("aGVs\nbG8") == "hello");
  CHECK(base64Decode(" aGVs\r\n\tbG8= ") == "hello");
}

TEST_CASE("base64: malformed input is refused") {
  CHECK_FALSE(base64Decode("a").has_value());      // a dangling character
  CHECK_FALSE(base64Decode("Zm9vY").has_value());  // the same after a whole group
  CHECK_FALSE(base64Decode("a===").has_value());
  CHECK_FALSE(base64Decode("a$b").has_value());     // not in either alphabet
  CHECK_FALSE(base64Decode("Zg==Zg").has_value());  // data after padding
  CHECK_FALSE(base64Decode(std::string("Zg\0=", 4)).has_value());
}

TEST_CASE("base64: every byte value survives a round trip through both alphabets") {
  std::string all;
  for (int i = 0; i < 256; ++i) {
    all.push_back(static_cast<char>(i));
  }
  for (size_t len = 0; len <= all.size(); len += 37) {
    std::string data = all.substr(all.size() - len);
    CHECK(base64Decode(base64Encode(data)) == data);
    CHECK(base64Decode(base64UrlEncode(data)) == data);
  }
}

TEST_CASE("base64: the strict form reads as Go's encoding/json reads []byte") {
  CHECK(base64DecodeStrict("Zm9vYmFy") == std::optional<std::string>("foobar"));
  CHECK(base64DecodeStrict("Zm9vYg==") == std::optional<std::string>("foob"));
  CHECK(base64DecodeStrict("Zm9v\r\nYmFy") == std::optional<std::string>("foobar"));
  CHECK(base64DecodeStrict("") == std::optional<std::string>(""));
  CHECK_FALSE(base64DecodeStrict("Zm9vYg"));     // padding required
  CHECK_FALSE(base64DecodeStrict("Zm9v YmFy"));  // a space is not skipped
  CHECK_FALSE(base64DecodeStrict("Zm9v\tYmFy"));
  CHECK_FALSE(base64DecodeStrict("-_-_"));       // URL-safe alphabet refused
  // The lenient form (kubeconfig data) takes all of these.
  CHECK(base64Decode("Zm9v YmFy") == std::optional<std::string>("foobar"));
  CHECK(base64Decode("Zm9vYg") == std::optional<std::string>("foob"));
}

}  // namespace
}  // namespace ccm

TEST_CASE("base64UrlDecodeStrict reads as Go's RawURLEncoding and reports the bad byte") {
  CHECK(ccm::base64UrlDecodeStrict("-_8").value() == "\xfb\xff");
  CHECK(ccm::base64UrlDecodeStrict("Y\r\nQ").value() == "a");  // CR and LF are skipped
  size_t bad = 99;
  CHECK_FALSE(ccm::base64UrlDecodeStrict("YQ==", &bad).has_value());
  CHECK(bad == 2);
  CHECK_FALSE(ccm::base64UrlDecodeStrict("ab+c", &bad).has_value());
  CHECK(bad == 2);
  CHECK_FALSE(ccm::base64UrlDecodeStrict("YWJjZ", &bad).has_value());  // a lone last symbol
  CHECK(bad == 4);
  CHECK_FALSE(ccm::base64UrlDecodeStrict("YQ ", &bad).has_value());
  CHECK(bad == 2);
}
