// Fuzz target: the openstack provider's configuration parsers (plugins/openstack/): cloud.conf
// (the gcfg INI dialect, then validation) and clouds.yaml merging. The first byte picks which.
// Besides never crashing: a refused cloud.conf is refused before the provider registers its
// secrets with the host, so the refusal must not quote a password, application-credential
// secret, trustee password or token from the file (the message is logged).
#include <cctype>
#include <cstdint>
#include <functional>
#include <optional>
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

struct Secret {
  std::string value;
  size_t line = 0;  // 0-based
};

std::vector<std::string_view> linesOf(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos)
      nl = text.size();
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

// The secret values of the file as the INI reader sees them, when they cannot be confused
// with other text of the file (long enough, and not occurring on any other line).
std::vector<Secret> secretsOf(std::string_view text) {
  std::vector<Secret> out;
  auto ini = IniFile::parse(text);
  if (!ini.ok()) {
    return out;
  }
  auto lines = linesOf(text);
  for (const auto& section : ini->sections()) {
    for (const auto& e : section.entries) {
      if (!isSecretKey(e.key) || e.value.size() < 6 || e.line < 1 ||
          static_cast<size_t>(e.line) > lines.size() ||
          lines[e.line - 1].find(e.value) == std::string_view::npos)
        continue;
      bool elsewhere = false;
      for (size_t i = 0; i < lines.size(); ++i) {
        if (static_cast<int>(i) + 1 == e.line)
          continue;
        if (lines[i].find(e.value) != std::string_view::npos)
          elsewhere = true;
      }
      if (!elsewhere)
        out.push_back({e.value, static_cast<size_t>(e.line - 1)});
    }
  }
  return out;
}

// True when `message` (what parsing `text` said) carries the value of one of its secrets.
// A value can also be part of the message's own wording (a password "th-url: requir" is in
// "auth-url: required"): then the file is parsed again with each secret value replaced by a
// marker, and it is the marker that must not come back.
bool quotesSecret(std::string_view text, const std::string& message,
                  const std::vector<Secret>& secrets,
                  const std::function<std::optional<std::string>(std::string_view)>& parse) {
  bool suspicious = false;
  for (const auto& s : secrets)
    suspicious = suspicious || message.find(s.value) != std::string::npos;
  if (!suspicious)
    return false;
  auto lines = linesOf(text);
  // Markers the file does not already hold in any letter case (the fuzzer learns them from
  // the comparisons and writes them into its inputs, and keys are quoted lower-cased: a key
  // named like a marker is not a leaked secret).
  std::string folded(text);
  for (char& c : folded)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string prefix = "zqfuzzsecret";
  while (folded.find(prefix) != std::string::npos)
    prefix += 'x';
  std::string marked;
  std::vector<std::string> markers;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string line(lines[i]);
    for (const auto& s : secrets) {
      if (s.line == i) {
        markers.push_back(prefix + std::to_string(markers.size()) + "qz");
        line.replace(line.find(s.value), s.value.size(), markers.back());
      }
    }
    marked += line;
    if (i + 1 < lines.size())
      marked += '\n';
  }
  auto again = parse(marked);
  if (!again)
    return false;  // the marked file is accepted: nothing to compare
  for (const auto& m : markers)
    if (again->find(m) != std::string::npos)
      return true;
  return false;
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
    ccm::sdk::Status st = mergeCloudsYaml(std::string(text), "/nonexistent-ccm-fuzz/clouds.yaml", global);
    ccm::fuzz::touch(st.message());
    return 0;
  }
  auto parsed = parseConfig(text);
  auto secrets = secretsOf(text);
  if (parsed.ok()) {
    for (const auto& s : configSecrets(parsed->config))
      ccm::fuzz::touch(s);
    auto warnings = [](std::string_view t) -> std::optional<std::string> {
      auto p = parseConfig(t);
      if (!p.ok())
        return std::nullopt;
      std::string all;
      for (const auto& w : p->warnings)
        all += w + "\n";
      return all;
    };
    ccm::fuzz::require(!quotesSecret(text, *warnings(text), secrets, warnings),
                       "a warning quotes a secret");
    return 0;
  }
  ccm::fuzz::require(parsed.status().code() == CCM_STATUS_INVALID_ARGUMENT,
                     "a refused cloud.conf is INVALID_ARGUMENT");
  auto refusal = [](std::string_view t) -> std::optional<std::string> {
    auto p = parseConfig(t);
    if (p.ok())
      return std::nullopt;
    return p.status().message();
  };
  ccm::fuzz::require(!quotesSecret(text, parsed.status().message(), secrets, refusal),
                     "the refusal quotes a secret");
  return 0;
}
