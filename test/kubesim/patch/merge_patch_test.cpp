// Unit tests of application/merge-patch+json: the RFC 7386 appendix A examples (those whose
// target is an object, as every Kubernetes object is), kubectl label/annotate shapes, and the
// apiserver's answers to patches that are not objects.
#include <doctest/doctest.h>

#include <string>

#include "test/kubesim/patch/patch_test_util.hpp"

namespace ccm::kubesim {
namespace {

using testing::canonical;
using testing::merge;
using testing::rejected;

PatchError mergeRejected(std::string_view target, std::string_view body) {
  return rejected(PatchType::Merge, "Node", target, body);
}

TEST_SUITE("kubesim-patch merge patch") {
  TEST_CASE("RFC 7386 appendix A") {
    CHECK_EQ(merge(R"({"a":"b"})", R"({"a":"c"})"), canonical(R"({"a":"c"})"));
    CHECK_EQ(merge(R"({"a":"b"})", R"({"b":"c"})"), canonical(R"({"a":"b","b":"c"})"));
    CHECK_EQ(merge(R"({"a":"b"})", R"({"a":null})"), canonical(R"({})"));
    CHECK_EQ(merge(R"({"a":"b","b":"c"})", R"({"a":null})"), canonical(R"({"b":"c"})"));
    CHECK_EQ(merge(R"({"a":["b"]})", R"({"a":"c"})"), canonical(R"({"a":"c"})"));
    CHECK_EQ(merge(R"({"a":"c"})", R"({"a":["b"]})"), canonical(R"({"a":["b"]})"));
    CHECK_EQ(merge(R"({"a":{"b":"c"}})", R"({"a":{"b":"d","c":null}})"),
             canonical(R"({"a":{"b":"d"}})"));
    CHECK_EQ(merge(R"({"a":[{"b":"c"}]})", R"({"a":[1]})"), canonical(R"({"a":[1]})"));
    CHECK_EQ(merge(R"({"e":null})", R"({"a":1})"), canonical(R"({"e":null,"a":1})"));
    CHECK_EQ(merge(R"({"x":[1,2]})", R"({"x":{"a":"b","c":null}})"),
             canonical(R"({"x":{"a":"b"}})"));
    CHECK_EQ(merge(R"({})", R"({"a":{"bb":{"ccc":null}}})"), canonical(R"({"a":{"bb":{}}})"));
  }

  TEST_CASE("arrays are replaced wholesale, merge keys or not") {
    CHECK_EQ(
        merge(R"({"metadata":{"finalizers":["a","b"]}})", R"({"metadata":{"finalizers":["c"]}})"),
        canonical(R"({"metadata":{"finalizers":["c"]}})"));
    CHECK_EQ(merge(R"({"status":{"conditions":[{"type":"Ready","status":"True"},
                                                  {"type":"DiskPressure","status":"False"}]}})",
                   R"({"status":{"conditions":[{"type":"Ready","status":"False"}]}})"),
             canonical(R"({"status":{"conditions":[{"type":"Ready","status":"False"}]}})"));
    // Null array elements are values; null object fields inside new values are pruned.
    CHECK_EQ(merge(R"({})", R"({"a":[null,{"b":null,"c":1}]})"),
             canonical(R"({"a":[null,{"c":1}]})"));
  }

  TEST_CASE("kubectl label and annotate") {
    CHECK_EQ(merge(R"({"metadata":{"name":"n1","labels":{"x":"1"}}})",
                   R"({"metadata":{"labels":{"a":"b"}}})"),
             canonical(R"({"metadata":{"name":"n1","labels":{"x":"1","a":"b"}}})"));
    CHECK_EQ(merge(R"({"metadata":{"name":"n1"}})", R"({"metadata":{"labels":{"a":"b"}}})"),
             canonical(R"({"metadata":{"name":"n1","labels":{"a":"b"}}})"));
    CHECK_EQ(merge(R"({"metadata":{"annotations":{"x":"1","y":"2"}}})",
                   R"({"metadata":{"annotations":{"x":null}}})"),
             canonical(R"({"metadata":{"annotations":{"y":"2"}}})"));
    // Removing a key that is not there is fine; an empty labels map is omitted, as the typed
    // round trip of a real server omits it.
    CHECK_EQ(merge(R"({"metadata":{}})", R"({"metadata":{"labels":{"gone":null}}})"),
             canonical(R"({"metadata":{}})"));
    CHECK_EQ(merge(R"({"metadata":{"labels":{"a":"1"}}})", R"({"metadata":{"labels":{"a":null}}})"),
             canonical(R"({"metadata":{}})"));
  }

  TEST_CASE("existing keys keep their position, new keys go last") {
    testing::Outcome outcome =
        testing::run(PatchType::Merge, "Node", R"({"a":1,"b":{"x":1},"c":3})",
                     R"({"b":{"y":2},"a":null,"d":4})");
    REQUIRE_FALSE(outcome.error);
    CHECK_EQ(outcome.after, R"({"b":{"x":1,"y":2},"c":3,"d":4})");
  }

  TEST_CASE("a patch that is not an object answers 400") {
    PatchError error = mergeRejected(R"({"a":"b"})", R"(["c"])");
    CHECK_EQ(error.code, 400);
    CHECK_EQ(error.reason, "BadRequest");
    CHECK_EQ(error.message,
             "error decoding patch: json: cannot unmarshal array into Go value of type "
             "map[string]interface {}");
    CHECK_EQ(mergeRejected(R"({"a":"b"})", R"("bar")").message,
             "error decoding patch: json: cannot unmarshal string into Go value of type "
             "map[string]interface {}");
    CHECK_EQ(mergeRejected(R"({"a":"b"})", "42").code, 400);
    CHECK_EQ(mergeRejected(R"({"a":"b"})", "true").code, 400);
    error = mergeRejected(R"({"a":"b"})", "null");
    CHECK_EQ(error.code, 400);
    CHECK_EQ(error.message, "Invalid JSON Patch");
  }

  TEST_CASE("malformed JSON answers 400 invalid JSON patch") {
    for (const char* body : {"{", "{\"a\":}", "{} {}", "{'a':1}", "{\"a\":1,}"}) {
      CAPTURE(body);
      PatchError error = mergeRejected(R"({"a":"b"})", body);
      CHECK_EQ(error.code, 400);
      CHECK_EQ(error.message, "invalid JSON patch");
    }
  }

  TEST_CASE("an empty patch changes nothing") {
    CHECK_EQ(merge(R"({"a":{"b":[1]}})", "{}"), canonical(R"({"a":{"b":[1]}})"));
  }
}

}  // namespace
}  // namespace ccm::kubesim
