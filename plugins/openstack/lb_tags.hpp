// The tags that say which Services use a load balancer and its listeners: each Service tags
// them with its load balancer name (kube_service_...), so a shared load balancer carries one
// tag per Service. Reading ownership from them, and the request bodies that add or drop ours.
#pragma once

#include <string>
#include <vector>

#include "plugins/openstack/json.hpp"
#include "plugins/openstack/octavia_client.hpp"

namespace ccm::openstack {

// Whether a listener belongs to the Service named `lb_name`: it carries its tag, or it is
// untagged on a load balancer the Service owns (OCCM before Octavia 2.5 did not tag).
bool ownsListener(const OctaviaListener& l, const std::string& lb_name, bool owner);

// How many other Services' tags the load balancer carries.
long otherServiceTags(const OctaviaLoadBalancer& lb, const std::string& lb_name);

// The tags with `tag` added at the end, and with every `tag` dropped.
std::vector<std::string> withTag(std::vector<std::string> tags, const std::string& tag);
std::vector<std::string> withoutTag(const std::vector<std::string>& tags, const std::string& tag);

// The body of a load balancer update that sets its tags.
Json loadBalancerTagsBody(const std::vector<std::string>& tags);

}  // namespace ccm::openstack
