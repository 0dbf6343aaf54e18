// Fuzz target: the openstack provider's configuration parsers (plugins/openstack/): cloud.conf
// (the gcfg INI dialect, then validation) and clouds.yaml merging. The first byte picks which.
// Besides never crashing: a refused cloud.conf is refused before the provider registers its
// secrets with the host, so the refusal must not quote a password, application-credential
// secret, trustee password or token from the file (the message is logged).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "plugins/openstack/clouds_yaml.hpp"
#include "plugins/openstack/config.hpp"
#include "plugins/openstack/ini_file.hpp"
#include "test/fuzz/fuzz_support.hpp"

namespace {

using namespace ccm::openstack;

bool isSecretKey(const std::string& key) {
  return key == "password" || key == "application-credential-secret" || key == "trustee-password" ||
         key == "token";
}

// The secret values of the file as the INI reader sees them, when they cannot be confused
// with other text of the file (long enough, and not occurring on any other line).
std::vector<std::string> secretsOf(std::string_view text) {
  std::vector<std::string> out;
  auto ini = IniFile::parse(text);
  if (!ini.ok()) {
    return out;
  }
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos)
      nl = text.size();
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  for (const auto& section : ini->sections()) {
    for (const auto& e : section.entries) {
      if (!isSecretKey(e.key) || e.value.size() < 6)
        continue;
      bool elsewhere = false;
      for (size_t i = 0; i < lines.size(); ++i) {
        if (static_cast<int>(i) + 1 == e.line)
          continue;
        if (lines[i].find(e.value) != std::string_view::npos)
          elsewhere = true;
      }
      if (!elsewhere)
        out.push_back(e.value);
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (ccm::fuzz::namesSpecialFiles(text)) {
    return 0;
  }
  if (data[0] & 1) {
    GlobalConfig global;
    Status st = mergeCloudsYaml(std::string(text), "/nonexistent-ccm-fuzz/clouds.yaml", global);
    ccm::fuzz::touch(st.message());
    return 0;
  }
  auto parsed = parseConfig(text);
  if (parsed.ok()) {
    for (const auto& s : configSecrets(parsed->config))
      ccm::fuzz::touch(s);
    for (const auto& w : parsed->warnings) {
      for (const auto& secret : secretsOf(text)) {
        ccm::fuzz::require(w.find(secret) == std::string::npos, "a warning quotes a secret");
      }
    }
    return 0;
  }
  ccm::fuzz::require(parsed.status().code() == Code::kInvalidArgument,
                     "a refused cloud.conf is INVALID_ARGUMENT");
  for (const auto& secret : secretsOf(text)) {
    ccm::fuzz::require(parsed.status().message().find(secret) == std::string::npos,
                       "the refusal quotes a secret");
  }
  return 0;
}
