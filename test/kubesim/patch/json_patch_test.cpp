// Unit tests of application/json-patch+json: every RFC 6902 operation (the RFC's appendix A
// examples among them), pointer escapes, array indexes, and the apiserver's error answers.
#include <doctest/doctest.h>

#include <string>

#include "test/kubesim/patch/patch_test_util.hpp"

namespace ccm::kubesim {
namespace {

using testing::canonical;
using testing::jsonPatch;
using testing::rejected;

constexpr const char* kGeneric = "the server rejected our request due to an error in our request";

PatchError jsonRejected(std::string_view target, std::string_view body,
                        std::string* detail = nullptr) {
  return rejected(PatchType::Json, "Node", target, body, detail);
}

TEST_SUITE("kubesim-patch json patch") {
  TEST_CASE("add: object member, nested member, array element, '-' and whole array value") {
    CHECK_EQ(jsonPatch(R"({"foo":"bar"})", R"([{"op":"add","path":"/baz","value":"qux"}])"),
             canonical(R"({"baz":"qux","foo":"bar"})"));
    CHECK_EQ(
        jsonPatch(R"({"foo":["bar","baz"]})", R"([{"op":"add","path":"/foo/1","value":"qux"}])"),
        canonical(R"({"foo":["bar","qux","baz"]})"));
    CHECK_EQ(jsonPatch(R"({"foo":"bar"})",
                       R"([{"op":"add","path":"/child","value":{"grandchild":{}}}])"),
             canonical(R"({"foo":"bar","child":{"grandchild":{}}})"));
    CHECK_EQ(
        jsonPatch(R"({"foo":["bar"]})", R"([{"op":"add","path":"/foo/-","value":["abc","def"]}])"),
        canonical(R"({"foo":["bar",["abc","def"]]})"));
    // Index == length appends; index 0 prepends.
    CHECK_EQ(jsonPatch(R"({"a":[1,2]})", R"([{"op":"add","path":"/a/2","value":3}])"),
             canonical(R"({"a":[1,2,3]})"));
    CHECK_EQ(jsonPatch(R"({"a":[1,2]})", R"([{"op":"add","path":"/a/0","value":0}])"),
             canonical(R"({"a":[0,1,2]})"));
  }

  TEST_CASE("add replaces an existing member in place") {
    testing::Outcome outcome = testing::run(PatchType::Json, "Node", R"({"a":1,"b":2,"c":3})",
                                            R"([{"op":"add","path":"/b","value":"x"}])");
    REQUIRE_FALSE(outcome.error);
    CHECK_EQ(outcome.after, R"({"a":1,"b":"x","c":3})");
  }

  TEST_CASE("add without a value adds null") {
    CHECK_EQ(jsonPatch(R"({"a":1})", R"([{"op":"add","path":"/b"}])"),
             canonical(R"({"a":1,"b":null})"));
  }

  TEST_CASE("remove: object member and array element") {
    CHECK_EQ(jsonPatch(R"({"baz":"qux","foo":"bar"})", R"([{"op":"remove","path":"/baz"}])"),
             canonical(R"({"foo":"bar"})"));
    CHECK_EQ(jsonPatch(R"({"foo":["bar","qux","baz"]})", R"([{"op":"remove","path":"/foo/1"}])"),
             canonical(R"({"foo":["bar","baz"]})"));
  }

  TEST_CASE("replace") {
    CHECK_EQ(jsonPatch(R"({"baz":"qux","foo":"bar"})",
                       R"([{"op":"replace","path":"/baz","value":"boo"}])"),
             canonical(R"({"baz":"boo","foo":"bar"})"));
    CHECK_EQ(jsonPatch(R"({"a":[1,2,3]})", R"([{"op":"replace","path":"/a/1","value":9}])"),
             canonical(R"({"a":[1,9,3]})"));
    CHECK_EQ(jsonPatch(R"({"a":1})", R"([{"op":"replace","path":"/a","value":null}])"),
             canonical(R"({"a":null})"));
  }

  TEST_CASE("replace of a missing member sets it, as the v4 library does") {
    // The real API server answers 200 to a replace of a field the object lacks.
    CHECK_EQ(jsonPatch(R"({"spec":{}})",
                       R"([{"op":"replace","path":"/spec/unschedulable","value":true}])"),
             canonical(R"({"spec":{"unschedulable":true}})"));
    // A missing parent and an array index out of range stay refused.
    CHECK_EQ(jsonRejected(R"({"a":1})", R"([{"op":"replace","path":"/b/c","value":1}])").code,
             422);
    CHECK_EQ(jsonRejected(R"({"a":[1]})", R"([{"op":"replace","path":"/a/5","value":1}])").code,
             422);
  }

  TEST_CASE("replace of the whole document") {
    CHECK_EQ(jsonPatch(R"({"a":1})", R"([{"op":"replace","path":"","value":{"b":2}}])"),
             canonical(R"({"b":2})"));
    // The library ignores a scalar for the whole document; an array cannot become the object.
    CHECK_EQ(jsonPatch(R"({"a":1})", R"([{"op":"replace","path":"","value":5}])"),
             canonical(R"({"a":1})"));
    CHECK_EQ(jsonRejected(R"({"a":1})", R"([{"op":"replace","path":"","value":[1]}])").code, 422);
  }

  TEST_CASE("move: object member and array element") {
    CHECK_EQ(jsonPatch(R"({"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}})",
                       R"([{"op":"move","from":"/foo/waldo","path":"/qux/thud"}])"),
             canonical(R"({"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}})"));
    CHECK_EQ(jsonPatch(R"({"foo":["all","grass","cows","eat"]})",
                       R"([{"op":"move","from":"/foo/1","path":"/foo/3"}])"),
             canonical(R"({"foo":["all","cows","eat","grass"]})"));
  }

  TEST_CASE("copy makes an independent copy") {
    CHECK_EQ(jsonPatch(R"({"a":{"x":[1,2]}})",
                       R"([{"op":"copy","from":"/a","path":"/b"},
                           {"op":"add","path":"/b/x/-","value":3}])"),
             canonical(R"({"a":{"x":[1,2]},"b":{"x":[1,2,3]}})"));
    CHECK_EQ(jsonPatch(R"({"a":[1,2]})", R"([{"op":"copy","from":"/a/0","path":"/a/-"}])"),
             canonical(R"({"a":[1,2,1]})"));
  }

  TEST_CASE("test: equal values pass, object member order does not matter") {
    CHECK_EQ(jsonPatch(R"({"baz":"qux","foo":["a",2,"c"]})",
                       R"([{"op":"test","path":"/baz","value":"qux"},
                           {"op":"test","path":"/foo/1","value":2}])"),
             canonical(R"({"baz":"qux","foo":["a",2,"c"]})"));
    CHECK_EQ(jsonPatch(R"({"o":{"a":1,"b":[true,null]}})",
                       R"([{"op":"test","path":"/o","value":{"b":[true,null],"a":1}}])"),
             canonical(R"({"o":{"a":1,"b":[true,null]}})"));
    // Missing and null both match null (or an absent value).
    CHECK_EQ(jsonPatch(R"({"n":null})", R"([{"op":"test","path":"/n","value":null},
                                            {"op":"test","path":"/missing","value":null},
                                            {"op":"test","path":"/missing"}])"),
             canonical(R"({"n":null})"));
    CHECK_EQ(jsonPatch(R"({"a":1})", R"([{"op":"test","path":"","value":{"a":1}}])"),
             canonical(R"({"a":1})"));
  }

  TEST_CASE("test failures answer 422 with the generic message") {
    std::string detail;
    PatchError error =
        jsonRejected(R"({"baz":"qux"})", R"([{"op":"test","path":"/baz","value":"bar"}])", &detail);
    CHECK_EQ(error.code, 422);
    CHECK_EQ(error.reason, "Invalid");
    CHECK_EQ(error.message, kGeneric);
    CHECK_EQ(detail, "testing value /baz failed: test failed");
    // String "10" is not number 10 (RFC 6902 A.15), 1 is not 1.0, objects must match exactly.
    CHECK_EQ(
        jsonRejected(R"({"/":9,"~1":10})", R"([{"op":"test","path":"/~01","value":"10"}])").code,
        422);
    CHECK_EQ(jsonRejected(R"({"a":1})", R"([{"op":"test","path":"/a","value":1.0}])").code, 422);
    CHECK_EQ(
        jsonRejected(R"({"o":{"a":1}})", R"([{"op":"test","path":"/o","value":{"a":1,"b":2}}])")
            .code,
        422);
    CHECK_EQ(jsonRejected(R"({"a":1})", R"([{"op":"test","path":"/a"}])").code, 422);
    CHECK_EQ(jsonRejected(R"({"a":null})", R"([{"op":"test","path":"/a","value":0}])").code, 422);
  }

  TEST_CASE("pointer escapes: ~1 is '/', ~0 is '~'") {
    CHECK_EQ(jsonPatch(R"({"/":9,"~1":10})", R"([{"op":"test","path":"/~01","value":10}])"),
             canonical(R"({"/":9,"~1":10})"));
    CHECK_EQ(jsonPatch(R"({"metadata":{"annotations":{"a.io/b":"x"}}})",
                       R"([{"op":"replace","path":"/metadata/annotations/a.io~1b","value":"y"},
                           {"op":"add","path":"/metadata/annotations/t~0x","value":"z"}])"),
             canonical(R"({"metadata":{"annotations":{"a.io/b":"y","t~x":"z"}}})"));
    CHECK_EQ(jsonPatch(R"({"":{"":1}})", R"([{"op":"replace","path":"//","value":2}])"),
             canonical(R"({"":{"":2}})"));
  }

  TEST_CASE("negative array indexes count from the end") {
    CHECK_EQ(jsonPatch(R"({"a":[1,2,3]})", R"([{"op":"remove","path":"/a/-1"}])"),
             canonical(R"({"a":[1,2]})"));
    CHECK_EQ(jsonPatch(R"({"a":[1,2,3]})", R"([{"op":"replace","path":"/a/-3","value":0}])"),
             canonical(R"({"a":[0,2,3]})"));
    CHECK_EQ(jsonPatch(R"({"a":[1,2]})", R"([{"op":"add","path":"/a/-1","value":3}])"),
             canonical(R"({"a":[1,2,3]})"));
    CHECK_EQ(jsonRejected(R"({"a":[1,2]})", R"([{"op":"remove","path":"/a/-3"}])").code, 422);
  }

  TEST_CASE("operations that do not apply answer 422 and leave the object untouched") {
    std::string detail;
    // RFC 6902 A.12: adding to a nonexistent target.
    jsonRejected(R"({"foo":"bar"})", R"([{"op":"add","path":"/baz/bat","value":"qux"}])", &detail);
    CHECK_EQ(detail,
             "add operation does not apply: doc is missing path: \"/baz/bat\": missing value");
    // kubectl's classic: adding a label when the object has no labels map.
    CHECK_EQ(jsonRejected(R"({"metadata":{"name":"n1"}})",
                          R"([{"op":"add","path":"/metadata/labels/a","value":"b"}])")
                 .code,
             422);
    CHECK_EQ(jsonRejected(R"({"a":1})", R"([{"op":"remove","path":"/b"}])").code, 422);
    CHECK_EQ(jsonRejected(R"({"a":1})", R"([{"op":"move","from":"/b","path":"/c"}])").code, 422);
    CHECK_EQ(jsonRejected(R"({"a":1})", R"([{"op":"copy","from":"/b","path":"/c"}])").code, 422);
    CHECK_EQ(
        jsonRejected(R"({"a":{"b":1}})", R"([{"op":"move","from":"/a","path":"/a/b/c"}])").code,
        422);
    // Array indexes: past the end, not a number, through a scalar, into null.
    CHECK_EQ(jsonRejected(R"({"a":[1]})", R"([{"op":"add","path":"/a/2","value":1}])").code, 422);
    CHECK_EQ(jsonRejected(R"({"a":[1]})", R"([{"op":"replace","path":"/a/1","value":1}])").code,
             422);
    CHECK_EQ(jsonRejected(R"({"a":[1]})", R"([{"op":"add","path":"/a/x","value":1}])").code, 422);
    CHECK_EQ(jsonRejected(R"({"a":[1]})", R"([{"op":"remove","path":"/a/01x"}])").code, 422);
    CHECK_EQ(jsonRejected(R"({"a":1})", R"([{"op":"add","path":"/a/b","value":1}])").code, 422);
    CHECK_EQ(jsonRejected(R"({"a":null})", R"([{"op":"add","path":"/a/b","value":1}])").code, 422);
    // Paths without a '/': the library finds nothing.
    CHECK_EQ(jsonRejected(R"({"a":1})", R"([{"op":"remove","path":"a"}])").code, 422);
    CHECK_EQ(jsonRejected(R"({"a":1})", R"([{"op":"add","path":"","value":1}])").code, 422);
  }

  TEST_CASE("unknown or missing op and missing path answer 422") {
    std::string detail;
    jsonRejected(R"({"a":1})", R"([{"op":"frob","path":"/a"}])", &detail);
    CHECK_EQ(detail, "Unexpected kind: frob");
    jsonRejected(R"({"a":1})", R"([{"path":"/a"}])", &detail);
    CHECK_EQ(detail, "Unexpected kind: unknown");
    jsonRejected(R"({"a":1})", R"([null])", &detail);
    CHECK_EQ(detail, "Unexpected kind: unknown");
    for (const char* op : {"add", "remove", "replace", "test"}) {
      CAPTURE(op);
      CHECK_EQ(
          jsonRejected(R"({"a":1})", std::string(R"([{"op":")") + op + R"(","value":1}])").code,
          422);
    }
    CHECK_EQ(jsonRejected(R"({"a":1})", R"([{"op":"move","path":"/b"}])").code, 422);
    CHECK_EQ(jsonRejected(R"({"a":1})", R"([{"op":"copy","path":"/b"}])").code, 422);
    CHECK_EQ(jsonRejected(R"({"a":1})", R"([{"op":"move","from":"/a"}])").code, 422);
  }

  TEST_CASE("all or nothing: a late failure undoes the earlier operations") {
    std::string detail;
    PatchError error = jsonRejected(R"({"metadata":{"labels":{"a":"1"}},"spec":{"x":[1,2]}})",
                                    R"([{"op":"add","path":"/metadata/labels/b","value":"2"},
                                        {"op":"remove","path":"/spec/x/0"},
                                        {"op":"move","from":"/spec","path":"/moved"},
                                        {"op":"test","path":"/moved/x/0","value":1}])",
                                    &detail);
    CHECK_EQ(error.code, 422);
    CHECK_EQ(detail, "testing value /moved/x/0 failed: test failed");
  }

  TEST_CASE("the body must decode as a list of operations: 400") {
    PatchError error = jsonRejected(R"({"a":1})", R"({"op":"add","path":"/b","value":1})");
    CHECK_EQ(error.code, 400);
    CHECK_EQ(error.reason, "BadRequest");
    CHECK_EQ(error.message,
             "error decoding patch: json: cannot unmarshal object into Go value of type "
             "[]handlers.jsonPatchOp");
    CHECK_EQ(jsonRejected(R"({"a":1})", R"("add")").message,
             "error decoding patch: json: cannot unmarshal string into Go value of type "
             "[]handlers.jsonPatchOp");
    CHECK_EQ(jsonRejected(R"({"a":1})", R"([1])").message,
             "error decoding patch: json: cannot unmarshal number into Go value of type "
             "handlers.jsonPatchOp");
    CHECK_EQ(jsonRejected(R"({"a":1})", R"([{"op":1,"path":"/a"}])").message,
             "error decoding patch: json: cannot unmarshal number into Go struct field "
             "jsonPatchOp.op of type string");
    CHECK_EQ(jsonRejected(R"({"a":1})", R"([{"op":"remove","path":["a"]}])").message,
             "error decoding patch: json: cannot unmarshal array into Go struct field "
             "jsonPatchOp.path of type string");
    CHECK_EQ(jsonRejected(R"({"a":1})", R"([{"op":"move","from":true,"path":"/b"}])").code, 400);
  }

  TEST_CASE("malformed JSON answers 400 invalid JSON patch") {
    for (const char* body : {"", "[", "[{\"op\":\"add\",}]", "[] x", "nul", "[1,]"}) {
      CAPTURE(body);
      PatchError error = jsonRejected(R"({"a":1})", body);
      CHECK_EQ(error.code, 400);
      CHECK_EQ(error.reason, "BadRequest");
      CHECK_EQ(error.message, "invalid JSON patch");
    }
    std::string withNul("[]\0", 3);
    CHECK_EQ(jsonRejected(R"({"a":1})", withNul).code, 400);
  }

  TEST_CASE("null and an empty list change nothing") {
    CHECK_EQ(jsonPatch(R"({"a":1})", "null"), canonical(R"({"a":1})"));
    CHECK_EQ(jsonPatch(R"({"a":1})", "[]"), canonical(R"({"a":1})"));
  }

  TEST_CASE("more than 10000 operations answer 413") {
    auto opsBody = [](int count) {
      std::string body = "[";
      for (int i = 0; i < count; ++i) {
        body += i == 0 ? "" : ",";
        body += R"({"op":"test","path":"/a","value":1})";
      }
      return body + "]";
    };
    CHECK_EQ(jsonPatch(R"({"a":1})", opsBody(10000)), canonical(R"({"a":1})"));
    PatchError error = jsonRejected(R"({"a":1})", opsBody(10001));
    CHECK_EQ(error.code, 413);
    CHECK_EQ(error.reason, "RequestEntityTooLarge");
    CHECK_EQ(error.message,
             "Request entity too large: The allowed maximum operations in a JSON patch is 10000, "
             "got 10001");
  }
}

}  // namespace
}  // namespace ccm::kubesim
