// Answer encodings: JSON → YAML as go-yaml lays it out, gzip negotiation and compression.
#include <doctest/doctest.h>
#include <zlib.h>

#include <string>

#include "kubesim/json_util.hpp"
#include "kubesim/json_yaml.hpp"
#include "kubesim/protobuf_decoder.hpp"
#include "kubesim/protobuf_encoder.hpp"
#include "kubesim/response_encoding.hpp"

namespace ccm::kubesim {
namespace {

std::string gunzip(const std::string& in, size_t expected) {
  z_stream zs{};
  REQUIRE(inflateInit2(&zs, 15 + 16) == Z_OK);
  std::string out(expected + 1024, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = inflate(&zs, Z_FINISH);
  out.resize(out.size() - zs.avail_out);
  inflateEnd(&zs);
  REQUIRE(rc == Z_STREAM_END);
  return out;
}

}  // namespace

TEST_CASE("JSON to YAML: sorted keys, go-yaml's indentation and quoting") {
  auto y = jsonToYaml(
      R"({"metadata":{"name":"n1","resourceVersion":"42","labels":{"b":"x","a":"true"}},)"
      R"("kind":"Node","apiVersion":"v1","spec":{"taints":[{"key":"k","effect":"NoSchedule"}],)"
      R"("podCIDRs":[]},"status":{"capacity":{"cpu":"4"},"daemonEndpoints":{"kubeletEndpoint":)"
      R"({"Port":10250}},"nodeInfo":{},"n":null,"f":1.5,"ok":false,)"
      R"("t":"2026-11-27T08:24:57Z","e":"","s":"- dash","c":"a: b","m":"line1\nline2\n"}})");
  REQUIRE(y);
  CHECK(*y ==
        "apiVersion: v1\n"
        "kind: Node\n"
        "metadata:\n"
        "  labels:\n"
        "    a: \"true\"\n"
        "    b: x\n"
        "  name: n1\n"
        "  resourceVersion: \"42\"\n"
        "spec:\n"
        "  podCIDRs: []\n"
        "  taints:\n"
        "  - effect: NoSchedule\n"
        "    key: k\n"
        "status:\n"
        "  c: 'a: b'\n"
        "  capacity:\n"
        "    cpu: \"4\"\n"
        "  daemonEndpoints:\n"
        "    kubeletEndpoint:\n"
        "      Port: 10250\n"
        "  e: \"\"\n"
        "  f: 1.5\n"
        "  m: |\n"
        "    line1\n"
        "    line2\n"
        "  \"n\": null\n"  // YAML 1.1 reads a plain n as false
        "  nodeInfo: {}\n"
        "  ok: false\n"
        "  s: '- dash'\n"
        "  t: \"2026-11-27T08:24:57Z\"\n");
  CHECK_FALSE(jsonToYaml("{not json"));
}

TEST_CASE("JSON to YAML: digit runs order keys by value") {
  auto y = jsonToYaml(R"({"a10":1,"a9":2,"b":3})");
  REQUIRE(y);
  CHECK(*y == "a9: 2\na10: 1\nb: 3\n");
}

TEST_CASE("Accept-Encoding: gzip, with q-values") {
  CHECK(acceptsGzip("gzip"));
  CHECK(acceptsGzip("deflate, GZIP;q=0.5"));
  CHECK_FALSE(acceptsGzip("gzip;q=0"));
  CHECK_FALSE(acceptsGzip("identity"));
  CHECK_FALSE(acceptsGzip(""));
}

TEST_CASE("answers over 128 KiB are compressed, smaller ones and streams are not") {
  HttpResponse big;
  big.body = std::string(kGzipThresholdBytes + 1, 'x');
  std::string original = big.body;
  REQUIRE(compressResponse(big, "gzip"));
  CHECK(big.body.size() < original.size());
  CHECK(gunzip(big.body, original.size()) == original);
  bool encoded = false;
  for (const auto& [k, v] : big.headers) {
    encoded = encoded || (k == "Content-Encoding" && v == "gzip");
  }
  CHECK(encoded);

  HttpResponse at_threshold;
  at_threshold.body = std::string(kGzipThresholdBytes, 'x');
  CHECK_FALSE(compressResponse(at_threshold, "gzip"));
  HttpResponse not_accepted;
  not_accepted.body = original;
  CHECK_FALSE(compressResponse(not_accepted, "br"));
}

// (Written in field-number order, maps sorted, as the encoder writes them.)
TEST_CASE("protobuf answers decode back to the same object") {
  const std::string node =
      R"({"kind":"Node","apiVersion":"v1","metadata":{"name":"n1","uid":"u-1",)"
      R"("resourceVersion":"7","creationTimestamp":"2026-11-27T08:24:57Z",)"
      R"("labels":{"a":"1","b":"2"}},"spec":{"providerID":"fake://n1","taints":[{"key":"k",)"
      R"("value":"v","effect":"NoSchedule"}],"podCIDRs":["10.0.0.0/24"]},)"
      R"("status":{"capacity":{"cpu":"4","memory":"1Gi"},"conditions":[{"type":"Ready",)"
      R"("status":"True","lastHeartbeatTime":"2026-11-27T08:25:00Z","reason":"R"}],)"
      R"("addresses":[{"type":"InternalIP","address":"10.1.2.3"}],"daemonEndpoints":)"
      R"({"kubeletEndpoint":{"Port":10250}},"nodeInfo":{"kubeletVersion":"v1.32.0"},)"
      R"("images":[{"names":["a:1"],"sizeBytes":123456789012}]}})";
  std::string error;
  auto pb = ProtobufEncoder::builtin().encode(node, &error);
  REQUIRE_MESSAGE(pb, error);
  CHECK(pb->substr(0, 4) == std::string("k8s\0", 4));
  JsonDocument back;
  REQUIRE_MESSAGE(ProtobufDecoder::builtin().decode(*pb, "Node", back, &error), error);
  JsonDocument want;
  want.Parse(node.c_str());
  CHECK(toJson(back) == toJson(want));
}

TEST_CASE("protobuf: lists, Status, and what cannot be encoded") {
  std::string error;
  auto list = ProtobufEncoder::builtin().encode(
      R"({"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"9"},)"
      R"("items":[{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"},)"
      R"("data":{"k":"v"}}]})",
      &error);
  REQUIRE_MESSAGE(list, error);
  CHECK(list->find("ConfigMapList") != std::string::npos);
  auto status = ProtobufEncoder::builtin().encode(
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
      R"("reason":"Invalid","code":422,"details":{"causes":[{"field":"spec.x"}]}})",
      &error);
  REQUIRE_MESSAGE(status, error);
  CHECK(status->find("spec.x") != std::string::npos);
  // A field typed `any` that is set has no encoding here.
  CHECK_FALSE(ProtobufEncoder::builtin().encode(
      R"({"kind":"Node","apiVersion":"v1","spec":{"configSource":{"configMap":{}}}})", &error));
  CHECK_FALSE(ProtobufEncoder::builtin().encode(R"({"kind":"Pod","apiVersion":"v1"})", &error));
}

}  // namespace ccm::kubesim
