// BuildInfo: compile-time facts about this build and the ccm_build_info metric.
#include "host/server/build_info.hpp"

#include "host/log/log.hpp"
#include "host/runtime/version.hpp"

namespace ccm::server {
namespace {

std::string orUnknown(const std::string& s) {
  return s.empty() ? "unknown" : s;
}

// "0.1.0" -> {"0", "1"}; missing parts are "".
std::pair<std::string, std::string> majorMinor(const std::string& version) {
  std::string v = version;
  if (!v.empty() && v[0] == 'v') {
    v.erase(0, 1);
  }
  size_t dot = v.find('.');
  std::string major = v.substr(0, dot);
  std::string minor;
  if (dot != std::string::npos) {
    minor = v.substr(dot + 1);
    minor = minor.substr(0, minor.find_first_not_of("0123456789"));
  }
  return {major, minor};
}

}  // namespace

BuildInfo BuildInfo::current() {
  BuildInfo b;
  b.version = CCM_VERSION;
  b.git_commit = CCM_GIT_COMMIT;
  b.provider_abi = CCM_PROVIDER_ABI;
#if defined(__clang__)
  b.compiler = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  b.compiler = std::string("gcc ") + __VERSION__;
#else
  b.compiler = "unknown";
#endif
#if defined(__x86_64__)
  const char* arch = "amd64";
#elif defined(__aarch64__)
  const char* arch = "arm64";
#elif defined(__i386__)
  const char* arch = "386";
#elif defined(__arm__)
  const char* arch = "arm";
#elif defined(__powerpc64__) && defined(__LITTLE_ENDIAN__)
  const char* arch = "ppc64le";
#elif defined(__s390x__)
  const char* arch = "s390x";
#else
  const char* arch = "unknown";
#endif
  b.platform = std::string("linux/") + arch;
  return b;
}

void registerBuildInfo(metrics::Registry& registry, const BuildInfo& info) {
  auto* family = registry.gauge(
      "ccm_build_info",
      "A metric with a constant '1' value labeled by the version, plugin ABI, compiler and "
      "platform of the running ccm build.",
      {"version", "major", "minor", "git_commit", "provider_abi", "compiler", "platform"},
      metrics::Stability::Alpha);
  if (family == nullptr) {
    log::warning("Metric name already used with another type; not exported",
                 {{"metric", "ccm_build_info"}});
    return;
  }
  auto [major, minor] = majorMinor(info.version);
  family
      ->labels({orUnknown(info.version), major, minor, orUnknown(info.git_commit),
                orUnknown(info.provider_abi), orUnknown(info.compiler), orUnknown(info.platform)})
      .set(1);
}

}  // namespace ccm::server
