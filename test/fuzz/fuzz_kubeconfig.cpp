// Fuzz target: the kubeconfig parser (host/kube/kube_config.cpp, parseKubeconfig). Any text
// must give either a RestConfig or one InvalidArgument line naming the file; never a crash,
// an exception or a hang.
#include <cstdint>
#include <string>

#include "host/kube/config/kube_config.hpp"
#include "host/runtime/base64.hpp"
#include "test/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  if (ccm::fuzz::namesSpecialFiles(text)) {
    return 0;
  }
  // Relative certificate/key/token paths resolve against a directory that does not exist.
  const std::string path = "/nonexistent-ccm-fuzz/kubeconfig";
  ccm::kube::RestConfig config;
  ccm::Status st = ccm::kube::parseKubeconfig(text, path, "", &config);
  if (st.ok()) {
    ccm::fuzz::touch(config.server);
    ccm::fuzz::touch(config.token);
    ccm::fuzz::touch(config.ca_pem);
  } else {
    ccm::fuzz::require(st.code() == ccm::Code::InvalidArgument, "error code is InvalidArgument");
    ccm::fuzz::require(st.message().find(path) != std::string::npos, "error names the file");
  }
  // The base64 decoder used for *-data fields: decode(encode(x)) == x.
  std::string round = ccm::base64Encode(text);
  auto back = ccm::base64Decode(round);
  ccm::fuzz::require(back && *back == text, "base64 round trip");
  ccm::base64Decode(text);
  return 0;
}
