// Answer encodings: JSON → YAML as go-yaml lays it out, gzip negotiation and compression.
#include <doctest/doctest.h>
#include <zlib.h>

#include <string>

#include "kubesim/json_yaml.hpp"
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

}  // namespace ccm::kubesim
