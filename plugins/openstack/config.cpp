// Reads cloud.conf into Config: a table of every key OCCM knows, typed setters with gcfg's
// value rules, then cross-key validation with messages that name the section and key.
#include "plugins/openstack/config.hpp"

#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "plugins/openstack/clouds_yaml.hpp"
#include "plugins/openstack/gcfg_values.hpp"
#include "plugins/openstack/ini_file.hpp"
#include "plugins/openstack/text.hpp"

namespace ccm::openstack {
namespace {

enum class Kind { String, Bool, Int, Uint, Duration, List };

using Setter = std::function<sdk::Status(Config&, const IniEntry&)>;

struct KeySpec {
  Kind kind;
  Setter set;
};

sdk::Status bad(std::string_view section, std::string_view key, const std::string& what) {
  return sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                "[" + std::string(section) + "] " + std::string(key) + ": " + what);
}

// Canonical spelling of the known sections, for messages.
std::string canonicalSection(const std::string& lower) {
  if (lower == "global") {
    return "Global";
  }
  if (lower == "networking") {
    return "Networking";
  }
  if (lower == "loadbalancer") {
    return "LoadBalancer";
  }
  if (lower == "loadbalancerclass") {
    return "LoadBalancerClass";
  }
  if (lower == "route") {
    return "Route";
  }
  if (lower == "metadata") {
    return "Metadata";
  }
  return lower;
}

template <typename Section>
using SectionOf = Section Config::*;

template <typename Section>
KeySpec stringKey(SectionOf<Section> sec, std::string Section::*field) {
  return {Kind::String, [sec, field](Config& c, const IniEntry& e) {
            (c.*sec).*field = e.value;
            return sdk::Status();
          }};
}

template <typename Section>
KeySpec boolKey(SectionOf<Section> sec, bool Section::*field) {
  return {Kind::Bool, [sec, field](Config& c, const IniEntry& e) {
            if (!e.has_value) {
              (c.*sec).*field = true;  // "key" alone means true
              return sdk::Status();
            }
            auto v = parseGcfgBool(e.value);
            if (!v) {
              return sdk::Status(
                  CCM_STATUS_INVALID_ARGUMENT,
                  "invalid boolean \"" + e.value + "\" (want true/false, yes/no, on/off or 1/0)");
            }
            (c.*sec).*field = *v;
            return sdk::Status();
          }};
}

template <typename Section, typename Int>
KeySpec intKey(SectionOf<Section> sec, Int Section::*field, int64_t min, int64_t max) {
  return {std::is_unsigned_v<Int> ? Kind::Uint : Kind::Int,
          [sec, field, min, max](Config& c, const IniEntry& e) {
            auto v = parseGcfgInt(e.value);
            if (!v) {
              return sdk::Status(CCM_STATUS_INVALID_ARGUMENT, "invalid integer \"" + e.value + "\"");
            }
            if (*v < min || *v > max) {
              return sdk::Status(CCM_STATUS_INVALID_ARGUMENT, "value " + std::to_string(*v) +
                                                       " out of range [" + std::to_string(min) +
                                                       ", " + std::to_string(max) + "]");
            }
            (c.*sec).*field = static_cast<Int>(*v);
            return sdk::Status();
          }};
}

template <typename Section>
KeySpec durationKey(SectionOf<Section> sec, Duration Section::*field, bool allow_zero) {
  return {Kind::Duration, [sec, field, allow_zero](Config& c, const IniEntry& e) {
            auto v = parseGoDuration(e.value);
            if (!v) {
              return sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                            "invalid duration \"" + e.value +
                                "\" (a Go duration with a unit, e.g. \"5s\" or \"1m30s\")");
            }
            if (v->count() < 0 || (!allow_zero && v->count() == 0)) {
              return sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                            "duration \"" + e.value + "\" must be " +
                                (allow_zero ? "zero or positive" : "positive"));
            }
            (c.*sec).*field = *v;
            return sdk::Status();
          }};
}

template <typename Section>
KeySpec listKey(SectionOf<Section> sec, std::vector<std::string> Section::*field) {
  return {Kind::List, [sec, field](Config& c, const IniEntry& e) {
            if (e.value.empty()) {
              ((c.*sec).*field).clear();  // gcfg: a blank value resets a list
            } else {
              ((c.*sec).*field).push_back(e.value);
            }
            return sdk::Status();
          }};
}

using KeyTable = std::map<std::string, KeySpec, std::less<>>;

KeyTable globalKeys() {
  using G = GlobalConfig;
  auto s = &Config::global;
  KeyTable t;
  t.emplace("auth-url", stringKey(s, &G::auth_url));
  t.emplace("username", stringKey(s, &G::username));
  t.emplace("user-id", stringKey(s, &G::user_id));
  t.emplace("password", stringKey(s, &G::password));
  t.emplace("tenant-id", stringKey(s, &G::tenant_id));
  t.emplace("tenant-name", stringKey(s, &G::tenant_name));
  t.emplace("domain-id", stringKey(s, &G::domain_id));
  t.emplace("domain-name", stringKey(s, &G::domain_name));
  t.emplace("user-domain-id", stringKey(s, &G::user_domain_id));
  t.emplace("user-domain-name", stringKey(s, &G::user_domain_name));
  t.emplace("tenant-domain-id", stringKey(s, &G::tenant_domain_id));
  t.emplace("tenant-domain-name", stringKey(s, &G::tenant_domain_name));
  t.emplace("region", stringKey(s, &G::region));
  t.emplace("os-endpoint-type", KeySpec{Kind::String, [](Config& c, const IniEntry& e) {
                                          c.global.endpoint_type = e.value;
                                          c.global.endpoint_type_set = true;
                                          return sdk::Status();
                                        }});
  t.emplace("ca-file", stringKey(s, &G::ca_file));
  t.emplace("cert-file", stringKey(s, &G::cert_file));
  t.emplace("key-file", stringKey(s, &G::key_file));
  // tls-insecure is a string upstream where only "true" counts; see validate().
  t.emplace("tls-insecure", KeySpec{Kind::String, [](Config& c, const IniEntry& e) {
                                      std::string v = e.has_value ? e.value : "true";
                                      if (v == "true") {
                                        c.global.tls_insecure = true;
                                      } else if (v == "false" || v.empty()) {
                                        c.global.tls_insecure = false;
                                      } else {
                                        return sdk::Status(
                                            CCM_STATUS_INVALID_ARGUMENT,
                                            "only \"true\" or \"false\" are accepted, got \"" + v +
                                                "\" (OCCM would read it as false)");
                                      }
                                      return sdk::Status();
                                    }});
  t.emplace("application-credential-id", stringKey(s, &G::application_credential_id));
  t.emplace("application-credential-name", stringKey(s, &G::application_credential_name));
  t.emplace("application-credential-secret", stringKey(s, &G::application_credential_secret));
  t.emplace("trust-id", stringKey(s, &G::trust_id));
  t.emplace("trustee-id", stringKey(s, &G::trustee_id));
  t.emplace("trustee-password", stringKey(s, &G::trustee_password));
  t.emplace("token", stringKey(s, &G::token));
  t.emplace("use-clouds", boolKey(s, &G::use_clouds));
  t.emplace("clouds-file", stringKey(s, &G::clouds_file));
  t.emplace("cloud", stringKey(s, &G::cloud));
  return t;
}

KeyTable networkingKeys() {
  using N = NetworkingConfig;
  auto s = &Config::networking;
  KeyTable t;
  t.emplace("ipv6-support-disabled", boolKey(s, &N::ipv6_support_disabled));
  t.emplace("public-network-name", listKey(s, &N::public_network_names));
  t.emplace("internal-network-name", listKey(s, &N::internal_network_names));
  t.emplace("address-sort-order", stringKey(s, &N::address_sort_order));
  return t;
}

KeyTable loadBalancerKeys() {
  using L = LoadBalancerConfig;
  auto s = &Config::load_balancer;
  KeyTable t;
  t.emplace("enabled", boolKey(s, &L::enabled));
  t.emplace("lb-version", stringKey(s, &L::lb_version));
  t.emplace("subnet-id", stringKey(s, &L::subnet_id));
  t.emplace("member-subnet-id", stringKey(s, &L::member_subnet_id));
  t.emplace("network-id", stringKey(s, &L::network_id));
  t.emplace("floating-network-id", stringKey(s, &L::floating_network_id));
  t.emplace("floating-subnet-id", stringKey(s, &L::floating_subnet_id));
  t.emplace("floating-subnet", stringKey(s, &L::floating_subnet));
  t.emplace("floating-subnet-tags", stringKey(s, &L::floating_subnet_tags));
  t.emplace("lb-method", KeySpec{Kind::String, [](Config& c, const IniEntry& e) {
                                   c.load_balancer.lb_method = e.value;
                                   c.load_balancer.lb_method_set = true;
                                   return sdk::Status();
                                 }});
  t.emplace("lb-provider", stringKey(s, &L::lb_provider));
  t.emplace("create-monitor", boolKey(s, &L::create_monitor));
  t.emplace("monitor-delay", durationKey(s, &L::monitor_delay, false));
  t.emplace("monitor-timeout", durationKey(s, &L::monitor_timeout, false));
  t.emplace("monitor-max-retries", intKey(s, &L::monitor_max_retries, 1, 10));
  t.emplace("monitor-max-retries-down", intKey(s, &L::monitor_max_retries_down, 1, 10));
  t.emplace("manage-security-groups", boolKey(s, &L::manage_security_groups));
  t.emplace("internal-lb", boolKey(s, &L::internal_lb));
  t.emplace("node-selector", stringKey(s, &L::node_selector));
  t.emplace("cascade-delete", boolKey(s, &L::cascade_delete));
  t.emplace("flavor-id", stringKey(s, &L::flavor_id));
  t.emplace("availability-zone", stringKey(s, &L::availability_zone));
  t.emplace("enable-ingress-hostname", boolKey(s, &L::enable_ingress_hostname));
  t.emplace("ingress-hostname-suffix", stringKey(s, &L::ingress_hostname_suffix));
  t.emplace("default-tls-container-ref", stringKey(s, &L::default_tls_container_ref));
  t.emplace("container-store", stringKey(s, &L::container_store));
  t.emplace("max-shared-lb", intKey(s, &L::max_shared_lb, 1, 1000000));
  t.emplace("provider-requires-serial-api-calls",
            boolKey(s, &L::provider_requires_serial_api_calls));
  t.emplace("ccm-active-wait-timeout", durationKey(s, &L::active_wait_timeout, true));
  return t;
}

KeyTable routeKeys() {
  KeyTable t;
  t.emplace("router-id", stringKey(&Config::route, &RouteConfig::router_id));
  return t;
}

KeyTable metadataKeys() {
  using M = MetadataConfig;
  auto s = &Config::metadata;
  KeyTable t;
  t.emplace("search-order", stringKey(s, &M::search_order));
  t.emplace("request-timeout", durationKey(s, &M::request_timeout, false));
  return t;
}

// Keys of [LoadBalancerClass "name"]; they write into the class being read.
using ClassSetter = std::string LoadBalancerClass::*;
const std::map<std::string, ClassSetter, std::less<>>& classKeys() {
  static const std::map<std::string, ClassSetter, std::less<>> keys = {
      {"floating-network-id", &LoadBalancerClass::floating_network_id},
      {"floating-subnet-id", &LoadBalancerClass::floating_subnet_id},
      {"floating-subnet", &LoadBalancerClass::floating_subnet},
      {"floating-subnet-tags", &LoadBalancerClass::floating_subnet_tags},
      {"network-id", &LoadBalancerClass::network_id},
      {"subnet-id", &LoadBalancerClass::subnet_id},
      {"member-subnet-id", &LoadBalancerClass::member_subnet_id},
  };
  return keys;
}

bool fileReadable(const std::string& path) {
  std::ifstream f(path);
  return f.good();
}

sdk::Status validate(Config& c, std::vector<std::string>& warnings) {
  GlobalConfig& g = c.global;
  if (g.use_clouds) {
    std::string path = findCloudsYaml(g);
    if (path.empty()) {
      return bad("Global", "use-clouds",
                 "no clouds.yaml found (set clouds-file, or put one in ~/.config/openstack or "
                 "/etc/openstack)");
    }
    std::ifstream in(path);
    if (!in) {
      return bad("Global", "clouds-file", "cannot read \"" + path + "\"");
    }
    std::stringstream text;
    text << in.rdbuf();
    CCM_SDK_RETURN_IF_ERROR(mergeCloudsYaml(text.str(), path, g));
  }
  if (g.auth_url.empty()) {
    return bad("Global", "auth-url", "required");
  }
  if (!startsWith(g.auth_url, "http://") && !startsWith(g.auth_url, "https://")) {
    return bad("Global", "auth-url",
               "must be an http:// or https:// URL, got \"" + g.auth_url + "\"");
  }
  if (g.auth_url.find("v2.0") != std::string::npos) {
    return bad("Global", "auth-url", "Keystone v2.0 is not supported; use the v3 endpoint");
  }
  if (g.endpoint_type != "public" && g.endpoint_type != "internal" && g.endpoint_type != "admin") {
    return bad("Global", "os-endpoint-type",
               "must be public, internal or admin, got \"" + g.endpoint_type + "\"");
  }
  if (!g.ca_file.empty() && !fileReadable(g.ca_file)) {
    return bad("Global", "ca-file", "cannot read \"" + g.ca_file + "\"");
  }
  if (g.cert_file.empty() != g.key_file.empty()) {
    return bad("Global", g.cert_file.empty() ? "cert-file" : "key-file",
               "cert-file and key-file must be set together");
  }
  for (const auto& [key, path] : {std::pair{"cert-file", g.cert_file}, {"key-file", g.key_file}}) {
    if (!path.empty() && !fileReadable(path)) {
      return bad("Global", key, "cannot read \"" + path + "\"");
    }
  }
  if (!g.username.empty() && !g.user_id.empty()) {
    return bad("Global", "user-id", "username and user-id cannot both be set");
  }
  // Domain defaults (gophercloud/utils clientconfig): domain-* fills an empty user/project
  // domain.
  if (g.user_domain_id.empty() && g.user_domain_name.empty()) {
    g.user_domain_id = g.domain_id;
    g.user_domain_name = g.domain_id.empty() ? g.domain_name : "";
  }
  if (g.tenant_domain_id.empty() && g.tenant_domain_name.empty()) {
    g.tenant_domain_id = g.domain_id;
    g.tenant_domain_name = g.domain_id.empty() ? g.domain_name : "";
  }
  if (!g.user_domain_id.empty() && !g.user_domain_name.empty()) {
    return bad("Global", "user-domain-name",
               "user-domain-id and user-domain-name cannot both be set");
  }
  bool has_token = !g.token.empty();
  bool has_trust = !g.trust_id.empty();
  bool has_password = !g.password.empty() || !g.trustee_password.empty();
  bool has_appcred = !g.application_credential_id.empty() ||
                     !g.application_credential_name.empty() ||
                     !g.application_credential_secret.empty();
  if (has_token) {
    // Token auth wins; it needs a scope to get a catalog.
    if (g.tenant_id.empty() && g.tenant_name.empty() && g.domain_id.empty() &&
        g.domain_name.empty() && !has_trust) {
      return bad("Global", "token", "token auth needs tenant-id, tenant-name or a domain");
    }
  } else if (has_trust) {
    if (g.trustee_id.empty() && g.user_id.empty() && g.username.empty()) {
      return bad("Global", "trustee-id", "trust auth needs trustee-id (or user-id/username)");
    }
    if (!has_password) {
      return bad("Global", "trustee-password", "trust auth needs a password");
    }
  } else if (has_password) {
    if (g.username.empty() && g.user_id.empty()) {
      return bad("Global", "username", "password auth needs username or user-id");
    }
    if (!g.username.empty() && g.user_domain_id.empty() && g.user_domain_name.empty()) {
      return bad("Global", "user-domain-name",
                 "username needs user-domain-name, user-domain-id, domain-name or domain-id");
    }
  } else if (has_appcred) {
    if (g.application_credential_secret.empty()) {
      return bad("Global", "application-credential-secret",
                 "required with application credentials");
    }
    if (g.application_credential_id.empty()) {
      if (g.user_id.empty() && g.username.empty()) {
        return bad("Global", "application-credential-name",
                   "an application credential by name needs user-id or username");
      }
      if (!g.username.empty() && g.user_domain_id.empty() && g.user_domain_name.empty()) {
        return bad("Global", "user-domain-name",
                   "username needs user-domain-name, user-domain-id, domain-name or domain-id");
      }
    }
  } else {
    return bad("Global", "password",
               "no credentials: set password (with username or user-id), "
               "application-credential-id/-secret, trust-id or token");
  }
  bool appcred_auth = has_appcred && !has_token && !has_trust && !has_password;
  if (!appcred_auth) {
    if (!has_trust && g.tenant_id.empty() && !g.tenant_name.empty() && g.tenant_domain_id.empty() &&
        g.tenant_domain_name.empty()) {
      return bad(
          "Global", "tenant-domain-name",
          "tenant-name needs tenant-domain-name, tenant-domain-id, domain-name or domain-id");
    }
    if (!has_trust && g.tenant_id.empty() && g.tenant_name.empty() && g.domain_id.empty() &&
        g.domain_name.empty()) {
      return bad("Global", "tenant-id",
                 "a project (tenant-id or tenant-name) or a domain is needed for a scoped token");
    }
  }
  if (g.region.empty()) {
    warnings.push_back("[Global] region is empty: endpoints of any region will match");
  }

  // [Networking]
  for (const std::string& piece : splitAny(c.networking.address_sort_order, ", \t")) {
    auto cidr = Cidr::parse(piece);
    if (!cidr) {
      return bad("Networking", "address-sort-order", "\"" + piece + "\" is not a CIDR");
    }
    c.networking.address_sort_cidrs.push_back(*cidr);
  }

  // [LoadBalancer]
  LoadBalancerConfig& lb = c.load_balancer;
  if (!lb.lb_version.empty() && lb.lb_version != "v2") {
    return bad("LoadBalancer", "lb-version",
               "only \"v2\" is supported, got \"" + lb.lb_version + "\"");
  }
  static const std::set<std::string> kMethods = {"ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP",
                                                 "SOURCE_IP_PORT"};
  if (kMethods.count(lb.lb_method) == 0) {
    return bad("LoadBalancer", "lb-method",
               "must be ROUND_ROBIN, LEAST_CONNECTIONS, SOURCE_IP or SOURCE_IP_PORT, got \"" +
                   lb.lb_method + "\"");
  }
  if (lb.lb_provider.empty()) {
    return bad("LoadBalancer", "lb-provider", "must not be empty");
  }
  static const std::set<std::string> kProviders = {"amphora", "octavia", "ovn", "f5", "amphorav2"};
  if (kProviders.count(lb.lb_provider) == 0) {
    warnings.push_back("[LoadBalancer] lb-provider \"" + lb.lb_provider +
                       "\" is not one of amphora, octavia, ovn, f5, amphorav2; using it anyway");
  }
  if (lb.lb_provider == "ovn" && !lb.lb_method_set) {
    lb.lb_method = "SOURCE_IP_PORT";
  }
  if (lb.container_store != "barbican" && lb.container_store != "external") {
    return bad("LoadBalancer", "container-store",
               "must be barbican or external, got \"" + lb.container_store + "\"");
  }
  if (lb.monitor_timeout > lb.monitor_delay) {
    return bad("LoadBalancer", "monitor-timeout", "must not be longer than monitor-delay");
  }
  if (auto sel = parseNodeSelector(lb.node_selector); !sel.ok()) {
    return bad("LoadBalancer", "node-selector", sel.status().message());
  }
  if (auto tags = parseTagFilter(lb.floating_subnet_tags); !tags.ok()) {
    return bad("LoadBalancer", "floating-subnet-tags", tags.status().message());
  }
  for (const auto& [name, cls] : lb.classes) {
    if (auto tags = parseTagFilter(cls.floating_subnet_tags); !tags.ok()) {
      return bad("LoadBalancerClass \"" + name + "\"", "floating-subnet-tags",
                 tags.status().message());
    }
  }

  // [Metadata]
  auto order = splitAny(c.metadata.search_order, ",");
  if (order.empty() || order.size() > 2) {
    return bad("Metadata", "search-order", "must list one or two of configDrive, metadataService");
  }
  for (const auto& o : order) {
    if (o != "configDrive" && o != "metadataService") {
      return bad("Metadata", "search-order", "\"" + o + "\" is not configDrive or metadataService");
    }
  }
  return {};
}

}  // namespace

sdk::Result<std::map<std::string, std::optional<std::string>>> parseNodeSelector(
    std::string_view text) {
  std::map<std::string, std::optional<std::string>> out;
  for (const std::string& piece : splitAny(text, ",")) {
    auto eq = piece.find('=');
    std::string key(trim(std::string_view(piece).substr(0, eq)));
    if (key.empty()) {
      return sdk::Status(CCM_STATUS_INVALID_ARGUMENT, "empty label key in \"" + piece + "\"");
    }
    for (char ch : key) {
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '.' &&
          ch != '/') {
        return sdk::Status(CCM_STATUS_INVALID_ARGUMENT, "invalid label key \"" + key + "\"");
      }
    }
    if (eq == std::string::npos) {
      out[key] = std::nullopt;
    } else {
      std::string value(trim(std::string_view(piece).substr(eq + 1)));
      if (!isValidLabelValue(value)) {
        return sdk::Status(CCM_STATUS_INVALID_ARGUMENT, "invalid label value \"" + value + "\"");
      }
      out[key] = value;
    }
  }
  return out;
}

sdk::Result<TagFilter> parseTagFilter(std::string_view text) {
  TagFilter f;
  std::string_view s = trim(text);
  if (s.empty()) {
    return f;
  }
  bool negate = false;
  bool all = false;
  if (!s.empty() && s.front() == '!') {
    negate = true;
    s.remove_prefix(1);
  }
  if (!s.empty() && s.front() == '&') {
    all = true;
    s.remove_prefix(1);
  }
  auto tags = splitAny(s, ",");
  if (tags.empty()) {
    return sdk::Status(CCM_STATUS_INVALID_ARGUMENT, "no tags in \"" + std::string(text) + "\"");
  }
  for (size_t i = 0; i < tags.size(); ++i) {
    f.tags += (i ? "," : "") + tags[i];
  }
  if (negate) {
    f.param = all ? "not-tags-any" : "not-tags";
  } else {
    f.param = all ? "tags" : "tags-any";
  }
  return f;
}

sdk::Result<ParsedConfig> parseConfig(std::string_view text) {
  auto ini = IniFile::parse(text);
  if (!ini.ok()) {
    return ini.status();
  }
  ParsedConfig out;
  static const std::map<std::string, KeyTable, std::less<>> tables = {
      {"global", globalKeys()},
      {"networking", networkingKeys()},
      {"loadbalancer", loadBalancerKeys()},
      {"route", routeKeys()},
      {"metadata", metadataKeys()},
  };
  std::set<std::pair<std::string, std::string>> seen;
  for (const IniSection& section : ini->sections()) {
    std::string sec_name = canonicalSection(section.name);
    if (section.name == "loadbalancerclass") {
      if (!section.has_subsection || section.subsection.empty()) {
        return sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                      "[LoadBalancerClass] needs a class name: [LoadBalancerClass \"name\"]");
      }
      LoadBalancerClass& cls = out.config.load_balancer.classes[section.subsection];
      std::string where = "LoadBalancerClass \"" + section.subsection + "\"";
      for (const IniEntry& e : section.entries) {
        auto it = classKeys().find(e.key);
        if (it == classKeys().end()) {
          out.warnings.push_back("[" + where + "] " + e.key + ": unknown key, ignored");
          continue;
        }
        if (!e.has_value) {
          return bad(where, e.key, "missing value");
        }
        cls.*(it->second) = e.value;
      }
      continue;
    }
    auto table = tables.find(section.name);
    if (table == tables.end()) {
      if (section.name != "blockstorage") {
        out.warnings.push_back("[" + section.name + "]: unknown section, ignored");
      }
      continue;
    }
    if (section.has_subsection) {
      return sdk::Status(CCM_STATUS_INVALID_ARGUMENT, "[" + sec_name + " \"" + section.subsection +
                                               "\"]: this section takes no name");
    }
    for (const IniEntry& e : section.entries) {
      auto key = table->second.find(e.key);
      if (key == table->second.end()) {
        out.warnings.push_back("[" + sec_name + "] " + e.key + ": unknown key, ignored");
        continue;
      }
      const KeySpec& spec = key->second;
      if (!e.has_value && spec.kind != Kind::Bool && e.key != "tls-insecure") {
        return bad(sec_name, e.key, "missing value (write " + e.key + " = <value>)");
      }
      if (spec.kind != Kind::List && !seen.emplace(section.name, e.key).second) {
        out.warnings.push_back("[" + sec_name + "] " + e.key +
                               ": set more than once, the last wins");
      }
      sdk::Status st = spec.set(out.config, e);
      if (!st.ok()) {
        return bad(sec_name, e.key, st.message());
      }
    }
  }
  sdk::Status st = validate(out.config, out.warnings);
  if (!st.ok()) {
    return st;
  }
  return out;
}

std::vector<std::string> configSecrets(const Config& c) {
  std::vector<std::string> out;
  for (const std::string* s : {&c.global.password, &c.global.application_credential_secret,
                               &c.global.trustee_password, &c.global.token}) {
    if (!s->empty()) {
      out.push_back(*s);
    }
  }
  return out;
}

}  // namespace ccm::openstack
