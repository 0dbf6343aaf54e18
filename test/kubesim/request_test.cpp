// Unit tests: request parsing (URL query, RequestInfo, media types), metadata-only answers,
// fault rules, schema decoding checks, object validation messages, Status rendering, Table age
// format and the Event conversion.
#include <doctest/doctest.h>

#include "kubesim/api_error.hpp"
#include "kubesim/event_conversion.hpp"
#include "kubesim/fault_injector.hpp"
#include "kubesim/json_util.hpp"
#include "kubesim/media_type.hpp"
#include "kubesim/object_validator.hpp"
#include "kubesim/request_info.hpp"
#include "kubesim/schema.hpp"
#include "kubesim/table_printer.hpp"
#include "kubesim/url_query.hpp"

namespace ccm::kubesim {
namespace {

RequestInfo info(std::string_view method, std::string_view target) {
  auto q = UrlQuery::parse(target);
  REQUIRE(q.has_value());
  return RequestInfo::parse(method, *q);
}

TEST_CASE("URL queries decode escapes and Go's booleans") {
  auto q = UrlQuery::parse("/api/v1/nodes?labelSelector=a%3Db%2Cc&watch=True&x=1+2&x=3");
  REQUIRE(q.has_value());
  CHECK(q->path() == "/api/v1/nodes");
  CHECK(q->get("labelSelector") == "a=b,c");
  CHECK(q->getBool("watch"));
  CHECK(q->get("x") == "1 2");
  CHECK(q->getAll("x").size() == 2);
  CHECK_FALSE(q->getBool("missing"));
  CHECK_FALSE(UrlQuery::parse("/a?b=%zz").has_value());
}

TEST_CASE("request info like the API server's RequestInfoFactory") {
  auto i = info("GET", "/api/v1/nodes");
  CHECK(i.resource_request);
  CHECK((i.verb == "list" && i.resource == "nodes" && i.ns.empty()));
  i = info("GET", "/api/v1/nodes?watch=1");
  CHECK(i.verb == "watch");
  i = info("GET", "/api/v1/nodes?watch=1&fieldSelector=metadata.name%3Dn1");
  CHECK(i.name == "n1");
  i = info("PATCH", "/api/v1/nodes/n1/status");
  CHECK((i.verb == "patch" && i.name == "n1" && i.subresource == "status"));
  i = info("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases");
  CHECK((i.verb == "create" && i.api_group == "coordination.k8s.io" && i.ns == "kube-system" &&
         i.resource == "leases"));
  i = info("DELETE", "/api/v1/namespaces/default/services");
  CHECK(i.verb == "deletecollection");
  i = info("GET", "/api/v1/namespaces/foo");
  CHECK((i.resource == "namespaces" && i.name == "foo" && i.ns == "foo"));
  i = info("PUT", "/api/v1/namespaces/foo/finalize");
  CHECK((i.resource == "namespaces" && i.subresource == "finalize"));
  i = info("POST", "/api/v1/namespaces/kube-system/serviceaccounts/ccm/token");
  CHECK((i.resource == "serviceaccounts" && i.name == "ccm" && i.subresource == "token"));
  i = info("GET", "/apis/events.k8s.io/v1");
  CHECK_FALSE(i.resource_request);
  i = info("GET", "/healthz");
  CHECK((!i.resource_request && i.verb == "get"));
}

TEST_CASE("output negotiation") {
  CHECK(negotiateOutput("", true) == OutputFormat::Json);
  CHECK(negotiateOutput("application/json, */*", true) == OutputFormat::Json);
  CHECK(negotiateOutput("application/vnd.kubernetes.protobuf,application/json", true) ==
        OutputFormat::Json);
  CHECK(negotiateOutput(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;"
            "g=meta.k8s.io,application/json",
            true) == OutputFormat::Table);
  CHECK(negotiateOutput("application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
                        false) == OutputFormat::Json);
  CHECK(negotiateOutput("application/vnd.kubernetes.protobuf", true) ==
        OutputFormat::NotAcceptable);
  CHECK(negotiateOutput("text/html", true) == OutputFormat::NotAcceptable);
  CHECK(parseMediaType("Application/JSON; charset=UTF-8").essence() == "application/json");
  // Metadata only: "as=PartialObjectMetadata" for objects and watch events, "...List" for lists.
  const char* meta =
      "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
  const char* meta_list =
      "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
  CHECK(negotiateOutput(meta, false) == OutputFormat::PartialObjectMetadata);
  CHECK(negotiateOutput(meta, true) == OutputFormat::PartialObjectMetadata);
  CHECK(negotiateOutput(meta, true, true) == OutputFormat::Json);
  CHECK(negotiateOutput(meta_list, true, true) == OutputFormat::PartialObjectMetadata);
  CHECK(negotiateOutput(meta_list, true, false) == OutputFormat::Json);
  CHECK(negotiateOutput("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1",
                        false) == OutputFormat::PartialObjectMetadata);
  CHECK(negotiateOutput("application/json;as=PartialObjectMetadata;g=example.com;v=v1", false) ==
        OutputFormat::NotAcceptable);
}

TEST_CASE("metadata-only answers are cut from the stored text") {
  std::string node =
      R"({"kind":"Node","apiVersion":"v1","metadata":{"name":"n1","labels":{"a":"}{\"]"},)"
      R"("resourceVersion":"7"},"spec":{"taints":[{"key":"k"}]},"status":{"x":[1,2,{"y":null}]}})";
  CHECK(rawTopLevelMember(node, "metadata") ==
        R"({"name":"n1","labels":{"a":"}{\"]"},"resourceVersion":"7"})");
  CHECK(rawTopLevelMember(node, "kind") == R"("Node")");
  CHECK(rawTopLevelMember(node, "status") == R"({"x":[1,2,{"y":null}]})");
  CHECK(rawTopLevelMember(node, "name").empty());  // nested members are not top level
  CHECK(rawTopLevelMember(R"( { "n" : 12 , "metadata" : { } } )", "n") == "12");
  CHECK(rawTopLevelMember(R"( { "n" : 12 , "metadata" : { } } )", "metadata") == "{ }");
  CHECK(rawTopLevelMember(R"({"metadata":{"name":"cut)", "metadata").empty());
  CHECK(rawTopLevelMember("[1]", "metadata").empty());
  CHECK(partialObjectMetadata(node) ==
        R"({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":)"
        R"({"name":"n1","labels":{"a":"}{\"]"},"resourceVersion":"7"}})");
  CHECK(partialObjectMetadata(R"({"kind":"X"})") ==
        R"({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{}})");
}

TEST_CASE("fault rules match, count down and parse") {
  CHECK(FaultInjector::globMatch("/api/v1/nodes/*", "/api/v1/nodes/n1/status"));
  CHECK(FaultInjector::globMatch("*", "/anything"));
  CHECK_FALSE(FaultInjector::globMatch("/api/v1/nodes", "/api/v1/nodes/n1"));
  std::string err;
  auto rule = FaultRule::fromText("verb=patch,path=/api/v1/nodes/*,status=503,count=2,retryAfter=1",
                                  &err);
  REQUIRE(rule.has_value());
  FaultInjector faults;
  faults.add(*rule);
  auto patch = info("PATCH", "/api/v1/nodes/n1");
  auto get = info("GET", "/api/v1/nodes/n1");
  CHECK_FALSE(faults.evaluate("GET", get).response.has_value());
  auto d1 = faults.evaluate("PATCH", patch);
  REQUIRE(d1.response.has_value());
  CHECK(d1.response->status == 503);
  CHECK(faults.evaluate("PATCH", patch).response.has_value());
  CHECK_FALSE(faults.evaluate("PATCH", patch).response.has_value());
  CHECK(faults.rules()[0].fired == 2);
  CHECK_FALSE(FaultRule::fromText("bogus=1", &err).has_value());
  CHECK_FALSE(FaultRule::fromText("status=abc", &err).has_value());
  auto drop = FaultRule::fromText("action=drop,latency=5ms", &err);
  REQUIRE(drop.has_value());
  faults.add(*drop);
  auto d = faults.evaluate("GET", get);
  CHECK(d.drop);
  CHECK(d.delay.count() == 5);
}

TEST_CASE("schema: unknown fields, Go type errors, pruning") {
  const Schema& s = Schema::builtin();
  JsonDocument doc;
  doc.Parse(R"({"metadata":{"name":"n","bogus":1},"spec":{"taints":[{"key":"k","x":2}],"unschedulable":null},"extra":true})");
  auto issues = s.check("Node", doc, doc.GetAllocator(), true);
  CHECK_FALSE(issues.type_error.has_value());
  CHECK(issues.unknown_fields ==
        std::vector<std::string>{"metadata.bogus", "spec.taints[0].x", "extra"});
  CHECK(toJson(doc) == R"({"metadata":{"name":"n"},"spec":{"taints":[{"key":"k"}]}})");

  JsonDocument bad;
  bad.Parse(R"({"spec":{"unschedulable":"yes"}})");
  issues = s.check("Node", bad, bad.GetAllocator(), true);
  REQUIRE(issues.type_error.has_value());
  CHECK(*issues.type_error ==
        "json: cannot unmarshal string into Go struct field NodeSpec.spec.unschedulable of type bool");
  JsonDocument num;
  num.Parse(R"({"spec":{"leaseDurationSeconds":1.5}})");
  issues = s.check("Lease", num, num.GetAllocator(), true);
  REQUIRE(issues.type_error.has_value());
  CHECK(issues.type_error->find("cannot unmarshal number 1.5") != std::string::npos);
  JsonDocument qty;
  qty.Parse(R"({"status":{"capacity":{"cpu":"four"}}})");
  CHECK(s.check("Node", qty, qty.GetAllocator(), true).type_error.has_value());
  JsonDocument ok;
  ok.Parse(R"({"status":{"capacity":{"cpu":"4","memory":"16Gi","x":100}},"spec":{"podCIDR":"10.0.0.0/24"}})");
  CHECK_FALSE(s.check("Node", ok, ok.GetAllocator(), true).type_error.has_value());
}

TEST_CASE("validation messages and Status rendering") {
  const ResourceType& nodes = *ResourceRegistry::builtin().find("", "v1", "nodes");
  JsonDocument doc;
  doc.Parse(R"({"metadata":{"name":"n1"},"spec":{"taints":[{"key":"a","effect":"NoSchedule"},{"key":"a","effect":"NoSchedule"},{"key":"b","effect":""}]}})");
  auto errs = ObjectValidator::validateCreate(nodes, doc);
  REQUIRE(errs.size() == 2);
  ApiError e = ApiError::invalid("", "Node", "n1", errs);
  CHECK(e.code() == 422);
  CHECK(e.message() ==
        "Node \"n1\" is invalid: [spec.taints[1]: Duplicate value: core.Taint{Key:\"a\", "
        "Value:\"\", Effect:\"NoSchedule\", TimeAdded:(*v1.Time)(nil)}: taints must be unique "
        "by key and effect pair, spec.taints[2].effect: Required value]");
  JsonDocument status;
  status.Parse(e.toJson().c_str());
  CHECK(stringMember(status, "reason") == "Invalid");
  CHECK((*memberPath(status, {"details", "causes"}))[0]["reason"] == "FieldValueDuplicate");

  ApiError nf = ApiError::notFound("coordination.k8s.io", "leases", "x");
  CHECK(nf.message() == "leases.coordination.k8s.io \"x\" not found");
  CHECK(nf.toJson() ==
        R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"leases.coordination.k8s.io \"x\" not found","reason":"NotFound","details":{"name":"x","group":"coordination.k8s.io","kind":"leases"},"code":404})");
  ApiError unknown(500, "", "weird");
  CHECK(unknown.toJson().find("\"reason\"") == std::string::npos);
}

TEST_CASE("table ages and event conversion") {
  using std::chrono::seconds;
  CHECK(TablePrinter::humanDuration(seconds(5)) == "5s");
  CHECK(TablePrinter::humanDuration(seconds(150)) == "2m30s");
  CHECK(TablePrinter::humanDuration(seconds(600)) == "10m");
  CHECK(TablePrinter::humanDuration(seconds(3 * 3600 + 60 * 5)) == "3h5m");
  CHECK(TablePrinter::humanDuration(seconds(30 * 3600)) == "30h");
  CHECK(TablePrinter::humanDuration(seconds(3 * 86400 + 3600)) == "3d1h");
  CHECK(TablePrinter::humanDuration(seconds(40 * 86400)) == "40d");

  JsonDocument core;
  core.Parse(R"({"kind":"Event","apiVersion":"v1","metadata":{"name":"e"},"involvedObject":{"kind":"Node","name":"n"},"message":"m","source":{"component":"c"},"count":3,"reportingComponent":"rc"})");
  JsonDocument v1;
  coreEventToV1(core, v1, v1.GetAllocator());
  CHECK(stringMember(v1, "apiVersion") == "events.k8s.io/v1");
  CHECK(stringMember(v1, "note") == "m");
  CHECK(stringMember(v1, "reportingController") == "rc");
  CHECK((*member(v1, "deprecatedCount")).GetInt() == 3);
  CHECK(member(v1, "eventTime")->IsNull());
  JsonDocument back;
  v1EventToCore(v1, back, back.GetAllocator());
  CHECK(stringMember(back, "message") == "m");
  CHECK(stringMember(*member(back, "involvedObject"), "name") == "n");
}

}  // namespace
}  // namespace ccm::kubesim
