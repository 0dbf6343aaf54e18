// Which cloud.conf changes a reconfigure may apply while the provider runs: the credentials,
// and nothing else (fixedSettingChanged names the first other key that differs).
#include <doctest/doctest.h>

#include <string>

#include "plugins/openstack/config.hpp"

using namespace ccm::openstack;

namespace {

Config parsed(const std::string& global_extra, const std::string& sections,
              const std::string& region = "RegionOne") {
  auto p = parseConfig("[Global]\nauth-url = https://keystone.example/v3\nregion = " + region +
                       "\n" + global_extra + sections);
  REQUIRE_MESSAGE(p.ok(), p.status().message());
  return p->config;
}

}  // namespace

TEST_CASE("reconfigure: credentials may change, nothing else") {
  Config running = parsed("application-credential-id = ac-1\napplication-credential-secret = s1\n",
                          "[LoadBalancer]\nsubnet-id = sub-1\n");
  // Another application credential, or a switch to a password: allowed.
  CHECK(fixedSettingChanged(running, parsed("application-credential-id = ac-2\n"
                                            "application-credential-secret = s2\n",
                                            "[LoadBalancer]\nsubnet-id = sub-1\n")) == "");
  CHECK(fixedSettingChanged(running, parsed("username = u\npassword = p\nuser-domain-name = D\n"
                                            "tenant-id = p-1\n",
                                            "[LoadBalancer]\nsubnet-id = sub-1\n")) ==
        "[Global] tenant-id");
  CHECK(fixedSettingChanged(running, parsed("application-credential-id = ac-1\n"
                                            "application-credential-secret = s1\n",
                                            "[LoadBalancer]\nsubnet-id = sub-1\n", "RegionTwo")) ==
        "[Global] region");
  CHECK(fixedSettingChanged(running, parsed("application-credential-id = ac-1\n"
                                            "application-credential-secret = s1\n",
                                            "[LoadBalancer]\nsubnet-id = sub-2\n"))
            .starts_with("[LoadBalancer]"));
  CHECK(fixedSettingChanged(running, parsed("application-credential-id = ac-1\n"
                                            "application-credential-secret = s1\n",
                                            "[LoadBalancer]\nsubnet-id = sub-1\n"
                                            "[Route]\nrouter-id = r-1\n")) == "[Route] router-id");
}
