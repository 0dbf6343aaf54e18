// clouds.yaml reading with yaml-cpp.
#include "plugins/openstack/clouds_yaml.hpp"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>

namespace ccm::openstack {
namespace {

sdk::Status bad(const std::string& key, const std::string& what) {
  return sdk::Status(CCM_STATUS_INVALID_ARGUMENT, "[Global] " + key + ": " + what);
}

// Sets field from node[key] when the field is still empty.
void fill(std::string& field, const YAML::Node& node, const char* key) {
  if (!field.empty() || !node || !node.IsMap()) {
    return;
  }
  YAML::Node v = node[key];
  if (v && v.IsScalar()) {
    field = v.as<std::string>();
  }
}

}  // namespace

std::string findCloudsYaml(const GlobalConfig& global) {
  if (!global.clouds_file.empty()) {
    return global.clouds_file;
  }
  if (const char* env = std::getenv("OS_CLIENT_CONFIG_FILE"); env != nullptr && *env != '\0') {
    return env;
  }
  std::vector<std::string> candidates = {"clouds.yaml", "clouds.yml"};
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    candidates.push_back(std::string(home) + "/.config/openstack/clouds.yaml");
  }
  candidates.push_back("/etc/openstack/clouds.yaml");
  for (const auto& c : candidates) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(c, ec)) {
      return c;
    }
  }
  return {};
}

sdk::Status mergeCloudsYaml(const std::string& yaml_text, const std::string& source, GlobalConfig& g) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return bad("clouds-file", source + " is not valid YAML: " + e.what());
  }
  // operator[] throws on a scalar or a sequence: look into maps only.
  YAML::Node clouds = root.IsMap() ? root["clouds"] : YAML::Node();
  if (!clouds || !clouds.IsMap() || clouds.size() == 0) {
    return bad("clouds-file", source + " has no clouds");
  }
  YAML::Node entry;
  if (!g.cloud.empty()) {
    entry = clouds[g.cloud];
    if (!entry) {
      return bad("cloud", "no cloud \"" + g.cloud + "\" in " + source);
    }
  } else if (clouds.size() == 1) {
    entry = clouds.begin()->second;
  } else {
    return bad("cloud", source + " has several clouds: name one");
  }
  if (!entry.IsMap()) {
    return bad("cloud", "the cloud entry in " + source + " is not a map");
  }
  try {
    YAML::Node auth = entry["auth"];
    fill(g.auth_url, auth, "auth_url");
    fill(g.user_id, auth, "user_id");
    if (g.user_id.empty()) {
      fill(g.username, auth, "username");
    }
    fill(g.password, auth, "password");
    fill(g.tenant_id, auth, "project_id");
    fill(g.tenant_name, auth, "project_name");
    fill(g.domain_id, auth, "domain_id");
    fill(g.domain_name, auth, "domain_name");
    fill(g.tenant_domain_id, auth, "project_domain_id");
    fill(g.tenant_domain_name, auth, "project_domain_name");
    fill(g.user_domain_id, auth, "user_domain_id");
    fill(g.user_domain_name, auth, "user_domain_name");
    fill(g.application_credential_id, auth, "application_credential_id");
    fill(g.application_credential_name, auth, "application_credential_name");
    fill(g.application_credential_secret, auth, "application_credential_secret");
    fill(g.token, auth, "token");
    fill(g.region, entry, "region_name");
    if (!g.endpoint_type_set) {
      std::string iface;
      fill(iface, entry, "interface");
      fill(iface, entry, "endpoint_type");
      if (!iface.empty()) {
        // os-client-config spells them publicURL/internalURL/adminURL too.
        if (iface.size() > 3 && iface.compare(iface.size() - 3, 3, "URL") == 0) {
          iface.resize(iface.size() - 3);
        }
        g.endpoint_type = iface;
      }
    }
    fill(g.ca_file, entry, "cacert");
    fill(g.cert_file, entry, "cert");
    fill(g.key_file, entry, "key");
  } catch (const YAML::Exception& e) {
    return bad("cloud", "cannot read the cloud entry in " + source + ": " + e.what());
  }
  return {};
}

}  // namespace ccm::openstack
