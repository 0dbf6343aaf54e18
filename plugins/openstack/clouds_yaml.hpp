// clouds.yaml support for [Global] use-clouds = true: finds the file, picks the cloud entry and
// fills the [Global] fields cloud.conf left empty (cloud.conf always wins).
#pragma once

#include <string>
#include <vector>

#include "plugins/openstack/config.hpp"

namespace ccm::openstack {

// The clouds.yaml to read: clouds-file, else $OS_CLIENT_CONFIG_FILE, else the first existing of
// ./clouds.yaml, ./clouds.yml, ~/.config/openstack/clouds.yaml, /etc/openstack/clouds.yaml.
std::string findCloudsYaml(const GlobalConfig& global);

// Reads clouds.yaml text and merges the chosen entry into global. INVALID_ARGUMENT names the
// [Global] key at fault (use-clouds, clouds-file, cloud).
sdk::Status mergeCloudsYaml(const std::string& yaml_text, const std::string& source,
                       GlobalConfig& global);

}  // namespace ccm::openstack
