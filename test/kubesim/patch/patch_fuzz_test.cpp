// Runs the fuzz driver over a small seed corpus (the shapes the fuzzer starts from), so the
// driver stays compiled and its invariants hold in the regular test run.
#include "test/kubesim/patch/patch_fuzz.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>

namespace ccm::kubesim {
namespace {

int feed(char selector, const std::string& body) {
  std::string input(1, selector);
  input += body;
  return fuzzPatchOnce(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

TEST_SUITE("kubesim-patch fuzz driver") {
  TEST_CASE("seed corpus") {
    const char* seeds[] = {
        R"([{"op":"add","path":"/metadata/labels/b","value":"2"},{"op":"test","path":"/x","value":1}])",
        R"({"metadata":{"labels":{"a":null}}})",
        R"({"status":{"$setElementOrder/conditions":[{"type":"Ready"}],"conditions":[{"type":"X"}]}})",
        R"({"status":{"addresses":[{"type":"InternalIP","address":"1"},{"$patch":"replace"}]}})",
        R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["f1"],"$setElementOrder/finalizers":["f2"]}})",
        R"({"spec":{"containers":[{"name":"c","env":[{"name":"E","$patch":"delete"}]}]}})",
        R"({"$patch":"replace","metadata":{}})",
        R"({"spec":{"$retainKeys":["taints"],"taints":null}})",
        "",
        "[",
        "null",
        "{}",
        "[]",
    };
    for (const char* seed : seeds) {
      for (char selector = 0; selector < 12; ++selector) {
        CAPTURE(seed);
        CHECK_EQ(feed(selector, seed), 0);
      }
    }
  }
}

}  // namespace
}  // namespace ccm::kubesim
