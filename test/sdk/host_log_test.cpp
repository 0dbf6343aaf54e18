// ccm::sdk::Host::logFields on a 1.0 host (no log_fields service): the fields become klog's
// key="value" text, with quotes, backslashes and newlines escaped so one field cannot forge
// another or a second line.
#include <doctest/doctest.h>

#include <string>

#include "ccm/provider.hpp"

namespace {

// The service is a plain C function pointer: the line it was last given is kept here.
std::string& lastLine() {
  static std::string line;
  return line;
}

void captureLog(ccm_host_handle /*host*/, ccm_log_level /*level*/, ccm_str message) {
  lastLine() = std::string(ccm::sdk::view(message));
}

}  // namespace

TEST_CASE("Host::logFields falls back to escaped key=\"value\" text on a 1.0 host") {
  ccm_host_services services{};
  services.struct_size = sizeof(ccm_host_services);
  services.log = &captureLog;
  ccm_host_info info{};
  info.struct_size = sizeof(ccm_host_info);
  info.abi_major = CCM_ABI_MAJOR;
  info.abi_minor = 0;
  info.services = &services;
  ccm::sdk::Host host;
  host.init(info, 0);

  host.logFields(CCM_LOG_INFO, "request failed",
                 {{"op", "GET /servers"}, {"detail", "say \"hi\"\\\nsecond=\"forged\""}});
  CHECK(lastLine() ==
        "request failed op=\"GET /servers\" detail=\"say \\\"hi\\\"\\\\\\nsecond=\\\"forged\\\"\"");
  CHECK(lastLine().find('\n') == std::string::npos);
}
