// Unit tests of the engine's entry points: Content-Type mapping and the 415 answer, the detail
// overload, allocator ownership, big objects, and a seeded random sweep checking that every
// failed patch leaves its target byte-for-byte untouched and every success yields an object.
#include <doctest/doctest.h>

#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "test/kubesim/patch/patch_test_util.hpp"

namespace ccm::kubesim {
namespace {

using testing::canonical;
using testing::toJson;

TEST_SUITE("kubesim-patch api") {
  TEST_CASE("Content-Type to patch type, as the apiserver reads the header") {
    CHECK(patchTypeForContentType("application/json-patch+json") == PatchType::Json);
    CHECK(patchTypeForContentType("application/merge-patch+json") == PatchType::Merge);
    CHECK(patchTypeForContentType("application/strategic-merge-patch+json") ==
          PatchType::Strategic);
    CHECK(patchTypeForContentType("application/merge-patch+json; charset=utf-8") ==
          PatchType::Merge);
    CHECK(patchTypeForContentType("application/merge-patch+json;charset=utf-8") ==
          PatchType::Merge);
    // No trimming and no case folding; a leading ';' is not a parameter separator.
    CHECK_FALSE(patchTypeForContentType("application/merge-patch+json ; charset=utf-8"));
    CHECK_FALSE(patchTypeForContentType("Application/Merge-Patch+JSON"));
    CHECK_FALSE(patchTypeForContentType(";application/merge-patch+json"));
    CHECK_FALSE(patchTypeForContentType("application/json"));
    CHECK_FALSE(patchTypeForContentType(""));
    CHECK_FALSE(patchTypeForContentType("application/apply-patch+yaml"));
    CHECK(isApplyPatchContentType("application/apply-patch+yaml"));
    CHECK(isApplyPatchContentType("application/apply-patch+yaml; charset=utf-8"));
    CHECK_FALSE(isApplyPatchContentType("application/json-patch+json"));
  }

  TEST_CASE("415 for other content types") {
    PatchError error = unsupportedPatchMediaType();
    CHECK_EQ(error.code, 415);
    CHECK_EQ(error.reason, "UnsupportedMediaType");
    CHECK_EQ(error.message,
             "the body of the request was in an unknown format - accepted media types include: "
             "application/json-patch+json, application/merge-patch+json, "
             "application/strategic-merge-patch+json, application/apply-patch+yaml");
  }

  TEST_CASE("the detail overload explains what the client-visible message hides") {
    rapidjson::Document document;
    document.Parse(R"({"a":1})");
    std::string detail = "untouched";
    auto error = applyPatch(PatchType::Json, "Node", document, document.GetAllocator(),
                            R"([{"op":"test","path":"/a","value":2}])", &detail);
    REQUIRE(error);
    CHECK_EQ(error->message, "the server rejected our request due to an error in our request");
    CHECK_EQ(detail, "testing value /a failed: test failed");
    // Success leaves detail alone; the short overload works the same.
    detail = "untouched";
    CHECK_FALSE(applyPatch(PatchType::Merge, "Node", document, document.GetAllocator(),
                           R"({"b":2})", &detail));
    CHECK_EQ(detail, "untouched");
    CHECK_FALSE(
        applyPatch(PatchType::Strategic, "Node", document, document.GetAllocator(), R"({"c":3})"));
    CHECK_EQ(toJson(document), R"({"a":1,"b":2,"c":3})");
    auto parseError = applyPatch(PatchType::Strategic, "Node", document, document.GetAllocator(),
                                 R"({"c":)", &detail);
    REQUIRE(parseError);
    CHECK(detail.rfind("invalid JSON patch: ", 0) == 0);
  }

  TEST_CASE("a zero written with many digits is zero (a fuzz find in RapidJSON 1.1)") {
    rapidjson::Document document;
    document.Parse(R"({"a":1})");
    auto error = applyPatch(PatchType::Merge, "Widget", document, document.GetAllocator(),
                            R"({"w":0.000000000000000000000000000,"v":-0.00000000000000000000000})");
    REQUIRE_FALSE(error);
    REQUIRE(document["w"].IsNumber());
    CHECK_EQ(document["w"].GetDouble(), 0.0);
    CHECK_EQ(document["v"].GetDouble(), 0.0);
  }

  TEST_CASE("patched values outlive the body and live in the target's allocator") {
    rapidjson::Document document;
    document.Parse(R"({"metadata":{"name":"n1"}})");
    {
      std::string body = R"({"metadata":{"labels":{"a-rather-long-label-key-to-avoid-sso":"v"}}})";
      REQUIRE_FALSE(
          applyPatch(PatchType::Strategic, "Node", document, document.GetAllocator(), body));
      body.assign(body.size(), 'x');  // the engine must not point into the body
    }
    CHECK_EQ(toJson(document),
             R"({"metadata":{"name":"n1","labels":{"a-rather-long-label-key-to-avoid-sso":"v"}}})");
    // A target inside a bigger document, patched with that document's allocator.
    rapidjson::Document store;
    store.Parse(R"({"items":[{"a":1},{"a":2}]})");
    REQUIRE_FALSE(applyPatch(PatchType::Merge, "Widget", store["items"][1], store.GetAllocator(),
                             R"({"a":null,"b":"two"})"));
    CHECK_EQ(toJson(store), R"({"items":[{"a":1},{"b":"two"}]})");
  }

  TEST_CASE("objects bigger than the scratch buffer are backed up and restored") {
    std::string big = R"({"metadata":{"name":"big"},"status":{"images":[)";
    for (int i = 0; i < 2000; ++i) {
      big += i == 0 ? "" : ",";
      big += R"({"names":["registry.example.com/some/rather/long/image/name:)" + std::to_string(i) +
             R"("],"sizeBytes":)" + std::to_string(1000 + i) + "}";
    }
    big += R"(],"conditions":[{"type":"Ready","status":"True"}]}})";
    REQUIRE_GT(big.size(), 64u * 1024u);
    // Changes name and drops the images before the conditions item without a key fails.
    testing::rejected(PatchType::Strategic, "Node", big,
                      R"({"metadata":{"name":"changed"},
                          "status":{"images":null,"conditions":[{"status":"x"}]}})");
    testing::rejected(
        PatchType::Json, "Node", big,
        R"([{"op":"remove","path":"/status/images"},{"op":"test","path":"/x","value":1}])");
    CHECK_EQ(
        testing::applied(PatchType::Strategic, "Node", big, R"({"metadata":{"labels":{"a":"b"}}})")
            .size(),
        canonical(big).size() + std::string(R"(,"labels":{"a":"b"})").size());
  }

  TEST_CASE("nesting: 10000 levels are accepted, deeper bodies are invalid JSON") {
    auto nested = [](size_t depth, std::string_view leaf) {
      std::string out;
      for (size_t i = 0; i < depth; ++i) {
        out += R"({"a":)";
      }
      out += leaf;
      out.append(depth, '}');
      return out;
    };
    // A deep target merged with an equally deep patch recurses all the way down.
    std::string target = nested(10000, "1");
    for (PatchType type : {PatchType::Strategic, PatchType::Merge}) {
      testing::Outcome outcome = testing::run(type, "Widget", target, nested(10000, "2"));
      CHECK_MESSAGE(!outcome.error, testing::describe(outcome));
      CHECK_EQ(outcome.after.size(), target.size());
    }
    testing::Outcome added =
        testing::run(PatchType::Strategic, "Widget", "{}", nested(10000, "null"));
    CHECK_FALSE(added.error);
    PatchError error = testing::rejected(PatchType::Strategic, "Widget", "{}", nested(10001, "1"));
    CHECK_EQ(error.code, 400);
    CHECK_EQ(error.message, "invalid JSON patch");
    std::string deepArray(10001, '[');
    deepArray.append(10001, ']');
    CHECK_EQ(testing::rejected(PatchType::Json, "Widget", "{}", deepArray).code, 400);
    // Brackets inside strings do not count.
    std::string quoted =
        R"([{"op":"add","path":"/s","value":")" + std::string(20000, '[') + R"("}])";
    CHECK_FALSE(testing::run(PatchType::Json, "Widget", "{}", quoted).error);
  }

  TEST_CASE("concurrent patches of separate objects") {
    std::vector<std::thread> threads;
    std::vector<std::string> results(4);
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([t, &results] {
        rapidjson::Document document;
        document.Parse(R"({"status":{"conditions":[{"type":"Ready","status":"False"}]}})");
        for (int i = 0; i < 500; ++i) {
          std::string body = R"({"status":{"conditions":[{"type":"Ready","status":")" +
                             std::to_string(t * 1000 + i) + R"("}]}})";
          if (applyPatch(PatchType::Strategic, "Node", document, document.GetAllocator(), body)) {
            return;
          }
        }
        results[static_cast<size_t>(t)] = toJson(document);
      });
    }
    for (std::thread& thread : threads) {
      thread.join();
    }
    for (int t = 0; t < 4; ++t) {
      CHECK_EQ(results[static_cast<size_t>(t)],
               R"({"status":{"conditions":[{"type":"Ready","status":")" +
                   std::to_string(t * 1000 + 499) + R"("}]}})");
    }
  }

  TEST_CASE("random patches: failures leave the target untouched, successes give an object") {
    constexpr const char* kTargets[] = {
        R"({"metadata":{"name":"n1","labels":{"a":"1"},"finalizers":["f1","f2"],
            "ownerReferences":[{"uid":"u1","name":"o"}]},
            "spec":{"podCIDRs":["10.0.0.0/24"],"taints":[{"key":"k","effect":"NoSchedule"}]},
            "status":{"conditions":[{"type":"Ready","status":"True"},{"type":"DiskPressure","status":"False"}],
                      "addresses":[{"type":"InternalIP","address":"10.0.0.1"},{"type":"Hostname","address":"n1"}]}})",
        R"({"metadata":{"name":"s"},"spec":{"ports":[{"port":80},{"port":443,"name":"https"}],
            "selector":{"app":"x"}},"status":{"loadBalancer":{"ingress":[{"ip":"1.2.3.4"}]}}})",
        R"({"metadata":{},"spec":{"containers":[{"name":"a","env":[{"name":"X","value":"1"}]}]}})",
    };
    constexpr const char* kKinds[] = {"Node", "Service", "Pod", "Widget"};
    constexpr const char* kKeys[] = {"metadata",
                                     "spec",
                                     "status",
                                     "labels",
                                     "finalizers",
                                     "ownerReferences",
                                     "podCIDRs",
                                     "taints",
                                     "conditions",
                                     "addresses",
                                     "ports",
                                     "containers",
                                     "env",
                                     "selector",
                                     "type",
                                     "status",
                                     "uid",
                                     "port",
                                     "name",
                                     "a",
                                     "$patch",
                                     "$retainKeys",
                                     "$setElementOrder/conditions",
                                     "$setElementOrder/finalizers",
                                     "$deleteFromPrimitiveList/finalizers",
                                     "$deleteFromPrimitiveList/podCIDRs"};
    constexpr const char* kScalars[] = {
        R"("Ready")", R"("DiskPressure")", R"("f1")",     R"("x")",     "80",      "1.5", "true",
        "null",       R"("replace")",      R"("delete")", R"("merge")", R"("u1")", "[]",  "{}"};
    constexpr const char* kPaths[] = {"",
                                      "/metadata",
                                      "/metadata/labels/a",
                                      "/metadata/finalizers/0",
                                      "/metadata/finalizers/-",
                                      "/spec",
                                      "/spec/taints/0/key",
                                      "/status/conditions/1",
                                      "/status/conditions/-1",
                                      "/nope/x",
                                      "/metadata/labels/b~1c",
                                      "/status/addresses/9",
                                      "/a"};
    constexpr const char* kOps[] = {"add", "remove", "replace", "move", "copy", "test", "bogus"};

    std::mt19937 random(20260724);
    auto pick = [&random](auto& array) -> const char* {
      std::uniform_int_distribution<size_t> index(0, std::size(array) - 1);
      return array[index(random)];
    };
    auto chance = [&random](int percent) {
      return std::uniform_int_distribution<int>(0, 99)(random) < percent;
    };
    std::function<std::string(int)> value = [&](int depth) -> std::string {
      int roll = std::uniform_int_distribution<int>(0, 9)(random);
      if (depth <= 0 || roll < 4) {
        return pick(kScalars);
      }
      if (roll < 7) {
        std::string out = "{";
        int members = std::uniform_int_distribution<int>(0, 3)(random);
        for (int i = 0; i < members; ++i) {
          out += i == 0 ? "\"" : ",\"";
          out += pick(kKeys);
          out += "\":" + value(depth - 1);
        }
        return out + "}";
      }
      std::string out = "[";
      int elements = std::uniform_int_distribution<int>(0, 3)(random);
      for (int i = 0; i < elements; ++i) {
        out += i == 0 ? "" : ",";
        if (chance(50)) {
          out += std::string(R"({"type":)") + pick(kScalars) + "," + R"("status":)" +
                 value(depth - 2) + "}";
        } else {
          out += value(depth - 1);
        }
      }
      return out + "]";
    };

    int failures = 0;
    int successes = 0;
    for (int round = 0; round < 4000; ++round) {
      std::string target = pick(kTargets);
      std::string kind = pick(kKinds);
      PatchType type = static_cast<PatchType>(round % 3);
      std::string body;
      if (type == PatchType::Json) {
        body = "[";
        int count = std::uniform_int_distribution<int>(1, 4)(random);
        for (int i = 0; i < count; ++i) {
          body += i == 0 ? "" : ",";
          body += std::string(R"({"op":")") + pick(kOps) + R"(","path":")" + pick(kPaths) + "\"";
          if (chance(50)) {
            body += std::string(R"(,"from":")") + pick(kPaths) + "\"";
          }
          if (chance(80)) {
            body += ",\"value\":" + value(3);
          }
          body += "}";
        }
        body += "]";
      } else {
        body = value(5);
        if (chance(80)) {
          body = "{\"" + std::string(pick(kKeys)) + "\":" + body + "}";
        }
      }
      if (chance(3)) {
        body.resize(body.size() / 2);  // truncated
      }
      CAPTURE(body);
      CAPTURE(kind);
      testing::Outcome outcome = testing::run(type, kind, target, body);
      if (outcome.error) {
        ++failures;
        CHECK_EQ(outcome.after, outcome.before);
        CHECK(outcome.error->code >= 400);
      } else {
        ++successes;
        rapidjson::Document check;
        check.Parse(outcome.after.c_str());
        CHECK_FALSE(check.HasParseError());
        CHECK(check.IsObject());
      }
    }
    MESSAGE("random patches: ", successes, " applied, ", failures, " rejected");
    CHECK_GT(successes, 500);
    CHECK_GT(failures, 500);
  }
}

}  // namespace
}  // namespace ccm::kubesim
