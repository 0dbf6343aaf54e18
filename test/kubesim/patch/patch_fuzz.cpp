// The fuzz driver (see patch_fuzz.hpp). Built with KUBESIM_PATCH_FUZZ_MAIN it is a libFuzzer
// target: clang++ -fsanitize=fuzzer,address (meson target kubesim_patch_fuzz under clang).
#include "test/kubesim/patch/patch_fuzz.hpp"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdlib>
#include <string>
#include <string_view>

#include "kubesim/patch/patch.hpp"

namespace ccm::kubesim {
namespace {

constexpr const char* kTarget = R"({"kind":"Node","apiVersion":"v1",
  "metadata":{"name":"n1","labels":{"a":"1"},"finalizers":["f1","f2"],
    "ownerReferences":[{"uid":"u1","name":"o"},{"uid":"u2","name":"p"}]},
  "spec":{"podCIDRs":["10.0.0.0/24"],"taints":[{"key":"k","effect":"NoSchedule"}],
    "ports":[{"port":80},{"port":443}],"containers":[{"name":"c","env":[{"name":"E","value":"1"}]}]},
  "status":{"conditions":[{"type":"Ready","status":"True"},{"type":"DiskPressure","status":"False"}],
    "addresses":[{"type":"InternalIP","address":"10.0.0.1"},{"type":"InternalIP","address":"10.0.0.2"},
                 {"type":"Hostname","address":"n1"}],
    "images":[{"names":["a"]}]}})";

constexpr const char* kKinds[] = {"Node", "Service", "Pod", "Widget"};

std::string serialise(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return {buffer.GetString(), buffer.GetSize()};
}

}  // namespace

int fuzzPatchOnce(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  auto type = static_cast<PatchType>(data[0] % 3);
  const char* kind = kKinds[(data[0] / 3) % 4];
  std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);

  rapidjson::Document document;
  document.Parse(kTarget);
  std::string before = serialise(document);
  std::string detail;
  auto error = applyPatch(type, kind, document, document.GetAllocator(), body, &detail);
  if (error) {
    if (serialise(document) != before || error->code < 400 || error->code > 599) {
      std::abort();
    }
  } else if (!document.IsObject()) {
    std::abort();
  }
  return 0;
}

}  // namespace ccm::kubesim

#ifdef KUBESIM_PATCH_FUZZ_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ccm::kubesim::fuzzPatchOnce(data, size);
}
#endif
