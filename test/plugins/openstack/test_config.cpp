// cloud.conf parsing: every key of every section lands where it should with gcfg's value
// rules, every refusal names its section and key, and ignored input is warned about.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <string>

#include "plugins/openstack/config.hpp"

using namespace ccm::openstack;

namespace {

const std::string kBase =
    "[Global]\n"
    "auth-url = https://keystone.example:5000/v3\n"
    "username = demo\n"
    "password = secret-pw\n"
    "user-domain-name = Default\n"
    "tenant-id = p1\n"
    "region = RegionOne\n";

ParsedConfig parseOk(const std::string& text) {
  auto r = parseConfig(text);
  INFO(text);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  return std::move(r).value();
}

std::string parseErr(const std::string& text) {
  auto r = parseConfig(text);
  INFO(text);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == CCM_STATUS_INVALID_ARGUMENT);
  return r.status().message();
}

bool warned(const ParsedConfig& c, const std::string& needle) {
  for (const auto& w : c.warnings) {
    if (w.find(needle) != std::string::npos) {
      return true;
    }
  }
  return false;
}

std::string tempFile(const std::string& name) {
  std::string path = "/tmp/ccm-os-config-test-" + name;
  std::ofstream(path) << "x\n";
  return path;
}

struct KeyCase {
  std::string text;  // appended to kBase
  std::function<void(const Config&)> check;
};

}  // namespace

TEST_CASE("defaults match OCCM's") {
  Config c = parseOk(kBase).config;
  CHECK(c.global.endpoint_type == "public");
  CHECK_FALSE(c.global.tls_insecure);
  CHECK(c.load_balancer.enabled);
  CHECK(c.load_balancer.lb_method == "ROUND_ROBIN");
  CHECK(c.load_balancer.lb_provider == "amphora");
  CHECK_FALSE(c.load_balancer.create_monitor);
  CHECK(c.load_balancer.monitor_delay == std::chrono::seconds(5));
  CHECK(c.load_balancer.monitor_timeout == std::chrono::seconds(3));
  CHECK(c.load_balancer.monitor_max_retries == 1u);
  CHECK(c.load_balancer.monitor_max_retries_down == 3u);
  CHECK(c.load_balancer.cascade_delete);
  CHECK(c.load_balancer.ingress_hostname_suffix == "nip.io");
  CHECK(c.load_balancer.container_store == "barbican");
  CHECK(c.load_balancer.max_shared_lb == 2);
  CHECK(c.load_balancer.active_wait_timeout == std::chrono::seconds(30));
  CHECK(c.metadata.search_order == "configDrive,metadataService");
  CHECK(c.metadata.request_timeout == std::chrono::seconds(60));
  CHECK(c.route.router_id.empty());
  CHECK(c.networking.public_network_names.empty());
}

TEST_CASE("every key is read into its field") {
  std::string ca = tempFile("ca.pem");
  std::string cert = tempFile("cert.pem");
  std::string key = tempFile("key.pem");
  std::vector<KeyCase> cases = {
      // [Global] (already in kBase: auth-url, username, password, user-domain-name, tenant-id,
      // region)
      {"",
       [](const Config& c) {
         CHECK(c.global.auth_url == "https://keystone.example:5000/v3");
         CHECK(c.global.username == "demo");
         CHECK(c.global.password == "secret-pw");
         CHECK(c.global.user_domain_name == "Default");
         CHECK(c.global.tenant_id == "p1");
         CHECK(c.global.region == "RegionOne");
       }},
      {"tenant-name = proj\ntenant-domain-name = D2\n",
       [](const Config& c) {
         CHECK(c.global.tenant_name == "proj");
         CHECK(c.global.tenant_domain_name == "D2");
       }},
      {"tenant-domain-id = d2\n",
       [](const Config& c) { CHECK(c.global.tenant_domain_id == "d2"); }},
      {"domain-id = dom\n",
       [](const Config& c) {
         CHECK(c.global.domain_id == "dom");
         CHECK(c.global.tenant_domain_id == "dom");  // default for the project domain
       }},
      {"domain-name = DomName\n",
       [](const Config& c) {
         CHECK(c.global.domain_name == "DomName");
         CHECK(c.global.tenant_domain_name == "DomName");
       }},
      {"os-endpoint-type = internal\n",
       [](const Config& c) { CHECK(c.global.endpoint_type == "internal"); }},
      {"os-endpoint-type = admin\n",
       [](const Config& c) { CHECK(c.global.endpoint_type == "admin"); }},
      {"ca-file = " + ca + "\n", [ca](const Config& c) { CHECK(c.global.ca_file == ca); }},
      {"cert-file = " + cert + "\nkey-file = " + key + "\n",
       [cert, key](const Config& c) {
         CHECK(c.global.cert_file == cert);
         CHECK(c.global.key_file == key);
       }},
      {"tls-insecure = true\n", [](const Config& c) { CHECK(c.global.tls_insecure); }},
      {"tls-insecure = false\n", [](const Config& c) { CHECK_FALSE(c.global.tls_insecure); }},
      {"application-credential-id = acid\napplication-credential-secret = acs\n",
       [](const Config& c) {
         CHECK(c.global.application_credential_id == "acid");
         CHECK(c.global.application_credential_secret == "acs");
       }},
      {"application-credential-name = acn\napplication-credential-secret = acs\n",
       [](const Config& c) { CHECK(c.global.application_credential_name == "acn"); }},
      {"trust-id = t1\ntrustee-id = tu\ntrustee-password = tp\n",
       [](const Config& c) {
         CHECK(c.global.trust_id == "t1");
         CHECK(c.global.trustee_id == "tu");
         CHECK(c.global.trustee_password == "tp");
       }},
      {"token = tok-123\n", [](const Config& c) { CHECK(c.global.token == "tok-123"); }},
      {"clouds-file = /etc/openstack/clouds.yaml\ncloud = mycloud\nuse-clouds = false\n",
       [](const Config& c) {
         CHECK(c.global.clouds_file == "/etc/openstack/clouds.yaml");
         CHECK(c.global.cloud == "mycloud");
         CHECK_FALSE(c.global.use_clouds);
       }},
      // [Networking]
      {"[Networking]\nipv6-support-disabled = yes\n",
       [](const Config& c) { CHECK(c.networking.ipv6_support_disabled); }},
      {"[Networking]\npublic-network-name = a\npublic-network-name = b\n",
       [](const Config& c) {
         CHECK(c.networking.public_network_names == std::vector<std::string>{"a", "b"});
       }},
      {"[Networking]\ninternal-network-name = a\ninternal-network-name =\n"
       "internal-network-name = c\n",
       [](const Config& c) {  // a blank value resets a list
         CHECK(c.networking.internal_network_names == std::vector<std::string>{"c"});
       }},
      {"[Networking]\naddress-sort-order = 10.0.0.0/8, 192.168.0.0/16 fd00::/8\n",
       [](const Config& c) {
         REQUIRE(c.networking.address_sort_cidrs.size() == 3);
         CHECK(c.networking.address_sort_cidrs[2].toString() == "fd00::/8");
       }},
      // [LoadBalancer]
      {"[LoadBalancer]\nenabled = off\n",
       [](const Config& c) { CHECK_FALSE(c.load_balancer.enabled); }},
      {"[LoadBalancer]\nlb-version = v2\n",
       [](const Config& c) { CHECK(c.load_balancer.lb_version == "v2"); }},
      {"[LoadBalancer]\nsubnet-id = s1\nmember-subnet-id = s2\nnetwork-id = n1\n",
       [](const Config& c) {
         CHECK(c.load_balancer.subnet_id == "s1");
         CHECK(c.load_balancer.member_subnet_id == "s2");
         CHECK(c.load_balancer.network_id == "n1");
       }},
      {"[LoadBalancer]\nfloating-network-id = fn\nfloating-subnet-id = fs\n"
       "floating-subnet = pub*\nfloating-subnet-tags = !&a,b\n",
       [](const Config& c) {
         CHECK(c.load_balancer.floating_network_id == "fn");
         CHECK(c.load_balancer.floating_subnet_id == "fs");
         CHECK(c.load_balancer.floating_subnet == "pub*");
         CHECK(c.load_balancer.floating_subnet_tags == "!&a,b");
       }},
      {"[LoadBalancer]\nlb-method = LEAST_CONNECTIONS\n",
       [](const Config& c) { CHECK(c.load_balancer.lb_method == "LEAST_CONNECTIONS"); }},
      {"[LoadBalancer]\nlb-provider = ovn\n",
       [](const Config& c) {
         CHECK(c.load_balancer.lb_provider == "ovn");
         CHECK(c.load_balancer.lb_method == "SOURCE_IP_PORT");  // ovn's only algorithm
       }},
      {"[LoadBalancer]\nlb-provider = ovn\nlb-method = SOURCE_IP\n",
       [](const Config& c) { CHECK(c.load_balancer.lb_method == "SOURCE_IP"); }},
      {"[LoadBalancer]\ncreate-monitor\n",
       [](const Config& c) { CHECK(c.load_balancer.create_monitor); }},
      {"[LoadBalancer]\nmonitor-delay = 1m30s\nmonitor-timeout = 1.5s\n",
       [](const Config& c) {
         CHECK(c.load_balancer.monitor_delay == std::chrono::seconds(90));
         CHECK(c.load_balancer.monitor_timeout == std::chrono::milliseconds(1500));
       }},
      {"[LoadBalancer]\nmonitor-max-retries = 0x3\nmonitor-max-retries-down = 010\n",
       [](const Config& c) {
         CHECK(c.load_balancer.monitor_max_retries == 3u);
         CHECK(c.load_balancer.monitor_max_retries_down == 8u);  // octal, as gcfg reads it
       }},
      {"[LoadBalancer]\nmanage-security-groups = true\n",
       [](const Config& c) { CHECK(c.load_balancer.manage_security_groups); }},
      {"[LoadBalancer]\ninternal-lb = 1\n",
       [](const Config& c) { CHECK(c.load_balancer.internal_lb); }},
      {"[LoadBalancer]\nnode-selector = role=lb, zone\n",
       [](const Config& c) { CHECK(c.load_balancer.node_selector == "role=lb, zone"); }},
      {"[LoadBalancer]\ncascade-delete = no\n",
       [](const Config& c) { CHECK_FALSE(c.load_balancer.cascade_delete); }},
      {"[LoadBalancer]\nflavor-id = f1\navailability-zone = az1\n",
       [](const Config& c) {
         CHECK(c.load_balancer.flavor_id == "f1");
         CHECK(c.load_balancer.availability_zone == "az1");
       }},
      {"[LoadBalancer]\nenable-ingress-hostname = true\ningress-hostname-suffix = sslip.io\n",
       [](const Config& c) {
         CHECK(c.load_balancer.enable_ingress_hostname);
         CHECK(c.load_balancer.ingress_hostname_suffix == "sslip.io");
       }},
      {"[LoadBalancer]\ndefault-tls-container-ref = https://b/v1/containers/x\n"
       "container-store = external\n",
       [](const Config& c) {
         CHECK(c.load_balancer.default_tls_container_ref == "https://b/v1/containers/x");
         CHECK(c.load_balancer.container_store == "external");
       }},
      {"[LoadBalancer]\nmax-shared-lb = 5\n",
       [](const Config& c) { CHECK(c.load_balancer.max_shared_lb == 5); }},
      {"[LoadBalancer]\nprovider-requires-serial-api-calls = TRUE\n",
       [](const Config& c) { CHECK(c.load_balancer.provider_requires_serial_api_calls); }},
      {"[LoadBalancer]\nccm-active-wait-timeout = 0s\n",
       [](const Config& c) { CHECK(c.load_balancer.active_wait_timeout.count() == 0); }},
      // [LoadBalancerClass "x"]
      {"[LoadBalancerClass \"gold\"]\nfloating-network-id = fn\nfloating-subnet-id = fs\n"
       "floating-subnet = p\nfloating-subnet-tags = t\nnetwork-id = n\nsubnet-id = s\n"
       "member-subnet-id = m\n",
       [](const Config& c) {
         REQUIRE(c.load_balancer.classes.count("gold") == 1);
         const LoadBalancerClass& k = c.load_balancer.classes.at("gold");
         CHECK(k.floating_network_id == "fn");
         CHECK(k.floating_subnet_id == "fs");
         CHECK(k.floating_subnet == "p");
         CHECK(k.floating_subnet_tags == "t");
         CHECK(k.network_id == "n");
         CHECK(k.subnet_id == "s");
         CHECK(k.member_subnet_id == "m");
       }},
      // [Route]
      {"[Route]\nrouter-id = r1\n", [](const Config& c) { CHECK(c.route.router_id == "r1"); }},
      // [Metadata]
      {"[Metadata]\nsearch-order = metadataService\nrequest-timeout = 2m\n",
       [](const Config& c) {
         CHECK(c.metadata.search_order == "metadataService");
         CHECK(c.metadata.request_timeout == std::chrono::minutes(2));
       }},
  };
  for (const KeyCase& k : cases) {
    std::string text = kBase + k.text;
    // Secrets and credentials that replace the password need it gone.
    if (k.text.find("application-credential") != std::string::npos ||
        k.text.find("trust-id") != std::string::npos || k.text.find("token") != std::string::npos) {
      text = "[Global]\nauth-url = https://k/v3\nuser-id = u\ntenant-id = p1\n" + k.text;
    }
    CAPTURE(text);
    k.check(parseOk(text).config);
  }
}

TEST_CASE("clouds.yaml fills what cloud.conf leaves empty") {
  std::string ca = tempFile("clouds-ca.pem");
  std::string path = "/tmp/ccm-os-config-test-clouds.yaml";
  std::ofstream(path) << "clouds:\n"
                         "  one:\n"
                         "    auth:\n"
                         "      auth_url: https://k1/v3\n"
                         "      username: yuser\n"
                         "      password: ypass\n"
                         "      project_name: yproj\n"
                         "      user_domain_name: YD\n"
                         "      project_domain_name: YD\n"
                         "    region_name: R-yaml\n"
                         "    interface: internalURL\n"
                         "    cacert: " +
                             ca +
                             "\n"
                             "  two:\n"
                             "    auth:\n"
                             "      auth_url: https://k2/v3\n"
                             "      application_credential_id: acid\n"
                             "      application_credential_secret: acs\n";
  std::string head = "[Global]\nuse-clouds = true\nclouds-file = " + path + "\n";
  Config one = parseOk(head + "cloud = one\nregion = R-conf\n").config;
  CHECK(one.global.auth_url == "https://k1/v3");
  CHECK(one.global.username == "yuser");
  CHECK(one.global.password == "ypass");
  CHECK(one.global.tenant_name == "yproj");
  CHECK(one.global.tenant_domain_name == "YD");
  CHECK(one.global.region == "R-conf");  // cloud.conf wins
  CHECK(one.global.endpoint_type == "internal");
  CHECK(one.global.ca_file == ca);
  CHECK(parseOk(head + "cloud = one\nos-endpoint-type = admin\n").config.global.endpoint_type ==
        "admin");
  Config two = parseOk(head + "cloud = two\n").config;
  CHECK(two.global.application_credential_id == "acid");
  CHECK(two.global.application_credential_secret == "acs");
  CHECK(parseErr(head).find("[Global] cloud: ") != std::string::npos);
  CHECK(parseErr(head + "cloud = three\n").find("[Global] cloud: no cloud \"three\"") !=
        std::string::npos);
  std::ofstream(path) << "clouds: [unclosed\n";
  CHECK(parseErr(head).find("[Global] clouds-file: ") != std::string::npos);
  std::ofstream(path) << "clouds:\n  only:\n    auth:\n      auth_url: https://k3/v3\n"
                         "      user_id: u\n      password: p\n      project_id: t\n";
  CHECK(parseOk(head).config.global.auth_url == "https://k3/v3");  // a single cloud needs no name
}

TEST_CASE("gcfg syntax: case, quotes, escapes, comments, continuation") {
  Config c = parseOk(
                 "; a comment\n"
                 "# another\n"
                 "[GLOBAL]\n"
                 "Auth-URL = \"https://k/v3\" ; trailing comment\n"
                 "USERNAME=demo\n"
                 "password = \"pa;ss#word \\\"q\\\" \\\\ end\"\n"
                 "user-domain-name = Default   # comment\n"
                 "tenant-id = p\\\n"
                 "1\n"
                 "region = Region One\n"
                 "[loadbalancer]\n"
                 "create-monitor\n")
                 .config;
  CHECK(c.global.auth_url == "https://k/v3");
  CHECK(c.global.username == "demo");
  CHECK(c.global.password == "pa;ss#word \"q\" \\ end");
  CHECK(c.global.user_domain_name == "Default");
  CHECK(c.global.tenant_id == "p1");
  CHECK(c.global.region == "Region One");
  CHECK(c.load_balancer.create_monitor);
}

TEST_CASE("every refusal names its section and key") {
  std::string ca = "/nonexistent/ca.pem";
  struct ErrCase {
    std::string text;
    std::string want;
  };
  std::string creds = "username = u\npassword = p\nuser-domain-name = D\ntenant-id = t\n";
  std::vector<ErrCase> cases = {
      {"[Global]\n" + creds, "[Global] auth-url: required"},
      {"[Global]\nauth-url = keystone:5000\n" + creds, "[Global] auth-url"},
      {"[Global]\nauth-url = http://k/v2.0\n" + creds, "[Global] auth-url"},
      {kBase + "os-endpoint-type = publicURL\n", "[Global] os-endpoint-type"},
      {kBase + "use-clouds = true\nclouds-file = /nonexistent/clouds.yaml\n",
       "[Global] clouds-file: cannot read"},
      {kBase + "ca-file = " + ca + "\n", "[Global] ca-file"},
      {kBase + "cert-file = /etc/hostname\n", "[Global] key-file"},
      {kBase + "key-file = /etc/hostname\n", "[Global] cert-file"},
      {kBase + "user-id = uid\n", "[Global] user-id"},
      {kBase + "user-domain-id = did\n", "[Global] user-domain-name"},
      {"[Global]\nauth-url = http://k/v3\ntenant-id = t\n", "[Global] password"},
      {"[Global]\nauth-url = http://k/v3\nusername = u\npassword = p\ntenant-id = t\n",
       "[Global] user-domain-name"},
      {"[Global]\nauth-url = http://k/v3\npassword = p\ntenant-id = t\n", "[Global] username"},
      {"[Global]\nauth-url = http://k/v3\napplication-credential-id = a\n",
       "[Global] application-credential-secret"},
      {"[Global]\nauth-url = http://k/v3\napplication-credential-name = a\n"
       "application-credential-secret = s\n",
       "[Global] application-credential-name"},
      {"[Global]\nauth-url = http://k/v3\napplication-credential-name = a\n"
       "application-credential-secret = s\nusername = u\n",
       "[Global] user-domain-name"},
      {"[Global]\nauth-url = http://k/v3\ntrust-id = t\npassword = p\n", "[Global] trustee-id"},
      {"[Global]\nauth-url = http://k/v3\ntrust-id = t\ntrustee-id = u\n",
       "[Global] trustee-password"},
      {"[Global]\nauth-url = http://k/v3\ntoken = x\n", "[Global] token"},
      {"[Global]\nauth-url = http://k/v3\nuser-id = u\npassword = p\ntenant-name = t\n",
       "[Global] tenant-domain-name"},
      {"[Global]\nauth-url = http://k/v3\nuser-id = u\npassword = p\n", "[Global] tenant-id"},
      {kBase + "tls-insecure = yes\n", "[Global] tls-insecure"},
      {kBase + "[Networking]\nipv6-support-disabled = maybe\n",
       "[Networking] ipv6-support-disabled: invalid boolean"},
      {kBase + "[Networking]\naddress-sort-order = 10.0.0.0/8, 300.1.0.0/16\n",
       "[Networking] address-sort-order"},
      {kBase + "[LoadBalancer]\nenabled = 2\n", "[LoadBalancer] enabled"},
      {kBase + "[LoadBalancer]\nlb-version = v1\n", "[LoadBalancer] lb-version"},
      {kBase + "[LoadBalancer]\nlb-method = RANDOM\n", "[LoadBalancer] lb-method"},
      {kBase + "[LoadBalancer]\nlb-provider =\n", "[LoadBalancer] lb-provider"},
      {kBase + "[LoadBalancer]\nmonitor-delay = 5\n",
       "[LoadBalancer] monitor-delay: invalid duration"},
      {kBase + "[LoadBalancer]\nmonitor-delay = 0s\n", "[LoadBalancer] monitor-delay"},
      {kBase + "[LoadBalancer]\nmonitor-timeout = -1s\n", "[LoadBalancer] monitor-timeout"},
      {kBase + "[LoadBalancer]\nmonitor-delay = 2s\nmonitor-timeout = 3s\n",
       "[LoadBalancer] monitor-timeout"},
      {kBase + "[LoadBalancer]\nmonitor-max-retries = three\n",
       "[LoadBalancer] monitor-max-retries: invalid integer"},
      {kBase + "[LoadBalancer]\nmonitor-max-retries-down = 11\n",
       "[LoadBalancer] monitor-max-retries-down: value 11 out of range"},
      {kBase + "[LoadBalancer]\nmax-shared-lb = 0\n", "[LoadBalancer] max-shared-lb"},
      {kBase + "[LoadBalancer]\ncontainer-store = vault\n", "[LoadBalancer] container-store"},
      {kBase + "[LoadBalancer]\nnode-selector = a=b=c\n", "[LoadBalancer] node-selector"},
      {kBase + "[LoadBalancer]\nfloating-subnet-tags = !&\n",
       "[LoadBalancer] floating-subnet-tags"},
      {kBase + "[LoadBalancer]\nccm-active-wait-timeout = soon\n",
       "[LoadBalancer] ccm-active-wait-timeout"},
      {kBase + "[LoadBalancer]\nsubnet-id\n", "[LoadBalancer] subnet-id: missing value"},
      {kBase + "[LoadBalancerClass]\nsubnet-id = s\n", "[LoadBalancerClass] needs a class name"},
      {kBase + "[LoadBalancerClass \"x\"]\nsubnet-id\n", "[LoadBalancerClass \"x\"] subnet-id"},
      {kBase + "[LoadBalancerClass \"x\"]\nfloating-subnet-tags = &\n",
       "[LoadBalancerClass \"x\"] floating-subnet-tags"},
      {kBase + "[Route \"r\"]\nrouter-id = x\n", "[Route \"r\"]: this section takes no name"},
      {kBase + "[Metadata]\nsearch-order = configDrive,metadataService,other\n",
       "[Metadata] search-order"},
      {kBase + "[Metadata]\nsearch-order = cloudInit\n", "[Metadata] search-order"},
      {kBase + "[Metadata]\nrequest-timeout = 0\n", "[Metadata] request-timeout"},
      // Syntax.
      {"auth-url = x\n[Global]\n", "line 1: key outside of any [section]"},
      {kBase + "region = \"unterminated\n", "line 8: unterminated quoted value"},
      {kBase + "region = bad\\qescape\n", "line 8: unknown escape"},
      {kBase + "[LoadBalancer\n", "line 8: malformed section header"},
      {kBase + "[]\n", "line 8: missing section name"},
      {kBase + "region RegionTwo\n", "line 8: expected '='"},
      {kBase + "9lives = 1\n", "line 8: invalid key name"},
      {kBase + "[Global] trailing\n", "line 8: unexpected text"},
  };
  for (const ErrCase& e : cases) {
    std::string msg = parseErr(e.text);
    CAPTURE(e.text);
    CHECK_MESSAGE(msg.find(e.want) != std::string::npos, msg);
  }
}

TEST_CASE("ignored input is warned about") {
  auto c = parseOk(kBase +
                   "bogus = 1\nregion = RegionTwo\n[Networking]\nfoo = bar\n"
                   "[Unknown]\nx = 1\n[BlockStorage]\nbs-version = v3\n"
                   "[LoadBalancer]\nmanage-security-groups = true\nlb-provider = custom\n"
                   "default-tls-container-ref = ref\n[LoadBalancerClass \"c\"]\nzzz = 1\n");
  CHECK(warned(c, "[Global] bogus: unknown key"));
  CHECK(warned(c, "[Global] region: set more than once"));
  CHECK(c.config.global.region == "RegionTwo");
  CHECK(warned(c, "[Networking] foo: unknown key"));
  CHECK(warned(c, "[unknown]: unknown section"));
  CHECK_FALSE(warned(c, "blockstorage"));
  CHECK_FALSE(warned(c, "manage-security-groups"));
  CHECK(warned(c, "lb-provider \"custom\""));
  CHECK_FALSE(warned(c, "default-tls-container-ref"));  // supported (TLS termination)
  CHECK(warned(c, "[LoadBalancerClass \"c\"] zzz"));
  auto empty_region = parseOk(
      "[Global]\nauth-url = http://k/v3\nuser-id = u\npassword = p\n"
      "tenant-id = t\n");
  CHECK(warned(empty_region, "[Global] region is empty"));
}

TEST_CASE("secrets of a config") {
  Config c = parseOk(
                 "[Global]\nauth-url = http://k/v3\nuser-id = u\npassword = pw1\n"
                 "tenant-id = t\napplication-credential-secret = acs\n")
                 .config;
  auto s = configSecrets(c);
  CHECK(std::find(s.begin(), s.end(), "pw1") != s.end());
  CHECK(std::find(s.begin(), s.end(), "acs") != s.end());
}

TEST_CASE("node selectors and tag filters") {
  auto sel = parseNodeSelector(" role = lb , zone ,a.b/c=d");
  REQUIRE(sel.ok());
  CHECK(sel->at("role") == std::optional<std::string>("lb"));
  CHECK_FALSE(sel->at("zone").has_value());
  CHECK(sel->at("a.b/c") == std::optional<std::string>("d"));
  CHECK_FALSE(parseNodeSelector("=x").ok());
  CHECK_FALSE(parseNodeSelector("k=bad value").ok());

  CHECK(parseTagFilter("a,b")->param == "tags-any");
  CHECK(parseTagFilter("&a,b")->param == "tags");
  CHECK(parseTagFilter("!a")->param == "not-tags");
  CHECK(parseTagFilter("!&a , b")->param == "not-tags-any");
  CHECK(parseTagFilter("!&a , b")->tags == "a,b");
  CHECK(parseTagFilter("")->param.empty());
  CHECK_FALSE(parseTagFilter("!").ok());
}
